"""KUBERNETES_DELIVERY=external-secrets, its pure parts: the configuration, the principal a namespace renders to,
and the policy edits (ours kept to one member, everyone else's untouched, nothing else ever added)."""

from __future__ import annotations

import re

import pytest
from google.iam.v1 import policy_pb2  # type: ignore[import-untyped]

from pullsecret.configured import load
from pullsecret.delivery.external_secrets.mode import (
    ACCESSOR,
    RefusedPrincipal,
    check_added,
    grants,
    ours,
    principal_for,
    with_member,
    without_members,
)
from pullsecret.delivery.external_secrets.settings import ExternalSecretsSettings
from pullsecret.errors import ConfigError, TerminalError

TEMPLATE = (
    "principal://iam.googleapis.com/projects/123456789012/locations/global/workloadIdentityPools/"
    "mgmt.svc.id.goog/subject/ns/{namespace}/sa/hyperfleet-pull-secret-reader"
)
MINE = ours(TEMPLATE)
PATTERN = re.compile(r"^clusters-[a-z0-9-]+$")
BASE = {"HYPERFLEET_API_URL": "http://127.0.0.1:8000", "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest"}


def member(namespace: str) -> str:
    return TEMPLATE.format(namespace=namespace)


def make(*bindings: tuple[str, list[str]] | tuple[str, list[str], str]) -> policy_pb2.Policy:
    policy = policy_pb2.Policy(version=3)
    for role, members, *condition in bindings:
        binding = policy.bindings.add(role=role, members=members)
        if condition:
            binding.condition.expression = condition[0]
    return policy


def shape(policy: policy_pb2.Policy) -> list[tuple[str, list[str], str]]:
    return [(b.role, list(b.members), b.condition.expression) for b in policy.bindings]


# -- configuration ------------------------------------------------------------------------------------------
def test_delivery_modes_and_the_principal_template() -> None:
    assert load(BASE).kubernetes_delivery == "direct"
    settings = load(
        {**BASE, "KUBERNETES_DELIVERY": "external-secrets", "EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE": TEMPLATE}
    )
    assert settings.kubernetes_delivery == "external-secrets"
    assert settings.of(ExternalSecretsSettings).principal_template == TEMPLATE


@pytest.mark.parametrize(
    "env",
    [
        {"KUBERNETES_DELIVERY": "eso"},
        {"KUBERNETES_DELIVERY": "external-secrets"},  # no template
        {
            "KUBERNETES_DELIVERY": "external-secrets",
            "EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE": TEMPLATE.replace("{namespace}", "x"),
        },
        {"KUBERNETES_DELIVERY": "external-secrets", "EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE": TEMPLATE + "/{cluster_id}"},
        {
            "KUBERNETES_DELIVERY": "external-secrets",
            "EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE": "serviceAccount:{namespace}@p.iam",
        },
        {"EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE": TEMPLATE},  # a template without the mode is a mistake
    ],
)
def test_delivery_configuration_errors_name_the_variable(env: dict[str, str]) -> None:
    with pytest.raises(ConfigError, match=r"^(KUBERNETES_DELIVERY|EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE) must"):
        load({**BASE, **env})


# -- the principal ------------------------------------------------------------------------------------------
def test_the_principal_of_a_namespace() -> None:
    assert principal_for(TEMPLATE, PATTERN, "clusters-abc") == member("clusters-abc")


@pytest.mark.parametrize(
    "namespace", ["clusters-a/sa/attacker", "clusters-a/../../x", "clusters-A", "clusters-" + "a" * 60, ""]
)
def test_a_namespace_that_is_no_namespace_name_renders_nothing_even_under_a_loose_pattern(namespace: str) -> None:
    """A permissive MANAGEMENT_NAMESPACE_PATTERN must not let a placement status write its own principal."""
    loose = re.compile(r"^(clusters-.*|)$")
    with pytest.raises(RefusedPrincipal):
        principal_for(TEMPLATE, loose, namespace)


def test_a_namespace_outside_the_pattern_renders_nothing() -> None:
    with pytest.raises(RefusedPrincipal):
        principal_for(TEMPLATE, PATTERN, "kube-system")


# -- the policy edits ---------------------------------------------------------------------------------------
def test_grant_adds_ours_once_beside_what_others_hold() -> None:
    policy = make(("roles/secretmanager.viewer", ["group:ops@example.com"]), (ACCESSOR, ["user:a@example.com"]))
    assert with_member(policy, member("clusters-a"), MINE)
    assert shape(policy) == [
        ("roles/secretmanager.viewer", ["group:ops@example.com"], ""),
        (ACCESSOR, ["user:a@example.com", member("clusters-a")], ""),
    ]
    assert not with_member(policy, member("clusters-a"), MINE)  # holds already: no write


def test_grant_keeps_exactly_one_member_of_ours() -> None:
    policy = make(
        (ACCESSOR, [member("clusters-old"), member("clusters-a")]),
        (ACCESSOR, [member("clusters-a")]),
        (ACCESSOR, [member("clusters-a")], "request.time < timestamp('2030-01-01T00:00:00Z')"),
    )
    assert with_member(policy, member("clusters-a"), MINE)
    assert shape(policy) == [
        (ACCESSOR, [member("clusters-a")], ""),
        (ACCESSOR, [member("clusters-a")], "request.time < timestamp('2030-01-01T00:00:00Z')"),  # not ours to edit
    ]


def test_remove_access_removes_ours_and_the_bindings_it_empties_only() -> None:
    policy = make((ACCESSOR, [member("clusters-a")]), (ACCESSOR, ["user:a@example.com", member("clusters-b")]))
    assert without_members(policy, MINE)
    assert shape(policy) == [(ACCESSOR, ["user:a@example.com"], "")]
    assert not without_members(policy, MINE)


def test_a_write_adding_anything_but_the_rendered_principal_is_refused() -> None:
    before = grants(make((ACCESSOR, ["user:a@example.com"])))
    allowed = member("clusters-a")
    check_added(before, make((ACCESSOR, ["user:a@example.com", allowed])), allowed)
    for after in (
        make((ACCESSOR, ["user:a@example.com", allowed, "user:attacker@example.com"])),
        make((ACCESSOR, ["user:a@example.com"]), ("roles/secretmanager.admin", [allowed])),
        make((ACCESSOR, ["user:a@example.com", member("clusters-b")])),
    ):
        with pytest.raises(TerminalError, match="refusing"):
            check_added(before, after, allowed)
    with pytest.raises(TerminalError):  # revoking adds nothing at all
        check_added(before, make((ACCESSOR, ["user:a@example.com", allowed])), None)
