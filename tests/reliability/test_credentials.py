"""Our own HyperFleet token rotated in place or refused: the event is applied or redelivered, never dropped.

Cloud Run's secret volumes rotate a file's content with no mtime guarantee, so the rotation here keeps the
mtime (os.utime) while the HyperFleet emulator switches to the new token. A refusal of our own token
(401, on any call) must end in a non-2xx answer, so that Pub/Sub redelivers, and in one error line
that gives the reason and never the token. (A 403 with an authorization code is a policy, terminal by
ADR-0017: tests/integration/test_api_answers.py.)
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

import pytest

from tests.reliability import campaign, harness

ROOT = Path(__file__).resolve().parents[2]


def rotate_in_place(path: str, token: str) -> None:
    """New content, same mtime: what a secret volume may do."""
    before = os.stat(path)
    Path(path).write_text(token + "\n", encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(path).st_mtime_ns == before.st_mtime_ns


def lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


@pytest.fixture
def client(function_env: dict[str, str]) -> Any:
    """The function behind functions-framework, so that an answer's HTTP status is what Pub/Sub sees."""
    from functions_framework import create_app

    from pullsecret import handler

    handler._adapter = None  # main.py builds the process-wide adapter from this test's environment
    yield create_app("handle_cluster_event", str(ROOT / "main.py"), "cloudevent").test_client()
    handler._adapter = None


def post(client: Any, cluster_id: str, generation: int) -> int:
    harness.count("deliveries")
    _attributes, data = campaign.envelope(cluster_id, generation)
    return int(client.post("/", json=data).status_code)


def test_token_rotated_in_place_with_the_same_mtime_is_used_at_once(
    adapter_factory: Any, world: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    harness.count("cases tried")
    adapter = adapter_factory()
    cid = "cls-token-rotated"
    old = Path(world.token_file).read_text(encoding="utf-8").strip()
    campaign.seed_generation(world, cid, 1)
    assert adapter.handle(*campaign.envelope(cid, 1)).result == "applied"  # the token is read and held
    new = "hf-rotated-" + secrets.token_urlsafe(24)
    rotate_in_place(world.token_file, new)
    world.hyperfleet.set_token(new)
    campaign.seed_generation(world, cid, 2)
    delivery = campaign.deliver_until_acknowledged(adapter, *campaign.envelope(cid, 2), max_attempts=1)
    assert delivery.result == "applied", delivery  # applied on the first delivery, not dropped
    report = [r for r in world.hyperfleet.handle_admin("GET", "/reports", None)[1] if r["cluster_id"] == cid][-1]
    assert (report["code"], report["body"]["observed_generation"]) == (201, 2)
    verdict = campaign.verify(world, {cid: 2})
    verdict.record()
    verdict.assert_clean()
    out, err = capsys.readouterr()
    assert harness.scan("token rotation", [out, err, *delivery.errors], {old, new}) == []


@pytest.mark.parametrize(
    ("refusal", "where"),
    [("401", "getClusterById"), ("401", "putClusterStatuses")],
    ids=["401-read", "401-status-write"],
)
def test_a_refused_token_is_redelivered_never_acknowledged(
    client: Any, world: Any, capsys: pytest.CaptureFixture[str], refusal: str, where: str
) -> None:
    harness.count("cases tried")
    cid = f"cls-token-{refusal}-{where.lower()}"
    token = Path(world.token_file).read_text(encoding="utf-8").strip()
    campaign.seed_generation(world, cid, 1)
    if where == "putClusterStatuses":
        # Everything is applied, then the status write is refused: the status must still be reported.
        world.book.add({"service": "hyperfleet", "method": where, "code": refusal, "count": 1})
        harness.count("faults injected")
    else:
        world.hyperfleet.set_token("hf-issuer-moved-on-" + secrets.token_urlsafe(16))  # the file is now stale
    assert post(client, cid, 1) >= 300  # Pub/Sub redelivers a non-2xx answer
    out = capsys.readouterr().out
    refused = [line for line in lines(out) if line.get("reason") == "CredentialsRefused"]
    assert refused and refused[0]["severity"] == "ERROR", out[-3000:]
    assert f"({refusal}, " in refused[0]["message"] and "HYPERFLEET_API_TOKEN_FILE" in refused[0]["message"]
    assert not [line for line in lines(out) if line.get("result") in ("terminal", "applied", "unchanged")]
    # The fix lands (a valid token in the file, or the rights granted); the redelivery converges.
    fixed = "hf-fixed-" + secrets.token_urlsafe(24)
    rotate_in_place(world.token_file, fixed)
    world.hyperfleet.set_token(fixed)
    assert post(client, cid, 1) == 200
    verdict = campaign.verify(world, {cid: 1})
    verdict.record()
    verdict.assert_clean()
    out += capsys.readouterr().out
    reports = world.hyperfleet.handle_admin("GET", "/reports", None)[1]
    assert harness.scan(f"refused token {refusal}", [out, *map(json.dumps, reports)], {token, fixed}) == []
