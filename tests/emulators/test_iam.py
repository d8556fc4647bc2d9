"""The emulators' IAM model (emulators/iam.py) and grants read from Terraform (emulators/iam_terraform.py)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from emulators.iam import Binding, Condition, Policy, Resource, role_permissions
from emulators.iam_terraform import Module, TerraformEvalError, service_account_grants

N = "123456789012"
VERSION = Resource.secret_version(N, "hyperfleet-c1-pull-secret", "latest")
OTHER = Resource.secret_version(N, "hyperfleet-api-token", "1")


@pytest.mark.parametrize(
    ("expression", "version", "other"),
    [
        (f'resource.name.startsWith("projects/{N}/secrets/hyperfleet-")', True, True),
        (f'resource.name.matches("^projects/{N}/secrets/hyperfleet-[a-z0-9-]+-pull-secret(/.*)?$")', True, False),
        ('resource.name.extract("/secrets/{id}/").endsWith("-pull-secret")', True, False),
        ('resource.name.extract("/nothing/{id}/") == ""', True, True),
        (
            'resource.type == "secretmanager.googleapis.com/SecretVersion" && resource.name.endsWith("/latest")',
            True,
            False,
        ),
        ('resource.name.endsWith("/latest") || resource.service == "container.googleapis.com"', True, False),
    ],
)
def test_conditions_are_evaluated_on_the_checked_resource(expression: str, version: bool, other: bool) -> None:
    condition = Condition(expression)
    assert condition.holds(VERSION) is version
    assert condition.holds(OTHER) is other


def test_a_condition_that_errors_grants_nothing_and_a_malformed_one_is_refused() -> None:
    assert Condition("resource.name.noSuchFunction()").holds(VERSION) is False
    assert Condition("resource.labels.missing == 'x'").holds(VERSION) is False
    with pytest.raises(ValueError, match="invalid IAM condition"):
        Condition('resource.name.startsWith("x"')


def test_bindings_cover_their_resource_and_everything_under_it() -> None:
    policy = Policy()
    assert policy.allows("anyone", "secretmanager.versions.get", VERSION)  # no binding at all: open
    policy.bind(Binding("sa", "r", frozenset({"secretmanager.versions.access"}), f"projects/{N}/secrets/src"))
    assert policy.allows("sa", "secretmanager.versions.access", Resource.secret_version(N, "src", "3"))
    assert not policy.allows("sa", "secretmanager.versions.access", Resource.secret_version(N, "src2", "3"))
    assert not policy.allows("sa", "secretmanager.versions.get", Resource.secret_version(N, "src", "3"))
    assert not policy.allows("other", "secretmanager.versions.access", Resource.secret_version(N, "src", "3"))
    policy.bind(Binding("sa", "roles/owner", role_permissions("roles/owner"), "projects/999"))
    assert policy.allows("sa", "container.clusters.get", Resource.cluster("999", "us-central1", "c"))
    policy.revoke("sa")
    assert policy.to_json() == []


def test_a_project_condition_cannot_match_a_secret_name_for_create() -> None:
    """secretmanager.secrets.create is checked on the project: a name-prefix condition never grants it."""
    condition = Condition(f'resource.name.startsWith("projects/{N}/secrets/hyperfleet-")')
    policy = Policy()
    policy.bind(Binding("sa", "r", frozenset({"secretmanager.secrets.create"}), f"projects/{N}", condition))
    assert not policy.allows("sa", "secretmanager.secrets.create", Resource.project(N))


def test_unknown_predefined_roles_are_refused_unless_another_services() -> None:
    for role in ("roles/editor", "roles/secretmanager.admin", "roles/container.developer"):
        with pytest.raises(KeyError, match="not modelled"):
            role_permissions(role)
    assert role_permissions("roles/pubsub.publisher") == frozenset()  # checks nothing these emulators serve


MODULE = """
variable "project_id" {}
variable "secret_projects" { default = [] }
variable "deletion_policy" { default = "DELETE" }
variable "source" {}

locals {
  projects = toset(distinct(compact(concat([var.project_id], var.secret_projects))))
  base     = ["secretmanager.secrets.get", "secretmanager.versions.add"]
  perms    = concat(local.base, var.deletion_policy == "DELETE" ? ["secretmanager.secrets.delete"] : [])
  source_p = split("/", var.source)[1]
  source_s = split("/", var.source)[3]
}

resource "google_service_account" "runtime" {
  project    = var.project_id
  account_id = "run"
}

resource "google_project_service_identity" "agent" {
  project = var.project_id
  service = "pubsub.googleapis.com"
}

data "google_project" "each" {
  for_each   = local.projects
  project_id = each.value
}

resource "google_project_iam_custom_role" "managed" {
  for_each    = local.projects
  project     = each.value
  role_id     = "managed"
  permissions = local.perms
}

resource "google_project_iam_member" "managed" {
  for_each = local.projects
  project  = each.value
  role     = google_project_iam_custom_role.managed[each.value].id
  member   = google_service_account.runtime.member
  condition {
    title      = "own-secrets"
    expression = "resource.name.startsWith(\\"projects/${data.google_project.each[each.value].number}/secrets/hf-\\")"
  }
}

resource "google_secret_manager_secret_iam_member" "source" {
  project   = local.source_p
  secret_id = local.source_s
  role      = "roles/secretmanager.secretAccessor"
  member    = google_service_account.runtime.member
}

resource "google_pubsub_topic_iam_member" "publish" {
  topic  = "t"
  role   = "roles/pubsub.publisher"
  member = google_service_account.runtime.member
}

resource "google_project_iam_member" "agent" {
  project = var.project_id
  role    = "roles/editor"
  member  = google_project_service_identity.agent.member
}
"""


def write_module(tmp_path: Path, text: str = MODULE) -> Path:
    (tmp_path / "main.tf").write_text(textwrap.dedent(text))
    return tmp_path


def numbers(project: str) -> str:
    return {"p1": "111111111111", "p2": "222222222222"}[project]


def test_grants_are_read_from_the_hcl_and_evaluated_for_the_variables(tmp_path: Path) -> None:
    directory = write_module(tmp_path)
    variables = {"project_id": "p1", "secret_projects": ["p2", ""], "source": "projects/p1/secrets/src"}
    email, grants = service_account_grants(variables, project_number=numbers, directory=directory)
    assert email == "run@p1.iam.gserviceaccount.com"
    by_address = {g.address: g for g in grants}
    assert set(by_address) == {
        'google_project_iam_member.managed["p1"]',
        'google_project_iam_member.managed["p2"]',
        "google_secret_manager_secret_iam_member.source",
    }  # the pubsub grant is outside Secret Manager and GKE; the agent's is someone else's
    managed = by_address['google_project_iam_member.managed["p2"]']
    assert managed.role == "projects/p2/roles/managed" and managed.resource == "projects/p2"
    assert managed.permissions == {
        "secretmanager.secrets.get",
        "secretmanager.versions.add",
        "secretmanager.secrets.delete",
    }
    assert managed.condition == 'resource.name.startsWith("projects/222222222222/secrets/hf-")'
    assert managed.condition_title == "own-secrets"
    source = by_address["google_secret_manager_secret_iam_member.source"]
    assert (source.resource, source.permissions) == ("projects/p1/secrets/src", {"secretmanager.versions.access"})

    _email, retained = service_account_grants(
        {**variables, "deletion_policy": "RETAIN"}, project_number=numbers, directory=directory
    )
    assert "secretmanager.secrets.delete" not in retained[0].permissions


def test_what_the_evaluator_cannot_compute_fails_loudly(tmp_path: Path) -> None:
    with pytest.raises(TerraformEvalError, match="no such Terraform variable"):
        Module({"nope": 1}, project_number=numbers, directory=write_module(tmp_path))
    module = Module({"project_id": "p1", "source": "x"}, project_number=numbers, directory=tmp_path)
    with pytest.raises(TerraformEvalError, match="cannot evaluate"):
        module.expression("[for p in var.secret_projects : p]")
    with pytest.raises(TerraformEvalError, match="no such local"):
        module.expression("local.missing")
    assert module.value('a-${var.project_id}-${upper("b")}-$${literal}') == "a-p1-B-${literal}"


def test_terraform_string_functions(tmp_path: Path) -> None:
    module = Module({"project_id": "p1", "source": "x"}, project_number=numbers, directory=write_module(tmp_path))
    assert module.expression('replace("hf-{cluster_id}-ps", "{cluster_id}", "*")') == "hf-*-ps"
    assert module.expression('replace("abc-def", "/(\\\\w+)-(\\\\w+)/", "$2-$1")') == "def-abc"
    assert module.expression('format("projects/%s/secrets/%s", var.project_id, "s")') == "projects/p1/secrets/s"
    assert module.expression('trimsuffix(lower(" AB-x "), "-x ")') == " ab"
