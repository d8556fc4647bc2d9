"""The project's RBAC and ValidatingAdmissionPolicy, rendered as Terraform renders them, enforced by the emulator.

Driven by the official client over HTTPS as the runtime identity: what RBAC refuses, what each validation of
the policy allows and denies (one allowing and one denying case each), and the Status bodies the real API
server sends (admission.NewForbidden + the policy dispatcher's message, RBAC's Forbidden).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from emulators.faults import FaultBook
from emulators.kubernetes import KubernetesEmulator
from emulators.kubernetes.manifests import render
from tests.kubernetes_clients import CONFIG, NAME, NS, OTHER, OTHER_TOKEN, OURS, SA, TOKEN, Api, apply, make_api, secret

POLICY = "hyperfleet-pullsecret-adapter-scope"
PREFIX = f"ValidatingAdmissionPolicy '{POLICY}' with binding '{POLICY}' denied request: "


@pytest.fixture(scope="module")
def server() -> Iterator[KubernetesEmulator]:
    tokens = {TOKEN: SA, OTHER_TOKEN: OTHER}
    emu = KubernetesEmulator(FaultBook(), authenticate=tokens.get)
    emu.start()
    yield emu
    emu.stop()


@pytest.fixture
def emu(server: KubernetesEmulator) -> KubernetesEmulator:
    server.reset()
    for ns in (NS, "kube-system"):
        server.add_namespace(ns)
    server.apply_manifests(render(SA))
    server.grant(OTHER)  # someone else with every right: the policy does not concern them
    return server


@pytest.fixture
def api(emu: KubernetesEmulator, tmp_path: Path) -> Api:
    return client.CoreV1Api(make_api(emu, tmp_path, TOKEN))


@pytest.fixture
def other(emu: KubernetesEmulator, tmp_path: Path) -> Api:
    return client.CoreV1Api(make_api(emu, tmp_path, OTHER_TOKEN))


def denied(err: pytest.ExceptionInfo[ApiException], reason_word: str) -> dict[str, Any]:
    """The Status of a policy denial, checked against the real server's shape."""
    assert err.value.status == 403
    status: dict[str, Any] = json.loads(err.value.body or "{}")
    assert status["reason"] == "Forbidden" and status["code"] == 403
    assert status["message"].startswith(f'secrets "{NAME}" is forbidden: {PREFIX}{reason_word}: '), status
    assert status["details"]["name"] == NAME and status["details"]["kind"] == "secrets"
    assert status["details"]["causes"] == [{"message": status["message"].split("is forbidden: ", 1)[1]}]
    return status


# -- RBAC --------------------------------------------------------------------------------------------------------
def test_the_runtime_identity_cannot_read_any_secret(api: Api, other: Api) -> None:
    other.create_namespaced_secret(NS, secret(OURS))  # one of "ours", even
    other.create_namespaced_secret("kube-system", {**secret(), "metadata": {"name": "admin-kubeconfig"}})
    attempts = [
        (lambda: api.read_namespaced_secret(NAME, NS), "get", f'secrets "{NAME}"', f'in the namespace "{NS}"'),
        (lambda: api.list_namespaced_secret(NS), "list", "secrets", f'in the namespace "{NS}"'),
        (api.list_secret_for_all_namespaces, "list", "secrets", "at the cluster scope"),
        (
            lambda: api.read_namespaced_secret("admin-kubeconfig", "kube-system"),
            "get",
            'secrets "admin-kubeconfig"',
            'in the namespace "kube-system"',
        ),
        (lambda: api.list_namespaced_secret(NS, watch=True), "watch", "secrets", f'in the namespace "{NS}"'),
    ]
    for call, verb, subject, where in attempts:
        with pytest.raises(ApiException) as err:
            call()
        status = json.loads(err.value.body or "{}")
        assert err.value.status == 403 and status["reason"] == "Forbidden"
        assert status["message"] == (
            f'{subject} is forbidden: User "{SA}" cannot {verb} resource "secrets" in API group ""{" " + where}'
        ), status["message"]
        assert CONFIG not in (err.value.body or "")


def test_apply_that_creates_also_needs_the_create_verb(emu: KubernetesEmulator, api: Api) -> None:
    emu.revoke(SA)
    emu.grant(SA, namespace=NS, verbs=("patch",), resources=("secrets",), api_groups=("",))
    with pytest.raises(ApiException) as err:
        apply(api, secret(OURS))
    assert err.value.status == 403
    assert 'cannot create resource "secrets"' in json.loads(err.value.body or "{}")["message"]
    assert emu.get_secret(NS, NAME) is None


def test_the_policy_and_its_binding_are_readable_by_name_only(emu: KubernetesEmulator, tmp_path: Path) -> None:
    admission = client.AdmissionregistrationV1Api(make_api(emu, tmp_path, TOKEN))
    policy = admission.read_validating_admission_policy(POLICY)
    assert policy.metadata.annotations["hyperfleet.io/policy-revision"] == "4"
    binding = admission.read_validating_admission_policy_binding(POLICY)
    assert binding.spec.policy_name == POLICY and binding.spec.validation_actions == ["Deny"]
    with pytest.raises(ApiException) as err:
        admission.list_validating_admission_policy()
    assert err.value.status == 403
    assert json.loads(err.value.body or "{}")["message"] == (
        f'validatingadmissionpolicies.admissionregistration.k8s.io is forbidden: User "{SA}" cannot list resource '
        '"validatingadmissionpolicies" in API group "admissionregistration.k8s.io" at the cluster scope'
    )


# -- the policy, one allowing and one denying case per validation --------------------------------------------------
def test_namespace_pattern(api: Api, emu: KubernetesEmulator) -> None:
    assert apply(api, secret(OURS)).metadata.namespace == NS
    with pytest.raises(ApiException) as err:
        apply(api, secret(OURS), namespace="kube-system")
    denied(err, "ForbiddenNamespace")
    assert emu.get_secret("kube-system", NAME) is None


def test_ownership_on_create(api: Api, emu: KubernetesEmulator) -> None:
    with pytest.raises(ApiException) as err:
        api.create_namespaced_secret(NS, secret({"managed-by": "someone"}))
    denied(err, "OwnershipConflict")
    assert api.create_namespaced_secret(NS, secret(OURS)).metadata.labels == OURS


def test_ownership_on_update_of_a_foreign_secret(api: Api, other: Api, emu: KubernetesEmulator) -> None:
    other.create_namespaced_secret(NS, secret())  # theirs: no label
    before = emu.get_secret(NS, NAME)
    with pytest.raises(ApiException) as err:
        apply(api, secret(OURS), force=True)  # force takes their fields; the policy still refuses
    status = denied(err, "OwnershipConflict")
    assert CONFIG not in json.dumps(status)
    assert emu.get_secret(NS, NAME) == before
    # A dry run is judged the same way, and an answer of ours never carries their data.
    with pytest.raises(ApiException) as err:
        apply(
            api,
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": NAME, "labels": OURS}},
            force=True,
            dry_run="All",
        )
    denied(err, "OwnershipConflict")
    assert all(CONFIG not in json.dumps(answer) for answer in emu.answers(SA))


def test_ownership_on_update_of_our_secret(api: Api, emu: KubernetesEmulator) -> None:
    apply(api, secret(OURS, generation="3"))
    updated = apply(
        api, {**secret(OURS, generation="3"), "data": {".dockerconfigjson": base64.b64encode(b"{}").decode()}}
    )
    assert updated.data[".dockerconfigjson"] == base64.b64encode(b"{}").decode()


def test_ownership_on_update_that_drops_our_label(api: Api) -> None:
    apply(api, secret(OURS))
    with pytest.raises(ApiException) as err:
        apply(api, secret({"managed-by": "someone"}))
    denied(err, "OwnershipConflict")


# The label migration (policy revision 3): the framework's key with this adapter's name, or the previous label.
FRAMEWORK = {"hyperfleet.io/managed-by": "pullsecret", "hyperfleet.io/cluster-id": "abc"}


def test_the_framework_label_alone_marks_our_secret(api: Api, emu: KubernetesEmulator) -> None:
    apply(api, secret(FRAMEWORK))
    apply(api, secret(FRAMEWORK, generation="4"))
    api.delete_namespaced_secret(NAME, NS)
    assert emu.get_secret(NS, NAME) is None


def test_a_secret_of_the_previous_release_moves_to_the_framework_label(api: Api, emu: KubernetesEmulator) -> None:
    apply(api, secret(OURS))  # written by the previous release: managed-by=hyperfleet only
    apply(api, secret(FRAMEWORK, generation="4"))  # rewritten with the new key alone: ours before and after
    assert emu.get_secret(NS, NAME)["metadata"]["labels"] == FRAMEWORK


@pytest.mark.parametrize("labels", [{"hyperfleet.io/managed-by": "hypershift"}, {"hyperfleet.io/managed-by": ""}])
def test_another_adapters_framework_label_is_not_ours(
    api: Api, other: Api, emu: KubernetesEmulator, labels: Any
) -> None:
    with pytest.raises(ApiException) as err:
        api.create_namespaced_secret(NS, secret(labels))
    denied(err, "OwnershipConflict")
    other.create_namespaced_secret(NS, secret(labels))
    with pytest.raises(ApiException) as err:
        api.delete_namespaced_secret(NAME, NS)
    denied(err, "OwnershipConflict")
    assert emu.get_secret(NS, NAME) is not None


def test_ownership_before_a_change_includes_the_type(api: Api, other: Api, emu: KubernetesEmulator) -> None:
    # An Opaque Secret (a kubeconfig, say) that someone labelled managed-by=hyperfleet is still not ours.
    other.create_namespaced_secret(NS, secret(OURS, type_="Opaque"))
    with pytest.raises(ApiException) as err:
        api.delete_namespaced_secret(NAME, NS)
    denied(err, "OwnershipConflict")
    assert emu.get_secret(NS, NAME) is not None


def test_ownership_on_delete(api: Api, other: Api, emu: KubernetesEmulator) -> None:
    other.create_namespaced_secret(NS, secret())
    with pytest.raises(ApiException) as err:
        api.delete_namespaced_secret(NAME, NS)
    denied(err, "OwnershipConflict")
    assert emu.get_secret(NS, NAME) is not None
    other.delete_namespaced_secret(NAME, NS)
    apply(api, secret(OURS))
    api.delete_namespaced_secret(NAME, NS)
    assert emu.get_secret(NS, NAME) is None


def test_type(api: Api, emu: KubernetesEmulator) -> None:
    with pytest.raises(ApiException) as err:
        apply(api, secret(OURS, type_="Opaque"))
    denied(err, "SecretTypeMismatch")
    assert emu.get_secret(NS, NAME) is None
    assert apply(api, secret(OURS)).type == "kubernetes.io/dockerconfigjson"


def test_generation_order(api: Api, emu: KubernetesEmulator) -> None:
    apply(api, secret(OURS, generation="5"))
    assert apply(api, secret(OURS, generation="6")).metadata.annotations["hyperfleet.io/generation"] == "6"
    assert apply(api, secret(OURS, generation="6")).metadata.annotations["hyperfleet.io/generation"] == "6"
    with pytest.raises(ApiException) as err:
        apply(api, secret(OURS, generation="5"))
    status = denied(err, "StaleGeneration")
    assert status["message"].endswith("generation 5 may not overwrite the recorded generation 6")
    # Not a number is not a generation: -1, which never outranks a recorded one.
    with pytest.raises(ApiException) as err:
        apply(api, secret(OURS, generation="6x"))
    denied(err, "StaleGeneration")
    assert emu.get_secret(NS, NAME)["metadata"]["annotations"]["hyperfleet.io/generation"] == "6"  # type: ignore[index]


def test_the_policy_concerns_the_runtime_identity_only(other: Api, emu: KubernetesEmulator) -> None:
    other.create_namespaced_secret("kube-system", secret(type_="Opaque"))
    assert emu.get_secret("kube-system", NAME) is not None


def test_without_the_binding_nothing_is_enforced(api: Api, emu: KubernetesEmulator) -> None:
    # What the function's check at first use guards against: a policy without its binding enforces nothing.
    assert emu.delete_policy("ValidatingAdmissionPolicyBinding", POLICY)
    apply(api, secret(OURS), namespace="kube-system")
    assert emu.get_secret("kube-system", NAME) is not None


def test_policy_errors_deny_under_fail(api: Api, emu: KubernetesEmulator) -> None:
    [policy] = [d for d in render(SA) if d["kind"] == "ValidatingAdmissionPolicy"]
    policy["spec"]["validations"] = [{"expression": "object.metadata.nope == 'x'"}]
    emu.put_policy(policy)
    with pytest.raises(ApiException) as err:
        apply(api, secret(OURS))
    status = json.loads(err.value.body or "{}")
    assert err.value.status == 422 and status["reason"] == "Invalid"  # no reason given: Invalid, 422
    assert status["message"].startswith(
        f"secrets \"{NAME}\" is forbidden: {PREFIX}expression 'object.metadata.nope == 'x'' resulted in error: "
    )


def test_variables_are_seen_in_order_and_not_by_match_conditions(api: Api, emu: KubernetesEmulator) -> None:
    # The evaluation shares one converted activation between a request's expressions (admission.py, _Activation):
    # each variable still sees the earlier ones, the validations see all, and a matchCondition sees none.
    [policy] = [d for d in render(SA) if d["kind"] == "ValidatingAdmissionPolicy"]
    policy["spec"]["variables"] = [
        {"name": "kind", "expression": "object.type"},
        {"name": "marked", "expression": "variables.kind + '!'"},
    ]
    policy["spec"]["validations"] = [
        {
            "expression": "variables.marked == 'x'",
            "messageExpression": "'saw ' + variables.marked",
            "reason": "Forbidden",
        }
    ]
    emu.put_policy(policy)
    with pytest.raises(ApiException) as err:
        apply(api, secret(OURS))
    assert json.loads(err.value.body or "{}")["message"].endswith(f"{PREFIX}saw kubernetes.io/dockerconfigjson!")
    policy["spec"]["matchConditions"] = [{"name": "early", "expression": "variables.kind == 'x'"}]
    emu.put_policy(policy)
    with pytest.raises(ApiException) as err:
        apply(api, secret(OURS))
    assert (
        f"{PREFIX}expression 'variables.kind == 'x'' resulted in error: "
        in json.loads(err.value.body or "{}")["message"]
    )


# -- server-side apply and field ownership, as the adapter relies on them -------------------------------------------
def test_apply_force_false_conflicts_on_a_field_another_manager_set(api: Api, other: Api) -> None:
    apply(api, secret(OURS))
    other.patch_namespaced_secret(NAME, NS, {"data": {".dockerconfigjson": base64.b64encode(b"{}").decode()}})
    with pytest.raises(ApiException) as err:
        apply(api, secret(OURS))
    status = json.loads(err.value.body or "{}")
    assert err.value.status == 409 and status["reason"] == "Conflict"
    assert status["details"]["causes"][0]["field"] == ".data..dockerconfigjson"
    assert apply(api, secret(OURS), force=True).data[".dockerconfigjson"] == CONFIG


def test_a_no_op_apply_keeps_the_resource_version(api: Api, other: Api) -> None:
    first = apply(api, secret(OURS)).metadata.resource_version
    assert apply(api, secret(OURS)).metadata.resource_version == first
    # Another manager's key is theirs: our apply neither conflicts with it nor removes it, nor writes.
    other.patch_namespaced_secret(NAME, NS, {"data": {"extra": CONFIG}})
    theirs = other.read_namespaced_secret(NAME, NS).metadata.resource_version
    again = apply(api, secret(OURS))
    assert again.metadata.resource_version == theirs and set(again.data) == {".dockerconfigjson", "extra"}
