"""The doctor's check of PRECONDITION_ADAPTERS against the adapters whose statuses HyperFleet holds.

A misspelt adapter name (`placment`) never reports, so every cluster waits for it forever and the status reads as
normal waiting. The clusters the HyperFleet check listed (up to CLUSTER_IDS) show which adapters report: a name
none of their statuses comes from fails, with the reported name it is closest to.
"""

from __future__ import annotations

import difflib

from pullsecret.doctor.kit import Context, Line
from pullsecret.errors import AdapterError

NAME = "precondition-adapters"


def precondition_adapters(ctx: Context) -> list[Line]:
    """One line: every PRECONDITION_ADAPTERS name reported on some listed cluster, or which never is."""
    wanted = ctx.settings.precondition_adapters
    if not wanted:
        return [Line(NAME, None, "PRECONDITION_ADAPTERS is empty: nothing to wait for")]
    reporting: set[str] = set()
    try:
        for cluster_id in list(ctx.cluster_projects)[:10]:
            reporting |= {str(s.get("adapter")) for s in ctx.hyperfleet.list_statuses(cluster_id) if s.get("adapter")}
    except AdapterError as exc:
        return [Line(NAME, None, f"the clusters' statuses could not be listed ({exc.reason}): not checked")]
    if not reporting:
        return [Line(NAME, None, "no listed cluster holds an adapter status yet: not checked")]
    missing = [name for name in wanted if name not in reporting]
    if not missing:
        return [Line(NAME, True, f"{', '.join(wanted)}: each reports on the clusters listed")]
    shown = []
    for name in missing:
        close = difflib.get_close_matches(name, sorted(reporting), n=1, cutoff=0.75)
        shown.append(f"{name} (did you mean {close[0]}?)" if close else name)
    return [
        Line(
            NAME,
            False,
            f"PRECONDITION_ADAPTERS names {', '.join(shown)}: no listed cluster's status comes from it, so every "
            "cluster would wait for it forever",
            f"set PRECONDITION_ADAPTERS to adapters HyperFleet runs (reporting here: {', '.join(sorted(reporting))})",
        )
    ]
