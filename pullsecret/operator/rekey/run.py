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
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from pullsecret.errors import AdapterError, RateLimited, TransientError
from pullsecret.model import events, names
from pullsecret.operator import slots
from pullsecret.operator.rekey.listing import selected, selected_count
from pullsecret.operator.rekey.request import (
    EXIT_CONFIG,
    EXIT_FAILED,
    EXIT_NOTHING_DONE,
    EXIT_OK,
    EXIT_TRANSIENT,
    EXIT_USAGE,
    LEASE_S,
    LOOKAHEAD,
    MAX_RATE_LIMITED,
    NODES_WARNING,
    RECORD_WAIT_S,
    REPLACE_NODEPOOLS,
    UNKNOWN,
    Out,
    Plan,
    Progress,
    Request,
    duration,
    plan,
    rfc3339,
)
from pullsecret.operator.rekey.views import dry_run, watch
from pullsecret.publishing import Publisher, sentinel_event
from pullsecret.retrying import Deadline
from pullsecret.secretstore.progress import A_REKEY, Ledger, RunRecord, UntrustedRecord, rekey_secret_id
from pullsecret.source.base import Rekeyed, Rekeying

if TYPE_CHECKING:
    from pullsecret.app import Application


def _claim(ledger: Ledger, key: str, *, cutoff: float, now: float, me: str, out: Out) -> RunRecord | tuple[int, str]:
    """This run's record (resumed or new, held by `me`), or (exit code, why) not to run."""
    try:
        found = ledger.load(now)
    except UntrustedRecord as exc:
        out(f"rekey: the progress record {ledger.name} is not trusted ({exc.why}): set aside; this run starts anew")
        found = None
    if found is not None and found.holder and found.holder != me and found.lease_until > now:
        return EXIT_TRANSIENT, f"another rekey run holds the record until {rfc3339(found.lease_until)}; try again then"
    if found is not None and found.key == key and found.done:
        age = duration(max(0.0, now - found.started))
        return EXIT_NOTHING_DONE, (
            f"this request (cutoff {rfc3339(found.cutoff)}) already finished: started {age} ago, {found.rotated} "
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
        return dry_run(app, request, rekeying, out)
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
        total = selected_count(app, request)
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
                next_at = slots.next_slot(next_at, interval, sleep)
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
        f"{rfc3339(record.cutoff)} are {'revoked at once (compromise)' if request.compromise else 'rotated'}; "
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
        f"{record.failed} failed (started {rfc3339(record.started)}, cutoff {rfc3339(record.cutoff)})"
    )
    for cluster_id, why in record.failures.items():
        out(f"  failed {cluster_id}: {why}")
    if record.failed > len(record.failures):
        out(f"  ... and {record.failed - len(record.failures)} more")
    if record.failed and not record.rotated and all(why == UNKNOWN for why in record.failures.values()):
        return EXIT_NOTHING_DONE  # only unknown clusters asked: nothing done
    return EXIT_FAILED if record.failed else EXIT_OK
