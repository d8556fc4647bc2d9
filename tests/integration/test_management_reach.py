"""Reaching the management cluster's control plane: endpoint shapes GKE reports, and no files left behind.

A DNS endpoint that refuses external traffic, or a control plane with only a private endpoint while the function
has no VPC egress, can never be reached by retrying: each is a terminal status naming the fix, not a transient
loop until the dead-letter topic (issue 11, item 9). The cluster CA stays in memory (item 10).
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

import pytest
from kubernetes.client import AdmissionregistrationV1Api, ApiClient

from emulators.world import MANAGEMENT_CLUSTER, MANAGEMENT_DNS
from pullsecret.declared import WORDS
from pullsecret.delivery.direct.settings import POLICY_NAME as POLICY
from pullsecret.handler import Adapter
from pullsecret.retrying import Deadline
from tests.support import Admin, eventarc_attributes, pubsub_envelope, seed_ready_cluster, sentinel_event

CID = "cls-reach01"
UNREACHABLE_PRIVATE_IP = "127.0.0.1:1"  # stands for a private IP: nothing answers from outside its VPC


def deliver(adapter: Adapter) -> Any:
    return adapter.handle(eventarc_attributes(), pubsub_envelope(sentinel_event(CID)))


def available(admin: Admin) -> dict[str, Any]:
    """Available's status and reason, with the operator's detail as `message`: it is on Applied since Available carries
    the owner's message (docs/contract.md's table), which stays checked against the table here."""
    report = [r for r in admin.reports() if r.get("cluster_id") == CID][-1]
    conds = {c["type"]: c for c in report["body"]["conditions"]}
    owner = conds["Available"]
    assert owner["message"] == WORDS.available_message(owner["reason"], conds["Applied"]["message"])
    return {**owner, "message": conds["Applied"]["message"]}


def reshape(world: Any, **shape: Any) -> None:
    """The default management cluster, redeclared with another control-plane shape."""
    spec = {"endpoint": world.kubernetes.address, "ca_pem": world.kubernetes.ca_pem, "dns_endpoint": MANAGEMENT_DNS}
    world.gke.add_cluster(MANAGEMENT_CLUSTER, **{**spec, **shape})


def adapter_with(monkeypatch: pytest.MonkeyPatch, **env: str) -> Adapter:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return Adapter.from_environment()


def test_dns_endpoint_without_external_traffic_is_terminal_and_names_the_fix(
    function_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, admin: Admin, world: Any
) -> None:
    reshape(world, dns_allow_external_traffic=False)
    seed_ready_cluster(admin, CID)
    outcome = deliver(adapter_with(monkeypatch, MANAGEMENT_ENDPOINT="dns"))
    assert outcome.result == "terminal"
    cond = available(admin)
    assert cond["status"] == "False" and cond["reason"] == "ManagementClusterUnreachable"
    assert "enable external traffic on the DNS endpoint" in cond["message"]
    assert "MANAGEMENT_ENDPOINT=ip" in cond["message"]
    assert world.kubernetes.get_secret(f"clusters-{CID}", f"{CID}-pull-secret") is None


@pytest.mark.parametrize("legacy", [False, True], ids=["ip_endpoints_config", "private_cluster_config"])
def test_private_endpoint_without_vpc_egress_is_terminal_and_names_the_fix(
    function_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, admin: Admin, world: Any, legacy: bool
) -> None:
    reshape(world, endpoint=UNREACHABLE_PRIVATE_IP, public_endpoint=False, legacy_private_config=legacy)
    seed_ready_cluster(admin, CID)
    outcome = deliver(adapter_with(monkeypatch))
    assert outcome.result == "terminal"
    cond = available(admin)
    assert cond["reason"] == "ManagementClusterUnreachable"
    assert "only a private endpoint" in cond["message"]
    assert "Direct VPC egress" in cond["message"] and "vpc_network" in cond["message"]
    assert "MANAGEMENT_ENDPOINT=dns" in cond["message"]  # its DNS endpoint allows external traffic


def test_private_endpoint_with_vpc_egress_is_used(
    function_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, admin: Admin, world: Any
) -> None:
    reshape(world, public_endpoint=False)  # the private endpoint, reachable through the VPC
    seed_ready_cluster(admin, CID)
    assert deliver(adapter_with(monkeypatch, VPC_EGRESS="true")).result == "applied"
    assert world.kubernetes.get_secret(f"clusters-{CID}", f"{CID}-pull-secret") is not None


def test_ip_endpoints_disabled_points_at_the_dns_endpoint(
    function_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, admin: Admin, world: Any
) -> None:
    reshape(world, ip_endpoints=False)
    seed_ready_cluster(admin, CID)
    assert deliver(adapter_with(monkeypatch)).result == "terminal"
    cond = available(admin)
    assert cond["reason"] == "ManagementClusterUnreachable" and "MANAGEMENT_ENDPOINT=dns" in cond["message"]


def pullsecret_entries() -> set[str]:
    return {name for name in os.listdir(tempfile.gettempdir()) if name.startswith("pullsecret-")}


def test_cluster_lookups_write_nothing_to_the_temp_folder(
    function_env: dict[str, str], admin: Admin, world: Any
) -> None:
    """Each lookup used to write the CA to a new pullsecret-ca-* folder (Cloud Run's /tmp is memory)."""
    admin.call("PUT", f"/kubernetes/namespaces/clusters-{CID}")
    before = pullsecret_entries()
    clusters = Adapter.from_environment().delivery.clusters
    for _ in range(3):
        api = clusters.api_for(MANAGEMENT_CLUSTER, Deadline(10))
        # TLS checked against the CA in memory; a read the runtime identity's RBAC allows (rbac.yaml).
        policy = AdmissionregistrationV1Api(ApiClient(api.configuration)).read_validating_admission_policy(POLICY)
        assert policy.metadata.name == POLICY
        clusters.invalidate(MANAGEMENT_CLUSTER)
    assert pullsecret_entries() == before
