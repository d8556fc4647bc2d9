"""GCP HCP's HyperFleet (gcp-hcp implementation-plans/): the placement-adapter names its management cluster by a
short name, there is no dns adapter, and the adapter registers as pull-secret-adapter. The preset of
docs/contract.md §2, end to end on the emulators.
"""

from __future__ import annotations

from typing import Any

import pytest

from emulators.kubernetes.manifests import render
from emulators.world import MANAGEMENT_CLUSTER, PROJECT_ID, RUNTIME_SA
from pullsecret.handler import Adapter
from tests.support import Admin, eventarc_attributes, pubsub_envelope, seed_ready_cluster, sentinel_event

CID = "cls-hcp00001"
NAMESPACE = f"clusters-{CID}"
PRESET = {
    "ADAPTER_NAME": "pull-secret-adapter",
    "PRECONDITION_ADAPTERS": "placement-adapter",
    "PLACEMENT_ADAPTER": "placement-adapter",
    "MANAGEMENT_CLUSTER_TEMPLATE": f"projects/{PROJECT_ID}/locations/us-central1/clusters/{{name}}",
}


@pytest.fixture
def hcp_env(function_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, world: Any) -> dict[str, str]:
    monkeypatch.delenv("MANAGEMENT_CLUSTER")  # only the placement decides
    # The management cluster's policy as Terraform renders it for this adapter_name (its Secrets' label).
    world.kubernetes.apply_manifests(render(RUNTIME_SA, adapter_name=PRESET["ADAPTER_NAME"]))
    for key, value in PRESET.items():
        monkeypatch.setenv(key, value)
    return {**function_env, **PRESET}


def place(admin: Admin) -> None:
    """The cluster, its namespace, and the placement-adapter's decision as gcp-hcp documents it."""
    seed_ready_cluster(admin, CID)
    admin.seed_status(
        CID,
        "placement-adapter",
        {
            "data": {
                "managementClusterName": MANAGEMENT_CLUSTER.rsplit("/", 1)[1],
                "managementClusterNamespace": NAMESPACE,
                "baseDomain": "a1b2.gcp-hcp.devshift.net",
            }
        },
    )


def test_a_cluster_placed_by_short_name_reconciles_end_to_end(
    hcp_env: dict[str, str], admin: Admin, world: Any
) -> None:
    place(admin)
    outcome = Adapter.from_environment().handle(eventarc_attributes(), pubsub_envelope(sentinel_event(CID, 1)))
    assert outcome.result == "applied", outcome
    assert world.kubernetes.get_secret(NAMESPACE, f"{CID}-pull-secret") is not None
    report = [r for r in admin.reports() if r["cluster_id"] == CID][-1]
    assert report["body"]["adapter"] == "pull-secret-adapter"
    assert report["body"]["data"]["management_cluster"] == MANAGEMENT_CLUSTER
