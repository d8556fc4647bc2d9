"""A cluster owner's spec names the GCP project its secret lives in (`spec.platform.gcp.projectID`, with
SECRET_PROJECT_ID unset: Terraform's customer-projects mode). It tries to make the function write, bill and spend
write quota in another customer's project, or, on deletion, to steer a Secret Manager call with a project id that
is no project id. ALLOWED_SECRET_PROJECTS (set by Terraform from the projects it grants) decides; nothing else."""

from __future__ import annotations

import math
import time
from typing import Any

import pytest

from emulators.world import RUNTIME_SA
from pullsecret.operator import fleet
from tests.reliability import campaign, harness
from tests.support import gcp_cluster

ALLOWED = "hf-demo-project,tenant-*-prod"
FORBIDDEN = [
    "victim-customer-1",  # another customer's project, a valid id
    "hf-demo-projectx",  # an allowed id with a suffix: the match is whole
    "xtenant-a-prod",  # `*` stands inside the id only, not before it
    "tenant-a-prod-x",
]
INVALID = ["a/b/../secrets/x\n", "hf-demo-project\n", "HF-DEMO-PROJECT"]


def _conditions(world: Any, cid: str) -> dict[str, dict[str, Any]]:
    mine = world.hyperfleet.state()["statuses"][cid]["pullsecret"]
    return {c["type"]: c for c in mine["conditions"]}


def _seed(world: Any, cid: str, project: str, *, generation: int = 1, **extra: Any) -> None:
    body = gcp_cluster(cid, generation=generation, project=project, **extra)
    body["spec"]["pullSecret"] = {"data": campaign.own_secret(cid, generation)}
    world.hyperfleet.seed_cluster(cid, body)
    for adapter in ("validation", "dns", "placement"):
        world.hyperfleet.seed_status(cid, adapter, {"observed_generation": generation, "data": {}})
    world.kubernetes.add_namespace(f"clusters-{cid}")


@pytest.mark.parametrize("source", ["platform", "service"])
def test_a_cluster_naming_a_project_outside_the_allowlist_gets_nothing_written_anywhere(
    adapter_factory: Any, world: Any, source: str
) -> None:
    sourcing = {"PULL_SECRET_SOURCE": None, "PULL_SECRET_SERVICE_URL": world.pullsecretservice.url}
    adapter = adapter_factory(ALLOWED_SECRET_PROJECTS=ALLOWED, **(sourcing if source == "service" else {}))
    for i, project in enumerate(FORBIDDEN + INVALID):
        cid = f"cls-hostile-proj-{source[0]}{i}"
        _seed(world, cid, project)
        world.book.reset_counters()
        result = campaign.deliver_until_acknowledged(adapter, *campaign.envelope(cid, 1)).result
        harness.count("cases tried")
        assert result == "terminal", (project, result)
        conditions = _conditions(world, cid)
        assert conditions["Health"]["status"] == "False"
        assert conditions["Available"]["status"] == "False"
        expected = "ForbiddenSecretProject" if project in FORBIDDEN else "InvalidCluster"
        assert conditions["Available"]["reason"] == expected, (project, conditions["Available"])
        calls = world.book.calls()
        # No Secret Manager call at all, no delivery write, no Pull Secret Service request.
        assert not calls.get("secretmanager") and not calls.get("kubernetes") and not calls.get("gke"), calls
        assert not calls.get("pullsecretservice"), calls
        assert world.kubernetes.get_secret(f"clusters-{cid}", f"{cid}-pull-secret") is None
        if project in FORBIDDEN:
            assert world.secretmanager.secret(project, f"hyperfleet-{cid}-pull-secret") is None
    # A project the list admits is served as before.
    cid = f"cls-hostile-proj-ok{source[0]}"
    _seed(world, cid, "hf-demo-project")
    assert campaign.deliver_until_acknowledged(adapter, *campaign.envelope(cid, 1)).result == "applied"
    assert world.secretmanager.secret("hf-demo-project", f"hyperfleet-{cid}-pull-secret") is not None


@pytest.mark.parametrize("project", [FORBIDDEN[0], INVALID[0]])
def test_a_deleted_cluster_naming_a_project_it_may_not_use_steers_no_secret_manager_call(
    adapter_factory: Any, world: Any, project: str
) -> None:
    adapter = adapter_factory(ALLOWED_SECRET_PROJECTS=ALLOWED)
    cid = "cls-hostile-proj-del"
    _seed(world, cid, "hf-demo-project")
    assert campaign.deliver_until_acknowledged(adapter, *campaign.envelope(cid, 1)).result == "applied"
    ours = f"hyperfleet-{cid}-pull-secret"
    assert world.secretmanager.secret("hf-demo-project", ours) is not None
    # The owner edits the project id, then the cluster is deleted.
    _seed(world, cid, project, generation=2, deleted_time="2026-01-01T00:00:00Z", deleted_by="owner@example.com")
    world.book.reset_counters()
    result = campaign.deliver_until_acknowledged(adapter, *campaign.envelope(cid, 2)).result
    harness.count("cases tried")
    assert result == "finalized"
    calls = world.book.calls()
    assert not calls.get("secretmanager"), calls  # neither the named project nor any other
    # What is ours elsewhere is cleaned up; what was left alone is said, and Health asks a person to look.
    assert world.kubernetes.get_secret(f"clusters-{cid}", f"{cid}-pull-secret") is None
    assert world.secretmanager.secret("hf-demo-project", ours) is not None
    conditions = _conditions(world, cid)
    assert conditions["Finalized"]["status"] == "True"
    assert conditions["Health"]["status"] == "False"
    reason = "ForbiddenSecretProject" if project in FORBIDDEN else "InvalidCluster"
    assert reason in conditions["Health"]["message"]
    data = world.hyperfleet.state()["statuses"][cid]["pullsecret"]["data"]
    assert data["sm_cleanup"].startswith(f"not touched ({reason})"), data
    assert "sm_name" not in data and "\n" not in data["sm_cleanup"]
    assert data["kubernetes_cleanup"] == "deleted", data


LONELY = "hf-lonely-project"  # allowed by name; no listed cluster names it once its last cluster is gone
TENANT = "tenant-a-prod"  # admitted by the pattern tenant-*-prod only
READS = {"ListSecrets", "GetSecret", "ListSecretVersions", "AccessSecretVersion", "GetIamPolicy"}


def test_the_sweep_finds_the_last_clusters_orphan_in_an_allowed_project_no_listed_cluster_names(
    adapter_factory: Any, world: Any
) -> None:
    """Issue 50, item 6: `fleet` listed the secrets of SECRET_PROJECT_ID and of the projects its listed clusters
    name, so the secret of the last cluster of a project ALLOWED_SECRET_PROJECTS names was never found once that
    cluster was gone ("nothing outlived its cluster"). It now lists every project the list names exactly (a
    pattern entry stays a filter: nothing is listed because of it), reads only without --fix, and asks HyperFleet
    again before --fix removes anything: a live cluster's old secret there is left alone."""
    world.apply_terraform_iam(secret_project_ids=[campaign.PROJECT, LONELY, TENANT])
    adapter = adapter_factory(ALLOWED_SECRET_PROJECTS=f"{campaign.PROJECT},{LONELY},tenant-*-prod")
    last, tenant, moved, live = "cls-lonely-last", "cls-lonely-tenant", "cls-lonely-moved", "cls-lonely-live"
    for cid, project in ((last, LONELY), (tenant, TENANT), (moved, LONELY), (live, campaign.PROJECT)):
        _seed(world, cid, project)
        assert campaign.deliver_until_acknowledged(adapter, *campaign.envelope(cid, 1)).result == "applied"
    # `moved` now keeps its secret in the listed project; its old one in LONELY is a live cluster's: not an orphan.
    _seed(world, moved, campaign.PROJECT, generation=2)
    assert campaign.deliver_until_acknowledged(adapter, *campaign.envelope(moved, 2)).result == "applied"
    # The last cluster of LONELY, and the pattern project's, are hard-deleted without an event reaching us.
    for cid in (last, tenant):
        assert world.hyperfleet.store.delete_cluster(cid)
    for project in (campaign.PROJECT, LONELY, TENANT):  # the operator's fleet role (terraform/operators.tf)
        world.secretmanager.bind(
            RUNTIME_SA, "roles/secretmanager.viewer", f"projects/{project}", permissions={"secretmanager.secrets.list"}
        )
    orphan = f"hyperfleet-{last}-pull-secret"
    time.sleep(max(0.0, math.ceil(time.time()) - time.time()) + 0.05)  # S3: secrets younger than the sweep are skipped

    world.book.reset_counters()
    shown: list[str] = []
    assert fleet.main(adapter, fix=False, out=shown.append) == 0
    harness.count("cases tried")
    harness.scan("fleet view", shown)
    text = "\n".join(shown)
    assert "nothing outlived its cluster" not in text, text
    assert f"secrets/{orphan}: cluster {last} is gone from the HyperFleet API" in text, text
    assert f"Kubernetes Secret clusters-{last}/{last}-pull-secret" in text, text
    assert tenant not in text and f"{moved}-pull-secret" not in text, text  # a pattern lists nothing; live stays
    calls = world.book.calls()
    assert set(calls.get("secretmanager", {})) <= READS, calls  # a dry run only reads
    assert not [m for m in calls.get("kubernetes", {}) if "delete" in m.lower() or "patch" in m.lower()], calls
    assert world.secretmanager.secret(LONELY, orphan) is not None

    fixed: list[str] = []
    assert fleet.main(adapter, fix=True, out=fixed.append) == 0, fixed
    harness.scan("fleet --fix", fixed)
    assert any(line.startswith("fixed: removed") and orphan in line for line in fixed), fixed
    assert world.secretmanager.secret(LONELY, orphan) is None  # DELETION_POLICY=DELETE, as the finalizer
    assert world.kubernetes.get_secret(f"clusters-{last}", f"{last}-pull-secret") is None
    # Left alone: the pattern project's (never listed), the moved cluster's old secret (live), the live cluster's.
    assert world.secretmanager.secret(TENANT, f"hyperfleet-{tenant}-pull-secret") is not None
    assert world.secretmanager.secret(LONELY, f"hyperfleet-{moved}-pull-secret") is not None
    assert world.secretmanager.secret(campaign.PROJECT, f"hyperfleet-{live}-pull-secret") is not None
    again: list[str] = []
    assert fleet.main(adapter, fix=False, out=again.append) == 0
    assert "nothing outlived its cluster" in again, again
