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
    adapter = make_adapter(service_env(world, "google-id-token"))
    world.book.reset_counters()
    assert deliver(adapter) == "applied"
    assert api_calls(admin) == {"post": 1}  # no GET 404 before it
    assert set(accounts(admin)) == {"quay", "rhit"}
    world.book.reset_counters()
    assert deliver(adapter) == "unchanged"
    assert api_calls(admin) == {"get": 1}  # the steady state stays a GET


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
