"""Service mode's first provisioning at the floor: the generate-or-retrieve POST in place of the GET's 404.

Outcomes asserted: the calls the Pull Secret Service emulator counted, its state (what it minted), what Secret
Manager and Kubernetes hold, and the event's result.
"""

from __future__ import annotations

from typing import Any

from tests.integration.service_mode import (
    CID,
    KUBE_NAME,
    NAMESPACE,
    PROJECT,
    SECRET_ID,
    accounts,
    deliver,
    service_env,
    stored,
)
from tests.support import Admin, seed_ready_cluster


def api_calls(admin: Admin) -> dict[str, int]:
    """The service API's calls the emulator counted (not its registry-side `create.*`)."""
    counted = admin.calls().get("pullsecretservice", {})
    return {method: n for method, n in counted.items() if method in ("get", "post", "delete")}


def test_the_first_event_posts_at_once_and_the_next_one_only_gets(make_adapter: Any, admin: Admin, world: Any) -> None:
    seed_ready_cluster(admin, CID)
    adapter = make_adapter(service_env(world, "google-id-token"))  # PULL_SECRET_SERVICE_TTL=0: every event asks
    world.book.reset_counters()
    assert deliver(adapter) == "applied"
    assert api_calls(admin) == {"post": 1}  # no GET 404 before it
    assert set(accounts(admin)) == {"quay", "rhit"}
    world.book.reset_counters()
    assert deliver(adapter) == "unchanged"
    assert api_calls(admin) == {"get": 1}  # TTL 0: the steady state stays a GET


def test_the_steady_state_asks_the_service_nothing_within_the_ttl(make_adapter: Any, admin: Admin, world: Any) -> None:
    # DDR §3.5: 100 requests a minute per ServiceAccount. A GET per Sentinel event (every 30 min per ready cluster)
    # spends it all at 3,000 clusters; within PULL_SECRET_SERVICE_TTL the answer is known and nothing is asked.
    seed_ready_cluster(admin, CID)
    adapter = make_adapter(service_env(world, "google-id-token", ttl=None))  # the default, 6 h
    assert deliver(adapter) == "applied"
    world.book.reset_counters()
    assert [deliver(adapter) for _ in range(5)] == ["unchanged"] * 5
    assert api_calls(admin) == {}  # five Sentinel events, no service request
    # The kept answer is checked against the newest version the reconcile reads anyway: one read per event, not two.
    assert admin.calls()["secretmanager"].get("AccessSecretVersion") == 5
    # A failed event makes the next one ask: Secret Manager unavailable once, then the service is read again.
    admin.fault(service="secretmanager", method="AccessSecretVersion", code="UNAVAILABLE", count=100)
    assert deliver(adapter) == "transient"
    world.book.clear()
    world.book.reset_counters()
    assert deliver(adapter) == "unchanged"
    assert api_calls(admin) == {"get": 1}


def test_nothing_is_minted_while_the_preconditions_say_wait(make_adapter: Any, admin: Admin, world: Any) -> None:
    admin.seed_cluster(
        CID,
        {
            "name": CID,
            "generation": 2,
            "spec": {"platform": {"type": "gcp", "gcp": {"projectID": PROJECT, "region": "us-east1"}}},
        },
    )
    admin.seed_status(CID, "validation", {"observed_generation": 2})
    admin.seed_status(CID, "dns", {"observed_generation": 1})  # behind: wait
    adapter = make_adapter(service_env(world, "google-id-token"))
    world.book.reset_counters()
    assert deliver(adapter, 2) == "skipped"
    assert api_calls(admin) == {}
    assert accounts(admin) == {}  # no credential for nothing
    assert world.secretmanager.secret(PROJECT, SECRET_ID) is None


def test_a_409_on_the_first_post_with_nothing_held_is_transient_and_writes_nothing(
    make_adapter: Any, admin: Admin, world: Any
) -> None:
    seed_ready_cluster(admin, CID)
    adapter = make_adapter({**service_env(world, "google-id-token"), "RETRY_DEADLINE": "2"})
    admin.fault(service="pullsecretservice", method="post", code="409", count=20)
    assert deliver(adapter) == "transient"
    assert world.secretmanager.secret(PROJECT, SECRET_ID) is None
    assert world.kubernetes.get_secret(NAMESPACE, KUBE_NAME) is None


def test_a_lost_status_during_a_rotation_falls_back_to_the_get_and_delivers_the_new_set(
    make_adapter: Any, admin: Admin, world: Any
) -> None:
    seed_ready_cluster(admin, CID)
    adapter = make_adapter(service_env(world, "google-id-token"))
    assert deliver(adapter) == "applied"
    admin.call("POST", f"/pullsecretservice/clusters/{CID}/rotation", {"reason": "scheduled"})
    new_rhit = accounts(admin)["rhit"]
    admin.seed_status(CID, "pullsecret", {"observed_generation": 1})  # our status lost its data: looks first
    world.book.reset_counters()
    assert deliver(adapter) == "applied"
    assert api_calls(admin) == {"post": 1, "get": 1}  # 409 CNF-001, then the GET
    rhit_host = world.registry.hosts()["token"]
    assert rhit_host in stored(world)["auths"]
    assert accounts(admin)["rhit"] == new_rhit  # nothing minted beyond the rotation's set


ADAPTER_TOPIC = "projects/hf-demo-project/topics/pullsecret-adapter"


def test_an_event_rekey_published_asks_again_and_a_forged_one_asks_nothing(
    make_adapter: Any, admin: Admin, world: Any, capsys: Any
) -> None:
    from pullsecret.publishing import REKEY_ATTRIBUTE
    from tests.support import eventarc_attributes, pubsub_envelope, sentinel_event

    seed_ready_cluster(admin, CID)
    adapter = make_adapter({**service_env(world, "google-id-token", ttl=None), "ADAPTER_TOPIC": ADAPTER_TOPIC})
    assert deliver(adapter) == "applied"
    held = accounts(admin)
    envelope = pubsub_envelope(sentinel_event(CID))
    envelope["message"]["attributes"][REKEY_ATTRIBUTE] = "1"
    # On Sentinel's topic (anyone who may publish there can add the attribute): it asks nothing of the service.
    world.book.reset_counters()
    assert adapter.handle(eventarc_attributes(), envelope).result == "unchanged"
    assert api_calls(admin) == {}
    assert "did not come from ADAPTER_TOPIC: the attribute is ignored" in capsys.readouterr().out
    # On ADAPTER_TOPIC (only `rekey` publishes there): asked (generate-or-retrieve), within the TTL all the same.
    assert adapter.handle(eventarc_attributes(topic=ADAPTER_TOPIC), envelope).result == "unchanged"
    assert api_calls(admin) == {"post": 1}
    assert accounts(admin) == held  # retrieved: nothing revoked, nothing minted


def test_an_instance_whose_kept_answer_predates_a_rekey_asks_instead_of_writing_it_back(
    make_adapter: Any, admin: Admin, world: Any
) -> None:
    # Cloud Run spreads a cluster's events over instances. Instance B keeps the answer it read; the cluster is then
    # re-keyed (its set revoked, the new one minted and stored by instance A). B's next Sentinel event must not
    # write the revoked set back from what it kept: the stored version holds other credentials, so B asks.
    from pullsecret.publishing import REKEY_ATTRIBUTE
    from tests.support import eventarc_attributes, pubsub_envelope, sentinel_event

    seed_ready_cluster(admin, CID)
    env = {**service_env(world, "google-id-token", ttl=None), "ADAPTER_TOPIC": ADAPTER_TOPIC}
    first, second = make_adapter(env), make_adapter(env)
    assert deliver(first) == "applied"
    assert deliver(second) == "unchanged"  # B now keeps the answer
    kept = stored(world)
    first.source.rekeying().rotate(CID, cutoff=0.0, compromise=True, check=False)  # rekey --compromise's DELETE
    envelope = pubsub_envelope(sentinel_event(CID))
    envelope["message"]["attributes"][REKEY_ATTRIBUTE] = "1"
    assert first.handle(eventarc_attributes(topic=ADAPTER_TOPIC), envelope).result == "applied"  # A mints, stores
    new = stored(world)
    assert new != kept
    world.book.reset_counters()
    assert deliver(second) == "unchanged"  # B: what it kept is not what is stored; it asks, and finds the new set
    assert api_calls(admin) == {"get": 1}
    assert stored(world) == new
