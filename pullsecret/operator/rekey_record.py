"""A rekey run's progress record: what was asked, how far it got, who runs it now (one secret's annotation).

The record is the annotation `hyperfleet-rekey` of the secret SECRET_ID_TEMPLATE names for `_rekey_ADAPTER` (no
cluster id contains "_"; inside the IAM condition that covers the per-cluster secrets), written by
compare-and-swap on its etag, as the rotation fan-out's record is (pullsecret.source.progress):

- `key`: what was asked (mode, selection, compromise or routine, and the cutoff); a run asked the same finds its
  record, so an incident of its own (a new cutoff) never finds an older run's;
- `cutoff` (unix s, whole seconds): credentials created before it are to be re-keyed: `--created-before`, else the
  run's start (printed, with the command that resumes it: the same flags and `--created-before` that time);
- `after`: every selected cluster id up to it (id order) was handled; `done` once the last one was;
- counts and the failures (cluster id -> why, the first FAILED_KEPT), so a summary survives the process;
- `holder` and `lease_until` (wall clock): only the holder works; another run waits until the lease is over.

A record is checked when read, never trusted as it stands (`check`): finite times, none in the future but the lease
(at most LEASE_S ahead), `after` a cluster id (it becomes the listing's `search` cursor), non-negative counts. A
record that fails is reported and set aside: the run starts a record of its own over it (by compare-and-swap).

Invariants: K1, a run changes the record only by compare-and-swap from what it read or wrote last, so two runs
never both hold it; K2, `after` only grows within one `key`, and is saved only after every cluster up to it got
its rotation and its event; K3, a cluster handled after the last save and before an interruption is handled
again by the resume, which finds its credentials newer than `cutoff` and does not rotate them again.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from pullsecret.model.names import SAFE_CLUSTER_ID_RE
from pullsecret.retrying import Deadline
from pullsecret.secretstore import SecretStore
from pullsecret.settings.common import Settings

A_REKEY = "hyperfleet-rekey"
LEASE_S = 600.0  # a run's hold on the record; each save renews it
FAILED_KEPT = 50  # failures kept by name in the record (an annotation holds a few KiB); the count is exact


@dataclass
class RekeyRecord:
    """How far one rekey run got (see the module's docstring)."""

    key: str
    cutoff: float
    started: float
    after: str = ""
    done: bool = False
    rotated: int = 0
    current: int = 0  # already newer than the cutoff (re-keyed before), or nothing to rotate
    failed: int = 0
    failures: dict[str, str] = field(default_factory=dict)
    holder: str = ""
    lease_until: float = 0.0

    def fail(self, cluster_id: str, why: str) -> None:
        self.failed += 1
        if len(self.failures) < FAILED_KEPT:
            self.failures[cluster_id] = why[:160]

    def encode(self) -> dict[str, str]:
        return {A_REKEY: json.dumps(asdict(self), separators=(",", ":"), sort_keys=True)}

    @staticmethod
    def decode(annotations: dict[str, str], *, now: float) -> RekeyRecord | None:
        """The record (None when absent); raises UntrustedRecord, with why, when it is unreadable or fails a check."""
        raw = annotations.get(A_REKEY)
        if not raw:
            return None
        try:
            value = json.loads(raw)
            failures = value["failures"]
            record = RekeyRecord(
                key=str(value["key"]),
                cutoff=float(value["cutoff"]),
                started=float(value["started"]),
                after=str(value["after"]),
                done=_flag(value["done"]),
                rotated=int(value["rotated"]),
                current=int(value["current"]),
                failed=int(value["failed"]),
                failures={str(k)[:128]: str(v)[:160] for k, v in list(failures.items())[:FAILED_KEPT]}
                if isinstance(failures, dict)
                else {},
                holder=str(value["holder"]),
                lease_until=float(value["lease_until"]),
            )
        except (ValueError, KeyError, TypeError, AttributeError, OverflowError) as exc:
            raise UntrustedRecord(f"unreadable ({type(exc).__name__})") from None
        problem = record.check(now)
        if problem is not None:
            raise UntrustedRecord(problem)
        return record

    def check(self, now: float) -> str | None:
        """Why the record cannot be trusted, or None."""
        for name in ("cutoff", "started"):
            moment = getattr(self, name)
            if not math.isfinite(moment) or moment < 0 or moment > now + 60.0:
                return f"{name} {moment!r} is not a time up to now"
        if not math.isfinite(self.lease_until) or not 0 <= self.lease_until <= now + LEASE_S + 60.0:
            return f"lease_until {self.lease_until!r} is not a time within a lease from now"
        if self.after and not SAFE_CLUSTER_ID_RE.match(self.after):
            return f"after {self.after[:40]!r} is not a cluster id"
        for name in ("rotated", "current", "failed"):
            if getattr(self, name) < 0:
                return f"{name} {getattr(self, name)} is negative"
        if len(self.holder) > 64 or (self.holder and not self.holder.isalnum()):
            return "holder is not a run's id"
        return None


class UntrustedRecord(Exception):
    """The record failed a check when read: reported, set aside, never trusted."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError("done is not a boolean")
    return value


def record_secret_id(settings: Settings) -> str:
    return settings.secret_id_template.format(cluster_id=f"_rekey_{settings.adapter_name}")


class RekeyLedger:
    """The rekey record (one secret; compare-and-swap on its etag)."""

    def __init__(self, store: SecretStore, *, name: str, adapter: str, deadline_s: float) -> None:
        self.store = store
        self.name = name
        self.labels = {"managed-by": "hyperfleet", "adapter": adapter, "resource-type": "rekey-progress"}
        self.deadline_s = deadline_s
        self.etag: str | None = None

    def load(self, now: float) -> RekeyRecord | None:
        """The record as checked (RekeyRecord.decode); raises UntrustedRecord. The etag is kept either way, so a
        run that sets a bad record aside replaces it by compare-and-swap."""
        found = self.store.records.read_record(self.name, Deadline(self.deadline_s))
        self.etag = None if found is None else found[1]
        return None if found is None else RekeyRecord.decode(found[0], now=now)

    def save(self, record: RekeyRecord) -> bool:
        """K1: record it if nobody changed the record since we read or wrote it; False when someone did."""
        etag = self.store.records.write_record(
            self.name, record.encode(), etag=self.etag, labels=self.labels, deadline=Deadline(self.deadline_s)
        )
        if etag is None:
            return False
        self.etag = etag
        return True
