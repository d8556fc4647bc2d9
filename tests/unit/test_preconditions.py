"""The decision: act, wait, delete, or a terminal problem — from the cluster and adapter statuses."""

from __future__ import annotations

from typing import Any

import pytest

from pullsecret.config import load
from pullsecret.preconditions import Act, Deleting, InvalidCluster, InvalidPlacement, NotMet, evaluate

SETTINGS = load(
    {
        "HYPERFLEET_API_URL": "http://h",
        "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest",
        "MANAGEMENT_CLUSTER": "projects/p/locations/l/clusters/m",
    }
)


def cluster(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "c1",
        "name": "c1",
        "generation": 3,
        "spec": {"platform": {"type": "gcp", "gcp": {"projectID": "proj-one"}}},
    }
    base.update(over)
    return base


def ready(
    adapter: str, generation: int = 3, data: dict[str, Any] | None = None, available: str = "True"
) -> dict[str, Any]:
    return {
        "adapter": adapter,
        "observed_generation": generation,
        "data": data or {},
        "conditions": [{"type": "Available", "status": available}],
    }


ALL_READY = [ready("validation"), ready("dns"), ready("placement")]


def test_act_with_defaults() -> None:
    decision = evaluate(cluster(), ALL_READY, SETTINGS, cluster_id="c1")
    assert isinstance(decision, Act)
    assert decision.project_id == "proj-one"
    assert decision.placement.namespace == "clusters-c1"
    assert decision.placement.management_cluster == "projects/p/locations/l/clusters/m"


def test_placement_data_wins_over_defaults_in_both_casings() -> None:
    for key in ("managementCluster", "management_cluster"):
        statuses = [
            *ALL_READY[:2],
            ready("placement", data={key: "projects/q/locations/x/clusters/y", "namespace": "clusters-other"}),
        ]
        decision = evaluate(cluster(), statuses, SETTINGS, cluster_id="c1")
        assert isinstance(decision, Act)
        assert decision.placement.management_cluster == "projects/q/locations/x/clusters/y"
        assert decision.placement.namespace == "clusters-other"


def test_legacy_layout_is_read() -> None:
    legacy = cluster(spec={"provider": "gcp", "gcp": {"projectId": "legacy-proj"}})
    decision = evaluate(legacy, ALL_READY, SETTINGS, cluster_id="c1")
    assert isinstance(decision, Act) and decision.project_id == "legacy-proj"


@pytest.mark.parametrize(
    ("statuses", "fragment"),
    [
        ([], "validation (no status)"),
        ([ready("validation", 2), ready("dns"), ready("placement")], "validation (at generation 2, cluster at 3)"),
        ([ready("validation"), ready("dns", available="False"), ready("placement")], "dns (Available=False)"),
    ],
)
def test_not_met_names_the_adapter(statuses: list[dict[str, Any]], fragment: str) -> None:
    decision = evaluate(cluster(), statuses, SETTINGS, cluster_id="c1")
    assert isinstance(decision, NotMet)
    assert fragment in decision.message


def test_missing_platform_or_project_is_not_met() -> None:
    assert isinstance(evaluate(cluster(spec={}), ALL_READY, SETTINGS, cluster_id="c1"), NotMet)
    no_project = cluster(spec={"platform": {"type": "gcp", "gcp": {}}})
    assert isinstance(evaluate(no_project, ALL_READY, SETTINGS, cluster_id="c1"), NotMet)


def test_no_pull_secret_source_is_not_met() -> None:
    settings = load({"HYPERFLEET_API_URL": "http://h", "MANAGEMENT_CLUSTER": "projects/p/locations/l/clusters/m"})
    decision = evaluate(cluster(), ALL_READY, settings, cluster_id="c1")
    assert isinstance(decision, NotMet) and "no pull secret source" in decision.message


@pytest.mark.parametrize(
    ("namespace", "error"),
    [
        ("kube-system", "ForbiddenNamespace"),
        ("default", "ForbiddenNamespace"),
        ("clusters-../x", "InvalidPlacement"),
        (42, "InvalidPlacement"),
    ],
)
def test_namespaces_outside_the_pattern_are_terminal(namespace: Any, error: str) -> None:
    statuses = [*ALL_READY[:2], ready("placement", data={"namespace": namespace})]
    with pytest.raises(InvalidPlacement) as caught:
        evaluate(cluster(), statuses, SETTINGS, cluster_id="c1")
    assert caught.value.reason == error


def test_terminal_cluster_problems() -> None:
    with pytest.raises(InvalidCluster, match="generation"):
        evaluate(cluster(generation=0), ALL_READY, SETTINGS, cluster_id="c1")
    with pytest.raises(InvalidCluster, match="gcp only"):
        evaluate(cluster(spec={"platform": {"type": "aws"}}), ALL_READY, SETTINGS, cluster_id="c1")
    with pytest.raises(InvalidCluster, match="not a valid project id"):
        evaluate(
            cluster(spec={"platform": {"type": "gcp", "gcp": {"projectID": "UPPER"}}}),
            ALL_READY,
            SETTINGS,
            cluster_id="c1",
        )


def test_soft_deleted_cluster_is_never_provisioned() -> None:
    decision = evaluate(cluster(deleted_time="2026-11-21T10:00:00Z"), [], SETTINGS, cluster_id="c1")
    assert isinstance(decision, Deleting)
    assert decision.project_id == "proj-one"
