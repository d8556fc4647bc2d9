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

Resumable and safe to run twice (pullsecret.operator.rekey_record): progress is saved after every page; an
interrupted run resumes from its last save, and a cluster handled since is found re-keyed (credentials newer
than the cutoff) and only gets its event again; a finished run asked again does nothing new. Progress lines
(done / remaining / failed, ETA) go to stdout while it runs, then a summary; `--watch` then follows the clusters
until each holds the source's current credentials (pullsecret.operator.convergence), and names the stragglers.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pullsecret.errors import AdapterError, TransientError
from pullsecret.model import events, names, preconditions
from pullsecret.operator import convergence
from pullsecret.operator.rekey_record import RekeyLedger, RekeyRecord, record_secret_id
from pullsecret.publishing import Publisher, sentinel_event
from pullsecret.source.base import Rekeyed, Rekeying

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
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_TRANSIENT = 0, 1, 2, 3
Out = Callable[[str], None]


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

    def key(self, mode: str) -> str:
        """The record's key: the same request finds its own record (and a finished one does nothing new)."""
        what = f"{mode}|{','.join(sorted(self.ids))}|{self.created_before}|{self.compromise}"
        return hashlib.sha256(what.encode()).hexdigest()[:16]


def parse_time(text: str) -> float:
    """An RFC 3339 time (a date alone means its midnight UTC) as unix seconds; ValueError when not one."""
    moment = events.parse_time(text)
    if moment is None:
        raise ValueError(f"not an RFC 3339 time: {text[:40]!r}")
    return moment.timestamp()


def _rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Progress:
    """Progress lines while a run works: done / remaining / failed and the time left at the observed pace."""

    def __init__(self, out: Out, total: int | None, rate: float, clock: Callable[[], float]) -> None:
        self.out, self.total, self.rate, self.clock = out, total, rate, clock
        self.began = clock()
        self.shown = self.began
        self.handled = 0

    def line(self, record: RekeyRecord, *, force: bool = False) -> None:
        now = self.clock()
        if not force and now - self.shown < REPORT_EVERY_S:
            return
        self.shown = now
        done = record.rotated + record.current
        remaining = max(0, self.total - done - record.failed) if self.total is not None else None
        pace = self.handled / (now - self.began) if self.handled >= 10 and now > self.began else self.rate
        eta = f"{remaining / pace:.0f} s" if remaining is not None and pace > 0 else "?"
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
    """The selected clusters past `after`, in id order: the ids asked, or every cluster (keyset pages)."""
    if request.ids:
        for cluster_id in sorted(set(request.ids)):
            if cluster_id > after:
                cluster = app.hyperfleet.get_cluster(cluster_id)
                yield cluster if cluster is not None else {"id": cluster_id, "_gone": True}
        return
    while True:
        search = f"id > '{after}'" if after else None
        page, _ = app.hyperfleet.list_clusters(page=1, size=request.page_size, search=search, order="id asc")
        for listed in page:
            listed_id = listed.get("id")
            if isinstance(listed_id, str) and names.SAFE_CLUSTER_ID_RE.match(listed_id) and listed_id > after:
                after = listed_id
                yield listed
        if len(page) < request.page_size:
            return


def _total(app: Application, request: Request) -> int | None:
    if request.ids:
        return len(set(request.ids))
    _, total = app.hyperfleet.list_clusters(page=1, size=1)
    return total


def _claim(ledger: RekeyLedger, key: str, request: Request, now: float, me: str) -> RekeyRecord | str:
    """This run's record (resumed or new, held by `me`), or why not to run."""
    found = ledger.load()
    if found is not None and found.holder and found.holder != me and found.lease_until > now:
        return f"another rekey run holds the record until {_rfc3339(found.lease_until)}; try again then"
    if found is not None and found.key == key and found.done:
        return "done"
    if found is None or found.key != key:
        cutoff = request.created_before if request.created_before is not None else now
        found = RekeyRecord(key=key, cutoff=cutoff, started=now)
    found.holder, found.lease_until = me, now + LEASE_S
    return found if ledger.save(found) else "another rekey run changed the record meanwhile; try again"


def _refusal(app: Application, request: Request, rekeying: Rekeying) -> str | None:
    """Why this request cannot run here (a usage error), or None."""
    refused = rekeying.refusal(created_before=request.created_before is not None, compromise=request.compromise)
    if refused is not None:
        return refused
    if not app.settings.adapter_topic:
        return "ADAPTER_TOPIC is not set: the reconcile events have no topic to go to"
    # The run's record (cluster by cluster): a source's own way through the whole fleet keeps its own.
    recorded = bool(request.ids) or app.source.own_credentials
    if recorded and not (app.settings.secret_project_id or app.identity.project_id):
        return "no project for the progress record: set SECRET_PROJECT_ID"
    return None


def run(
    app: Application,
    request: Request,
    *,
    publisher: Publisher | None = None,
    out: Out = print,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.time,
) -> int:
    """Run (or resume) a rekey; returns the exit code."""
    rekeying = app.source.rekeying()
    refused = _refusal(app, request, rekeying)
    if refused is not None:
        out(f"error: {refused}")
        return EXIT_USAGE
    if request.dry_run:
        return _dry_run(app, request, rekeying, out)
    publisher = publisher or Publisher(app.identity.credentials)
    if not request.ids:
        watch_s = request.watch_timeout_s if request.watch else None
        code = rekeying.whole_fleet(app.hyperfleet, publisher, out=out, sleep=sleep, watch_s=watch_s)
        if code is not None:
            return code
    code = _recorded(app, request, rekeying=rekeying, publisher=publisher, out=out, sleep=sleep, clock=clock)
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
    """Claim (or resume) the request's record, then work through its clusters."""
    settings = app.settings
    project = settings.secret_project_id or app.identity.project_id
    assert project is not None  # _refusal: a recorded run has a project
    ledger = RekeyLedger(
        app.store,
        name=names.secret_name(project, record_secret_id(settings)),
        adapter=settings.adapter_name,
        deadline_s=record_deadline_s(settings.retry_deadline_s),
    )
    claimed = _claim(ledger, request.key(app.source.name), request, clock(), uuid.uuid4().hex)
    if claimed == "done":
        out("rekey: this request already finished; nothing new to do (a new --created-before asks again)")
        return EXIT_OK
    if isinstance(claimed, str):
        out(f"error: {claimed}")
        return EXIT_TRANSIENT
    out(
        f"rekey: {'resuming after ' + claimed.after if claimed.after else 'starting'}; credentials created before "
        f"{_rfc3339(claimed.cutoff)} are {'revoked at once (compromise)' if request.compromise else 'rotated'}; "
        f"{settings.publish_rate():g} events/s to {settings.adapter_topic}"
    )
    return _work(
        app, request, record=claimed, ledger=ledger, rekeying=rekeying, publisher=publisher, out=out, sleep=sleep
    )


def _work(
    app: Application,
    request: Request,
    *,
    record: RekeyRecord,
    ledger: RekeyLedger,
    rekeying: Rekeying,
    publisher: Publisher,
    out: Out,
    sleep: Callable[[float], None],
) -> int:
    """Handle every selected cluster after the record's place, saving it after each page (K2)."""
    topic = app.settings.adapter_topic
    assert topic is not None
    interval = 1.0 / app.settings.publish_rate()
    progress = Progress(out, _total(app, request), app.settings.publish_rate(), time.time)
    progress.line(record, force=True)
    next_at, pending, last = time.monotonic(), [], record.after
    pool = ThreadPoolExecutor(max_workers=LOOKAHEAD, thread_name_prefix="rekey-step")

    def step(cluster: dict[str, Any]) -> Rekeyed | None:
        """None: gone, or being deleted (deletion revokes; no event). Touches no record (runs on the pool)."""
        if cluster.get("_gone") or cluster.get("deleted_time"):
            return None
        return rekeying.rotate(str(cluster["id"]), cutoff=record.cutoff, compromise=request.compromise)

    try:
        for cluster, stepped in _lookahead(pool, selected(app, request, record.after), step):
            cluster_id = str(cluster["id"])
            rekeyed = stepped.result()
            _count(record, cluster_id, rekeyed)
            if rekeyed is not None:
                next_at = _pace(next_at, interval, sleep)
                pending.append(publisher.publish(topic, sentinel_event(cluster), rekeyed=True))
            last = cluster_id
            progress.handled += 1
            progress.line(record)
            if progress.handled % request.page_size == 0 and not _save(ledger, record, pending, last):
                out("error: another rekey run took the record over; stopping")
                return EXIT_TRANSIENT
    except (KeyboardInterrupt, AdapterError) as exc:
        try:
            saved = _save(ledger, record, pending, last, holder_done=True)
        except AdapterError:
            saved = False  # a publish of the page failed: its clusters are handled again by the resume
        why = f"stopped: {exc.message}" if isinstance(exc, AdapterError) else "interrupted"
        out(
            f"rekey {why}; {'progress saved after ' + (last or 'the start') if saved else 'progress not saved'}: "
            "run the same command again to resume"
        )
        return EXIT_TRANSIENT
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # a step begun finishes; an unpublished cluster is resumed
    record.done = True
    if not _save(ledger, record, pending, last, holder_done=True):
        out("error: another rekey run took the record over; stopping")
        return EXIT_TRANSIENT
    progress.line(record, force=True)
    return _summary(record, out)


def _count(record: RekeyRecord, cluster_id: str, rekeyed: Rekeyed | None) -> None:
    """Count one cluster's outcome on the loop's thread (None: gone, nothing to re-key)."""
    if rekeyed is None or rekeyed.counted == "current":
        record.current += 1
    elif rekeyed.counted == "rotated":
        record.rotated += 1
    else:
        record.fail(cluster_id, rekeyed.why)


def _lookahead(
    pool: ThreadPoolExecutor, clusters: Iterator[dict[str, Any]], step: Callable[[dict[str, Any]], Rekeyed | None]
) -> Iterator[tuple[dict[str, Any], Future[Rekeyed | None]]]:
    """The clusters in order, each with its step started on `pool` up to LOOKAHEAD clusters ahead: the source's
    calls for the next clusters run while this one waits for its publish slot, so they do not set the pace."""
    ahead: deque[tuple[dict[str, Any], Future[Rekeyed | None]]] = deque()
    for cluster in clusters:
        ahead.append((cluster, pool.submit(step, cluster)))
        if len(ahead) >= LOOKAHEAD:
            yield ahead.popleft()
    yield from ahead


def record_deadline_s(retry_deadline_s: float) -> float:
    """How long a read or save of the run's record may wait (for a write slot included): RETRY_DEADLINE, and at
    least RECORD_WAIT_S."""
    return max(retry_deadline_s, RECORD_WAIT_S)


def _save(
    ledger: RekeyLedger, record: RekeyRecord, pending: list[Any], last: str, *, holder_done: bool = False
) -> bool:
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


def _summary(record: RekeyRecord, out: Out) -> int:
    out(
        f"rekey finished: {record.rotated} rotated, {record.current} already current or nothing to rotate, "
        f"{record.failed} failed (started {_rfc3339(record.started)}, cutoff {_rfc3339(record.cutoff)})"
    )
    for cluster_id, why in record.failures.items():
        out(f"  failed {cluster_id}: {why}")
    if record.failed > len(record.failures):
        out(f"  ... and {record.failed - len(record.failures)} more")
    return EXIT_FAILED if record.failed else EXIT_OK


def _dry_run(app: Application, request: Request, rekeying: Rekeying, out: Out) -> int:
    """What a run would do, per cluster, writing and rotating nothing."""
    cutoff = request.created_before if request.created_before is not None else time.time()
    count = 0
    for cluster in selected(app, request, ""):
        cluster_id = str(cluster["id"])
        count += 1
        if cluster.get("_gone") or cluster.get("deleted_time"):
            out(f"  {cluster_id}: skipped ({'not found' if cluster.get('_gone') else 'being deleted'})")
            continue
        out(f"  {cluster_id}: {rekeying.preview(cluster_id, cutoff=cutoff, compromise=request.compromise)}")
    seconds = count / app.settings.publish_rate()
    out(
        f"dry run: {count} cluster(s), about {seconds:.0f} s at {app.settings.publish_rate():g} events/s; "
        "nothing was rotated or published"
    )
    return EXIT_OK


def watch(app: Application, request: Request, out: Out, sleep: Callable[[float], None]) -> int:
    """Follow the selected clusters until each holds the source's current credentials; name the stragglers."""
    began = time.monotonic()
    while True:
        behind: dict[str, str] = {}
        total = 0
        for cluster in selected(app, request, ""):
            if cluster.get("_gone") or cluster.get("deleted_time"):
                continue
            total += 1
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
