"""The admission policy this release relies on, rendered as Terraform renders it, and what an installed one lacks.

terraform/kubernetes/admission-policy.yaml is the one source of the policy: Terraform renders it
(outputs.tf, templatefile) for the operator to apply, and the function renders the same file (shipped in its
source archive, terraform/function.tf) with its own settings: the runtime identity, ADMISSION_POLICY_NAME,
ADAPTER_NAME, MANAGEMENT_NAMESPACE_PATTERN and KUBERNETES_SECRET_TEMPLATE, the values Terraform passes to both. The
policy and its binding carry the instance's name (ADMISSION_POLICY_NAME, terraform's admission_policy_name: the
suffix of the instance), so two instances on one management cluster each keep their own.

`policy_problem` is the check every write relies on (kubewrites.KubeSecrets.ensure_guarded): the installed
policy and binding must say exactly what this release renders (matchConstraints, matchConditions, variables,
validations, failurePolicy, paramKind, auditAnnotations; the binding's policyName, validationActions, paramRef,
matchResources), after filling in the fields the API server defaults on admission. The revision annotation
alone proves nothing: a policy gutted by hand can still carry it. The problem text names the first difference.
"""

from __future__ import annotations

import contextlib
import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

# libyaml's safe loader when PyYAML was built with it (its wheels are): the same documents as yaml.SafeLoader
# (tests/unit/test_admission_policy.py compares them) for a fifteenth of the CPU on the instance's first event.
_SAFE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

A_POLICY_REVISION = "hyperfleet.io/policy-revision"
# 2: generation order; dockerconfigjson before a change too. 3: the namespace matched whole (^(?:PATTERN)$), and the
# framework's hyperfleet.io/managed-by=<adapter> marks our Secrets beside managed-by=hyperfleet (the label migration,
# docs/lifecycle.md "Labels"). 4: ours is this adapter's label and the name of its cluster-id label's cluster
# (managed-by=hyperfleet alone marks every HyperFleet component's Secrets).
REQUIRED_POLICY_REVISION = 4
TEMPLATE = Path(__file__).resolve().parents[3] / "terraform" / "kubernetes" / "admission-policy.yaml"

_POLICY_FIELDS = (
    "failurePolicy",
    "paramKind",
    "matchConstraints",
    "matchConditions",
    "variables",
    "validations",
    "auditAnnotations",
)
_BINDING_FIELDS = ("policyName", "paramRef", "validationActions", "matchResources")
_TOKEN = re.compile(r"\$\$\{|%%\{|\$\{([^}]*)\}|%\{")
_USERNAME = re.compile(r"request\.userInfo\.username == '([^']*)'")


def render_template(text: str, variables: dict[str, str]) -> str:
    """Terraform's templatefile() for the subset the manifests use: `${name}` interpolations and the escapes.

    developer.hashicorp.com/terraform/language/expressions/strings: `$${` and `%%{` are literal `${` and `%{`.
    Raises ValueError on a `%{` directive or a variable not given (templatefile fails on that too).
    """

    def replace(match: re.Match[str]) -> str:
        found = match.group(0)
        if found == "$${":
            return "${"
        if found == "%%{":
            return "%{"
        if found == "%{":
            raise ValueError("template directives (%{ ... }) are not supported by this renderer")
        name = match.group(1).strip()
        if name not in variables:
            raise ValueError(f"vars map does not contain key {name!r}")
        return variables[name]

    return _TOKEN.sub(replace, text)


def template_variables(
    *, runtime_sa_email: str, namespace_pattern: str, adapter_name: str, secret_template: str, policy_name: str
) -> dict[str, str]:
    """The templatefile() variables of terraform/outputs.tf, from the settings Terraform also gives the function."""
    parts = secret_template.split("{cluster_id}")
    if len(parts) != 2:
        raise ValueError("the admission policy names a Secret with {cluster_id} once: KUBERNETES_SECRET_TEMPLATE")
    prefix, suffix = parts
    return {
        "runtime_sa_email": runtime_sa_email,
        "namespace_pattern": namespace_pattern,
        "adapter_name": adapter_name,
        "secret_name_prefix": prefix,
        "secret_name_suffix": suffix,
        "policy_name": policy_name,
    }


@functools.cache
def _template_text() -> str:
    return TEMPLATE.read_text(encoding="utf-8")


@dataclass(frozen=True)
class ExpectedPolicy:
    """The policy and binding this release renders for one deployment (identity None: its username not judged)."""

    policy: dict[str, Any]
    binding: dict[str, Any]
    identity_email: str | None

    @property
    def name(self) -> str:
        """The policy's name (ADMISSION_POLICY_NAME), which its binding carries too: what is read and denies."""
        return str(self.policy["metadata"]["name"])


def expected(
    *, identity_email: str | None, namespace_pattern: str, adapter_name: str, secret_template: str, policy_name: str
) -> ExpectedPolicy:
    """Render terraform/kubernetes/admission-policy.yaml with these settings. Raises OSError, ValueError."""
    variables = template_variables(
        runtime_sa_email=identity_email or "",
        namespace_pattern=namespace_pattern,
        adapter_name=adapter_name,
        secret_template=secret_template,
        policy_name=policy_name,
    )
    docs = {d["kind"]: d for d in yaml.load_all(render_template(_template_text(), variables), Loader=_SAFE_LOADER) if d}
    return ExpectedPolicy(docs["ValidatingAdmissionPolicy"], docs["ValidatingAdmissionPolicyBinding"], identity_email)


def as_caller(release: ExpectedPolicy, username: str) -> ExpectedPolicy:
    """`release` rendered for writes made as `username` (a SelfSubjectReview's answer, when the credentials name no
    service account): the installed policy must then name that user. ValueError for a user the policy's CEL string
    literal could not hold as it is."""
    if not username or not username.isprintable() or "'" in username or "\\" in username:
        raise ValueError("a Kubernetes user name the admission policy cannot hold")
    spec = _spec(release.policy)
    named = f"request.userInfo.username == '{username}'"
    conditions = [{**c, "expression": _USERNAME.sub(named, c["expression"])} for c in spec["matchConditions"]]
    policy = {**release.policy, "spec": {**spec, "matchConditions": conditions}}
    return ExpectedPolicy(policy, release.binding, username)


def _defaulted_rules(rules: Any) -> Any:
    if not isinstance(rules, list):
        return rules
    return [{"scope": "*", **r} if isinstance(r, dict) else r for r in rules]


def _defaulted_match(match: Any) -> Any:
    """The policy's matchConstraints as stored: SetDefaults_MatchResources and SetDefaults_Rule (kubernetes/kubernetes
    pkg/apis/admissionregistration/v1/defaults.go): matchPolicy Equivalent, empty selectors, rule scope "*". Only
    the resourceRules this release renders are defaulted: excludeResourceRules is a difference in any form. (The
    binding's matchResources is not defaulted either: the API server defaults it only when it is set, and this
    release sets none, so any is a difference.)"""
    if not isinstance(match, dict):
        return match
    out = {"matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {}, **match}
    if "resourceRules" in out:
        out["resourceRules"] = _defaulted_rules(out["resourceRules"])
    return out


def _spec(document: dict[str, Any]) -> dict[str, Any]:
    spec = document.get("spec")
    return spec if isinstance(spec, dict) else {}


def _policy_spec(policy: dict[str, Any]) -> dict[str, Any]:
    spec = _spec(policy)
    out = {k: spec[k] for k in _POLICY_FIELDS if spec.get(k) not in (None, [], {})}
    out.setdefault("failurePolicy", "Fail")  # SetDefaults_ValidatingAdmissionPolicySpec
    if "matchConstraints" in out:
        out["matchConstraints"] = _defaulted_match(out["matchConstraints"])
    return out


def _binding_spec(binding: dict[str, Any]) -> dict[str, Any]:
    spec = _spec(binding)
    return {k: spec[k] for k in _BINDING_FIELDS if spec.get(k) not in (None, [], {})}


def named_user(policy: dict[str, Any]) -> str:
    """The user the policy's first username condition names ("" when none does)."""
    for condition in _spec(policy).get("matchConditions") or []:
        found = _USERNAME.search(str(condition.get("expression"))) if isinstance(condition, dict) else None
        if found:
            return found.group(1)
    return ""


def first_difference(installed: Any, rendered: Any, path: str) -> str | None:
    """The first place `installed` differs from `rendered`, as "<path>: <how>", or None. Pure."""
    if isinstance(rendered, dict) and isinstance(installed, dict):
        for key in sorted(rendered.keys() | installed.keys()):
            if key not in installed:
                return f"{path}.{key}: missing"
            if key not in rendered:
                return f"{path}.{key}: not in this release's policy"
            found = first_difference(installed[key], rendered[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(rendered, list) and isinstance(installed, list):
        for index in range(min(len(installed), len(rendered))):
            found = first_difference(installed[index], rendered[index], f"{path}[{index}]")
            if found:
                return found
        if len(installed) != len(rendered):
            return f"{path}: {len(installed)} entries, this release's policy has {len(rendered)}"
        return None
    if installed != rendered:
        return f"{path}: {str(installed)[:80]!r}, this release's policy has {str(rendered)[:80]!r}"
    return None


def _revision(policy: dict[str, Any]) -> int:
    annotations = (policy.get("metadata") or {}).get("annotations") or {}
    try:
        return int(str(annotations.get(A_POLICY_REVISION)))
    except ValueError:  # absent ("None") or not a number
        return 0


def policy_problem(policy: dict[str, Any], binding: dict[str, Any], release: ExpectedPolicy) -> str | None:
    """Why the installed policy and binding are not exactly this release's (`release`), or None. Pure."""
    revision = _revision(policy)
    if revision < REQUIRED_POLICY_REVISION:
        return f"policy revision {revision} is older than the required {REQUIRED_POLICY_REVISION}"
    if revision != _revision(release.policy):
        return f"policy revision {revision} is not this release's {_revision(release.policy)}"
    if release.identity_email is None:  # the identity is not known: judge the rest, whichever user it names
        with contextlib.suppress(ValueError):  # it names no user a condition can hold: the difference is named below
            release = as_caller(release, named_user(policy))
    difference = first_difference(
        _policy_spec(policy), _policy_spec(release.policy), "policy spec"
    ) or first_difference(_binding_spec(binding), _binding_spec(release.binding), "binding spec")
    if difference is not None:
        return f"the installed policy differs from this release's: {difference}"
    return None
