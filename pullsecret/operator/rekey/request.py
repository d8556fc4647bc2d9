"""What a rekey run is asked (`Request`), what its limits make of it (`Plan`: the binding limit, whose budget,
the time) and the lines that say how far it got (`Progress`); the exit codes and the sentences the command prints."""

from __future__ import annotations

import argparse
import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from pullsecret.model import events
from pullsecret.secretstore.progress import RunRecord
from pullsecret.source.base import DDR_LIMITS, Budget, RateLimits, Rekeying

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

    @classmethod
    def from_arguments(cls, args: argparse.Namespace) -> Request:
        """The request `python -m pullsecret rekey` was given (pullsecret.operator.cli's parser)."""
        return cls(
            ids=tuple(args.cluster_ids),
            created_before=args.created_before,
            compromise=args.compromise,
            dry_run=args.dry_run,
            watch=args.watch,
            watch_timeout_s=args.watch_timeout,
            page_size=args.page_size,
            yes=args.yes,
            own_identity=args.own_identity,
            **({"limits": args.service_limits} if args.service_limits is not None else {}),
        )

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
        words += [f"--created-before {rfc3339(cutoff)}"]
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
        took = duration(self.clusters / self.rate) if self.clusters is not None else "?"
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


def duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h" if seconds < 172_800 else f"{seconds / 86400:.1f} days"


def parse_limits(text: str) -> RateLimits:
    """`--service-limits N/min,M/h` (the hour part optional: DDR section 3.5's); ValueError with the reason."""
    minute, _, hour = text.partition(",")
    try:
        per_minute = float(minute.removesuffix("/min"))
        per_hour = float(hour.removesuffix("/h")) if hour else RateLimits().rotations_per_hour
    except ValueError:
        raise ValueError(f"must be N/min,M/h, got {text[:40]!r}") from None
    if not (0 < per_minute <= 1e6 and 0 < per_hour <= 1e6):
        raise ValueError(f"each limit must be positive, got {text[:40]!r}")
    return RateLimits(per_minute, per_hour)


def parse_time(text: str) -> float:
    """An RFC 3339 time (a date alone means its midnight UTC) as unix seconds; ValueError when not one."""
    moment = events.parse_time(text)
    if moment is None:
        raise ValueError(f"not an RFC 3339 time: {text[:40]!r}")
    return moment.timestamp()


def rfc3339(seconds: float) -> str:
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
        eta = duration(remaining / self.rate) if remaining is not None and self.rate > 0 else "?"
        self.out(
            f"rekey: {done} done ({record.rotated} rotated, {record.current} already current), "
            f"{remaining if remaining is not None else '?'} remaining, {record.failed} failed, ETA {eta}"
        )
