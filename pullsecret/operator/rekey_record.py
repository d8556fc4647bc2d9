"""A rekey run's progress record: what was asked, how far it got, who runs it now (one secret's annotation).

The record is the annotation `hyperfleet-rekey` of the secret SECRET_ID_TEMPLATE names for `_rekey_ADAPTER` (no
cluster id contains "_"; inside the IAM condition that covers the per-cluster secrets), written by
compare-and-swap on its etag, as the rotation fan-out's record is (pullsecret.source.progress):

- `key`: what was asked (mode, selection, compromise or routine); a run asked the same finds its record;
- `cutoff` (unix s): credentials created before it are to be re-keyed: `--created-before`, else the first run's
  start; a resumed run keeps it, so a cluster re-keyed before an interruption is not re-keyed again;
- `after`: every selected cluster id up to it (id order) was handled; `done` once the last one was;
- counts and the failures (cluster id -> why, the first FAILED_KEPT), so a summary survives the process;
- `holder` and `lease_until` (wall clock): only the holder works; another run waits until the lease is over.

Invariants: K1, a run changes the record only by compare-and-swap from what it read or wrote last, so two runs
never both hold it; K2, `after` only grows within one `key`, and is saved only after every cluster up to it got
its rotation and its event; K3, a cluster handled after the last save and before an interruption is handled
again by the resume, which finds its credentials newer than `cutoff` and does not rotate them again.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from pullsecret.retrying import Deadline
from pullsecret.secretstore import SecretStore
from pullsecret.settings.common import Settings

A_REKEY = "hyperfleet-rekey"
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
    def decode(annotations: dict[str, str]) -> RekeyRecord | None:
        """The record, or None when absent or unreadable (a run then starts over)."""
        try:
            value = json.loads(annotations.get(A_REKEY) or "")
            failures = value["failures"]
            return RekeyRecord(
                key=str(value["key"]),
                cutoff=float(value["cutoff"]),
                started=float(value["started"]),
                after=str(value["after"]),
                done=bool(value["done"]),
                rotated=int(value["rotated"]),
                current=int(value["current"]),
                failed=int(value["failed"]),
                failures={str(k): str(v) for k, v in failures.items()} if isinstance(failures, dict) else {},
                holder=str(value["holder"]),
                lease_until=float(value["lease_until"]),
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            return None


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

    def load(self) -> RekeyRecord | None:
        found = self.store.records.read_record(self.name, Deadline(self.deadline_s))
        self.etag = None if found is None else found[1]
        return None if found is None else RekeyRecord.decode(found[0])

    def save(self, record: RekeyRecord) -> bool:
        """K1: record it if nobody changed the record since we read or wrote it; False when someone did."""
        etag = self.store.records.write_record(
            self.name, record.encode(), etag=self.etag, labels=self.labels, deadline=Deadline(self.deadline_s)
        )
        if etag is None:
            return False
        self.etag = etag
        return True
