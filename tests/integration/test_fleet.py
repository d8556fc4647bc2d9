"""`python -m pullsecret fleet [--fix]` as a real process on the emulators, after deletions that skipped the
adapter: it shows every cluster's state, finds every kind of orphan (a gone cluster's secret and its Kubernetes
Secret, a deleted cluster never finalized, an accessor for a namespace that is no longer the cluster's), and
`--fix` removes exactly those, leaving what is not ours and the live clusters alone; a second run finds nothing."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from emulators.world import PROJECT_ID, PROJECT_NUMBER, RUNTIME_SA
from tests.integration.cli_process import cli
from tests.integration.external_secrets_mode import TEMPLATE
from tests.support import Admin, seed_ready_cluster

GONE, DELETED, LIVE = "cls-fleet-gone", "cls-fleet-del", "cls-fleet-live"


def secret_id(cluster_id: str) -> str:
    return f"hyperfleet-{cluster_id}-pull-secret"


def has_secret(world: Any, cluster_id: str) -> bool:
    return world.secretmanager.secret(PROJECT_ID, secret_id(cluster_id)) is not None


def kube(world: Any, cluster_id: str) -> Any:
    return world.kubernetes.get_secret(f"clusters-{cluster_id}", f"{cluster_id}-pull-secret")


def grant_listing(world: Any) -> None:
    """What the operator's lister role adds for the fleet view on every allowed project (terraform/operators.tf, each
    of secret_project_ids: ALLOWED_SECRET_PROJECTS): listing the project's secrets."""
    for project in os.environ["ALLOWED_SECRET_PROJECTS"].split(","):
        world.secretmanager.bind(
            RUNTIME_SA, "roles/secretmanager.viewer", f"projects/{project}", permissions={"secretmanager.secrets.list"}
        )


def test_fleet_finds_what_outlived_its_cluster_and_fix_removes_exactly_that(
    function_env: dict[str, str], admin: Admin, world: Any
) -> None:
    for cluster_id in (GONE, DELETED, LIVE):
        seed_ready_cluster(admin, cluster_id)
        assert cli("reconcile", cluster_id).returncode == 0
    # Not ours, though labelled so: a name the template does not give its cluster id.
    admin.call(
        "PUT",
        f"/secretmanager/projects/{PROJECT_ID}/secrets/someone-elses-secret",
        {"labels": {"managed-by": "hyperfleet", "adapter": "pullsecret", "cluster-id": "cls-nowhere"}, "versions": []},
    )
    # Deletions that skipped the adapter: one cluster hard-deleted, one soft-deleted with no event.
    admin.delete_cluster(GONE)
    admin.patch_cluster(DELETED, {"generation": 2, "deleted_time": "2026-01-01T00:00:00Z", "deleted_by": "ops"})
    live_versions = world.secretmanager.secret(PROJECT_ID, secret_id(LIVE))["versions"]

    # As Terraform grants it, the runtime identity may not list a project's secrets: the view says so and goes on.
    refused = cli("fleet")
    assert refused.returncode == 0, refused.stdout + refused.stderr
    assert "may not list its secrets" in refused.stdout and "roles/secretmanager.viewer" in refused.stdout
    # Every project ALLOWED_SECRET_PROJECTS names is listed, whether or not a listed cluster names it (issue 50).
    unlisted = "outlived their cluster: not known, the secrets of customer-project, hf-demo-project were not listed"
    assert unlisted in refused.stdout, refused.stdout
    assert "nothing outlived its cluster" not in refused.stdout
    assert "2 clusters" in refused.stdout
    grant_listing(world)

    shown = cli("fleet")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    out = shown.stdout
    assert out.startswith("2 clusters (adapter pullsecret, delivery direct):"), out
    live_row = next(line for line in out.splitlines() if line.strip().startswith(LIVE))
    assert "Available=True g1" in live_row and "v1 ENABLED" in live_row and live_row.rstrip().endswith("-"), live_row
    deleted_row = next(line for line in out.splitlines() if line.strip().startswith(DELETED))
    assert "deleted, not finalized" in deleted_row
    # Secret Manager names a listed secret by the project's number.
    assert f"secret-gone        projects/{PROJECT_NUMBER}/secrets/{secret_id(GONE)}: cluster {GONE} is gone" in out, out
    assert f"kubernetes-secret  Kubernetes Secret clusters-{GONE}/{GONE}-pull-secret" in out
    assert f"secret-deleted     projects/{PROJECT_NUMBER}/secrets/{secret_id(DELETED)}" in out
    assert "someone-elses-secret" not in out
    assert "the runtime identity may not get, list or watch Secrets" in out
    # What --fix then does (issue 52, item 6): the gone cluster's Kubernetes Secret goes with its secret.
    hint = "run again with --fix to remove these 3 (ours): 2 removals; the other 1 goes with its cluster's secret"
    assert hint in out, out
    # The view wrote nothing.
    assert has_secret(world, GONE) and kube(world, GONE) is not None and has_secret(world, DELETED)

    fixed = cli("fleet", "--fix")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert (
        f"fixed: removed projects/{PROJECT_NUMBER}/secrets/{secret_id(GONE)} (deleted); delivery: deleted"
        in fixed.stdout
    )
    assert f"fixed: cluster {DELETED}: finalized" in fixed.stdout, fixed.stdout
    assert not has_secret(world, GONE) and kube(world, GONE) is None
    assert not has_secret(world, DELETED) and kube(world, DELETED) is None
    finalized = [r for r in admin.reports() if r.get("cluster_id") == DELETED][-1]["body"]["conditions"]
    assert {c["type"]: c["status"] for c in finalized}["Finalized"] == "True"
    # Exactly those: the live cluster and what is not ours are as they were.
    assert world.secretmanager.secret(PROJECT_ID, secret_id(LIVE))["versions"] == live_versions
    assert kube(world, LIVE) is not None
    assert world.secretmanager.secret(PROJECT_ID, "someone-elses-secret") is not None

    again = cli("fleet", "--fix")
    assert again.returncode == 0 and "nothing outlived its cluster" in again.stdout, again.stdout
    assert "fixed:" not in again.stdout


@pytest.fixture
def eso(function_env: dict[str, str], world: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key, value in {
        "KUBERNETES_DELIVERY": "external-secrets",
        "EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE": TEMPLATE,
    }.items():
        monkeypatch.setenv(key, value)
    world.apply_terraform_iam(kubernetes_delivery="external-secrets")
    yield
    world.apply_terraform_iam()


def members(world: Any, cluster_id: str) -> list[str]:
    bindings = world.secretmanager.secret(PROJECT_ID, secret_id(cluster_id))["iam_policy"]["bindings"]
    return sorted(m for b in bindings for m in b["members"])


def test_fleet_finds_an_accessor_of_a_namespace_no_longer_the_clusters_and_fix_removes_only_it(
    eso: None, admin: Admin, world: Any
) -> None:
    grant_listing(world)
    seed_ready_cluster(admin, LIVE, placement_data={"namespace": "clusters-old-home"})
    assert cli("reconcile", LIVE).returncode == 0
    old = TEMPLATE.format(namespace="clusters-old-home")
    assert members(world, LIVE) == [old]
    # The cluster moves namespace; the old one is deleted; no event reached the adapter yet.
    seed_ready_cluster(admin, LIVE, placement_data={"namespace": f"clusters-{LIVE}"})
    shown = cli("fleet")
    assert f"accessor           accessor {old} on projects/{PROJECT_ID}/secrets/{secret_id(LIVE)}" in shown.stdout
    assert "delivery external-secrets" in shown.stdout and "list or watch Secrets" not in shown.stdout
    fixed = cli("fleet", "--fix")
    assert f"fixed: removed accessor {old}" in fixed.stdout, fixed.stdout + fixed.stderr
    assert members(world, LIVE) == [TEMPLATE.format(namespace=f"clusters-{LIVE}")]
    assert "nothing outlived its cluster" in cli("fleet").stdout


def test_fleet_pages_and_a_fix_cut_short_is_finished_by_a_rerun(
    function_env: dict[str, str], admin: Admin, world: Any
) -> None:
    grant_listing(world)
    gone = [f"cls-fleet-p{n}" for n in range(3)]
    for cluster_id in (*gone, LIVE, f"{LIVE}2"):
        seed_ready_cluster(admin, cluster_id)
        assert cli("reconcile", cluster_id).returncode == 0
    for cluster_id in gone:
        admin.delete_cluster(cluster_id)
    admin.call("DELETE", "/calls")
    shown = cli("fleet", "--page-size", "1")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert shown.stdout.startswith("2 clusters") and shown.stdout.count("secret-gone") == 3, shown.stdout
    calls = admin.calls()
    # One cluster per page; one secret per ListSecrets page (5 secrets of ours, the platform's is not labelled).
    assert calls["hyperfleet"]["getClusters"] == 2, calls["hyperfleet"]
    assert calls["secretmanager"]["ListSecrets"] >= 5, calls["secretmanager"]

    # The fix is cut short: Secret Manager refuses the second deletion (as a quota or an outage would).
    admin.fault(service="secretmanager", method="DeleteSecret", code="PERMISSION_DENIED", count=1, skip=1)
    first = cli("fleet", "--fix")
    assert first.returncode == 1, first.stdout + first.stderr
    assert first.stdout.count("fixed: removed") == 2 and first.stdout.count("not fixed:") == 1, first.stdout
    assert "--fix: 2 fixed, 1 failed; run again" in first.stdout
    left = [c for c in gone if has_secret(world, c)]
    assert len(left) == 1
    rerun = cli("fleet", "--fix")
    assert rerun.returncode == 0 and rerun.stdout.count("fixed: removed") == 1, rerun.stdout
    assert not any(has_secret(world, c) or kube(world, c) is not None for c in gone)
    assert has_secret(world, LIVE) and kube(world, LIVE) is not None


def test_fleet_keeps_to_the_functions_project_rules_and_prints_hostile_ids_escaped(
    function_env: dict[str, str], admin: Admin, world: Any
) -> None:
    """A tenant's cluster naming a project outside ALLOWED_SECRET_PROJECTS (where another deployment keeps its live
    secrets, labelled as ours) is reported, never listed or touched; a project id with terminal escapes is printed
    escaped and does not abort the view of everyone else."""
    victim = "victim-customer-1"
    grant_listing(world)
    world.secretmanager.bind(
        RUNTIME_SA, "roles/secretmanager.admin", f"projects/{victim}", permissions={"secretmanager.secrets.list"}
    )
    theirs = secret_id("cls-theirs")
    admin.call(
        "PUT",
        f"/secretmanager/projects/{victim}/secrets/{theirs}",
        {"labels": {"managed-by": "hyperfleet", "adapter": "pullsecret", "cluster-id": "cls-theirs"}, "versions": []},
    )
    # In the shared, allowed project: another deployment's secret of a cluster our API does not know, and one of
    # ours from before the deployment label (a gone cluster's): neither is removed.
    other = secret_id("cls-other-deployment")
    legacy = secret_id("cls-fleet-legacy")
    for name, extra in ((other, {"deployment": "d-other"}), (legacy, {})):
        labels = {"managed-by": "hyperfleet", "adapter": "pullsecret", "cluster-id": name[len("hyperfleet-") : -12]}
        admin.call("PUT", f"/secretmanager/projects/{PROJECT_ID}/secrets/{name}", {"labels": {**labels, **extra}})
    seed_ready_cluster(admin, LIVE)
    assert cli("reconcile", LIVE).returncode == 0
    seed_ready_cluster(admin, "cls-fleet-tenant", project=victim)
    seed_ready_cluster(admin, "cls-fleet-escape", project="bad\x1b[31mred")

    fixed = cli("fleet", "--fix")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    out = fixed.stdout
    assert "\x1b" not in out and "\\x1b[31mred" in out, out
    assert "cls-fleet-tenant: its project is refused, not listed or touched: ForbiddenSecretProject" in out, out
    assert theirs not in out
    assert world.secretmanager.secret(victim, theirs) is not None
    assert other not in out and world.secretmanager.secret(PROJECT_ID, other) is not None
    assert f"{legacy} (cluster cls-fleet-legacy) carries no deployment label yet: left alone" in out, out
    assert world.secretmanager.secret(PROJECT_ID, legacy) is not None
    assert has_secret(world, LIVE) and kube(world, LIVE) is not None
    calls = admin.calls()["secretmanager"]
    assert calls.get("DeleteSecret", 0) == 0, calls


def test_fix_applies_the_deletion_policy_a_disable_deployment_keeps_the_secret_disabled(
    function_env: dict[str, str], admin: Admin, world: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under DELETION_POLICY=DISABLE, `fleet --fix` does to a gone cluster's secret what the finalizer does:
    disables its versions and keeps it (Terraform grants secrets.delete only with DELETE)."""
    monkeypatch.setenv("DELETION_POLICY", "DISABLE")
    for cluster_id in (GONE, LIVE):  # the live cluster's project is the one fleet lists
        seed_ready_cluster(admin, cluster_id)
        assert cli("reconcile", cluster_id).returncode == 0
    admin.delete_cluster(GONE)
    grant_listing(world)
    fixed = cli("fleet", "--fix")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert f"fixed: removed projects/{PROJECT_NUMBER}/secrets/{secret_id(GONE)} (disabled 1 version(s))" in fixed.stdout
    assert has_secret(world, GONE)
    assert [v["state"] for v in world.secretmanager.versions(PROJECT_ID, secret_id(GONE))] == ["DISABLED"]
