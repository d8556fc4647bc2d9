"""The clusters a rekey run selects, in id order: the ids asked, or every cluster by keyset pages."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pullsecret.errors import TransientError
from pullsecret.model import names
from pullsecret.operator.rekey.request import (
    Request,
)

if TYPE_CHECKING:
    from pullsecret.app import Application


def selected(app: Application, request: Request, after: str) -> Iterator[dict[str, Any]]:
    """The selected clusters past `after`, in id order: the ids asked, or every cluster (keyset pages). A page that
    does not move the cursor past `after` ends the listing with a TransientError (an API that ignores `search`
    would otherwise answer the same page for ever), as the sweep's paging does."""
    if request.ids:
        for cluster_id in sorted(set(request.ids)):
            if cluster_id > after:
                cluster = app.hyperfleet.get_cluster(cluster_id)
                yield cluster if cluster is not None else {"id": cluster_id, "_gone": True}
        return
    yield from _listed(app, request.page_size, after)


def _listed(app: Application, page_size: int, after: str) -> Iterator[dict[str, Any]]:
    """Every cluster past `after`, by keyset pages; raises TransientError when a full page does not move it."""
    while True:
        if after and not names.SAFE_CLUSTER_ID_RE.match(after):  # it goes into the search string
            raise ValueError(f"not a cluster id: {after[:40]!r}")
        search = f"id > '{after}'" if after else None
        page, _ = app.hyperfleet.list_clusters(page=1, size=page_size, search=search, order="id asc")
        moved = after
        for listed in page:
            listed_id = listed.get("id")
            if isinstance(listed_id, str) and names.SAFE_CLUSTER_ID_RE.match(listed_id) and listed_id > moved:
                moved = listed_id
                yield listed
        if len(page) < page_size:
            return
        if moved == after:
            raise TransientError(
                f"the HyperFleet API's cluster listing did not move past {after or 'the start'} (a full page, no id "
                "after it: is `search` ignored?); stopping rather than listing the same page again",
                reason="PagingStuck",
                service="hyperfleet",
            )
        after = moved


def selected_count(app: Application, request: Request) -> int | None:
    if request.ids:
        return len(set(request.ids))
    _, total = app.hyperfleet.list_clusters(page=1, size=1)
    return total
