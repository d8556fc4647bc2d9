"""A GKE ClusterManager client of the emulator over gRPC (local channel credentials plus google-auth's per-call
bearer token), and the management cluster and tokens the GKE emulator tests use."""

from __future__ import annotations

import google.auth.transport.grpc
import google.auth.transport.requests
import grpc
from google.cloud import container_v1
from google.cloud.container_v1.services.cluster_manager.transports import ClusterManagerGrpcTransport
from google.oauth2.credentials import Credentials

PROJECT = "mgmt-project"
NUMBER = "987654321098"
NAME = f"projects/{PROJECT}/locations/us-central1/clusters/mgmt-1"
CA_PEM = b"-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"
SA = "adapter@app.iam.gserviceaccount.com"
TOKENS = {"tok-a": SA, "tok-b": "other@app.iam.gserviceaccount.com"}


def make_client(address: str, token: str | None = None) -> container_v1.ClusterManagerClient:
    local = grpc.local_channel_credentials(grpc.LocalConnectionType.LOCAL_TCP)
    if token is None:
        channel = grpc.secure_channel(address, local)
    else:
        plugin = google.auth.transport.grpc.AuthMetadataPlugin(  # type: ignore[no-untyped-call]
            Credentials(token=token),  # type: ignore[no-untyped-call]
            google.auth.transport.requests.Request(),
        )
        channel = grpc.secure_channel(
            address, grpc.composite_channel_credentials(local, grpc.metadata_call_credentials(plugin))
        )
    return container_v1.ClusterManagerClient(transport=ClusterManagerGrpcTransport(channel=channel))
