"""The doctor check of KUBERNETES_DELIVERY=external-secrets (pullsecret.delivery.external_secrets.mode lists it):
the runtime identity may read and write the allow policy of the clusters' secrets (TestIamPermissions), which
this mode needs to grant each namespace's principal access. No GKE or Kubernetes call: this mode makes none."""

from __future__ import annotations

from google.api_core import exceptions as gexc

from pullsecret.doctor.kit import MANAGED_ROLE, Context, Line, code_of, retry_fix
from pullsecret.model.names import secret_name

CHECK = "secret-manager.iam-policy"
# terraform/iam.tf local.secret_manager_policy_permissions: added to the managed role in this mode only.
POLICY_PERMISSIONS = ("secretmanager.secrets.getIamPolicy", "secretmanager.secrets.setIamPolicy")


def policy_permissions(ctx: Context) -> list[Line]:
    """TestIamPermissions for the policy permissions on the first listed cluster's secret that exists (an absent
    secret answers an empty set, which proves nothing: then the check is skipped, naming why)."""
    pinned = ctx.settings.secret_project_id
    for cluster_id, listed in ctx.cluster_projects.items():
        project = pinned or listed
        if not project:
            continue
        name = secret_name(project, ctx.settings.secret_id_template.format(cluster_id=cluster_id))
        try:
            answer = ctx.secrets.test_iam_permissions(request={"resource": name, "permissions": POLICY_PERMISSIONS})
        except gexc.GoogleAPICallError as exc:
            return [Line(CHECK, False, f"TestIamPermissions on {name}: {code_of(exc)}", retry_fix())]
        granted = set(answer.permissions)
        if not granted:
            continue  # no such secret yet (or nothing granted at all: the secret-manager check says so)
        missing = [p for p in POLICY_PERMISSIONS if p not in granted]
        if missing:
            return [Line(CHECK, False, f"TestIamPermissions on {name}: missing {', '.join(missing)}", _fix(project))]
        return [Line(CHECK, True, f"TestIamPermissions on {name}: {', '.join(POLICY_PERMISSIONS)} granted")]
    return [Line(CHECK, None, "no cluster's secret exists yet to test the allow-policy permissions on")]


def _fix(project: str) -> str:
    return (
        f"the custom role {MANAGED_ROLE} in {project} must hold {', '.join(POLICY_PERMISSIONS)} with "
        'kubernetes_delivery = "external-secrets": terraform apply (terraform/iam.tf runtime_secret_manager_managed)'
    )
