"""google-id-token off Google Cloud (issue 32, item 5): the doctor on a workstation, after the recipe's
`gcloud auth application-default login --impersonate-service-account=RUNTIME`, mints its ID tokens as the runtime
account through IAM's generateIdToken, not through a metadata server that is not there.

No emulator of the stack serves IAM Credentials (the real endpoint is a fixed https://iamcredentials.googleapis.com
URL google-auth builds itself), so Google's two endpoints are modelled here at the HTTP adapter, from their
references: the OAuth 2.0 token endpoint's refresh-token grant (https://developers.google.com/identity/protocols/oauth2/web-server#offline)
and projects.serviceAccounts.generateIdToken (https://cloud.google.com/iam/docs/reference/credentials/rest/v1/projects.serviceAccounts/generateIdToken:
body `audience`, `delegates`, `includeEmail`; answer `{"token": JWT}`; PERMISSION_DENIED unless the caller holds
iam.serviceAccounts.getOpenIdToken on the account, roles/iam.serviceAccountTokenCreator). The token is signed by the
emulators' Google issuer, so the HyperFleet API emulator's verification is what accepts it. What only a real project
proves: that IAM answers so for the operator's login (their Token Creator grant on the runtime account).
"""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
import requests.adapters

from emulators.idtoken import GOOGLE_ISSUER, IdTokenIssuer, TrustedIssuer, verify
from pullsecret.errors import TransientError
from pullsecret.identity.bearer import GoogleIdToken

RUNTIME = "hf-pullsecret-run@hf-demo-project.iam.gserviceaccount.com"
OTHER = "someone-else@hf-demo-project.iam.gserviceaccount.com"
AUDIENCE = "https://hf.example.com"
OPERATOR = "operator@example.com"
REFRESH_TOKEN = "1//operator-refresh-token-never-shown"
CLIENT_SECRET = "operator-client-secret-never-shown"
TOKEN_URI = "https://oauth2.googleapis.com/token"
IAM = "https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/"


class FakeGoogle:
    """Google's token endpoint and IAM Credentials' generateIdToken, as their references describe them."""

    def __init__(self) -> None:
        self.issuer = IdTokenIssuer()
        self.token_creators: dict[str, set[str]] = {RUNTIME: {OPERATOR}}  # account -> who may mint its tokens
        self.access_tokens: dict[str, str] = {}  # access token -> the person it was issued to
        self.minted: list[tuple[str, str]] = []  # (account, audience) of every ID token issued
        self.other_hosts: list[str] = []  # any other host asked (the metadata server among them)

    def send(self, request: requests.PreparedRequest) -> requests.Response:
        url = str(request.url)
        if url == TOKEN_URI and request.method == "POST":
            return self._token(request)
        if url.startswith(IAM) and url.endswith(":generateIdToken") and request.method == "POST":
            return self._generate_id_token(url[len(IAM) : -len(":generateIdToken")], request)
        self.other_hosts.append(urlsplit(url).netloc)
        raise requests.ConnectionError(f"no route to {urlsplit(url).netloc}")  # off Google Cloud: nothing answers

    def _token(self, request: requests.PreparedRequest) -> requests.Response:
        body = request.body.decode() if isinstance(request.body, bytes) else str(request.body or "")
        form = {k: v[0] for k, v in parse_qs(body).items()}
        if form.get("grant_type") != "refresh_token" or form.get("refresh_token") != REFRESH_TOKEN:
            return _answer(400, {"error": "invalid_grant"})
        if form.get("client_secret") != CLIENT_SECRET:
            return _answer(401, {"error": "invalid_client"})
        token = "ya29.fake-" + secrets.token_urlsafe(24)
        self.access_tokens[token] = OPERATOR
        return _answer(200, {"access_token": token, "expires_in": 3599, "token_type": "Bearer"})

    def _generate_id_token(self, account: str, request: requests.PreparedRequest) -> requests.Response:
        bearer = str(request.headers.get("Authorization", "")).removeprefix("Bearer ")
        caller = self.access_tokens.get(bearer)
        if caller is None:
            return _answer(401, {"error": {"code": 401, "status": "UNAUTHENTICATED"}})
        if caller not in self.token_creators.get(account, set()):
            message = "Permission 'iam.serviceAccounts.getOpenIdToken' denied on resource (or it may not exist)."
            return _answer(403, {"error": {"code": 403, "status": "PERMISSION_DENIED", "message": message}})
        body = json.loads(request.body or b"{}")
        if not body.get("audience"):
            return _answer(400, {"error": {"code": 400, "status": "INVALID_ARGUMENT"}})
        now = int(time.time())
        claims: dict[str, Any] = {"aud": body["audience"], "iss": GOOGLE_ISSUER, "iat": now, "exp": now + 3600}
        claims["sub"] = claims["azp"] = "1" + str(abs(hash(account)) % 10**20)
        if body.get("includeEmail"):
            claims.update(email=account, email_verified=True)
        self.minted.append((account, body["audience"]))
        return _answer(200, {"token": self.issuer.mint(claims)})


def _answer(status: int, payload: dict[str, Any]) -> requests.Response:
    response = requests.Response()
    response.status_code = status
    response._content = json.dumps(payload).encode()
    response.headers["Content-Type"] = "application/json"
    return response


@pytest.fixture
def google(monkeypatch: pytest.MonkeyPatch) -> FakeGoogle:
    fake = FakeGoogle()
    monkeypatch.setattr(requests.adapters.HTTPAdapter, "send", lambda _self, request, **_kw: fake.send(request))
    return fake


@pytest.fixture
def gcloud_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty gcloud configuration folder, as on a workstation before any login; no key file named."""
    folder = tmp_path / "gcloud"
    folder.mkdir()
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(folder))
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    return folder


def operator_login(target: str) -> dict[str, Any]:
    """What `gcloud auth application-default login --impersonate-service-account=TARGET` writes."""
    return {
        "type": "impersonated_service_account",
        "service_account_impersonation_url": f"{IAM}{target}:generateAccessToken",
        "delegates": [],
        "source_credentials": {
            "type": "authorized_user",
            "client_id": "764086051850-fake.apps.googleusercontent.com",
            "client_secret": CLIENT_SECRET,
            "refresh_token": REFRESH_TOKEN,
        },
    }


def write_adc(folder: Path, info: dict[str, Any]) -> Path:
    path = folder / "application_default_credentials.json"
    path.write_text(json.dumps(info))
    return path


def verified_identity(google: FakeGoogle, token: str) -> str:
    return verify(token, [TrustedIssuer(GOOGLE_ISSUER, AUDIENCE, google.issuer.jwks)])


def test_the_impersonated_application_default_login_mints_the_runtime_accounts_token(
    google: FakeGoogle, gcloud_config: Path
) -> None:
    write_adc(gcloud_config, operator_login(RUNTIME))
    credential = GoogleIdToken(AUDIENCE)
    token = credential.current()
    assert verified_identity(google, token) == RUNTIME  # what the HyperFleet API emulator would admit
    assert google.minted == [(RUNTIME, AUDIENCE)]
    assert google.other_hosts == []  # no metadata server asked
    assert credential.current() == token and len(google.minted) == 1  # cached
    assert REFRESH_TOKEN not in repr(credential) and token not in repr(credential)


def test_without_token_creator_on_the_runtime_account_the_doctor_is_told_and_nothing_leaks(
    google: FakeGoogle, gcloud_config: Path
) -> None:
    write_adc(gcloud_config, operator_login(RUNTIME))
    google.token_creators[RUNTIME] = set()
    with pytest.raises(TransientError) as raised:
        GoogleIdToken(AUDIENCE).current()
    assert raised.value.reason == "CredentialsUnavailable"
    assert google.minted == []
    for secret in (REFRESH_TOKEN, CLIENT_SECRET, "ya29."):
        assert secret not in str(raised.value)


def test_a_persons_own_login_is_refused_with_the_fix(google: FakeGoogle, gcloud_config: Path) -> None:
    write_adc(gcloud_config, operator_login(RUNTIME)["source_credentials"])  # plain `application-default login`
    with pytest.raises(TransientError) as raised:
        GoogleIdToken(AUDIENCE).current()
    message = str(raised.value)
    assert "--impersonate-service-account=" in message and "'authorized_user'" in message
    assert REFRESH_TOKEN not in message and CLIENT_SECRET not in message
    assert google.minted == [] and google.other_hosts == []


def test_google_application_credentials_still_wins_over_the_gcloud_file(
    google: FakeGoogle, gcloud_config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_adc(gcloud_config, operator_login(OTHER))
    named = tmp_path / "named.json"
    named.write_text(json.dumps(operator_login(RUNTIME)))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(named))
    assert verified_identity(google, GoogleIdToken(AUDIENCE).current()) == RUNTIME
    assert google.minted == [(RUNTIME, AUDIENCE)]


def test_with_no_file_it_is_the_metadata_server_as_on_cloud_run(google: FakeGoogle, gcloud_config: Path) -> None:
    # Off Google Cloud nothing answers there: a transient CredentialsUnavailable, as before.
    with pytest.raises(TransientError) as raised:
        GoogleIdToken(AUDIENCE).current()
    assert raised.value.reason == "CredentialsUnavailable"
    assert google.other_hosts and google.minted == []
