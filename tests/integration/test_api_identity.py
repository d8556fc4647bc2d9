"""HYPERFLEET_API_AUTH=google-id-token: the function calls the HyperFleet API as its own service account with a
Google-signed ID token minted through google-auth from the metadata server (no token file, no key), cached,
minted again before it expires and once after the API refuses it; a wrong audience is refused by the API.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from emulators.world import RUNTIME_SA
from pullsecret.errors import TransientError
from pullsecret.handler import Adapter
from tests.support import Admin, eventarc_attributes, pubsub_envelope, seed_ready_cluster, sentinel_event

CID = "cls-identity1"


@pytest.fixture
def id_token_env(function_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, world: Any) -> dict[str, str]:
    monkeypatch.delenv("HYPERFLEET_API_TOKEN_FILE")
    monkeypatch.setenv("HYPERFLEET_API_AUTH", "google-id-token")
    world.hyperfleet.token = "hf-opaque-token-nobody-presents"  # the token file is out of the picture
    return function_env


def deliver(adapter: Adapter, generation: int = 1) -> Any:
    return adapter.handle(eventarc_attributes(), pubsub_envelope(sentinel_event(CID, generation)))


def minted(world: Any) -> int:
    return int(world.metadata.state()["identity_tokens_issued"])


def test_a_cluster_reconciles_end_to_end_as_the_runtime_identity(
    id_token_env: dict[str, str], admin: Admin, world: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_ready_cluster(admin, CID)
    adapter = Adapter.from_environment()
    assert deliver(adapter).result == "applied"
    assert deliver(adapter).result == "unchanged"
    assert minted(world) == 1  # one token, cached across both events' calls
    assert set(world.hyperfleet.identities) == {RUNTIME_SA}
    assert len(world.hyperfleet.identities) >= 6  # every call carried it (2 events x get, list, report)
    assert world.kubernetes.get_secret(f"clusters-{CID}", f"{CID}-pull-secret") is not None
    out = capsys.readouterr().out
    assert "eyJ" not in out  # no part of a JWT reaches the logs


def test_a_wrong_audience_is_refused_by_the_api_and_redelivered(
    id_token_env: dict[str, str], admin: Admin, world: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setenv("HYPERFLEET_API_AUDIENCE", "https://some-other-service.example")
    seed_ready_cluster(admin, CID)
    with pytest.raises(TransientError) as raised:
        deliver(Adapter.from_environment())
    assert raised.value.reason == "CredentialsRefused" and "401" in raised.value.message
    assert "audience 'https://some-other-service.example'" in raised.value.message
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    assert [x for x in lines if x.get("reason") == "CredentialsRefused" and x["severity"] == "ERROR"]
    assert world.hyperfleet.identities == [] and admin.reports() == []


def test_the_token_is_minted_again_before_it_expires(id_token_env: dict[str, str], admin: Admin, world: Any) -> None:
    # google-auth mints again 225 s before `exp`: a 228 s token is used for about 3 s, never past its expiry.
    world.metadata.handle_admin("PUT", "/identity_lifetime", {"seconds": 228})
    seed_ready_cluster(admin, CID)
    adapter = Adapter.from_environment()
    assert deliver(adapter).result == "applied"
    first = minted(world)
    time.sleep(3.5)
    assert deliver(adapter).result == "unchanged"
    assert minted(world) == first + 1


def test_a_refused_token_is_minted_again_once_and_the_call_repeated(
    id_token_env: dict[str, str], admin: Admin, world: Any
) -> None:
    seed_ready_cluster(admin, CID)
    adapter = Adapter.from_environment()
    assert deliver(adapter).result == "applied"
    world.metadata.handle_admin("POST", "/rotate_identity_key", None)  # the cached token no longer verifies
    before = minted(world)
    assert deliver(adapter).result == "unchanged"  # not redelivered: the same event converges
    assert 1 <= minted(world) - before <= 2  # re-minted after the refusal (the two first calls run at once)
