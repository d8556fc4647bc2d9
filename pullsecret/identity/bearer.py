"""The bearer credentials the function presents to the services it calls, as `Authorization: Bearer`.

The HyperFleet API (HYPERFLEET_API_AUTH) and the Pull Secret Service (PULL_SECRET_SERVICE_AUTH) take the same three:

- `token-file` (`BearerToken`): an opaque token held in a file (a mounted Secret Manager secret), read by
  content on a short timer and at once after the service refuses it: a mounted secret rotates in place and gives
  no mtime guarantee.
- `google-id-token` (`GoogleIdToken`): an ID token for the function's own service account with the configured
  audience (HYPERFLEET_API_AUDIENCE, PULL_SECRET_SERVICE_AUDIENCE), minted through google-auth (the metadata
  server's identity endpoint on Cloud Run; elsewhere, e.g. the doctor on a workstation, the credentials file
  GOOGLE_APPLICATION_CREDENTIALS names, else gcloud's application-default file: `id_token_credentials`). The
  service or its gateway verifies it against Google's keys (hyperfleet-infra
  helmfile/values/base-api.yaml.gotmpl: issuer https://accounts.google.com, identity claim `email`); no key or
  secret is stored anywhere. Cached, minted again when google-auth considers it expired (3 min 45 s before
  `exp`), and once more when the service refuses it.

- `service-account-token` (satoken.ServiceAccountToken): a Kubernetes ServiceAccount token minted by TokenRequest
  on the cluster that runs HyperFleet, sent as `Authorization: ServiceAccount` to hyperfleet-gateway
  (HYPERFLEET_API_AUTH_SCHEME).

All: thread-safe, `scheme` is the Authorization header's scheme, `refresh(refused)` after a refusal says whether
another token is there to try, and no token nor any part of one reaches a repr, a message or a log line: each token
is registered with the process's redaction (`logs.hold`) when it is read or minted and whenever it is handed out, so
a service that quotes it back (a problem detail echoing `Authorization`) has it scrubbed from the message.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from typing import Protocol

import google.auth._cloud_sdk
import google.auth.exceptions
import google.auth.impersonated_credentials
import google.auth.transport.requests
import google.oauth2.id_token
import google.oauth2.service_account
from google.auth.credentials import Credentials

from pullsecret.errors import TransientError
from pullsecret.gke.api import GkeClusters
from pullsecret.identity.google import RuntimeIdentity
from pullsecret.identity.satoken import ServiceAccountToken
from pullsecret.logs import hold
from pullsecret.settings.common import Settings
from pullsecret.settings.token_source import TokenSource


class ApiCredential(Protocol):
    """A bearer credential for one service."""

    remedy: str  # what a person does when the API keeps refusing it
    scheme: str  # the Authorization header's scheme: Bearer, or ServiceAccount (hyperfleet-gateway)

    def current(self) -> str: ...

    def refresh(self, refused: str) -> bool: ...


# How long a token read from the file is used before the file is read again (a read costs microseconds;
# a refusal triggers a re-read at once anyway).
TOKEN_REREAD_S = 5.0


class BearerToken:
    """The API token held in a file, re-read by content; thread-safe; its repr never shows the token."""

    def __init__(
        self,
        path: str,
        *,
        setting: str = "HYPERFLEET_API_TOKEN_FILE",
        service: str = "hyperfleet",
        max_age_s: float = TOKEN_REREAD_S,
        clock: Callable[[], float] = time.monotonic,
        scheme: str = "Bearer",
    ):
        self.path = path
        self.scheme = scheme
        self.setting = setting
        self.service = service
        self.remedy = f"put a valid token in {setting}"
        self._max_age_s = max_age_s
        self._clock = clock
        self._lock = threading.Lock()
        self._value: str | None = None
        self._read_at = 0.0

    def __repr__(self) -> str:
        return f"BearerToken(path={self.path!r})"

    def _read(self) -> str:
        try:
            with open(self.path, encoding="utf-8") as handle:
                value = handle.read().strip()
        except OSError as exc:
            # Our own credential, not the cluster's input: the event waits for the file to come back.
            raise TransientError(
                f"{self.setting} cannot be read ({type(exc).__name__})",
                reason="CredentialsUnavailable",
                service=self.service,
            ) from None
        if not value:
            raise TransientError(f"{self.setting} is empty", reason="CredentialsUnavailable", service=self.service)
        hold([value])
        return value

    def current(self) -> str:
        """The token, read again when the last read is older than the timer."""
        with self._lock:
            now = self._clock()
            if self._value is None or now - self._read_at >= self._max_age_s:
                self._value = self._read()
                self._read_at = now
            hold([self._value])
            return self._value

    def refresh(self, refused: str) -> bool:
        """Read the file now (the API refused `refused`); True when it holds another token to try."""
        with self._lock:
            if self._value != refused:
                return True  # another thread already read a newer token
            self._value = self._read()
            self._read_at = self._clock()
            return self._value != refused


class IdTokenSourceError(google.auth.exceptions.DefaultCredentialsError):
    """The credentials found cannot mint an ID token; its message names the fix and holds no credential."""

    def __init__(self, message: str) -> None:
        super().__init__(message)  # type: ignore[no-untyped-call]


def _application_default_file() -> dict[str, object] | None:
    """gcloud's application-default credentials file (`gcloud auth application-default login`), when there is one.

    Its place is google-auth's own (CLOUDSDK_CONFIG, else gcloud's configuration folder): the one google.auth.default
    reads for access tokens, which google-auth's ID-token path skips (it reads GOOGLE_APPLICATION_CREDENTIALS only)."""
    path = str(google.auth._cloud_sdk.get_application_default_credentials_path())  # type: ignore[no-untyped-call]
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            info = json.load(handle)
    except (OSError, ValueError):
        raise IdTokenSourceError(
            "gcloud's application-default credentials file cannot be read: run `gcloud auth application-default "
            "login --impersonate-service-account=RUNTIME_SERVICE_ACCOUNT` again"
        ) from None
    return info if isinstance(info, dict) else None


def id_token_credentials(audience: str, request: google.auth.transport.requests.Request) -> Credentials:
    """Credentials minting ID tokens for `audience`, in the order Application Default Credentials use (AIP-4110).

    1. GOOGLE_APPLICATION_CREDENTIALS: google-auth's own choice (a service-account key, or an
       `impersonated_service_account` file, whose ID tokens IAM's generateIdToken mints for the target account).
    2. gcloud's application-default file, which google-auth's ID-token path never reads: impersonated
       (`gcloud auth application-default login --impersonate-service-account=SA`, what the doctor's workstation
       recipe runs) -> IAM generateIdToken for SA through google.auth.impersonated_credentials.IDTokenCredentials,
       the very class google-auth builds for such a file under (1); a service-account key likewise; a person's own
       login (`authorized_user`) cannot mint an ID token for a service account, so it is refused with the fix.
    3. The metadata server's identity endpoint (Cloud Run, where neither file exists).
    """
    if not os.environ.get("GOOGLE_APPLICATION_CREDENTIALS"):
        info = _application_default_file()
        kind = info.get("type") if info else None
        if info and kind == "impersonated_service_account":
            target = google.auth.impersonated_credentials.Credentials.from_impersonated_service_account_info(info)  # type: ignore[no-untyped-call]
            impersonated: Credentials = google.auth.impersonated_credentials.IDTokenCredentials(  # type: ignore[no-untyped-call]
                target_credentials=target, target_audience=audience, include_email=True
            )
            return impersonated
        if info and kind == "service_account":
            keyed: Credentials = google.oauth2.service_account.IDTokenCredentials.from_service_account_info(  # type: ignore[no-untyped-call]
                info, target_audience=audience
            )
            return keyed
        if kind is not None:
            raise IdTokenSourceError(
                f"gcloud's application-default credentials are {kind!r}, which cannot mint an ID token for the "
                "runtime service account: run `gcloud auth application-default login "
                "--impersonate-service-account=RUNTIME_SERVICE_ACCOUNT` (terraform output -raw doctor_command)"
            )
    credentials: Credentials = google.oauth2.id_token.fetch_id_token_credentials(audience, request=request)  # type: ignore[no-untyped-call]
    return credentials


class GoogleIdToken:
    """An ID token of the runtime service account for `audience`; thread-safe; its repr never shows the token."""

    def __init__(
        self,
        audience: str,
        *,
        setting: str = "HYPERFLEET_API_AUDIENCE",
        remedy: str | None = None,
        credentials_for: Callable[[str, google.auth.transport.requests.Request], Credentials] = (id_token_credentials),
    ) -> None:
        self.audience = audience
        self.setting = setting
        self.scheme = "Bearer"
        self.remedy = remedy or (
            f"the API (or its gateway) must admit Google ID tokens with audience {audience!r} and this service "
            "account's email (docs/contract.md, Authentication)"
        )
        self._credentials_for = credentials_for
        self._lock = threading.Lock()
        self._credentials: Credentials | None = None
        self._request = google.auth.transport.requests.Request()

    def __repr__(self) -> str:
        return f"GoogleIdToken(audience={self.audience!r})"

    def _mint(self) -> str:
        """A new token (lock held). Raises TransientError: without a token no call can be made."""
        try:
            if self._credentials is None:
                self._credentials = self._credentials_for(self.audience, self._request)
            self._credentials.refresh(self._request)  # type: ignore[no-untyped-call]
        except (google.auth.exceptions.GoogleAuthError, ValueError) as exc:
            fix = f": {exc}" if isinstance(exc, IdTokenSourceError) else ""  # our own text, never a credential
            raise TransientError(
                f"could not mint an ID token for {self.setting} {self.audience!r} ({type(exc).__name__}){fix}",
                reason="CredentialsUnavailable",
                service="metadata",
            ) from None
        token = self._credentials.token
        if not isinstance(token, str) or not token:
            raise TransientError(
                "the metadata server returned no ID token", reason="CredentialsUnavailable", service="metadata"
            )
        hold([token])
        return token

    def current(self) -> str:
        """The cached token, minted again when google-auth considers it (nearly) expired."""
        with self._lock:
            credentials = self._credentials
            if credentials is None or not credentials.valid or not isinstance(credentials.token, str):
                return self._mint()
            hold([credentials.token])
            return credentials.token

    def refresh(self, refused: str) -> bool:
        """Mint a token now (the API refused `refused`); True when there is another token to try."""
        with self._lock:
            credentials = self._credentials
            if credentials is not None and credentials.token != refused and credentials.valid:
                return True  # another thread already minted a newer one
            return self._mint() != refused


def hyperfleet_credential(settings: Settings, identity: RuntimeIdentity | None = None) -> ApiCredential | None:
    """The HyperFleet API's credential; None: no Authorization header (token-file mode without a file)."""
    if settings.hyperfleet_api_auth == "google-id-token":
        return GoogleIdToken(settings.hyperfleet_api_audience)
    source = settings.caller.hyperfleet_token
    if source is not None:  # service-account-token
        return service_account_token(settings, source, settings.hyperfleet_api_audience, identity, "hyperfleet")
    if settings.hyperfleet_api_token_file:
        return BearerToken(settings.hyperfleet_api_token_file, scheme=settings.caller.hyperfleet_scheme)
    return None


def service_account_token(
    settings: Settings, source: TokenSource, audience: str, identity: RuntimeIdentity | None, service: str
) -> ServiceAccountToken:
    """A ServiceAccount token of `source` for `audience`, minted through the runtime identity's GKE access."""
    identity = identity or RuntimeIdentity()
    return ServiceAccountToken(
        source,
        audience,
        gke=GkeClusters(identity, settings.gke_emulator_host),
        identity=identity,
        scheme=settings.caller.hyperfleet_scheme if service == "hyperfleet" else "Bearer",
        service=service,
        endpoint_mode=settings.management_endpoint,
        vpc_egress=settings.vpc_egress,
    )
