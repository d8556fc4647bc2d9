"""The metadata emulator against unmodified google-auth compute-engine credentials."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import google.auth
import pytest
import requests
from google.auth.compute_engine import _metadata
from google.auth.compute_engine import credentials as gce_credentials
from google.auth.transport.requests import Request

from emulators.faults import FaultBook
from emulators.metadata import MetadataEmulator

SCOPE = "https://www.googleapis.com/auth/cloud-platform"
SA = "pullsecret-runtime@hf-demo-project.iam.gserviceaccount.com"


@pytest.fixture
def book() -> FaultBook:
    return FaultBook()


@pytest.fixture
def mds(book: FaultBook) -> Iterator[MetadataEmulator]:
    emulator = MetadataEmulator(book)
    emulator.start()
    yield emulator
    emulator.stop()


@pytest.fixture
def google_env(mds: MetadataEmulator, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> MetadataEmulator:
    """Point google-auth at the emulator and away from any ADC file on this machine."""
    monkeypatch.setenv("GCE_METADATA_HOST", mds.address)
    monkeypatch.setenv("GCE_METADATA_IP", mds.address)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path))
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT", raising=False)
    monkeypatch.delenv("GCLOUD_PROJECT", raising=False)
    monkeypatch.delenv("NO_GCE_CHECK", raising=False)
    # google-auth reads GCE_METADATA_HOST once, at import time.
    monkeypatch.setattr(_metadata, "_GCE_METADATA_HOST", mds.address)
    return mds


def _get(mds: MetadataEmulator, path: str, **headers: str) -> requests.Response:
    return requests.get(f"{mds.url}{path}", headers=headers, timeout=5, allow_redirects=False)


def test_google_auth_default_finds_compute_engine_credentials(google_env: MetadataEmulator) -> None:
    creds, project = google.auth.default(scopes=[SCOPE])
    assert isinstance(creds, gce_credentials.Credentials)
    assert project == "hf-demo-project"
    creds.refresh(Request())
    assert creds.valid
    assert creds.service_account_email == SA
    assert google_env.identity_for_token(creds.token) == SA
    info = google_env.token_info(creds.token)
    assert info is not None and info["scopes"] == [SCOPE]
    assert google_env.identity_for_token("ya29.not-issued") is None
    state = google_env.state()
    assert state["tokens_issued"] == 1 and state["live_tokens"] == 1


def test_every_token_is_fresh(google_env: MetadataEmulator) -> None:
    creds, _ = google.auth.default(scopes=[SCOPE])
    creds.refresh(Request())
    first = creds.token
    creds.refresh(Request())
    assert creds.token != first
    assert google_env.identity_for_token(first) == SA  # the old one stays valid until it expires


def test_short_lifetime_drives_client_refresh(google_env: MetadataEmulator) -> None:
    # google-auth refreshes 225 s before expiry: 227 s leaves the client ~2 s of use.
    status, _ = google_env.handle_admin("PUT", "/token_lifetime", {"seconds": 227})
    assert status == 200
    creds, _ = google.auth.default(scopes=[SCOPE])
    creds.refresh(Request())
    assert creds.valid
    first = creds.token
    time.sleep(2.2)
    assert not creds.valid  # the client now wants a new token ...
    assert google_env.identity_for_token(first) == SA  # ... while the server still honours the old one
    headers: dict[str, str] = {}
    creds.before_request(Request(), "GET", "http://127.0.0.1/", headers)
    assert creds.token != first
    assert headers["authorization"] == f"Bearer {creds.token}"


def test_expiry_and_revocation(google_env: MetadataEmulator) -> None:
    google_env.handle_admin("PUT", "token_lifetime", {"seconds": 1})
    creds, _ = google.auth.default(scopes=[SCOPE])
    creds.refresh(Request())
    token = creds.token
    assert google_env.identity_for_token(token) == SA
    time.sleep(1.1)
    assert google_env.identity_for_token(token) is None

    google_env.handle_admin("PUT", "/token_lifetime", {"seconds": 3600})
    creds.refresh(Request())
    assert creds.valid
    status, body = google_env.handle_admin("POST", "/revoke_all", None)
    assert (status, body) == (200, {"revoked": 1})
    assert google_env.identity_for_token(creds.token) is None
    assert creds.valid  # revocation is server-side only, as in real life
    assert google_env.handle_admin("GET", "/state", None)[1]["live_tokens"] == 0


def test_admin_rejects_bad_lifetime(mds: MetadataEmulator) -> None:
    assert mds.handle_admin("PUT", "/token_lifetime", {"secs": 5})[0] == 400
    assert mds.handle_admin("PUT", "/token_lifetime", {"seconds": 0})[0] == 400
    assert mds.handle_admin("GET", "/nope", None)[0] == 404


def test_reset_forgets_tokens(google_env: MetadataEmulator) -> None:
    google_env.handle_admin("PUT", "/token_lifetime", {"seconds": 600})
    creds, _ = google.auth.default(scopes=[SCOPE])
    creds.refresh(Request())
    google_env.reset()
    assert google_env.identity_for_token(creds.token) is None
    assert google_env.state()["token_lifetime_s"] == 3600
    assert google_env.state()["tokens_issued"] == 0


def test_flavor_header_required(mds: MetadataEmulator) -> None:
    response = _get(mds, "/computeMetadata/v1/project/project-id")
    assert response.status_code == 403
    assert response.headers["Content-Type"].startswith("text/html")
    assert "Missing Metadata-Flavor:Google header" in response.text
    assert response.headers["Metadata-Flavor"] == "Google"
    forwarded = _get(
        mds, "/computeMetadata/v1/project/project-id", **{"Metadata-Flavor": "Google", "X-Forwarded-For": "1"}
    )
    assert forwarded.status_code == 403


def test_tree_paths(mds: MetadataEmulator) -> None:
    flavor = {"Metadata-Flavor": "Google"}
    assert _get(mds, "/").headers["Metadata-Flavor"] == "Google"
    assert _get(mds, "/computeMetadata/v1/project/numeric-project-id", **flavor).text == "123456789012"
    assert _get(mds, "/computeMetadata/v1/instance/service-accounts/default/email", **flavor).text == SA
    info = _get(mds, "/computeMetadata/v1/instance/service-accounts/default/?recursive=true", **flavor)
    assert info.json() == {"aliases": ["default"], "email": SA, "scopes": [SCOPE]}
    redirect = _get(mds, "/computeMetadata/v1/instance/service-accounts/default", **flavor)
    assert redirect.status_code == 301
    listing = _get(mds, "/computeMetadata/v1/instance/service-accounts/", **flavor).text.split()
    assert listing == ["default/", f"{SA}/"]
    project = _get(mds, "/computeMetadata/v1/project/?recursive=true", **flavor).json()
    assert project == {"attributes": {}, "numericProjectId": "123456789012", "projectId": "hf-demo-project"}
    assert _get(mds, "/computeMetadata/v1/nope", **flavor).status_code == 404
    assert _get(mds, "/computeMetadata/v1/universe/universe-domain", **flavor).text == "googleapis.com"
    mds.handle_admin("PUT", "/attributes", {"cluster": "x"})
    assert _get(mds, "/computeMetadata/v1/instance/attributes/cluster", **flavor).text == "x"
    post = requests.post(f"{mds.url}/computeMetadata/v1/project/project-id", headers=flavor, timeout=5)
    assert post.status_code == 405


def test_identity_token(mds: MetadataEmulator) -> None:
    flavor = {"Metadata-Flavor": "Google"}
    path = "/computeMetadata/v1/instance/service-accounts/default/identity"
    assert _get(mds, path, **flavor).status_code == 400
    jwt = _get(mds, f"{path}?audience=https://example.test&format=full", **flavor).text
    assert jwt.count(".") == 2
    claims = google.auth.jwt.decode(jwt, verify=False)
    assert claims["aud"] == "https://example.test" and claims["email"] == SA


def test_http_faults_use_google_error_pages(google_env: MetadataEmulator, book: FaultBook) -> None:
    book.add({"service": "metadata", "method": "token", "code": "503", "count": 1})
    creds, _ = google.auth.default(scopes=[SCOPE])
    # google-auth retries 5xx on the metadata server, so a single 503 is absorbed.
    creds.refresh(Request())
    assert creds.valid
    assert book.calls()["metadata"]["token"] == 2
    assert book.faults_injected()["metadata"]["token"] == 1

    book.add({"service": "metadata", "method": "project-id", "code": "429", "count": 1})
    response = _get(google_env, "/computeMetadata/v1/project/project-id", **{"Metadata-Flavor": "Google"})
    assert response.status_code == 429
    assert response.headers["Content-Type"].startswith("text/html")
    assert "<b>429.</b>" in response.text
    assert _get(google_env, "/computeMetadata/v1/project/project-id", **{"Metadata-Flavor": "Google"}).ok


def test_reset_and_timeout_faults(mds: MetadataEmulator, book: FaultBook) -> None:
    book.add({"service": "metadata", "method": "project-id", "code": "reset", "count": 1})
    with pytest.raises(requests.ConnectionError):
        _get(mds, "/computeMetadata/v1/project/project-id", **{"Metadata-Flavor": "Google"})
    book.add({"service": "metadata", "method": "ping", "code": "timeout", "count": 1})
    started = time.monotonic()
    with pytest.raises(requests.Timeout):
        requests.get(f"{mds.url}/", timeout=0.5)
    assert time.monotonic() - started < 2
    assert _get(mds, "/computeMetadata/v1/project/project-id", **{"Metadata-Flavor": "Google"}).ok


def test_keepalive_and_concurrency(mds: MetadataEmulator) -> None:
    from concurrent.futures import ThreadPoolExecutor

    session = requests.Session()
    session.headers["Metadata-Flavor"] = "Google"

    def fetch(_: int) -> str:
        return session.get(f"{mds.url}/computeMetadata/v1/project/project-id", timeout=10).text

    with ThreadPoolExecutor(max_workers=100) as pool:
        assert set(pool.map(fetch, range(300))) == {"hf-demo-project"}


def test_stop_closes_port(book: FaultBook) -> None:
    emulator = MetadataEmulator(book)
    emulator.start()
    host, port = emulator.address.split(":")
    emulator.stop()
    with pytest.raises(OSError), socket.create_connection((host, int(port)), timeout=1):
        pass
