"""Google credentials and API clients, created once per process and shared across requests.

Seams (docs/design.md): `SECRET_MANAGER_EMULATOR_HOST` points the client at a local gRPC endpoint over a
loopback channel that still carries the runtime identity's token per call (GKE's is REST: gke.py);
`GCE_METADATA_HOST` / `GCE_METADATA_IP` are google-auth's own switches for the metadata server.
"""

from __future__ import annotations

import threading
from typing import Any

import google.auth
import google.auth.transport.requests
from google.auth.credentials import Credentials

from pullsecret.errors import TransientError
from pullsecret.logs import hold

CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"


class RuntimeIdentity:
    """The runtime service account's credentials; thread-safe token access with refresh before expiry."""

    def __init__(self, credentials: Credentials | None = None, project_id: str | None = None) -> None:
        self._lock = threading.Lock()
        self._credentials = credentials
        self._project_id = project_id

    def _load(self) -> Credentials:
        if self._credentials is None:
            credentials, project = google.auth.default(scopes=[CLOUD_PLATFORM])
            self._credentials = credentials
            self._project_id = self._project_id or project
        return self._credentials

    @property
    def credentials(self) -> Credentials:
        with self._lock:
            return self._load()

    @property
    def project_id(self) -> str | None:
        with self._lock:
            self._load()
            return self._project_id

    def token(self) -> str:
        """A valid access token, refreshed when google-auth considers it (nearly) expired; held for redaction (it is
        sent to GKE and to clusters' API servers, whose answers may quote it)."""
        with self._lock:
            credentials = self._load()
            if not credentials.valid:
                try:
                    credentials.refresh(google.auth.transport.requests.Request())  # type: ignore[no-untyped-call]
                except google.auth.exceptions.GoogleAuthError as exc:
                    raise TransientError(
                        f"could not obtain an access token for the runtime identity ({type(exc).__name__})",
                        reason="CredentialsUnavailable",
                        service="metadata",
                    ) from None
            token = credentials.token
            assert isinstance(token, str)
            hold([token])
            return token

    def invalidate(self) -> None:
        """Forget the current token (a server refused it): the next `token()` or call fetches a fresh one."""
        with self._lock:
            if self._credentials is not None:
                self._credentials.token = None

    @property
    def email(self) -> str | None:
        """The service account's email; compute credentials only learn it ("default" before) on refresh."""
        email = getattr(self.credentials, "service_account_email", None)
        if email == "default":
            self.token()
            email = getattr(self.credentials, "service_account_email", None)
        return email if isinstance(email, str) and email != "default" else None


def _bearer_interceptor(identity: RuntimeIdentity) -> Any:
    """Adds the runtime identity's bearer token to each call's metadata, on the calling thread.

    gRPC runs a call-credentials plugin (google-auth's AuthMetadataPlugin) on a thread it starts for every
    call: about 1 ms of CPU per Secret Manager or GKE call. The header on the wire is the same; the token
    comes from the same credentials, refreshed before expiry by `RuntimeIdentity.token`.
    """
    import grpc

    class Details(grpc.ClientCallDetails):  # type: ignore[misc]
        def __init__(self, base: Any, metadata: list[tuple[str, str]]) -> None:
            self.method = base.method
            self.timeout = base.timeout
            self.metadata = metadata
            self.credentials = base.credentials
            self.wait_for_ready = base.wait_for_ready
            self.compression = base.compression

    class Bearer(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):  # type: ignore[misc]
        def _details(self, details: Any) -> Details:
            metadata = [*(details.metadata or ()), ("authorization", f"Bearer {identity.token()}")]
            return Details(details, metadata)

        def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
            return continuation(self._details(details), request)

        def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
            return continuation(self._details(details), request)

    return Bearer()


# What the generated transports pass when they build their own channel (unbounded message sizes).
_CHANNEL_OPTIONS = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]


def authorized_channel(target: str, identity: RuntimeIdentity, *, tls: bool = True) -> Any:
    """A gRPC channel to `target` sending the runtime identity's token on each call (TLS, or loopback)."""
    import grpc

    if tls:
        credentials = grpc.ssl_channel_credentials()
    else:
        credentials = grpc.local_channel_credentials(grpc.LocalConnectionType.LOCAL_TCP)
    channel = grpc.secure_channel(target, credentials, options=_CHANNEL_OPTIONS)
    return grpc.intercept_channel(channel, _bearer_interceptor(identity))


def secret_manager_client(identity: RuntimeIdentity, emulator_host: str | None) -> Any:
    from google.cloud import secretmanager_v1
    from google.cloud.secretmanager_v1.services.secret_manager_service.transports import (
        SecretManagerServiceGrpcTransport,
    )

    host = emulator_host or "secretmanager.googleapis.com:443"
    channel = authorized_channel(host, identity, tls=not emulator_host)
    return secretmanager_v1.SecretManagerServiceClient(transport=SecretManagerServiceGrpcTransport(channel=channel))
