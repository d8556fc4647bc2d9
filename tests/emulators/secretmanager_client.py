"""A Secret Manager client of the emulator, built as production builds its own (local channel credentials plus
google-auth's per-call bearer token), and the project and tokens the emulator tests use."""

from __future__ import annotations

import google.auth.transport.grpc
import google.auth.transport.requests
import grpc
from google.cloud import secretmanager_v1 as sm
from google.cloud.secretmanager_v1.services.secret_manager_service.transports import (
    SecretManagerServiceGrpcTransport,
)
from google.oauth2.credentials import Credentials

PROJECT = "my-project"
NUMBER = "123456789012"
SA_A = "adapter@my-project.iam.gserviceaccount.com"
SA_B = "intruder@other.iam.gserviceaccount.com"
TOKENS = {"tok-a": SA_A, "tok-b": SA_B}


def make_client(address: str, token: str | None = None, *, insecure: bool = False) -> sm.SecretManagerServiceClient:
    """The production recipe: local channel credentials plus google-auth's per-call bearer token."""
    if insecure:
        channel = grpc.insecure_channel(address)
    elif token is None:
        channel = grpc.secure_channel(address, grpc.local_channel_credentials(grpc.LocalConnectionType.LOCAL_TCP))
    else:
        plugin = google.auth.transport.grpc.AuthMetadataPlugin(  # type: ignore[no-untyped-call]
            Credentials(token=token),  # type: ignore[no-untyped-call]
            google.auth.transport.requests.Request(),
        )
        channel = grpc.secure_channel(
            address,
            grpc.composite_channel_credentials(
                grpc.local_channel_credentials(grpc.LocalConnectionType.LOCAL_TCP),
                grpc.metadata_call_credentials(plugin),
            ),
        )
    return sm.SecretManagerServiceClient(transport=SecretManagerServiceGrpcTransport(channel=channel))
