"""pullsecret.delivery.direct.admission_policy: the installed policy must be exactly the one this release renders."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from emulators.kubernetes.manifests import render
from pullsecret import configured
from pullsecret.delivery.direct import admission_policy
from pullsecret.delivery.direct.admission_policy import policy_problem
from pullsecret.delivery.direct.settings import POLICY_NAME, DirectSettings
from pullsecret.errors import ConfigError

SA = "hf-pullsecret-run@p.iam.gserviceaccount.com"
SETTINGS = {"namespace_pattern": "^clusters-[a-z0-9-]+$", "adapter_name": "pullsecret"}
TEMPLATE = "{cluster_id}-pull-secret"


def release(identity: str | None = SA, **overrides: str) -> admission_policy.ExpectedPolicy:
    settings: dict[str, Any] = {**SETTINGS, "secret_template": TEMPLATE, "policy_name": POLICY_NAME, **overrides}
    return admission_policy.expected(identity_email=identity, **settings)


@pytest.fixture
def installed() -> tuple[dict[str, Any], dict[str, Any]]:
    """The policy and binding as the API server returns them: defaulted fields filled in, server metadata."""
    docs = {d["kind"]: copy.deepcopy(d) for d in render(SA)}
    policy, binding = docs["ValidatingAdmissionPolicy"], docs["ValidatingAdmissionPolicyBinding"]
    policy["metadata"].update({"uid": "u", "resourceVersion": "7", "generation": 1})
    policy["status"] = {"observedGeneration": 1, "typeChecking": {}}
    constraints = policy["spec"]["matchConstraints"]
    constraints.update({"matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {}})
    constraints["resourceRules"][0]["scope"] = "*"
    return policy, binding


def test_the_shipped_policy_as_the_api_server_stores_it_is_this_release(
    installed: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    assert policy_problem(*installed, release()) is None
    assert policy_problem(*installed, release(None)) is None  # identity unknown: its username is not judged
    policy = copy.deepcopy(installed[0])
    del policy["spec"]["failurePolicy"]  # the API server's default is Fail
    assert policy_problem(policy, installed[1], release()) is None


def _drop_ownership(p: dict[str, Any], b: dict[str, Any]) -> None:
    p["spec"]["validations"] = [v for v in p["spec"]["validations"] if "OwnershipConflict" not in v["message"]]


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda p, b: p["metadata"]["annotations"].pop(admission_policy.A_POLICY_REVISION), "revision 0 is older"),
        (lambda p, b: p["metadata"]["annotations"].update({admission_policy.A_POLICY_REVISION: "9"}), "not this rel"),
        (lambda p, b: p["spec"].__setitem__("failurePolicy", "Ignore"), "spec.failurePolicy: 'Ignore'"),
        (lambda p, b: p["spec"].__setitem__("matchConditions", []), "spec.matchConditions: missing"),
        (_drop_ownership, "policy spec.validations[1].expression: \"request.operation == 'DELETE'"),
        (lambda p, b: p["spec"]["validations"].append({"expression": "true"}), "validations: 5 entries, this re"),
        (lambda p, b: p["spec"]["variables"][0].__setitem__("expression", "true"), "spec.variables[0].expression"),
        (lambda p, b: p["spec"]["matchConstraints"]["resourceRules"][0]["operations"].pop(), "operations: 2 entries"),
        (lambda p, b: p["spec"]["matchConstraints"].__setitem__("objectSelector", {"matchLabels": {"a": "b"}}), "ob"),
        (lambda p, b: p["spec"].__setitem__("paramKind", {"kind": "ConfigMap"}), "paramKind: not in this release"),
        (lambda p, b: b["spec"].__setitem__("policyName", "other"), "binding spec.policyName: 'other'"),
        (lambda p, b: b["spec"].__setitem__("validationActions", ["Warn"]), "validationActions[0]: 'Warn'"),
        (lambda p, b: b["spec"].__setitem__("matchResources", {"objectSelector": {"matchLabels": {"a": "b"}}}), "mat"),
        (lambda p, b: p.__setitem__("spec", None), "spec.matchConditions: missing"),
    ],
)
def test_a_policy_that_is_not_this_releases_is_named(
    installed: tuple[dict[str, Any], dict[str, Any]], edit: Any, problem: str
) -> None:
    policy, binding = copy.deepcopy(installed)
    edit(policy, binding)
    assert problem in str(policy_problem(policy, binding, release()))


def test_the_release_is_rendered_with_the_deployments_settings(
    installed: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    assert "matchConditions[0].expression" in str(policy_problem(*installed, release("other@example.com")))
    assert "spec.validations[1].message" in str(policy_problem(*installed, release(adapter_name="other")))
    assert "spec.validations[1].message" in str(policy_problem(*installed, release(secret_template="ps-{cluster_id}")))
    assert "spec.validations[0].expression" in str(policy_problem(*installed, release(namespace_pattern="^hcp-.+$")))


def test_template_variables_split_the_secret_name_around_the_cluster_id() -> None:
    variables = admission_policy.template_variables(
        runtime_sa_email=SA,
        namespace_pattern="^x$",
        adapter_name="a",
        secret_template="ps-{cluster_id}.pull",
        policy_name="scope-stg",
    )
    assert variables == {
        "runtime_sa_email": SA,
        "namespace_pattern": "^x$",
        "adapter_name": "a",
        "secret_name_prefix": "ps-",
        "secret_name_suffix": ".pull",
        "policy_name": "scope-stg",
    }


@pytest.mark.parametrize(
    ("text", "rendered"),
    [("a ${x} b", "a 1 b"), ("$${x}", "${x}"), ("%%{x}", "%{x}"), ("${ x }", "1"), ("$x {x}", "$x {x}")],
)
def test_render_template_as_terraform(text: str, rendered: str) -> None:
    assert admission_policy.render_template(text, {"x": "1"}) == rendered


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("${y}", r"^vars map does not contain key 'y'$"),
        ("%{ if x }", r"^template directives \(%\{ \.\.\. \}\) are not supported by this renderer$"),
    ],
)
def test_render_template_refuses_what_templatefile_refuses(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        admission_policy.render_template(text, {"x": "1"})


def test_a_secret_template_naming_the_cluster_id_twice_cannot_be_a_policy() -> None:
    """The policy names a Secret as prefix + cluster-id label + suffix: a second {cluster_id} has no place in it."""
    with pytest.raises(ValueError, match=r"^the admission policy names a Secret with \{cluster_id\} once: KUBERNETES_"):
        release(secret_template="{cluster_id}-ps-{cluster_id}")


def test_first_difference_names_the_path() -> None:
    assert admission_policy.first_difference({"a": [1, {"b": 2}]}, {"a": [1, {"b": 2}]}, "s") is None
    assert (
        admission_policy.first_difference({"a": [1, {"b": 3}]}, {"a": [1, {"b": 2}]}, "s")
        == "s.a[1].b: '3', this release's policy has '2'"
    )
    assert admission_policy.first_difference({}, {"a": 1}, "s") == "s.a: missing"
    assert admission_policy.first_difference({"a": 1, "z": 1}, {"a": 1}, "s") == "s.z: not in this release's policy"
    assert admission_policy.first_difference([1], [1, 2], "s") == "s: 1 entries, this release's policy has 2"
    assert admission_policy.first_difference("x", {"a": 1}, "s") == "s: 'x', this release's policy has \"{'a': 1}\""


def test_the_policy_checks_at_their_edges(installed: tuple[dict[str, Any], dict[str, Any]]) -> None:
    policy, binding = copy.deepcopy(installed)
    policy["metadata"]["annotations"][admission_policy.A_POLICY_REVISION] = "four"
    assert policy_problem(policy, binding, release()) == (
        f"policy revision 0 is older than the required {admission_policy.REQUIRED_POLICY_REVISION}"
    )
    policy, binding = copy.deepcopy(installed)
    binding["spec"]["policyName"] = "p" * 100
    assert policy_problem(policy, binding, release()) == (
        "the installed policy differs from this release's: binding spec.policyName: "
        f"{'p' * 80!r}, this release's policy has {POLICY_NAME!r}"
    )


@pytest.mark.parametrize("identity", [SA, None])
def test_the_release_parsed_by_libyaml_is_the_release_parsed_by_pure_python_yaml(identity: str | None) -> None:
    """expected() parses the rendered template with libyaml when PyYAML has it; the pure-Python safe loader must
    read the very same policy and binding from it (a difference would refuse every management cluster)."""
    import yaml

    got = release(identity)
    variables = admission_policy.template_variables(
        runtime_sa_email=identity or "",
        namespace_pattern="^clusters-[a-z0-9-]+$",
        adapter_name="pullsecret",
        secret_template="{cluster_id}-pull-secret",
        policy_name=POLICY_NAME,
    )
    text = admission_policy.render_template(admission_policy._template_text(), variables)
    docs = {d["kind"]: d for d in yaml.load_all(text, Loader=yaml.SafeLoader) if d}
    assert (got.policy, got.binding) == (docs["ValidatingAdmissionPolicy"], docs["ValidatingAdmissionPolicyBinding"])


def test_as_caller_judges_the_installed_policy_for_the_user_a_self_review_names(
    installed: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    unknown = release(None)
    assert policy_problem(*installed, admission_policy.as_caller(unknown, SA)) is None
    problem = policy_problem(*installed, admission_policy.as_caller(unknown, "alice@example.com"))
    assert problem is not None and "matchConditions[0].expression" in problem and "alice@example.com" in problem
    as_alice = admission_policy.as_caller(unknown, "alice@example.com")
    assert as_alice.identity_email == "alice@example.com" and as_alice.binding == unknown.binding
    assert as_alice.policy["metadata"] == unknown.policy["metadata"]
    assert as_alice.policy == admission_policy.as_caller(release(SA), "alice@example.com").policy
    assert unknown.policy == release(None).policy  # the release itself is left as it was


@pytest.mark.parametrize("user", ["", "x' || true || '", "a\\b", "a\nb"])
def test_as_caller_refuses_a_user_the_policy_cannot_name(user: str) -> None:
    with pytest.raises(ValueError, match=r"^a Kubernetes user name the admission policy cannot hold$"):
        admission_policy.as_caller(release(None), user)


def _edited(installed: tuple[dict[str, Any], dict[str, Any]], edit: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    policy, binding = copy.deepcopy(installed)
    edit(policy, binding)
    return policy, binding


WIDENED = f"request.userInfo.username == '{SA}' || true"


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        # The policy stops matching: secrets excluded again, a rule that is not a rule object.
        (
            lambda p, b: p["spec"]["matchConstraints"].__setitem__(
                "excludeResourceRules", [{"resources": ["secrets"]}]
            ),
            "policy spec.matchConstraints.excludeResourceRules: not in this release's policy",
        ),
        (
            lambda p, b: p["spec"]["matchConstraints"].__setitem__("resourceRules", ["secrets"]),
            "policy spec.matchConstraints.resourceRules[0]: 'secrets', this release's policy has",
        ),
        # The binding narrowed to namespaces or objects with a label: the policy no longer applies elsewhere.
        (
            lambda p, b: b["spec"].__setitem__("matchResources", {"namespaceSelector": {"matchLabels": {"a": "b"}}}),
            "binding spec.matchResources: not in this release's policy",
        ),
        (
            lambda p, b: b["spec"].__setitem__(
                "matchResources", {"matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {}}
            ),
            "binding spec.matchResources: not in this release's policy",
        ),
        (
            lambda p, b: b["spec"].__setitem__("validationActions", "Deny"),
            "binding spec.validationActions: 'Deny', this release's policy has \"['Deny']\"",
        ),
    ],
)
def test_a_policy_or_binding_that_no_longer_applies_everywhere_is_named(
    installed: tuple[dict[str, Any], dict[str, Any]], edit: Any, problem: str
) -> None:
    for identity in (SA, None):
        found = policy_problem(*_edited(installed, edit), release(identity))
        assert found is not None and found.startswith(f"the installed policy differs from this release's: {problem}")


def test_with_the_identity_unknown_every_other_part_of_the_condition_is_still_judged(
    installed: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    """The doctor without the runtime e-mail, or the CLI before its SelfSubjectReview: the user the condition names
    is not judged, the rest of the condition is."""
    unknown = release(None)
    other_user = _edited(
        installed,
        lambda p, b: p["spec"]["matchConditions"][0].__setitem__("expression", "request.userInfo.username == 'x@y'"),
    )
    assert policy_problem(*other_user, unknown) is None
    assert "matchConditions[0].expression" in str(policy_problem(*other_user, release()))
    widened = _edited(
        installed,
        lambda p, b: p["spec"]["matchConditions"][0].__setitem__("expression", WIDENED),
    )
    assert policy_problem(*widened, unknown) == (
        "the installed policy differs from this release's: policy spec.matchConditions[0].expression: "
        f"{WIDENED[:80]!r}, this release's policy has "
        f"\"request.userInfo.username == '{SA}'\""
    )
    everyone = _edited(installed, lambda p, b: p["spec"]["matchConditions"][0].__setitem__("expression", "true"))
    assert policy_problem(*everyone, unknown) == (
        "the installed policy differs from this release's: policy spec.matchConditions[0].expression: "
        "'true', this release's policy has \"request.userInfo.username == ''\""
    )
    odd = _edited(
        installed, lambda p, b: p["spec"].__setitem__("matchConditions", ["true", *p["spec"]["matchConditions"]])
    )
    assert "policy spec.matchConditions[0]: 'true'" in str(policy_problem(*odd, unknown))
    backslash = _edited(
        installed,
        lambda p, b: p["spec"]["matchConditions"][0].__setitem__("expression", "request.userInfo.username == 'a\\b'"),
    )
    assert "matchConditions[0].expression" in str(policy_problem(*backslash, unknown))
    assert admission_policy.named_user(installed[0]) == SA
    assert admission_policy.named_user(odd[0]) == SA  # the first condition that names one
    assert admission_policy.named_user(everyone[0]) == ""


def test_a_long_difference_is_cut_on_both_sides(installed: tuple[dict[str, Any], dict[str, Any]]) -> None:
    policy, binding = _edited(installed, lambda p, b: p["spec"]["variables"][0].__setitem__("expression", "x" * 100))
    rendered = release().policy["spec"]["variables"][0]["expression"]
    assert policy_problem(policy, binding, release()) == (
        "the installed policy differs from this release's: policy spec.variables[0].expression: "
        f"{'x' * 80!r}, this release's policy has {rendered[:80]!r}"
    )


def test_the_policy_its_binding_and_the_rbac_read_carry_the_instances_name(
    installed: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    # Issue 51, item 4: one fixed name for every instance, so two on one management cluster rewrote each other's
    # policy and binding; each instance's (ADMISSION_POLICY_NAME: name_suffix in it) is now its own.
    name = f"{POLICY_NAME}-stg"
    staging = release(policy_name=name)
    assert staging.name == staging.binding["metadata"]["name"] == staging.binding["spec"]["policyName"] == name
    [role] = [d for d in render(SA, policy_name=name) if d["kind"] == "ClusterRole"]
    assert [r["resourceNames"] for r in role["rules"] if "resourceNames" in r] == [[name]]
    # The pair another instance installed (the default name) is not this instance's.
    assert "binding spec.policyName" in str(policy_problem(*installed, staging))


@pytest.mark.parametrize(
    ("mode", "value", "refused"),
    [
        ("direct", None, None),
        ("direct", "hyperfleet-pullsecret-adapter-scope-stg", None),
        ("direct", "scope.example.com", None),
        ("direct", "Scope", "a Kubernetes object name"),
        ("direct", "scope_stg", "a Kubernetes object name"),
        ("direct", "-scope", "a Kubernetes object name"),
        ("direct", "a" * 254, "a Kubernetes object name"),
        ("external-secrets", "hyperfleet-pullsecret-adapter-scope-stg", "must be unset"),
    ],
)
def test_admission_policy_name_is_a_kubernetes_object_name_of_direct_mode(
    mode: str, value: str | None, refused: str | None
) -> None:
    env = {
        "HYPERFLEET_API_URL": "http://127.0.0.1:8000",
        "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest",
        "KUBERNETES_DELIVERY": mode,
    }
    if mode == "external-secrets":
        env["EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE"] = "principal://iam.googleapis.com/projects/1/x/{namespace}"
    if value is not None:
        env["ADMISSION_POLICY_NAME"] = value
    if refused is None:
        assert configured.load(env).of(DirectSettings).admission_policy_name == (value or POLICY_NAME)
        return
    with pytest.raises(ConfigError, match="ADMISSION_POLICY_NAME") as raised:
        configured.load(env)
    assert refused in str(raised.value)
