"""The decision: act, wait, delete, or a terminal problem — from the cluster and adapter statuses."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from pullsecret.configured import load
from pullsecret.errors import ConfigError
from pullsecret.model import preconditions
from pullsecret.model.dockerconfig import InvalidPullSecret
from pullsecret.model.preconditions import Act, Deleting, InvalidCluster, InvalidPlacement, NotMet, evaluate

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


# GCP HCP's preset (docs/contract.md §2): placement-adapter writes a short name, no dns adapter exists.
GCP_HCP = load(
    {
        "HYPERFLEET_API_URL": "http://h",
        "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest",
        "PRECONDITION_ADAPTERS": "placement-adapter",
        "PLACEMENT_ADAPTER": "placement-adapter",
        "MANAGEMENT_CLUSTER_TEMPLATE": "projects/hcp-region-us-c1/locations/us-central1/clusters/{name}",
    }
)
HCP_DECISION = {
    "managementClusterName": "dev-mgt-us-c1-a1b2",
    "managementClusterNamespace": "clusters-c1",
    "baseDomain": "a1b2.gcp-hcp.devshift.net",
}


def test_the_gcp_hcp_placement_shape_maps_a_short_name_to_its_gke_cluster() -> None:
    # gcp-hcp implementation-plans/adapter-placement-decision.md, "Placement Decision Output".
    decision = evaluate(cluster(), [ready("placement-adapter", data=HCP_DECISION)], GCP_HCP, cluster_id="c1")
    assert isinstance(decision, Act)
    assert decision.placement.management_cluster == (
        "projects/hcp-region-us-c1/locations/us-central1/clusters/dev-mgt-us-c1-a1b2"
    )
    assert decision.placement.namespace == "clusters-c1"


@pytest.mark.parametrize(
    ("data", "settings", "fragment"),
    [
        (HCP_DECISION, SETTINGS, "MANAGEMENT_CLUSTER_TEMPLATE"),  # a short name and no template: named, not guessed
        ({**HCP_DECISION, "managementClusterName": "Dev_MGT"}, GCP_HCP, "not a GKE cluster name"),
        ({**HCP_DECISION, "managementClusterName": "x/../../y"}, GCP_HCP, "not a GKE cluster name"),
        ({**HCP_DECISION, "managementCluster": "projects/q/locations/l/clusters/other"}, GCP_HCP, "disagree"),
        ({**HCP_DECISION, "managementClusterNamespace": "kube-system"}, GCP_HCP, "MANAGEMENT_NAMESPACE_PATTERN"),
    ],
)
def test_a_bad_gcp_hcp_placement_is_terminal(data: dict[str, Any], settings: Any, fragment: str) -> None:
    statuses = [ready("placement-adapter", data=data), *ALL_READY]
    adapters = {"PRECONDITION_ADAPTERS": "placement-adapter", "PLACEMENT_ADAPTER": "placement-adapter"}
    settings = replace(
        settings, **{k.lower(): (v,) if k == "PRECONDITION_ADAPTERS" else v for k, v in adapters.items()}
    )
    with pytest.raises(InvalidPlacement, match=fragment):
        evaluate(cluster(), statuses, settings, cluster_id="c1")


@pytest.mark.parametrize(
    "template",
    ["projects/p/locations/l/clusters/mgmt", "projects/p/locations/l/clusters/{name}-x", "{name}", "p/{cluster_id}"],
)
def test_a_malformed_management_cluster_template_is_refused(template: str) -> None:
    with pytest.raises(ConfigError, match=r"^MANAGEMENT_CLUSTER_TEMPLATE"):
        load(
            {
                "HYPERFLEET_API_URL": "http://h",
                "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest",
                "MANAGEMENT_CLUSTER_TEMPLATE": template,
            }
        )


def gcp_spec(**extra: Any) -> dict[str, Any]:
    return {"platform": {"type": "gcp", "gcp": {"projectID": "proj-one"}}, **extra}


def test_the_clusters_own_pull_secret_is_carried_into_the_decision() -> None:
    own = {"auths": {"quay.io": {"auth": "dTpw"}}}
    for data in (own, '{"auths": {}}'):  # an object, or JSON text: parsed later, by dockerconfig
        decision = evaluate(cluster(spec=gcp_spec(pullSecret={"data": data})), ALL_READY, SETTINGS, cluster_id="c1")
        assert isinstance(decision, Act)
        assert decision.cluster_pull_secret == data
    no_data = evaluate(cluster(spec=gcp_spec(pullSecret={})), ALL_READY, SETTINGS, cluster_id="c1")
    assert isinstance(no_data, Act) and no_data.cluster_pull_secret is None
    absent = evaluate(cluster(), ALL_READY, SETTINGS, cluster_id="c1")
    assert isinstance(absent, Act) and absent.cluster_pull_secret is None


def test_a_clusters_pull_secret_alone_is_a_source() -> None:
    settings = load(
        {
            "HYPERFLEET_API_URL": "http://h",
            "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest",
            "MANAGEMENT_CLUSTER": "projects/p/locations/l/clusters/m",
        }
    )
    own = {"auths": {"quay.io": {"auth": "dTpw"}}}
    decision = evaluate(cluster(spec=gcp_spec(pullSecret={"data": own})), ALL_READY, settings, cluster_id="c1")
    assert isinstance(decision, Act) and decision.cluster_pull_secret == own


@pytest.mark.parametrize("pull_secret", ["text", ["a"], 0])
def test_a_pull_secret_that_is_not_an_object_is_refused(pull_secret: Any) -> None:
    with pytest.raises(InvalidPullSecret, match=r"spec\.pullSecret must be an object"):
        evaluate(cluster(spec=gcp_spec(pullSecret=pull_secret)), ALL_READY, SETTINGS, cluster_id="c1")


def test_generation_one_is_valid_and_others_are_not() -> None:
    one = [ready("validation", 1), ready("dns", 1), ready("placement", 1)]
    decision = evaluate(cluster(generation=1), one, SETTINGS, cluster_id="c1")
    assert isinstance(decision, Act) and decision.generation == 1
    for bad in (-1, True, "3", None, 1.0):
        with pytest.raises(InvalidCluster, match="generation"):
            evaluate(cluster(generation=bad), ALL_READY, SETTINGS, cluster_id="c1")


def test_a_namespace_of_63_characters_is_valid_and_64_is_not() -> None:
    settings = load(
        {
            "HYPERFLEET_API_URL": "http://h",
            "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest",
            "MANAGEMENT_CLUSTER": "projects/p/locations/l/clusters/m",
            "MANAGEMENT_NAMESPACE_PATTERN": "^clusters-[a-z0-9-]+$",
        }
    )
    for length, valid in ((63, True), (64, False)):
        namespace = "clusters-" + "a" * (length - len("clusters-"))
        statuses = [*ALL_READY[:2], ready("placement", data={"namespace": namespace})]
        if valid:
            decision = evaluate(cluster(), statuses, settings, cluster_id="c1")
            assert isinstance(decision, Act) and decision.placement.namespace == namespace
        else:
            with pytest.raises(InvalidPlacement, match="not a valid Kubernetes namespace name"):
                evaluate(cluster(), statuses, settings, cluster_id="c1")


def test_a_status_without_available_is_waited_for() -> None:
    no_available = {**ready("dns"), "conditions": [{"type": "Health", "status": "True"}]}
    not_a_list = {**ready("validation"), "conditions": "Available"}
    decision = evaluate(cluster(), [not_a_list, no_available, ready("placement")], SETTINGS, cluster_id="c1")
    assert isinstance(decision, NotMet)
    assert decision.message == "waiting for adapters: validation (no status), dns (no status)"


def test_waiting_names_the_generation_and_the_available_status() -> None:
    statuses = [ready("validation", generation=2), ready("dns", available="False"), ready("placement")]
    decision = evaluate(cluster(), statuses, SETTINGS, cluster_id="c1")
    assert isinstance(decision, NotMet)
    assert decision.message == (
        "waiting for adapters: validation (at generation 2, cluster at 3), dns (Available=False)"
    )


def test_project_id_and_platform_in_their_older_layouts() -> None:
    for gcp in ({"projectId": "proj-two"}, {"projectID": "proj-two"}):
        legacy = cluster(spec={"provider": {"type": "GCP"}, "gcp": gcp})
        decision = evaluate(legacy, ALL_READY, SETTINGS, cluster_id="c1")
        assert isinstance(decision, Act) and decision.project_id == "proj-two"
    empty = cluster(spec={"provider": "gcp", "gcp": {"projectId": ""}})
    assert isinstance(evaluate(empty, ALL_READY, SETTINGS, cluster_id="c1"), NotMet)


def test_exact_messages_of_terminal_and_waiting_decisions() -> None:
    with pytest.raises(InvalidCluster) as caught:
        evaluate(cluster(generation=0), ALL_READY, SETTINGS, cluster_id="c1")
    assert caught.value.message == "the cluster has no valid generation (an integer >= 1)"
    no_platform = evaluate(cluster(spec={}), ALL_READY, SETTINGS, cluster_id="c1")
    assert no_platform == NotMet(3, "the cluster spec names no platform (spec.platform.type)")
    settings = load({"HYPERFLEET_API_URL": "http://h", "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest"})
    with pytest.raises(InvalidPlacement) as unplaced:
        evaluate(cluster(), ALL_READY, settings, cluster_id="c1")
    assert unplaced.value.message == (
        "no management cluster: the placement data names none and MANAGEMENT_CLUSTER is not set"
    )


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"managementCluster": "mgmt-1"},
            "the management cluster must be a GKE name projects/P/locations/L/clusters/C",
        ),
        ({"managementCluster": 7}, "the management cluster must be a GKE name projects/P/locations/L/clusters/C"),
        (
            {"managementCluster": "projects/p/locations/l/clusters/m\n"},
            "the management cluster must be a GKE name projects/P/locations/L/clusters/C",
        ),
        ({"namespace": ["x"]}, "the placement data's namespace is not a string"),
        ({"namespace": "clusters-" + "a" * 80}, "namespace '" + ("clusters-" + "a" * 80)[:80] + "' is not a valid"),
    ],
)
def test_placement_problems_are_named(data: dict[str, Any], message: str) -> None:
    statuses = [*ALL_READY[:2], ready("placement", data=data)]
    with pytest.raises(InvalidPlacement) as caught:
        evaluate(cluster(), statuses, SETTINGS, cluster_id="c1")
    assert caught.value.message.startswith(message)


def test_placement_data_of_null_means_defaults_and_of_another_type_is_refused() -> None:
    null = {**ready("placement"), "data": None}
    decision = evaluate(cluster(), [*ALL_READY[:2], null], SETTINGS, cluster_id="c1")
    assert isinstance(decision, Act) and decision.placement.namespace == "clusters-c1"
    with pytest.raises(InvalidPlacement, match="adapter's data is not an object"):
        evaluate(cluster(), [*ALL_READY[:2], {**ready("placement"), "data": []}], SETTINGS, cluster_id="c1")


def test_deleting_keeps_the_placement_when_known_and_none_when_broken() -> None:
    deleted = cluster(deleted_time="2026-11-21T10:00:00Z")
    decision = evaluate(deleted, ALL_READY, SETTINGS, cluster_id="c1")
    assert decision == Deleting(
        generation=3,
        project_id="proj-one",
        placement=evaluate(cluster(), ALL_READY, SETTINGS, cluster_id="c1").placement,
    )
    broken = [*ALL_READY[:2], ready("placement", data={"namespace": "kube-system"})]
    assert evaluate(deleted, broken, SETTINGS, cluster_id="c1") == Deleting(3, "proj-one", None)


def test_statuses_that_are_not_objects_are_ignored() -> None:
    decision = evaluate(cluster(), ["x", {"adapter": 5}, *ALL_READY], SETTINGS, cluster_id="c1")
    assert isinstance(decision, Act)


def test_a_short_management_cluster_name_maps_through_the_template_with_exact_refusals() -> None:
    from pullsecret.model.preconditions import management_cluster_for

    templated = replace(SETTINGS, management_cluster_template="projects/p/locations/l/clusters/{name}")
    assert (
        management_cluster_for("dev-mgt-us-c1-a1b2", templated) == "projects/p/locations/l/clusters/dev-mgt-us-c1-a1b2"
    )
    assert management_cluster_for("a", templated) == "projects/p/locations/l/clusters/a"
    not_a_name = (
        "the placement data's managementClusterName is not a GKE cluster name "
        "(1-40 lowercase letters, digits and hyphens, starting with a letter)"
    )
    for bad in (None, 7, "", "1abc", "abc-", "Abc", "a" * 41, "a/b", "abc\n"):
        with pytest.raises(InvalidPlacement) as refused:
            management_cluster_for(bad, templated)
        assert str(refused.value) == not_a_name
    assert management_cluster_for("a" * 40, templated).endswith("/" + "a" * 40)
    with pytest.raises(InvalidPlacement) as refused:
        management_cluster_for("mgt-1", replace(SETTINGS, management_cluster_template=None))
    assert str(refused.value) == (
        "the placement names management cluster 'mgt-1' by its short name and "
        "MANAGEMENT_CLUSTER_TEMPLATE (projects/P/locations/L/clusters/{name}) is not set"
    )


ALLOWLISTED = replace(SETTINGS, allowed_secret_projects=("proj-one", "tenant-*"))


def test_a_project_outside_allowed_secret_projects_is_a_terminal_refusal() -> None:
    assert evaluate(cluster(), ALL_READY, ALLOWLISTED, cluster_id="c1").project_id == "proj-one"  # type: ignore[union-attr]
    other = cluster(spec={"platform": {"type": "gcp", "gcp": {"projectID": "victim-one"}}})
    with pytest.raises(InvalidCluster, match="not among ALLOWED_SECRET_PROJECTS") as refused:
        evaluate(other, ALL_READY, ALLOWLISTED, cluster_id="c1")
    assert refused.value.reason == "ForbiddenSecretProject"
    # Refused before the preconditions are waited for: nothing later reads the project.
    with pytest.raises(InvalidCluster):
        evaluate(other, [], ALLOWLISTED, cluster_id="c1")
    # Without the list any valid project goes (the adapter warned at start); a pinned project ignores the spec.
    assert evaluate(other, ALL_READY, SETTINGS, cluster_id="c1").project_id == "victim-one"  # type: ignore[union-attr]
    pinned = replace(ALLOWLISTED, secret_project_id="proj-one")
    assert evaluate(other, ALL_READY, pinned, cluster_id="c1").project_id == "proj-one"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("project", "reason"),
    [
        ("victim-one", "ForbiddenSecretProject"),
        ("a/b/../secrets/x\n", "InvalidCluster"),
        ("Proj-One", "InvalidCluster"),
    ],
)
def test_a_deletion_never_carries_a_project_it_may_not_use(project: str, reason: str) -> None:
    deleted = cluster(
        spec={"platform": {"type": "gcp", "gcp": {"projectID": project}}}, deleted_time="2026-01-01T00:00:00Z"
    )
    decision = evaluate(deleted, ALL_READY, ALLOWLISTED, cluster_id="c1")
    assert isinstance(decision, Deleting)
    assert decision.project_id is None and decision.placement is not None
    assert decision.project_refused is not None and decision.project_refused.reason == reason
    assert "\n" not in decision.project_refused.message
    fine = evaluate(cluster(deleted_time="2026-01-01T00:00:00Z"), [], ALLOWLISTED, cluster_id="c1")
    assert fine == Deleting(3, "proj-one", fine.placement)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("gcp", "region"),
    [
        ({"projectID": "proj-one", "region": "us-central1"}, "us-central1"),
        ({"projectID": "proj-one", "region": "europe-west10"}, "europe-west10"),
        ({"projectID": "proj-one", "region": "me-central2"}, "me-central2"),
        ({"projectID": "proj-one"}, None),
        ({"projectID": "proj-one", "region": ""}, None),
        ({"projectID": "proj-one", "region": 7}, None),
        ({"projectID": "proj-one", "region": "US-CENTRAL1"}, None),
        ({"projectID": "proj-one", "region": "us-central1-a"}, None),  # a zone, not a region
        ({"projectID": "proj-one", "region": "us-central"}, None),
        ({"projectID": "proj-one", "region": "us-central123"}, None),
        ({"projectID": "proj-one", "region": "u-central1"}, None),
        ({"projectID": "proj-one", "region": "us-c1"}, None),
        ({"projectID": "proj-one", "region": "usaaaaaaaaaaaaaaa-central1"}, None),  # 17 letters
        ({"projectID": "proj-one", "region": "us-" + "c" * 17 + "1"}, None),  # 17 letters
        ({"projectID": "proj-one", "region": "u" * 16 + "-" + "c" * 16 + "1"}, "u" * 16 + "-" + "c" * 16 + "1"),
        ({"projectID": "proj-one", "region": "us-central1\n"}, None),
        ({"projectID": "proj-one", "region": " us-central1"}, None),
        ({"projectID": "proj-one", "region": "us/central1"}, None),
    ],
)
def test_the_region_the_pull_secret_service_needs_is_a_gcp_region_name_or_none(
    gcp: dict[str, Any], region: str | None
) -> None:
    decision = evaluate(cluster(spec={"platform": {"type": "gcp", "gcp": gcp}}), ALL_READY, SETTINGS, cluster_id="c1")
    assert isinstance(decision, Act) and decision.region == region
    assert preconditions.region_of(cluster(spec={"platform": {"type": "gcp", "gcp": gcp}})) == region


@pytest.mark.parametrize(
    "spec", [None, "text", {}, {"platform": None}, {"platform": {"gcp": None}}, {"platform": {"gcp": "us-central1"}}]
)
def test_no_region_where_the_spec_has_none(spec: Any) -> None:
    assert preconditions.region_of({"spec": spec}) is None
    assert preconditions.region_of({}) is None


def test_a_management_cluster_outside_the_allow_list_is_refused_by_name_and_one_inside_is_used() -> None:
    # Another component's status must not decide where the platform's credentials are written (docs/trust.md).
    allowed = replace(SETTINGS, allowed_management_clusters=("projects/p/locations/*/clusters/m",))
    inside = "projects/p/locations/europe-west1/clusters/m"
    decision = evaluate(
        cluster(), [*ALL_READY[:2], ready("placement", data={"managementCluster": inside})], allowed, cluster_id="c1"
    )
    assert isinstance(decision, Act) and decision.placement.management_cluster == inside
    outside = "projects/p/locations/l/clusters/" + "x" * 250  # a long name is cut to 200 characters in the message
    with pytest.raises(InvalidPlacement) as refused:
        evaluate(
            cluster(),
            [*ALL_READY[:2], ready("placement", data={"managementCluster": outside})],
            allowed,
            cluster_id="c1",
        )
    assert refused.value.reason == "ForbiddenManagementCluster"
    assert refused.value.message == (
        f"management cluster {outside[:200]!r} is not among ALLOWED_MANAGEMENT_CLUSTERS; "
        "refusing to write the pull secret there"
    )


def test_an_unknown_precondition_adapter_is_named_with_the_known_name_it_is_closest_to() -> None:
    assert preconditions.unknown_adapters(("validation", "dns", "placement")) is None
    assert preconditions.unknown_adapters(("placment", "dns", "quota")) == (
        "PRECONDITION_ADAPTERS names placment (did you mean placement?), quota, not one of the adapters HyperFleet "
        "runs by default (validation, dns, placement): a misspelt name is waited for forever; the doctor checks "
        "them against the statuses HyperFleet holds"
    )
    # Known names are the caller's: a name close to one of them is offered, one far from all is named alone.
    assert preconditions.unknown_adapters(("dsn",), known=("dns",)) == (
        "PRECONDITION_ADAPTERS names dsn, not one of the adapters HyperFleet runs by default (dns): a misspelt "
        "name is waited for forever; the doctor checks them against the statuses HyperFleet holds"
    )
    assert "did you mean dns?" in (preconditions.unknown_adapters(("dnss",), known=("dns",)) or "")
