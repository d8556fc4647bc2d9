"""Pure decisions of delivery.kubesecret: what counts as a change, which refusals mean what, which policy will do."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from pullsecret.delivery.direct import kubesecret
from pullsecret.delivery.direct.kubesecret import DesiredSecret
from pullsecret.delivery.direct.settings import POLICY_NAME
from pullsecret.model.names import kube_label_value

SA = "hf-pullsecret-run@p.iam.gserviceaccount.com"
DESIRED = DesiredSecret(
    namespace="clusters-a",
    name="a-pull-secret",
    content=b'{"auths":{}}',
    fingerprint="f" * 64,
    generation=3,
    source_version="projects/1/secrets/s/versions/2",
    labels={"managed-by": "hyperfleet", "adapter": "pullsecret"},
    created_by=SA,
)


def live() -> dict[str, Any]:
    return DESIRED.manifest("2026-01-01T00:00:00Z")


def test_only_the_fields_the_adapter_owns_are_compared() -> None:
    assert not kubesecret.differs(live(), DESIRED)
    theirs = live()
    theirs["data"]["note"] = "eA=="  # a key of someone else's
    theirs["metadata"]["labels"]["team"] = "x"
    theirs["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = "{}"
    assert not kubesecret.differs(theirs, DESIRED)
    for change in (
        lambda s: s["data"].__setitem__(".dockerconfigjson", "e30="),
        lambda s: s["metadata"]["labels"].pop("adapter"),
        lambda s: s["metadata"]["annotations"].__setitem__(kubesecret.A_GENERATION, "2"),
        lambda s: s["metadata"]["annotations"].pop(kubesecret.A_CREATED_AT),
        lambda s: s.__setitem__("type", "Opaque"),
    ):
        changed = live()
        change(changed)
        assert kubesecret.differs(changed, DESIRED)


def _with_owners(*entries: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    secret = live()
    secret["metadata"]["managedFields"] = [
        {"manager": m, "operation": op, "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": f}
        for m, op, f in entries
    ]
    return secret


OURS = {"hf", "hf-probe"}
OUR_DATA = {"f:data": {".": {}, "f:.dockerconfigjson": {}}, "f:type": {}}


def test_force_is_decided_by_who_owns_the_fields_we_apply() -> None:
    body = DESIRED.manifest("2026-01-01T00:00:00Z")
    # Our create's Update entry and our Apply entry: only our own name, whatever the operation.
    assert kubesecret.only_ours_own(_with_owners(("hf", "Update", OUR_DATA), ("hf", "Apply", OUR_DATA)), body, OURS)
    # The probe's dry-run entry is ours too.
    probe = {"f:metadata": {"f:labels": {"f:managed-by": {}}}, "f:type": {}}
    assert kubesecret.only_ours_own(_with_owners(("hf", "Update", OUR_DATA), ("hf-probe", "Apply", probe)), body, OURS)
    # Another manager on a field of someone else's (not in our apply) does not matter.
    note = {"f:data": {"f:note": {}}}
    assert kubesecret.only_ours_own(
        _with_owners(("hf", "Update", OUR_DATA), ("kubectl-edit", "Update", note)), body, OURS
    )
    # Another manager on a field we apply: no force, the conflict decides as before.
    for theirs in (
        {"f:data": {"f:.dockerconfigjson": {}}},
        {"f:type": {}},
        {"f:metadata": {"f:annotations": {"f:" + kubesecret.A_GENERATION: {}}}},
        {"f:metadata": {"f:labels": {"f:adapter": {}}}},
    ):
        owned = _with_owners(("hf", "Update", OUR_DATA), ("kubectl-edit", "Update", theirs))
        assert not kubesecret.only_ours_own(owned, body, OURS), theirs
    # Nothing to judge by: no force.
    assert not kubesecret.only_ours_own(live(), body, OURS)
    assert not kubesecret.only_ours_own(_with_owners(), body, OURS)


def _api_exception(status: int, body: dict[str, Any]) -> ApiException:
    exc = ApiException(status=status, reason="x")
    exc.body = json.dumps(body)
    return exc


def test_policy_denials_are_recognised_by_policy_name_and_reason() -> None:
    message = (
        "secrets \"a\" is forbidden: ValidatingAdmissionPolicy 'hyperfleet-pullsecret-adapter-scope' with binding "
        "'hyperfleet-pullsecret-adapter-scope' denied request: OwnershipConflict: the pull-secret adapter may only ..."
    )
    denied = kubesecret.policy_denial(
        _api_exception(403, {"message": message, "reason": "Forbidden"}), policy_name=POLICY_NAME
    )
    assert denied is not None and denied[0] == "OwnershipConflict"
    other_policy = message.replace("hyperfleet-pullsecret-adapter-scope", "someone-elses", 1)
    assert kubesecret.policy_denial(_api_exception(403, {"message": other_policy}), policy_name=POLICY_NAME) is None
    rbac = 'secrets "a" is forbidden: User "u" cannot get resource "secrets" in API group "" in the namespace "n"'
    assert kubesecret.policy_denial(_api_exception(403, {"message": rbac}), policy_name=POLICY_NAME) is None
    # Another instance's policy on the same cluster (issue 51, item 4): its denials are not this instance's to explain.
    stg = POLICY_NAME + "-stg"
    theirs = _api_exception(403, {"message": message.replace(POLICY_NAME, stg)})
    assert kubesecret.policy_denial(theirs, policy_name=POLICY_NAME) is None
    denied = kubesecret.policy_denial(theirs, policy_name=stg)
    assert denied is not None and denied[0] == "OwnershipConflict" and f"Policy '{stg}' with" in denied[1]


@pytest.mark.parametrize(
    ("value", "label"),
    [
        ("cls-abc123", "cls-abc123"),
        ("My Cluster/prod", "My-Cluster-prod"),
        ("-._edge_.-", "edge"),  # alphanumeric at both ends
        ("a" * 70, "a" * 63),
        ("a" * 62 + " b", "a" * 62),  # cut at 63, then the trailing "-" stripped
        ("émoji✓", "moji"),
    ],
)
def test_label_value(value: str, label: str) -> None:
    assert kube_label_value(value) == label


def test_probe_manifest_applies_only_our_label_and_type() -> None:
    assert kubesecret.probe_manifest("clusters-a", "a-pull-secret") == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "a-pull-secret", "namespace": "clusters-a", "labels": {"managed-by": "hyperfleet"}},
        "type": "kubernetes.io/dockerconfigjson",
    }


def _invalid(*causes: Any) -> ApiException:
    return _api_exception(422, {"kind": "Status", "reason": "Invalid", "details": {"causes": list(causes)}})


DATA_REQUIRED = {"field": "data[.dockerconfigjson]", "reason": "FieldValueRequired", "message": "Required value"}


def test_a_dry_run_create_refused_only_for_missing_data_means_absent() -> None:
    assert kubesecret.would_create_without_data(_invalid(DATA_REQUIRED))
    assert kubesecret.would_create_without_data(_invalid(DATA_REQUIRED, dict(DATA_REQUIRED)))


@pytest.mark.parametrize(
    "exc",
    [
        _invalid(),  # no cause
        _invalid(DATA_REQUIRED, {"field": "type", "reason": "FieldValueInvalid"}),  # another type: refused for it too
        _invalid({**DATA_REQUIRED, "field": "data[other]"}),
        _invalid({**DATA_REQUIRED, "reason": "FieldValueInvalid"}),
        _invalid("not an object"),
        _api_exception(422, {"reason": "Invalid", "details": "not an object"}),
        _api_exception(409, {"reason": "Invalid", "details": {"causes": [DATA_REQUIRED]}}),
        _api_exception(422, {"reason": "Conflict", "details": {"causes": [DATA_REQUIRED]}}),
    ],
)
def test_other_refusals_do_not_mean_absent(exc: ApiException) -> None:
    assert not kubesecret.would_create_without_data(exc)


def test_a_field_manager_conflict_is_recognised() -> None:
    conflict = {"type": "FieldManagerConflict", "reason": "FieldManagerConflict", "field": ".data"}
    assert kubesecret.field_conflict(_api_exception(409, {"reason": "Conflict", "details": {"causes": [conflict]}}))
    other = {"reason": "FieldValueInvalid", "field": ".data"}
    assert not kubesecret.field_conflict(_api_exception(409, {"details": {"causes": [other, "x"]}}))
    assert not kubesecret.field_conflict(_api_exception(409, {"details": "x"}))
    assert not kubesecret.field_conflict(_api_exception(409, {}))
    unreadable = ApiException(status=409, reason="Conflict")
    unreadable.body = "not json"
    assert not kubesecret.field_conflict(unreadable)


# -- the exact Secret the adapter writes, and the edges of each decision --------------------------------------
def test_the_manifest_is_exactly_our_secret() -> None:
    desired = DesiredSecret(**{**DESIRED.__dict__, "content": b'{"auths":{"q.io":{}}}', "lineage": '{"v":1}'})
    assert desired.manifest("2026-01-01T00:00:00Z", resource_version="41", kept_lineage="old") == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "a-pull-secret",
            "namespace": "clusters-a",
            "labels": {"managed-by": "hyperfleet", "adapter": "pullsecret"},
            "annotations": {
                "hyperfleet.io/gcp-secret-path": "projects/1/secrets/s/versions/2",
                "hyperfleet.io/created-by": SA,
                "hyperfleet.io/fingerprint": "f" * 64,
                "hyperfleet.io/generation": "3",
                "hyperfleet.io/lineage": '{"v":1}',  # this event's lineage, not the kept one
                "hyperfleet.io/created-at": "2026-01-01T00:00:00Z",
            },
            "resourceVersion": "41",
        },
        "type": "kubernetes.io/dockerconfigjson",
        "data": {".dockerconfigjson": "eyJhdXRocyI6eyJxLmlvIjp7fX19"},
    }


def test_the_manifest_keeps_the_live_lineage_when_this_event_computed_none() -> None:
    kept = DESIRED.manifest("t", kept_lineage='{"old":1}')
    assert kept["metadata"]["annotations"][kubesecret.A_LINEAGE] == '{"old":1}'
    assert "resourceVersion" not in kept["metadata"]
    assert kubesecret.A_LINEAGE not in DESIRED.manifest("t")["metadata"]["annotations"]
    assert kubesecret.A_LINEAGE not in DESIRED.annotations()
    labels = DESIRED.manifest("t")["metadata"]["labels"]
    labels["x"] = "y"  # a copy: the desired labels are not changed through the manifest
    assert DESIRED.labels == {"managed-by": "hyperfleet", "adapter": "pullsecret"}


@pytest.mark.parametrize(
    ("annotations", "generation"),
    [
        ({kubesecret.A_GENERATION: "7"}, 7),
        ({kubesecret.A_GENERATION: "seven"}, 0),
        ({kubesecret.A_GENERATION: ""}, 0),
        ({}, 0),
    ],
)
def test_the_recorded_generation_of_the_live_secret(annotations: dict[str, str], generation: int) -> None:
    assert kubesecret.Probed({"metadata": {"annotations": annotations}}).recorded_generation == generation
    assert kubesecret.Probed(None).recorded_generation == 0
    assert kubesecret.Probed({"metadata": None}).recorded_generation == 0


@pytest.mark.parametrize(("value", "label"), [("clusterX", "clusterX"), ("X-x-X", "X-x-X")])
def test_label_value_strips_only_separators_at_the_ends(value: str, label: str) -> None:
    assert kube_label_value(value) == label


def test_the_paths_an_apply_sets_and_a_manager_owns() -> None:
    assert kubesecret._applied_paths({"metadata": {}}) == set()
    assert kubesecret._applied_paths(kubesecret.probe_manifest("n", "s")) == {
        ("type",),
        ("metadata", "labels", "managed-by"),
    }
    assert kubesecret._owned_paths(None) == set()
    assert kubesecret._owned_paths(["f:data"]) == set()
    assert kubesecret._owned_paths({"f:data": {"f:k": {}, ".": {}}, "k:x": {}}) == {("data",), ("data", "k")}


def test_an_unreadable_managed_fields_entry_means_no_force() -> None:
    secret = _with_owners(("hf", "Apply", OUR_DATA))
    secret["metadata"]["managedFields"].append("not an entry")
    assert not kubesecret.only_ours_own(secret, DESIRED.manifest("t"), OURS)


@pytest.mark.parametrize("body", [None, "", "not json", "[1]", '"text"', '{"message": 5}', "{}"])
def test_refusals_without_a_readable_status_are_no_decision(body: str | None) -> None:
    exc = ApiException(status=422, reason="Invalid")
    exc.body = body
    assert kubesecret.policy_denial(exc, policy_name=POLICY_NAME) is None
    assert not kubesecret.would_create_without_data(exc)
    assert not kubesecret.field_conflict(exc)


def test_a_policy_denial_message_is_cut_at_400_characters_from_the_policy_name() -> None:
    message = (
        "admission webhook: ValidatingAdmissionPolicy 'hyperfleet-pullsecret-adapter-scope' with binding 'b' "
        "denied request: StaleGeneration: " + "x" * 500
    )
    reason, text = kubesecret.policy_denial(_api_exception(403, {"message": message}), policy_name=POLICY_NAME)  # type: ignore[misc]
    assert reason == "StaleGeneration"
    assert text == message[len("admission webhook: ") :][:400] and len(text) == 400
    assert kubesecret.policy_denial(ValueError(message), policy_name=POLICY_NAME) is None  # not an API refusal
