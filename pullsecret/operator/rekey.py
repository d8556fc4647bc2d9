"""`python -m pullsecret rekey`: re-key the fleet (or some clusters) now, at the Secret Manager write quota's pace.

Per selected cluster in id order, the source does its part (pullsecret.source.base `Rekeying`): a source that holds
each cluster's own credentials is asked to rotate them when they were created before the run's cutoff
(`--compromise` revokes the old set at once; the Pull Secret Service's part: pullsecret.source.service.rekey);
then the cluster's reconcile event (Sentinel's shape, pullsecret.publishing) is published on ADAPTER_TOPIC, so the
function delivers the new set now instead of at the cluster's next Sentinel event. Each reconcile costs one Secret
Manager version and one delivery write, so events go out at `Settings.publish_rate()`: 95 % of SECRET_WRITE_QUOTA
per ROTATION_WRITES_PER_CLUSTER unless ROTATION_PUBLISH_RATE says (the budget a source's fan-out uses too). The
source's part for the next clusters runs ahead of their publish slots (LOOKAHEAD), so a source slower than the
slot does not set the pace.

Without a selection, a source with a way of its own to reach every cluster takes the whole run (`whole_fleet`: the
platform pull secret's rotation fan-out of its newest version, its record, lease and pace; add the new version
first); with cluster ids, their reconcile events are published at the same pace.

The pace is the slowest of the limits the run spends (`plan`): Secret Manager's write quota (the events) and each
of the source's service budgets (pullsecret.source.base `Budget`: for the Pull Secret Service, DDR §3.5 per
ServiceAccount, the command's and the function's; `--service-limits` gives other values, `--own-identity` says the
command runs as a ServiceAccount of its own). The command says before it starts which limit binds, whose budget it
spends and the time it makes; `--dry-run` says the same without acting; the progress lines' ETA is that estimate. A
429 from the service is honoured: the cluster's step waits for its Retry-After and tries again (MAX_RATE_LIMITED
times), and the summary counts them.

Every incident re-keys: the cutoff (credentials created before it are re-keyed) is `--created-before`, else the
run's start (whole seconds, rounded up), and it is part of the record's key, so a new run never finds an older run's
record. An interrupted run prints the command that resumes it (the same, with `--created-before` its cutoff); that
run finds its record and goes on from its last save, and a cluster handled since is found re-keyed (credentials
newer than the cutoff) and only gets its event again. A finished run asked again says so, with the record's age, and
exits 4 (nothing done). A record that fails its checks when read is reported and set aside
(pullsecret.secretstore.progress). A run that stops lets go of the record's lease. `--compromise` says first what it
cannot do for the nodes (NODES_WARNING) and asks for `--yes` when nobody can answer.

The record (pullsecret.secretstore.progress, annotation `hyperfleet-rekey` of the secret `rekey_secret_id` names):
`key` (what was asked, the cutoff included), `cutoff`, `started`, `after`, `done`, the counts and failures, `holder`
and `lease_until`. Invariants: K1, a run changes the record only by compare-and-swap from what it read or wrote
last, so two runs never both hold it; K2, `after` only grows within one `key`, and is saved only after every
cluster up to it got its rotation and its event; K3, a cluster handled after the last save and before an
interruption is handled again by the resume, which finds its credentials newer than `cutoff` and does not rotate
them again.

Progress lines (done / remaining / failed, ETA) go to stdout while it runs, then a summary; `--watch` then follows
the clusters until each holds the source's current credentials (pullsecret.operator.convergence), and names the
stragglers.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pullsecret.errors import AdapterError, RateLimited, TransientError
from pullsecret.model import events, names, preconditions
from pullsecret.operator import convergence
from pullsecret.publishing import Publisher, sentinel_event
from pullsecret.retrying import Deadline
from pullsecret.secretstore.progress import A_REKEY, Ledger, RunRecord, UntrustedRecord, rekey_secret_id
from pullsecret.source.base import Budget, RateLimits, Rekeyed, Rekeying

if TYPE_CHECKING:
    from pullsecret.app import Application

PAGE_SIZE = 100
LEASE_S = 600.0  # a run's hold on the record; each save renews it
# The command is no event: a save of its record may wait for a Secret Manager write slot as long as the quota's
# one-minute window can make it wait, however short the function's RETRY_DEADLINE (a save given up stops the run).
RECORD_WAIT_S = 60.0
REPORT_EVERY_S = 5.0
# Source steps (the service's GET, rotation POST) started ahead of their cluster's publish slot; an interruption
# leaves at most this many clusters rotated without their event, which the resume publishes (now newer).
LOOKAHEAD = 4
MAX_RATE_LIMITED = 5  # 429s one cluster's step honours before the run stops (and resumes when asked again)
# The README's exit table: 0 done, 1 failed, 2 usage, 3 transient (try again), 4 nothing done, 5 configuration.
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_TRANSIENT, EXIT_NOTHING_DONE, EXIT_CONFIG = 0, 1, 2, 3, 4, 5
Out = Callable[[str], None]
DDR_LIMITS = RateLimits()  # the Pull Secret Service's DDR §3.5, per ServiceAccount
UNKNOWN = "unknown to the HyperFleet API (python -m pullsecret fleet lists the cluster ids)"
NODES_WARNING = (
    "warning: on Google Cloud the nodes keep the revoked credential. HyperShift writes a changed pull secret to the "
    "nodes' kubelet config.json only through its Global Pull Secret DaemonSet, which runs on AWS and Azure Replace "
    "NodePools only (openshift/hypershift #6736, #7234, #8327); here the hosted cluster's Secrets get the new set, "
    "but every existing node cannot pull an image it has not cached until its NodePool is replaced"
)
REPLACE_NODEPOOLS = (
    "to give the nodes the new credential, replace each re-keyed cluster's NodePools: a NodePool rolls its nodes "
    "when the pull secret's name changes (openshift/hypershift #8327), not its content; so create a new NodePool "
    'and delete the old one (docs/lifecycle.md, "What a rotation by content update does on HyperShift")'
)


@dataclass(frozen=True)
class Request:
    """What the operator asked: which clusters, how, and whether to only say what would happen."""

    ids: tuple[str, ...] = ()  # empty: every cluster (or those --created-before selects)
    created_before: float | None = None
    compromise: bool = False
    dry_run: bool = False
    watch: bool = False
    watch_timeout_s: float = 1800.0
    page_size: int = PAGE_SIZE
    yes: bool = False  # --yes: the compromise's warning read, go on without asking
    own_identity: bool = False  # --own-identity: the command runs as a ServiceAccount of its own at the service
    limits: RateLimits = DDR_LIMITS  # --service-limits: what the source's service allows one identity

    def key(self, mode: str, cutoff: float) -> str:
        """The record's key: the same request with the same cutoff finds its own record; a new incident does not."""
        what = f"{mode}|{','.join(sorted(self.ids))}|{cutoff:.0f}|{self.compromise}"
        return hashlib.sha256(what.encode()).hexdigest()[:16]

    def cutoff(self, now: float) -> float:
        """--created-before, else `now` rounded up to whole seconds (as printed, so that the resume command finds the
        record; up, because the service's times are whole seconds: a credential minted in the run's first second
        counts as before it, re-keyed rather than missed)."""
        return self.created_before if self.created_before is not None else float(math.ceil(now))

    def resume_command(self, cutoff: float) -> str:
        words = ["python -m pullsecret rekey", *sorted(self.ids)]
        words += ["--compromise"] if self.compromise else []
        words += [f"--created-before {_rfc3339(cutoff)}"]
        return " ".join(words)


@dataclass(frozen=True)
class Plan:
    """The limits a run spends and the one that binds: its pace and the time it makes for `clusters`."""

    budgets: tuple[Budget, ...]
    clusters: int | None

    @property
    def binding(self) -> Budget:
        return min(self.budgets, key=lambda b: b.clusters_per_second)

    @property
    def rate(self) -> float:
        """Clusters a second (events published a second)."""
        return max(self.binding.clusters_per_second, 1e-9)

    def lines(self) -> list[str]:
        found = []
        for budget in self.budgets:
            found.append(
                f"  limit: {budget.limit}, spent by {budget.whose}: {budget.per_cluster:g} per cluster, "
                f"{budget.clusters_per_second * 60:.1f} clusters/min"
            )
        binding = self.binding
        took = _duration(self.clusters / self.rate) if self.clusters is not None else "?"
        found.append(
            f"  binding: {binding.limit} ({binding.whose}): {self.clusters if self.clusters is not None else '?'} "
            f"cluster(s) take about {took}"
        )
        return found


def plan(app: Application, request: Request, rekeying: Rekeying, clusters: int | None) -> Plan:
    """The run's limits: Secret Manager's write quota for the events, and the source's service budgets."""
    quota = Budget(
        f"Secret Manager writes, {app.settings.publish_rate():g} events/s (SECRET_WRITE_QUOTA, PUBLISH_SHARE)",
        "the clusters' project's write quota (the function's writes)",
        1,
        app.settings.publish_rate(),
    )
    service = rekeying.budgets(
        compromise=request.compromise,
        clusters=clusters or 0,
        own_identity=request.own_identity,
        limits=request.limits,
    )
    return Plan((quota, *service), clusters)


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h" if seconds < 172_800 else f"{seconds / 86400:.1f} days"


def parse_time(text: str) -> float:
    """An RFC 3339 time (a date alone means its midnight UTC) as unix seconds; ValueError when not one."""
    moment = events.parse_time(text)
    if moment is None:
        raise ValueError(f"not an RFC 3339 time: {text[:40]!r}")
    return moment.timestamp()


def _rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Progress:
    """Progress lines while a run works: done / remaining / failed and the time left at the plan's pace."""

    def __init__(self, out: Out, total: int | None, rate: float, clock: Callable[[], float]) -> None:
        self.out, self.total, self.rate, self.clock = out, total, rate, clock
        self.began = clock()
        self.shown = self.began
        self.handled = 0

    def line(self, record: RunRecord, *, force: bool = False) -> None:
        now = self.clock()
        if not force and now - self.shown < REPORT_EVERY_S:
            return
        self.shown = now
        done = record.rotated + record.current
        remaining = max(0, self.total - done - record.failed) if self.total is not None else None
        eta = _duration(remaining / self.rate) if remaining is not None and self.rate > 0 else "?"
        self.out(
            f"rekey: {done} done ({record.rotated} rotated, {record.current} already current), "
            f"{remaining if remaining is not None else '?'} remaining, {record.failed} failed, ETA {eta}"
        )


def _pace(next_at: float, interval: float, sleep: Callable[[float], None]) -> float:
    """Wait for the next publish slot (one event per interval); the slot after it. A slot taken late by less than
    an interval (a thread woken late on a busy machine) keeps the schedule, so the next comes sooner and the rate
    holds; later than that, the schedule restarts from now: at most two events ever go out back to back."""
    delay = next_at - time.monotonic()
    if delay > 0:
        sleep(delay)
    return max(next_at + interval, time.monotonic())


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


def _total(app: Application, request: Request) -> int | None:
    if request.ids:
        return len(set(request.ids))
    _, total = app.hyperfleet.list_clusters(page=1, size=1)
    return total


def _claim(ledger: Ledger, key: str, *, cutoff: float, now: float, me: str, out: Out) -> RunRecord | tuple[int, str]:
    """This run's record (resumed or new, held by `me`), or (exit code, why) not to run."""
    try:
        found = ledger.load(now)
    except UntrustedRecord as exc:
        out(f"rekey: the progress record {ledger.name} is not trusted ({exc.why}): set aside; this run starts anew")
        found = None
    if found is not None and found.holder and found.holder != me and found.lease_until > now:
        return EXIT_TRANSIENT, f"another rekey run holds the record until {_rfc3339(found.lease_until)}; try again then"
    if found is not None and found.key == key and found.done:
        age = _duration(max(0.0, now - found.started))
        return EXIT_NOTHING_DONE, (
            f"this request (cutoff {_rfc3339(found.cutoff)}) already finished: started {age} ago, {found.rotated} "
            f"rotated, {found.current} already current, {found.failed} failed; nothing new to do. A new incident: "
            "run it without --created-before (the cutoff is then its start)"
        )
    if found is None or found.key != key:
        found = RunRecord(key=key, cutoff=cutoff, started=now)
    found.holder, found.lease_until = me, now + LEASE_S
    if ledger.save(found):
        return found
    return EXIT_TRANSIENT, "another rekey run changed the record meanwhile; try again"


def _refusal(app: Application, request: Request, rekeying: Rekeying) -> tuple[int, str] | None:
    """Why this request cannot run here: (exit code, the error with its fix), or None."""
    refused = rekeying.refusal(created_before=request.created_before is not None, compromise=request.compromise)
    if refused is not None:
        return EXIT_USAGE, refused
    if not app.settings.adapter_topic and not request.dry_run:
        return EXIT_CONFIG, (
            "ADAPTER_TOPIC is not set: the reconcile events have no topic to go to; set it to the adapter's own "
            "topic (terraform output adapter_topic), not Sentinel's"
        )
    # The run's record (cluster by cluster): a source's own way through the whole fleet keeps its own.
    recorded = bool(request.ids) or app.source.own_credentials
    if recorded and not (app.settings.secret_project_id or app.identity.project_id):
        return EXIT_CONFIG, "no project for the progress record: set SECRET_PROJECT_ID"
    return None


def _confirmed(request: Request, out: Out, confirm: Callable[[str], bool] | None) -> int | None:
    """--compromise: the nodes' warning first; then --yes, or a person's yes; None to go on, else the exit code."""
    out(NODES_WARNING)
    if request.yes:
        return None
    if confirm is None:
        out("error: --compromise revokes every selected cluster's credentials at once: pass --yes to go on")
        return EXIT_USAGE
    if confirm("revoke the credentials now? [y/N] "):
        return None
    out("rekey: nothing done")
    return EXIT_NOTHING_DONE


def ask(question: str) -> bool:
    """A person's yes on the terminal."""
    try:
        return input(question).strip().lower() in ("y", "yes")
    except EOFError:
        return False


def run(
    app: Application,
    request: Request,
    *,
    publisher: Publisher | None = None,
    out: Out = print,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.time,
    confirm: Callable[[str], bool] | None = None,
) -> int:
    """Run (or resume) a rekey; returns the exit code. `confirm` asks a person (None: nobody can answer)."""
    rekeying = app.source.rekeying()
    refused = _refusal(app, request, rekeying)
    if refused is not None:
        out(f"error: {refused[1]}")
        return refused[0]
    if request.dry_run:
        return _dry_run(app, request, rekeying, out)
    if request.compromise:
        stop = _confirmed(request, out, confirm)
        if stop is not None:
            return stop
    publisher = publisher or Publisher(app.identity.credentials)
    if not request.ids:
        watch_s = request.watch_timeout_s if request.watch else None
        code = rekeying.whole_fleet(app.hyperfleet, publisher, out=out, sleep=sleep, watch_s=watch_s)
        if code is not None:
            return code
    code = _recorded(app, request, rekeying=rekeying, publisher=publisher, out=out, sleep=sleep, clock=clock)
    if request.compromise and code in (EXIT_OK, EXIT_FAILED):
        out(REPLACE_NODEPOOLS)
    if request.watch and code != EXIT_OK:
        out(f"watch skipped: the run ended with exit code {code}")
    if code == EXIT_OK and request.watch:
        return watch(app, request, out, sleep)
    return code


def _recorded(
    app: Application,
    request: Request,
    *,
    rekeying: Rekeying,
    publisher: Publisher,
    out: Out,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
) -> int:
    """Claim (or resume) the request's record, then work through its clusters; a run that stops lets go of it."""
    settings = app.settings
    project = settings.secret_project_id or app.identity.project_id
    assert project is not None  # _refusal: a recorded run has a project
    waits = record_deadline_s(settings.retry_deadline_s)
    ledger = Ledger(
        app.store,
        name=names.secret_name(project, rekey_secret_id(settings)),
        annotation=A_REKEY,
        labels={"managed-by": "hyperfleet", "adapter": settings.adapter_name, "resource-type": "rekey-progress"},
        deadline=lambda: Deadline(waits),
        max_lease_s=LEASE_S,
    )
    now = clock()
    cutoff = request.cutoff(now)
    claimed = _claim(ledger, request.key(app.source.name, cutoff), cutoff=cutoff, now=now, me=uuid.uuid4().hex, out=out)
    if isinstance(claimed, tuple):
        out(f"{'error: ' if claimed[0] != EXIT_NOTHING_DONE else 'rekey: '}{claimed[1]}")
        return claimed[0]
    try:
        # A record started before this run is resumed (an interrupted run's, saved or not): its first page is read.
        return _work(
            app,
            request,
            record=claimed,
            ledger=ledger,
            rekeying=rekeying,
            publisher=publisher,
            out=out,
            sleep=sleep,
            resumed=claimed.started < now,
        )
    except BaseException:
        _release(ledger, claimed)
        raise


def _release(ledger: Ledger, record: RunRecord) -> None:
    """Let go of the lease of a run that stops (best effort: the lease runs out in LEASE_S anyway)."""
    if not record.holder:
        return
    record.holder, record.lease_until = "", 0.0
    with contextlib.suppress(AdapterError):
        ledger.save(record)


def _work(
    app: Application,
    request: Request,
    *,
    record: RunRecord,
    ledger: Ledger,
    rekeying: Rekeying,
    publisher: Publisher,
    out: Out,
    sleep: Callable[[float], None],
    resumed: bool,
) -> int:
    """Handle every selected cluster after the record's place, saving it after each page (K2)."""
    topic = app.settings.adapter_topic
    assert topic is not None
    pending: list[Any] = []
    last = record.after
    pool = ThreadPoolExecutor(max_workers=LOOKAHEAD, thread_name_prefix="rekey-step")
    step = _Step(rekeying, request, record.cutoff, resumed=resumed, sleep=sleep)

    try:
        total = _total(app, request)
        schedule = plan(app, request, rekeying, total)
        _announce(out, request, record, topic, schedule)
        interval = 1.0 / schedule.rate
        progress = Progress(out, total, schedule.rate, time.time)
        progress.line(record, force=True)
        next_at, saved_at = time.monotonic(), time.monotonic()
        for index, (cluster, stepped) in enumerate(_lookahead(pool, selected(app, request, record.after), step)):
            cluster_id = str(cluster["id"])
            rekeyed = stepped.result()
            _count(record, cluster_id, rekeyed)
            if rekeyed is not None and not cluster.get("_gone"):
                next_at = _pace(next_at, interval, sleep)
                pending.append(publisher.publish(topic, sentinel_event(cluster), rekeyed=True))
            last = cluster_id
            progress.handled = index + 1
            progress.line(record)
            # Saved after each page, and often enough that the lease never runs out in a slow campaign.
            due = progress.handled % request.page_size == 0 or time.monotonic() - saved_at > LEASE_S / 3
            if due:
                if not _save(ledger, record, pending, last):
                    out("error: another rekey run took the record over; stopping")
                    return EXIT_TRANSIENT
                saved_at = time.monotonic()
    except (KeyboardInterrupt, AdapterError) as exc:
        try:
            saved = _save(ledger, record, pending, last, holder_done=True)
        except AdapterError:
            saved = False  # a publish of the page failed: its clusters are handled again by the resume
            _release(ledger, record)
        why = f"stopped: {exc.message}" if isinstance(exc, AdapterError) else "interrupted"
        out(
            f"rekey {why}; {'progress saved after ' + (last or 'the start') if saved else 'progress not saved'}: "
            f"resume with: {request.resume_command(record.cutoff)}"
        )
        return EXIT_TRANSIENT
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # a step begun finishes; an unpublished cluster is resumed
    record.done = True
    if not _save(ledger, record, pending, last, holder_done=True):
        out("error: another rekey run took the record over; stopping")
        return EXIT_TRANSIENT
    progress.line(record, force=True)
    if step.limited:
        out(f"rekey: the service answered 429 {step.limited} time(s); each was honoured (its Retry-After waited)")
    return _summary(record, out)


class _Step:
    """One cluster's part at its source, on the pool (touches no record): None when there is nothing to re-key and
    no event to publish (being deleted: deletion revokes; created after the cutoff: nothing older to re-key)."""

    def __init__(
        self, rekeying: Rekeying, request: Request, cutoff: float, *, resumed: bool, sleep: Callable[[float], None]
    ) -> None:
        self.rekeying, self.request, self.cutoff, self.resumed, self.sleep = rekeying, request, cutoff, resumed, sleep
        self.limited = 0  # 429s honoured

    def __call__(self, index: int, cluster: dict[str, Any]) -> Rekeyed | None:
        if cluster.get("_gone"):
            return Rekeyed(None, UNKNOWN)
        if cluster.get("deleted_time"):
            return None
        created = events.parse_time(str(cluster.get("created_time") or ""))
        if created is not None and created.timestamp() > self.cutoff:
            return None
        # After a resume, the clusters up to a page past the saved place may have been re-keyed before the
        # interruption: those are read first (K3); the others are known to predate the cutoff.
        near = self.resumed and index < self.request.page_size + LOOKAHEAD
        return self._honouring_429(str(cluster["id"]), check=not self.request.compromise or near)

    def _honouring_429(self, cluster_id: str, *, check: bool) -> Rekeyed:
        """The source's step; a 429 (RateLimited) waits its Retry-After and asks again."""
        for _ in range(MAX_RATE_LIMITED):
            try:
                return self.rekeying.rotate(
                    cluster_id, cutoff=self.cutoff, compromise=self.request.compromise, check=check
                )
            except RateLimited as exc:
                self.limited += 1
                self.sleep(exc.retry_after_s)
        raise TransientError(
            f"the service answered 429 {MAX_RATE_LIMITED} times for cluster {cluster_id}: its limits are lower than "
            "--service-limits says",
            reason="RateLimited",
            service="source",
        )


def _announce(out: Out, request: Request, record: RunRecord, topic: str, schedule: Plan) -> None:
    """Before the first cluster: what the run does, its limits, the one that binds and its time, how to resume."""
    out(
        f"rekey: {'resuming after ' + record.after if record.after else 'starting'}; credentials created before "
        f"{_rfc3339(record.cutoff)} are {'revoked at once (compromise)' if request.compromise else 'rotated'}; "
        f"events to {topic}"
    )
    for line in schedule.lines():
        out(line)
    out(f"  resume an interruption with: {request.resume_command(record.cutoff)}")


def _count(record: RunRecord, cluster_id: str, rekeyed: Rekeyed | None) -> None:
    """Count one cluster's outcome on the loop's thread (None: nothing to re-key)."""
    if rekeyed is None or rekeyed.counted == "current":
        record.current += 1
    elif rekeyed.counted == "rotated":
        record.rotated += 1
    else:
        record.fail(cluster_id, rekeyed.why)


def _lookahead(
    pool: ThreadPoolExecutor,
    clusters: Iterator[dict[str, Any]],
    step: Callable[[int, dict[str, Any]], Rekeyed | None],
) -> Iterator[tuple[dict[str, Any], Future[Rekeyed | None]]]:
    """The clusters in order, each with its step started on `pool` up to LOOKAHEAD clusters ahead: the source's
    calls for the next clusters run while this one waits for its publish slot, so they do not set the pace."""
    ahead: deque[tuple[dict[str, Any], Future[Rekeyed | None]]] = deque()
    for index, cluster in enumerate(clusters):
        ahead.append((cluster, pool.submit(step, index, cluster)))
        if len(ahead) >= LOOKAHEAD:
            yield ahead.popleft()
    yield from ahead


def record_deadline_s(retry_deadline_s: float) -> float:
    """How long a read or save of the run's record may wait (for a write slot included): RETRY_DEADLINE, and at
    least RECORD_WAIT_S."""
    return max(retry_deadline_s, RECORD_WAIT_S)


def _save(ledger: Ledger, record: RunRecord, pending: list[Any], last: str, *, holder_done: bool = False) -> bool:
    """Wait for the page's publishes, then save the place (K2); the holder lets go at the end."""
    try:
        for future in pending:
            future.result(timeout=60.0)
    except Exception as exc:  # noqa: BLE001 - any publish failure: the place is not saved past it
        raise TransientError(
            f"publishing reconcile events failed ({type(exc).__name__})", reason="PublishFailed", service="pubsub"
        ) from None
    finally:
        pending.clear()
    record.after = last
    if holder_done:
        record.holder, record.lease_until = "", 0.0
    else:
        record.lease_until = time.time() + LEASE_S
    return ledger.save(record)


def _summary(record: RunRecord, out: Out) -> int:
    out(
        f"rekey finished: {record.rotated} rotated, {record.current} already current or nothing to rotate, "
        f"{record.failed} failed (started {_rfc3339(record.started)}, cutoff {_rfc3339(record.cutoff)})"
    )
    for cluster_id, why in record.failures.items():
        out(f"  failed {cluster_id}: {why}")
    if record.failed > len(record.failures):
        out(f"  ... and {record.failed - len(record.failures)} more")
    if record.failed and not record.rotated and all(why == UNKNOWN for why in record.failures.values()):
        return EXIT_NOTHING_DONE  # only unknown clusters asked: nothing done
    return EXIT_FAILED if record.failed else EXIT_OK


def _dry_run(app: Application, request: Request, rekeying: Rekeying, out: Out) -> int:
    """What a run would do, per cluster, and the limit that binds it; writing, rotating and asking nothing."""
    cutoff = request.cutoff(time.time())
    count = 0
    unknown = 0
    for cluster in selected(app, request, ""):
        cluster_id = str(cluster["id"])
        count += 1
        if cluster.get("_gone"):
            unknown += 1
            out(f"  {cluster_id}: {UNKNOWN}")
            continue
        if cluster.get("deleted_time"):
            out(f"  {cluster_id}: skipped (being deleted: its deletion revokes)")
            continue
        out(f"  {cluster_id}: {rekeying.preview(cluster_id, cutoff=cutoff, compromise=request.compromise)}")
    if request.compromise:
        out(NODES_WARNING)
    schedule = plan(app, request, rekeying, count - unknown)
    out(f"dry run: {count} cluster(s), credentials created before {_rfc3339(cutoff)}; the limits:")
    for line in schedule.lines():
        out(line)
    if not app.settings.adapter_topic:
        out("note: ADAPTER_TOPIC is not set: a run would refuse (exit 5); set it to the adapter's own topic")
    out("nothing was rotated, revoked or published")
    return EXIT_NOTHING_DONE if unknown and unknown == count else EXIT_OK


def watch(app: Application, request: Request, out: Out, sleep: Callable[[float], None]) -> int:
    """Follow the selected clusters until each holds the source's current credentials; name the stragglers. A source
    of each cluster's own credentials is asked once per cluster per pass (`held`): past the first half of the
    command's per-minute budget (`--service-limits`: what the service's bucket holds), the reads of a pass are
    spaced to half of it, the rest left to re-keys."""
    began = time.monotonic()
    half = request.limits.per_minute / 2
    while True:
        behind: dict[str, str] = {}
        total = 0
        for cluster in selected(app, request, ""):
            if cluster.get("_gone") or cluster.get("deleted_time"):
                continue
            total += 1
            if app.source.own_credentials and total > half:
                sleep(60.0 / half)
            cluster_id = str(cluster["id"])
            statuses = app.hyperfleet.list_statuses(cluster_id)
            ours = preconditions.statuses_by_adapter(statuses).get(app.settings.adapter_name) or {}
            state = convergence.held(app, cluster_id, ours)
            if state.state not in ("current", "none", "-"):
                behind[cluster_id] = f"{state.state}: {state.why}"
        out(f"watch: {total - len(behind)} of {total} hold the current credentials, {len(behind)} behind")
        if not behind:
            return EXIT_OK
        if time.monotonic() - began >= request.watch_timeout_s:
            for cluster_id, why in list(behind.items())[:50]:
                out(f"  straggler {cluster_id}: {why}")
            return EXIT_FAILED
        sleep(REPORT_EVERY_S)
