"""`python -m pullsecret fleet`: every cluster's pull-secret state, and what outlived its cluster (`--fix` removes it).

Per cluster (the HyperFleet API's clusters, page by page): its generation, our last status, the newest Secret
Manager version and the generation it holds (per our status's lineage), in service mode the credentials it holds
against the service's current ones (CREDS: current, behind, none; pullsecret.operator.convergence), what the
delivery shows (its `inspect`), and what disagrees. Then what outlived its cluster:

- secrets labelled as ours (pullsecret.secretstore.labels; listed with ListSecrets' label filter, in
  SECRET_PROJECT_ID, each project ALLOWED_SECRET_PROJECTS names exactly and each a listed cluster names) whose
  cluster the API no longer knows ("gone"), or holds as deleted without our Finalized ("deleted");
- external-secrets: accessor members of ours on a live cluster's secret for a namespace that is not the cluster's
  (its old namespace, gone or reused);
- direct: the Kubernetes Secret of a gone cluster. The runtime identity may not get, list or watch Secrets
  (terraform/kubernetes/rbac.yaml: create, patch, delete), so it cannot list what is left behind: it looks up
  the name the templates give a gone cluster's Secret (with your own credentials, `inspect` rights, it sees
  whether it is there), and `--fix` deletes it by name with the finalizer's ownership check. A Secret whose
  Secret Manager secret is gone too is not found from here: the view says so and how to list them.

`--fix` removes only what the ownership rules say is ours, in the finalizer's order (delivery first, then the
secret that made it findable), and prints each removal: a deleted cluster gets its own reconcile (the finalizer,
which reports Finalized); a gone cluster gets the delivery's cleanup, the secret's deletion (DELETE: nobody
is left to read it) and the revocation of its own credentials at their source (the Pull Secret Service); a stale
accessor member is removed by granting the cluster's own namespace, which drops every other member of ours.
What the sweep may remove at all (keyset paging, HyperFleet asked again about each cluster right before, the
function's project rules, this deployment's label) and where it looks is pullsecret.operator.sweep's S1-S6. A
project that cannot be listed is a note, never an abort; every line printed has its non-printable characters escaped.
Every step is idempotent, so an interrupted run is safe to run again. Reads are
sequential (one call at a time against each quota); Secret Manager deletions go through the store's write pacer
(pullsecret.secretstore.pacing).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pullsecret.delivery.base import Leaving, Stray, Where
from pullsecret.doctor.run import printable
from pullsecret.errors import AdapterError, TerminalError
from pullsecret.model import preconditions
from pullsecret.model.names import secret_name
from pullsecret.operator import convergence, sweep
from pullsecret.retrying import Deadline
from pullsecret.secretstore import listing
from pullsecret.secretstore.labels import sm_label_value
from pullsecret.source.base import DDR_LIMITS, RateLimits

if TYPE_CHECKING:
    from pullsecret.app import Application

PAGE_SIZE = 100
UNREAD = "not read: no get on Secrets"  # the delivery column of a Secret these credentials may not read


@dataclass
class Row:
    cluster_id: str
    generation: int | None
    status: str
    stored: str  # the newest Secret Manager version
    holds: str
    delivery: str
    disagrees: list[str] = field(default_factory=list)
    creds: str = "-"  # the credentials it holds against the service's current ones (pullsecret.operator.convergence)


@dataclass(frozen=True)
class Orphan:
    kind: str  # secret-gone, secret-deleted, kubernetes-secret, accessor
    what: str
    why: str
    fix: Callable[[], str] | None  # removes it (only what is ours), returns what it did; None: nothing to run


@dataclass
class View:
    started: int = field(default_factory=lambda: int(time.time()))  # S3: unix seconds the sweep began
    rows: list[Row] = field(default_factory=list)
    orphans: list[Orphan] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unlisted: list[str] = field(default_factory=list)  # projects whose secrets these credentials may not list


def clusters(app: Application, *, page_size: int = PAGE_SIZE) -> Iterator[dict[str, Any]]:
    """Every cluster the API knows, in id order, paged by key (S1 of pullsecret.operator.sweep)."""
    return sweep.clusters(app, page_size=page_size)


def _deadline(app: Application) -> Deadline:
    return Deadline(app.settings.retry_deadline_s)


def _names(app: Application, cluster_id: str) -> tuple[str, str]:
    from pullsecret.reconcile.target import names

    return names(app.settings, cluster_id)


@dataclass(frozen=True)
class _Ours:
    """Our status of one cluster, as the fleet view reads it."""

    observed: Any
    available: str  # "True", "False", "-"
    finalized: bool
    fingerprint: str  # the stored content's short fingerprint, "" when unknown
    sm_version: str | None  # the version our lineage says holds `observed`

    @classmethod
    def of(cls, ours: dict[str, Any]) -> _Ours:
        conditions = {c.get("type"): c for c in ours.get("conditions") or [] if isinstance(c, dict)}
        raw = ours.get("data")
        data: dict[str, Any] = raw if isinstance(raw, dict) else {}
        lineage = data.get("lineage")
        return cls(
            observed=ours.get("observed_generation"),
            available=str((conditions.get("Available") or {}).get("status", "-")),
            finalized=(conditions.get("Finalized") or {}).get("status") == "True",
            fingerprint=str(data.get("fingerprint") or "")[:12],
            sm_version=lineage.get("sm_version") if isinstance(lineage, dict) else None,
        )


def row_of(app: Application, cluster: dict[str, Any], view: View, asking: convergence.Asking) -> Row:
    """One cluster's line: each side read on its own, a side that cannot be read says why."""
    settings = app.settings
    cluster_id = str(cluster.get("id"))
    generation = cluster.get("generation") if isinstance(cluster.get("generation"), int) else None
    statuses = app.hyperfleet.list_statuses(cluster_id)
    raw = preconditions.statuses_by_adapter(statuses).get(settings.adapter_name) or {}
    ours = _Ours.of(raw)
    row = Row(cluster_id, generation, f"Available={ours.available} g{ours.observed}" if raw else "none", "-", "-", "-")
    if cluster.get("deleted_time"):
        row.status += ", deleted" + (" (finalized)" if ours.finalized else ", not finalized")
    project, refused = sweep.project_of(app, cluster)
    secret_id, kube_name = _names(app, cluster_id)
    if refused is not None:
        row.disagrees.append(f"project refused ({refused[:80]}): not read")
    newest = _stored(app, row, project, secret_id)
    if newest is not None:
        row.holds = f"g{ours.observed}" if ours.sm_version == newest["name"] else "?"
    try:
        placement = preconditions.placement_of(cluster_id, statuses, settings)
    except TerminalError as exc:
        row.delivery = f"no placement: {exc.message[:60]}"
    else:
        _delivered(app, row, ours, placement, kube_name)
        if project is not None:
            where = Where(cluster_id, secret_name(project, secret_id), placement, kube_name)
            view.orphans += [_orphan(app, stray) for stray in app.delivery.strays(where, _deadline(app))]
    if not cluster.get("deleted_time"):
        row.disagrees += _disagreements(row, ours, generation, newest)
        row.creds = asking.held(cluster_id, raw).state
    return row


def _stored(app: Application, row: Row, project: str | None, secret_id: str) -> dict[str, Any] | None:
    """The newest Secret Manager version (metadata), or None; sets the row's column."""
    if project is None:
        row.stored = "no GCP project" if not row.disagrees else "project refused"
        return None
    try:
        described = app.store.description.describe(project=project, secret_id=secret_id, deadline=_deadline(app))
    except AdapterError as exc:
        row.stored = f"unreadable: {exc.message[:60]}"
        return None
    if described is None:
        row.stored = "no secret"
        return None
    if not described["versions"]:
        row.stored = "no version"
        return None
    newest: dict[str, Any] = described["versions"][0]
    row.stored = f"v{newest['name'].rsplit('/', 1)[-1]} {newest['state']}"
    return newest


def _delivered(app: Application, row: Row, ours: _Ours, placement: preconditions.Placement, kube_name: str) -> None:
    """What the delivery shows (its `inspect`), in the row's column."""
    shown = app.delivery.inspect(placement, kube_name, _deadline(app))
    if "error" in shown:
        row.delivery = UNREAD if "403" in str(shown["error"]) else "unreadable"
    elif shown.get("exists") is False:
        row.delivery = "Secret absent"
    elif "content_fingerprint" in shown:
        held = (shown.get("annotations") or {}).get("hyperfleet.io/generation", "?")
        row.delivery = f"Secret {shown['content_fingerprint']} g{held}"
        if ours.fingerprint and shown["content_fingerprint"] != ours.fingerprint:
            row.disagrees.append("the Secret's content is not what the status says was stored")
    elif "access_member" in shown:
        row.delivery = f"access for {placement.namespace}"


def _disagreements(row: Row, ours: _Ours, generation: int | None, newest: dict[str, Any] | None) -> list[str]:
    found = []
    if ours.observed is None:
        found.append("no status of ours yet (never reconciled)")
    elif generation is not None and ours.observed != generation:
        found.append(f"status is of generation {ours.observed}, the cluster is at {generation}")
    if ours.available == "True" and newest is None:
        found.append("Available but no Secret Manager version")
    if newest is not None and newest["state"] != "ENABLED":
        found.append(f"the newest version is {newest['state']}")
    if row.delivery == "Secret absent" and ours.available == "True":
        found.append("Available but the Secret is absent")
    return found


def _orphan(app: Application, stray: Stray) -> Orphan:
    """A delivery's stray as fleet lists it (its fix given the deadline of the moment it runs)."""
    fix = stray.fix
    return Orphan(stray.kind, stray.what, stray.why, None if fix is None else lambda: fix(_deadline(app)))


def _gone_fix(app: Application, listed: listing.Listed, cluster_id: str, project: str) -> Callable[[], str]:
    settings = app.settings
    secret_id, kube_name = _names(app, cluster_id)
    placement = None
    if settings.management_cluster is not None:
        namespace = settings.management_namespace_template.format(cluster_id=cluster_id)
        placement = preconditions.Placement(settings.management_cluster, namespace)

    def fix() -> str:
        now = sweep.verdict(app, cluster_id)  # S2: asked again right before anything is removed
        if now not in (sweep.GONE, sweep.FINALIZED):
            return f"left {listed.name} alone: cluster {cluster_id} is {now} now"
        # The finalizer's order: the delivery first, then the secret that made this findable (a rerun finds it),
        # then the cluster's own credentials at their source.
        data = app.delivery.cleanup(Leaving(listed.name, placement, kube_name), _deadline(app)).data
        # DELETION_POLICY, as the finalizer applies it: Terraform grants secrets.delete only with DELETE.
        done = app.store.retention.delete_secret(
            project=project, secret_id=secret_id, policy=settings.deletion_policy, deadline=_deadline(app)
        )
        revoked = app.source.revoke(cluster_id, _deadline(app)).get("revoked")
        return (
            f"removed {listed.name} ({done}); delivery: {data.get('access_cleanup') or data.get('kubernetes_cleanup')}"
            + (f"; credentials at the service: {revoked}" if revoked else "")
        )

    return fix


def orphans_of(
    app: Application, project: str, known: dict[str, dict[str, Any]], view: View, *, page_size: int = PAGE_SIZE
) -> None:
    """Secrets labelled as ours in `project` whose cluster is gone or deleted; a refused listing is a note."""
    try:
        _orphans_of(app, project, known, view, page_size)
    except AdapterError as exc:
        view.unlisted.append(project)
        if exc.reason != "PermissionDenied":
            view.notes.append(f"secrets of gone clusters not looked for in project {project}: {exc.message[:200]}")
            return
        view.notes.append(
            f"secrets of gone clusters not looked for in project {project}: these credentials may not list its "
            "secrets (secretmanager.secrets.list is granted on the project, and the runtime identity's grants are "
            "per secret by design, terraform/iam.tf); run fleet with credentials holding "
            f"roles/secretmanager.viewer on {project}"
        )


def _orphans_of(app: Application, project: str, known: dict[str, dict[str, Any]], view: View, page_size: int) -> None:
    settings = app.settings
    for listed in listing.ours(
        app.store.calls, project=project, adapter=settings.adapter_name, deadline=_deadline(app), page_size=page_size
    ):
        labelled = listed.labels.get("cluster-id", "")
        secret_id = listed.name.rsplit("/", 1)[-1]
        # Ours only when the labels say so AND the name is the one the template gives that cluster id.
        if not labelled or _names(app, labelled)[0] != secret_id or sm_label_value(labelled) != labelled:
            continue
        if listed.created is not None and listed.created >= view.started:
            continue  # S3: younger than the sweep
        marked = listed.labels.get("deployment")
        if marked != settings.deployment_id:  # S5: another deployment's, or not marked by any yet
            if marked is None:
                view.notes.append(
                    f"{listed.name} (cluster {labelled}) carries no deployment label yet: left alone (this "
                    f"deployment's next write to it adds deployment={settings.deployment_id}); if its cluster is gone, "
                    "check that no other deployment uses it before removing it by hand"
                )
            continue
        cluster = known.get(labelled)
        now = sweep.verdict(app, labelled) if cluster is None or cluster.get("deleted_time") else sweep.LIVE
        if now == sweep.LIVE:
            continue  # S2: created (or listed late) while the sweep ran, or live
        if now in (sweep.GONE, sweep.FINALIZED):
            view.orphans.append(
                Orphan(
                    "secret-gone",
                    listed.name,
                    f"cluster {labelled} is gone from the HyperFleet API"
                    if now == sweep.GONE
                    else f"cluster {labelled} is deleted and finalized",
                    _gone_fix(app, listed, labelled, project),
                )
            )
            _left_behind(app, labelled, view)
        else:

            def finalize(cluster_id: str = labelled) -> str:
                from pullsecret.reconcile import entry

                outcome = entry.run(app, cluster_id, _deadline(app))
                return f"cluster {cluster_id}: {outcome.result} (the finalizer ran and reported)"

            view.orphans.append(
                Orphan(
                    "secret-deleted", listed.name, f"cluster {labelled} is deleted and was never finalized", finalize
                )
            )


def _left_behind(app: Application, cluster_id: str, view: View) -> None:
    """What a gone cluster left in the delivery (the delivery says; direct: its Kubernetes Secret, by name)."""
    settings = app.settings
    _secret_id, kube_name = _names(app, cluster_id)
    namespace = settings.management_namespace_template.format(cluster_id=cluster_id)
    placement = preconditions.Placement(settings.management_cluster, namespace) if settings.management_cluster else None
    leaving = Leaving(None, placement, kube_name)
    view.orphans += [_orphan(app, stray) for stray in app.delivery.left_behind(cluster_id, leaving, _deadline(app))]


def build(app: Application, *, page_size: int = PAGE_SIZE, asking: convergence.Asking | None = None) -> View:
    """Every cluster's row and what outlived its cluster; `asking` paces CREDS (the DDR's limits by default)."""
    asking = asking or convergence.Asking.of(app, DDR_LIMITS)
    view = View()
    known: dict[str, dict[str, Any]] = {}
    projects = sweep.projects(app.settings)  # S6: and each project a listed cluster names, below
    for cluster in clusters(app, page_size=page_size):
        cluster_id = str(cluster.get("id"))
        try:
            row = row_of(app, cluster, view, asking)
        except AdapterError as exc:  # one cluster that cannot be read (an id no name can be made of) is one row
            generation = cluster.get("generation") if isinstance(cluster.get("generation"), int) else None
            row = Row(cluster_id, generation, "-", "-", "-", "-", [f"not read: {exc.message[:120]}"])
        known[cluster_id] = cluster
        view.rows.append(row)
        project, refused = sweep.project_of(app, cluster)
        if refused is not None:
            view.notes.append(f"cluster {cluster_id}: its project is refused, not listed or touched: {refused}")
        elif project:
            projects.add(project)
    for project in sorted(projects):
        orphans_of(app, project, known, view, page_size=page_size)
    view.notes += app.delivery.fleet_notes()
    return view


def render(view: View, app: Application) -> list[str]:
    wide = max([len("DELIVERY"), *(len(r.delivery) for r in view.rows)])  # the column fits its longest cell
    lines = [
        f"{len(view.rows)} cluster{'' if len(view.rows) == 1 else 's'} "
        f"(adapter {app.settings.adapter_name}, delivery {app.delivery.mode}):",
        f"  {'CLUSTER':<16} {'GEN':>4}  {'STATUS':<42} {'SECRET MANAGER':<16} {'HOLDS':<6} {'CREDS':<7} "
        f"{'DELIVERY':<{wide}} DISAGREES",
    ]
    for r in view.rows:
        lines.append(
            f"  {r.cluster_id:<16} {r.generation if r.generation is not None else '-':>4}  {r.status:<42} "
            f"{r.stored:<16} {r.holds:<6} {r.creds:<7} {r.delivery:<{wide}} {'; '.join(r.disagrees) or '-'}"
        )
    if view.orphans:
        lines.append(f"{len(view.orphans)} outlived their cluster:")
        lines += [f"  {o.kind:<18} {o.what}: {o.why}" for o in view.orphans]
    elif view.unlisted:
        lines.append(f"outlived their cluster: not known, the secrets of {', '.join(view.unlisted)} were not listed")
    else:
        lines.append("nothing outlived its cluster")
    lines += [f"note: {n}" for n in view.notes]
    return lines


def fix_hint(fixable: int, outlived: int) -> str:
    """What --fix would remove, counted as the list above counts. A stray without a fix of its own (a gone
    cluster's Kubernetes Secret) is removed by its cluster's secret's fix, the finalizer's order: it goes too."""
    if fixable == outlived:
        return f"run again with --fix to remove {'it' if fixable == 1 else f'these {fixable}'} (ours)"
    along = outlived - fixable
    return (
        f"run again with --fix to remove these {outlived} (ours): {fixable} removal{'' if fixable == 1 else 's'}; "
        f"the other {along} {'goes' if along == 1 else 'go'} with {'its' if along == 1 else 'their'} cluster's "
        "secret (the delivery is cleaned up first)"
    )


def main(
    app: Application,
    *,
    fix: bool,
    page_size: int = PAGE_SIZE,
    out: Callable[[str], None] = print,
    limits: RateLimits = DDR_LIMITS,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Print the view; with `fix`, remove what is ours and print each removal. Exit 0, 1 when a fix failed.
    `limits`: what the source's service allows one identity (`--service-limits`), which CREDS keeps to."""
    asking = convergence.Asking.of(app, limits, sleep)
    pace = asking.pace()
    if pace is not None:
        out(pace)
    view = build(app, page_size=page_size, asking=asking)
    for line in render(view, app):
        out(printable(line))
    if fix and any(row.delivery == UNREAD for row in view.rows):
        out(
            "note: DELIVERY is not read with --fix: it runs as the runtime identity, which may not get Secrets; "
            "`fleet` without --fix reads them with PULLSECRET_OPERATOR_KUBECONFIG"
        )
    fixable = [o for o in view.orphans if o.fix is not None]
    if not fix:
        if fixable:
            out(fix_hint(len(fixable), len(view.orphans)))
        return 0
    failed = 0
    for orphan in fixable:
        assert orphan.fix is not None
        try:
            out(printable(f"fixed: {orphan.fix()}"))
        except AdapterError as exc:
            failed += 1
            out(printable(f"not fixed: {orphan.what}: {exc.message}"))
    out(f"--fix: {len(fixable) - failed} fixed, {failed} failed; run again to check (it is safe to rerun)")
    return 1 if failed else 0
