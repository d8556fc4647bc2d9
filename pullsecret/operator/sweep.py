"""What the fleet sweep may remove: the one cluster asked again, the function's project rules, keyset paging.

The sweep (pullsecret.operator.fleet) removes a secret only when all of these hold, each checked here:

  S1. The clusters are paged by key (`order=id asc`, `search=id > 'last'`, as the rotation fan-out does): a
      cluster that leaves the list during the sweep (HyperFleet hard-deletes finalized clusters all the time)
      shifts nothing, so no live cluster is skipped and mistaken for gone.
  S2. Before anything of a cluster is listed as an orphan, and again right before `--fix` removes it, HyperFleet
      is asked about that one cluster: only a 404 NTF-001 (gone) or a deletion our Finalized=True report
      confirmed counts (`verdict`). A cluster created, or recreated, after the sweep began is live: left alone.
  S3. A secret created after the sweep began is never an orphan (its cluster may be younger than the list).
  S4. Projects go through the function's own rules (`preconditions.secret_project`: SECRET_PROJECT_ID, else
      the cluster's project id when valid and among ALLOWED_SECRET_PROJECTS): a refused project is reported,
      never listed or touched.
  S5. Only secrets carrying this deployment's label (`deployment` = DEPLOYMENT_ID, pullsecret.secretstore.labels)
      are ours to remove: another deployment's secrets in a shared project are never our orphans. A secret of
      ours written before the label existed is adopted by the next write that checks its owner (versions.py
      `_adopt`); until then the sweep names it in a note and leaves it alone.
  S6. The projects listed are SECRET_PROJECT_ID, every project ALLOWED_SECRET_PROJECTS names exactly (an entry
      without `*`) and the projects the listed clusters name (S4): the last cluster of an allowed project leaves
      its secret findable there after it is gone. A pattern entry lists nothing (it stays a filter); a project
      is listed for labelled secrets only, and what it holds is then held to S2, S3 and S5 like any other.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pullsecret.model import preconditions
from pullsecret.model.names import cluster_id_safe
from pullsecret.settings import secret_projects

if TYPE_CHECKING:
    from pullsecret.app import Application
    from pullsecret.settings.common import Settings

GONE = "gone"
FINALIZED = "finalized"  # deleted, and our Finalized=True is stored
DELETED = "deleted"  # deleted, never finalized: its own reconcile (the finalizer) is the fix
LIVE = "live"


def clusters(app: Application, *, page_size: int) -> Iterator[dict[str, Any]]:
    """S1: every cluster the API knows, in id order, page by page by key. A listed id that cannot be a cursor
    (unsafe characters, not past the last) is yielded but does not move it."""
    after: str | None = None
    while True:
        search = f"id > '{after}'" if after is not None else None
        items, total = app.hyperfleet.list_clusters(page=1, size=page_size, search=search, order="id asc")
        moved = after
        for item in items:
            cluster_id = item.get("id")
            if cluster_id_safe(cluster_id) and (moved is None or str(cluster_id) > moved):
                moved = str(cluster_id)
        yield from items
        # The page's total counts what matched the search: a page holding all of it is the last.
        if len(items) < page_size or len(items) >= total or moved == after:
            return
        after = moved


def verdict(app: Application, cluster_id: str) -> str:
    """S2: what HyperFleet says of this one cluster now: GONE, FINALIZED, DELETED or LIVE."""
    cluster = app.hyperfleet.get_cluster(cluster_id)
    if cluster is None:
        return GONE
    if not cluster.get("deleted_time"):
        return LIVE
    statuses = app.hyperfleet.list_statuses(cluster_id)
    ours = preconditions.statuses_by_adapter(statuses).get(app.settings.adapter_name) or {}
    finalized = preconditions.condition(ours, "Finalized") or {}
    return FINALIZED if finalized.get("status") == "True" else DELETED


def projects(settings: Settings) -> set[str]:
    """S6: the projects listed whatever the clusters name: SECRET_PROJECT_ID and ALLOWED_SECRET_PROJECTS' exact
    entries."""
    pinned = {settings.secret_project_id} if settings.secret_project_id else set()
    return pinned | set(secret_projects.named(settings.allowed_secret_projects))


def project_of(app: Application, cluster: dict[str, Any]) -> tuple[str | None, str | None]:
    """S4: (the project of the cluster's secret, None) or (None, why it is refused) or (None, None): none named."""
    try:
        return preconditions.secret_project(cluster, app.settings), None
    except preconditions.InvalidCluster as exc:
        return None, f"{exc.reason}: {exc.message}"
