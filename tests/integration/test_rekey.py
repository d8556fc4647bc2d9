"""`python -m pullsecret rekey` in service mode, through the Pull Secret Service, Pub/Sub and registry emulators.

Outcomes asserted: the service's rotations and live credentials, the events on ADAPTER_TOPIC, what each cluster's
Kubernetes Secret holds after its event, the registry's answer to the old and new credentials, the progress
record's effect on a resumed and a repeated run.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from emulators.pubsub import PubSubEmulator
from pullsecret.handler import Adapter
from pullsecret.operator import convergence, rekey
from pullsecret.publishing import Publisher
from pullsecret.source.base import RateLimits
from pullsecret.source.service.hold import Hold
from tests.integration.service_mode import registry_accepts, service_env
from tests.support import Admin, eventarc_attributes, pubsub_envelope, seed_ready_cluster, sentinel_event

AVAILABLE, REASON = PubSubEmulator.available()
pytestmark = [pytest.mark.pubsub, pytest.mark.skipif(not AVAILABLE, reason=REASON)]
PROJECT = "hf-demo-project"
TOPIC = "pullsecret-adapter"
SUB = "pullsecret-adapter-pull"
CLUSTERS = ["cls-rk01", "cls-rk02", "cls-rk03", "cls-rk04", "cls-rk05"]


@pytest.fixture(scope="module")
def pubsub(stack: Any) -> Iterator[PubSubEmulator]:
    emulator = PubSubEmulator(stack.book, project=PROJECT)
    emulator.start()
    yield emulator
    emulator.stop()


@pytest.fixture
def adapter(make_adapter: Any, world: Any, admin: Admin, pubsub: PubSubEmulator) -> Adapter:
    pubsub.reset()
    pubsub.create_topic(TOPIC)
    pubsub.create_pull_subscription(TOPIC, SUB)
    built: Adapter = make_adapter(
        {
            **service_env(world, "google-id-token", ttl=None),  # the default: only rekey's events ask again
            "PUBSUB_EMULATOR_HOST": pubsub.address,
            "ADAPTER_TOPIC": f"projects/{PROJECT}/topics/{TOPIC}",
            "ROTATION_PUBLISH_RATE": "5",
            "SECRET_PROJECT_ID": PROJECT,
        }
    )
    for cid in CLUSTERS:
        seed_ready_cluster(admin, cid)
        assert built.handle(eventarc_attributes(), pubsub_envelope(sentinel_event(cid))).result == "applied"
    return built


def auth_of(world: Any, cid: str) -> str:
    """The quay credential the cluster's Kubernetes Secret holds."""
    secret = world.kubernetes.get_secret(f"clusters-{cid}", f"{cid}-pull-secret")
    document = json.loads(base64.b64decode(secret["data"][".dockerconfigjson"]))
    auth: str = document["auths"][world.registry.hosts()["basic"]]["auth"]
    return auth


def rotations(admin: Admin, cid: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = admin.get("/pullsecretservice/state")["rotations"].get(cid, [])
    return found


def deliver_published(adapter: Adapter, pubsub: PubSubEmulator) -> list[str]:
    """Hand every published event to the function, as the trigger would; the cluster ids, in order."""
    ids = []
    for message in pubsub.pull(SUB, 100):
        event = json.loads(base64.b64decode(message["message"]["data"]))
        ids.append(event["data"]["id"])
        envelope = {"message": message["message"], "subscription": f"projects/{PROJECT}/subscriptions/{SUB}"}
        attributes = eventarc_attributes(topic=f"projects/{PROJECT}/topics/{TOPIC}")  # the fan-out trigger's
        assert adapter.handle(attributes, envelope).result in ("applied", "unchanged")
    return ids


# Routine runs spend /rotations, whose DDR limit is 10 an hour: the tests tell the command (and the emulator keeps
# its default, enough for one run of five clusters per test) a faster one, so that they take seconds, not hours.
FAST = RateLimits(per_minute=6000, rotations_per_hour=36000)


def run(adapter: Adapter, lines: list[str], **asked: Any) -> int:
    seams = asked.pop("_seams", {})
    asked.setdefault("limits", FAST)
    return rekey.run(adapter, rekey.Request(**asked), out=lines.append, **seams)


def cutoff_of(lines: list[str]) -> float:
    """The cutoff the run printed in its resume command."""
    line = next(line for line in lines if "--created-before" in line)
    return rekey.parse_time(line.rsplit("--created-before ", 1)[1].split()[0])


def service_calls(admin: Admin) -> dict[str, int]:
    counted = admin.calls().get("pullsecretservice", {})
    return {m: n for m, n in counted.items() if m in ("get", "post", "delete", "rotations.post")}


def test_a_compromise_rekey_revokes_the_old_credentials_at_once_and_each_cluster_gets_the_new_set(
    adapter: Adapter, admin: Admin, world: Any, pubsub: PubSubEmulator
) -> None:
    old = {cid: auth_of(world, cid) for cid in CLUSTERS}
    world.book.reset_counters()
    lines: list[str] = []
    assert run(adapter, lines, compromise=True, yes=True, limits=rekey.DDR_LIMITS) == 0
    assert lines[0] == rekey.NODES_WARNING  # said before it acts
    assert any("binding: 100 requests/min per ServiceAccount (DDR §3.5)" in line for line in lines)
    assert any("5 rotated" in line for line in lines)
    assert lines[-1] == rekey.REPLACE_NODEPOOLS
    # One request per cluster on the command's identity, none on the hourly-limited /rotations.
    assert service_calls(admin) == {"delete": len(CLUSTERS)}
    for cid in CLUSTERS:
        assert rotations(admin, cid) == []
        assert not registry_accepts(world, old[cid])  # revoked at once, before the cluster has the new set
    assert sorted(deliver_published(adapter, pubsub)) == CLUSTERS
    # Each event had the function ask the generate-or-retrieve POST once: it minted the new set.
    assert service_calls(admin) == {"delete": len(CLUSTERS), "post": len(CLUSTERS)}
    app = adapter
    for cid in CLUSTERS:
        new = auth_of(world, cid)
        assert new != old[cid] and registry_accepts(world, new)
        ours = next(s for s in app.hyperfleet.list_statuses(cid) if s.get("adapter") == "pullsecret")
        assert convergence.held(app, cid, ours).state == "current"
    watched: list[str] = []
    assert rekey.watch(app, rekey.Request(watch_timeout_s=0), watched.append, time.sleep) == 0
    assert watched[-1].startswith("watch: 5 of 5 hold the current credentials")


def test_events_go_out_at_the_publish_rate(adapter: Adapter, pubsub: PubSubEmulator) -> None:
    lines: list[str] = []
    began = time.monotonic()
    assert run(adapter, lines) == 0
    assert time.monotonic() - began >= (len(CLUSTERS) - 1) / 5 - 0.05  # ROTATION_PUBLISH_RATE=5/s
    assert len(pubsub.pull(SUB, 100)) == len(CLUSTERS)


def test_a_slow_service_does_not_set_the_pace(adapter: Adapter, admin: Admin, pubsub: PubSubEmulator) -> None:
    # Each cluster's GET and rotation POST take 0.3 s together, longer than the 0.2 s publish slot (5/s): done one
    # after the other before each publish, they set the pace and no publish ever waits for its slot. Started ahead
    # of their clusters, they are ready when the slot comes, and the publishes wait for the publish rate.
    admin.fault(service="pullsecretservice", method="get", latency_ms=150)
    admin.fault(service="pullsecretservice", method="rotations.post", latency_ms=150)
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        time.sleep(seconds)

    assert run(adapter, [], _seams={"sleep": sleep}) == 0
    assert len(waits) >= len(CLUSTERS) - 2, waits  # the first goes at once; the rest wait for their slots
    assert [len(rotations(admin, cid)) for cid in CLUSTERS] == [1] * len(CLUSTERS)
    assert len(pubsub.pull(SUB, 100)) == len(CLUSTERS)


def test_an_interrupted_run_resumes_and_rotates_no_cluster_twice(
    adapter: Adapter, admin: Admin, pubsub: PubSubEmulator
) -> None:
    publisher = Publisher(adapter.identity.credentials)
    published: list[str] = []

    def interrupting_publish(topic: str, event: dict[str, Any], **how: Any) -> Any:
        if len(published) == 3:  # the fourth cluster at its slot: rotated, its event not yet published
            raise KeyboardInterrupt
        published.append(str(event["data"]["id"]))
        return publisher.publish(topic, event, **how)

    lines: list[str] = []
    interrupting = SimpleNamespace(publish=interrupting_publish)
    assert run(adapter, lines, page_size=2, _seams={"publisher": interrupting}) == 3
    assert "interrupted" in lines[-1] and "progress saved after cls-rk03" in lines[-1]
    assert "resume with: python -m pullsecret rekey --created-before " in lines[-1]
    # The fifth was rotated too, its service step begun ahead of its slot (rekey.LOOKAHEAD); neither has its event.
    assert [len(rotations(admin, cid)) for cid in CLUSTERS] == [1, 1, 1, 1, 1]
    first = sorted(deliver_published(adapter, pubsub))
    assert first == CLUSTERS[:3]

    resumed: list[str] = []
    assert run(adapter, resumed, page_size=2, created_before=cutoff_of(lines)) == 0
    assert resumed[0].startswith("rekey: resuming after cls-rk03")
    assert [len(rotations(admin, cid)) for cid in CLUSTERS] == [1, 1, 1, 1, 1]  # none twice
    assert sorted(deliver_published(adapter, pubsub)) == CLUSTERS[3:]


def test_the_same_cutoff_again_does_nothing_new_and_says_so(
    adapter: Adapter, admin: Admin, pubsub: PubSubEmulator
) -> None:
    first: list[str] = []
    assert run(adapter, first) == 0
    pubsub.pull(SUB, 100)
    again: list[str] = []
    assert run(adapter, again, created_before=cutoff_of(first)) == rekey.EXIT_NOTHING_DONE
    assert "already finished: started" in again[-1] and "nothing new to do" in again[-1]
    assert [len(rotations(admin, cid)) for cid in CLUSTERS] == [1] * len(CLUSTERS)
    assert pubsub.pull(SUB, 100) == []


def test_a_second_compromise_after_a_finished_one_re_keys_again(
    adapter: Adapter, admin: Admin, world: Any, pubsub: PubSubEmulator
) -> None:
    assert run(adapter, [], compromise=True, yes=True) == 0
    deliver_published(adapter, pubsub)
    between = {cid: auth_of(world, cid) for cid in CLUSTERS}
    time.sleep(1.1)  # a new incident: its cutoff (its start, in whole seconds) is after the first run's
    second: list[str] = []
    assert run(adapter, second, compromise=True, yes=True) == 0
    assert any("5 rotated" in line for line in second)  # not "this request already finished"
    assert all(not registry_accepts(world, between[cid]) for cid in CLUSTERS)
    deliver_published(adapter, pubsub)
    assert all(auth_of(world, cid) != between[cid] and registry_accepts(world, auth_of(world, cid)) for cid in CLUSTERS)


def test_a_compromise_without_yes_and_nobody_to_ask_does_nothing(adapter: Adapter, admin: Admin) -> None:
    lines: list[str] = []
    assert run(adapter, lines, compromise=True) == rekey.EXIT_USAGE
    assert lines == [rekey.NODES_WARNING, lines[1]] and "pass --yes" in lines[1]
    assert service_calls(admin).get("delete", 0) == 0


def test_an_unknown_cluster_id_is_nothing_done_with_its_fix(adapter: Adapter) -> None:
    lines: list[str] = []
    assert run(adapter, lines, ids=("cls-nope",)) == rekey.EXIT_NOTHING_DONE
    assert f"  failed cls-nope: {rekey.UNKNOWN}" in lines


def test_a_missing_topic_is_a_configuration_error_but_a_dry_run_still_plans(
    adapter: Adapter, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataclasses

    monkeypatch.setattr(adapter, "settings", dataclasses.replace(adapter.settings, adapter_topic=None))
    lines: list[str] = []
    assert run(adapter, lines) == rekey.EXIT_CONFIG
    assert lines[0].startswith("error: ADAPTER_TOPIC is not set") and "adapter's own topic" in lines[0]
    dry: list[str] = []
    assert run(adapter, dry, dry_run=True) == 0
    assert any(line.startswith("  binding: ") for line in dry)


def test_a_dry_run_rotates_and_publishes_nothing(adapter: Adapter, admin: Admin, pubsub: PubSubEmulator) -> None:
    lines: list[str] = []
    assert run(adapter, lines, dry_run=True, compromise=True, limits=rekey.DDR_LIMITS) == 0
    assert sum(": revoke (DELETE" in line for line in lines) == len(CLUSTERS)
    binding = next(line for line in lines if line.startswith("  binding: "))
    # The shared identity spends 2 requests per cluster of 98 % of 100/min, less the steady state's reads.
    assert "100 requests/min per ServiceAccount (DDR §3.5)" in binding and "5 cluster(s) take about" in binding
    assert all(rotations(admin, cid) == [] for cid in CLUSTERS)
    assert pubsub.pull(SUB, 100) == []


def test_a_run_that_fails_lets_go_of_its_lease_and_trying_again_works(
    adapter: Adapter, admin: Admin, world: Any
) -> None:
    # One 503 too many on the listing: the run stops ("try again"); trying again must not be refused for the
    # record's ten-minute lease.
    admin.fault(service="hyperfleet", method="getClusters", code="503", rate=1.0)
    lines: list[str] = []
    assert run(adapter, lines) == rekey.EXIT_TRANSIENT
    world.book.clear()
    again: list[str] = []
    assert run(adapter, again, created_before=cutoff_of(lines)) == 0  # the resume command it printed
    assert not any("another rekey run holds the record" in line for line in again)


def test_a_forged_record_is_set_aside_with_a_line_and_never_blocks_a_run(adapter: Adapter) -> None:
    from pullsecret.model import names
    from pullsecret.retrying import Deadline
    from pullsecret.secretstore.progress import A_REKEY, rekey_secret_id

    name = names.secret_name(PROJECT, rekey_secret_id(adapter.settings))
    forged = {
        "key": "x",
        "cutoff": 0,
        "started": 0,
        "after": "cls-zzzz",
        "done": False,
        "rotated": 0,
        "current": 0,
        "failed": 0,
        "failures": {},
        "holder": "intruder",
        "lease_until": 1e18,
    }
    written = adapter.store.records.write_record(
        name, {A_REKEY: json.dumps(forged)}, etag=None, labels={"managed-by": "hyperfleet"}, deadline=Deadline(30)
    )
    assert written is not None
    lines: list[str] = []
    assert run(adapter, lines) == 0
    assert any("is not trusted (lease_until" in line and "set aside" in line for line in lines)
    assert any("5 rotated" in line for line in lines)  # every cluster, not "0 rotated" after cls-zzzz


def test_a_429_is_honoured_the_cluster_waits_its_retry_after_and_the_run_goes_on(
    adapter: Adapter, admin: Admin, world: Any, pubsub: PubSubEmulator
) -> None:
    # The service answers the cluster's DELETE 429 (Retry-After: 60): the client holds its next try (hold.py) and the
    # command waits the whole Retry-After and asks again, instead of stopping the run.
    cid = CLUSTERS[0]
    old = auth_of(world, cid)
    waited: list[float] = []
    skipped = [0.0]  # seconds the test's sleep pretended to wait: the client's 429 hold sees them pass
    adapter.source.client.hold = Hold(clock=lambda: time.monotonic() + skipped[0])  # type: ignore[attr-defined]

    def sleep(seconds: float) -> None:
        waited.append(seconds)
        time.sleep(min(seconds, 0.2))  # the slots as they are; the Retry-After shortened, its value recorded
        skipped[0] += max(seconds - 0.2, 0.0)

    admin.fault(service="pullsecretservice", method="delete", code="429", count=1)
    lines: list[str] = []
    assert run(adapter, lines, ids=(cid,), compromise=True, yes=True, _seams={"sleep": sleep}) == 0
    assert waited and min(waited) >= 58.0  # the Retry-After (60 s) waited in full, less the client's own 1 s try
    assert "rekey: the service answered 429 1 time(s); each was honoured (its Retry-After waited)" in lines
    assert any("1 rotated" in line for line in lines)
    assert not registry_accepts(world, old)


def test_a_compromise_revokes_a_cluster_whose_routine_rotation_is_open(
    adapter: Adapter, admin: Admin, world: Any, pubsub: PubSubEmulator
) -> None:
    # A routine rotation in its dual-credential period: both sets valid. The compromise revokes both (DDR §3.2.6:
    # the open rotation is cancelled), and the cluster's event mints a third.
    cid = CLUSTERS[0]
    before = auth_of(world, cid)
    admin.call("POST", f"/pullsecretservice/clusters/{cid}/rotation", {"reason": "scheduled"})
    adapter.handle(eventarc_attributes(), pubsub_envelope(sentinel_event(cid)))  # TTL: still what it kept
    lines: list[str] = []
    assert run(adapter, lines, ids=(cid,), compromise=True, yes=True) == 0
    assert [r["status"] for r in rotations(admin, cid)] == ["cancelled"]
    assert not registry_accepts(world, before)
    assert deliver_published(adapter, pubsub) == [cid]
    after = auth_of(world, cid)
    assert after != before and registry_accepts(world, after)
    ours = next(s for s in adapter.hyperfleet.list_statuses(cid) if s.get("adapter") == "pullsecret")
    assert convergence.held(adapter, cid, ours).state == "current"
