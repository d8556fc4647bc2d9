"""The deployer's roles (cloudbuild.yaml's comment) cover the permissions every resource of terraform/ needs to be
created (tests/infra/deployer_permissions.py holds the tables and their sources)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.infra import deployer_permissions as deployer


@pytest.fixture(scope="module")
def found() -> dict[str, tuple[str, dict[str, Any]]]:
    return deployer.resources()


def test_the_deployer_can_create_every_resource(found: dict[str, tuple[str, dict[str, Any]]]) -> None:
    grants = deployer.deployer_grants(deployer.CLOUDBUILD.read_text())
    assert deployer.FUNCTION_PROJECT in grants and deployer.SOURCE_SECRET in grants, grants
    assert not deployer.problems(found, grants), "\n".join(deployer.problems(found, grants))


def test_every_resource_outside_the_function_project_has_its_scope(
    found: dict[str, tuple[str, dict[str, Any]]],
) -> None:
    unscoped = sorted(set(deployer.scoped_elsewhere(found)) - set(deployer.SCOPES))
    assert not unscoped, f"resources outside var.project_id without a scope in deployer_permissions.SCOPES: {unscoped}"
    assert set(deployer.SCOPES) <= set(found), sorted(set(deployer.SCOPES) - set(found))


def test_every_role_the_deployer_is_granted_has_a_permission_list() -> None:
    grants = deployer.deployer_grants(deployer.CLOUDBUILD.read_text())
    roles = {role for granted, _custom in grants.values() for role in granted}
    assert roles <= set(deployer.ROLE_PERMISSIONS), sorted(roles - set(deployer.ROLE_PERMISSIONS))


def test_the_check_catches_a_role_that_cannot_set_the_functions_iam_policy(
    found: dict[str, tuple[str, dict[str, Any]]],
) -> None:
    # Issue 21, item 1: cloudfunctions.developer "can't set IAM policies"; manual_invokers_viewer got 403.
    text = deployer.CLOUDBUILD.read_text().replace("roles/cloudfunctions.admin ", "roles/cloudfunctions.developer ")
    problems = "\n".join(deployer.problems(found, deployer.deployer_grants(text)))
    assert (
        "google_cloudfunctions2_function_iam_member.manual_invokers_viewer: the deployer lacks "
        "cloudfunctions.functions.setIamPolicy on the function project"
    ) in problems, problems


def test_the_check_catches_a_custom_role_that_cannot_add_the_rotation_topic(
    found: dict[str, tuple[str, dict[str, Any]]],
) -> None:
    # The old comment: "setIamPolicy only is needed" on the platform pull secret; the topic step also gets and
    # updates the secret.
    text = deployer.CLOUDBUILD.read_text()
    full = " secretmanager.secrets.getIamPolicy secretmanager.secrets.setIamPolicy secretmanager.secrets.get "
    assert full in text
    text = text.replace(
        full + "secretmanager.secrets.update", " secretmanager.secrets.getIamPolicy secretmanager.secrets.setIamPolicy"
    )
    problems = "\n".join(deployer.problems(found, deployer.deployer_grants(text)))
    assert (
        "terraform_data.source_rotation_topic: the custom role cloudbuild.yaml offers on the platform pull secret "
        "lacks secretmanager.secrets.get, secretmanager.secrets.update"
    ) in problems, problems


def test_a_resource_type_without_a_row_is_reported(found: dict[str, tuple[str, dict[str, Any]]]) -> None:
    grants = deployer.deployer_grants(deployer.CLOUDBUILD.read_text())
    extra = {**found, "google_compute_network.vpc": ("google_compute_network", {"project": "${var.project_id}"})}
    assert deployer.problems(extra, grants) == [
        "google_compute_network.vpc: no row for google_compute_network in tests/infra/deployer_permissions.py"
    ]
