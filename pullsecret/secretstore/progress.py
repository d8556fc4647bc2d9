"""A run's progress record over the fleet (the rotation fan-out's, `rekey`'s): one shape, checked when read.

A run that works through every cluster in id order (the platform source's rotation fan-out,
pullsecret.source.platform.rotation; the operator's `rekey`, pullsecret.operator.rekey) keeps how far it got in one
annotation of a secret of its own (`progress_secret_id`, `rekey_secret_id`: SECRET_ID_TEMPLATE for a name no
cluster has, inside the IAM condition that covers the per-cluster secrets), written by compare-and-swap on the
secret's etag (`Ledger`), so that two runs never both hold it. The record (`RunRecord`):

- what the run is: `key` (`rekey`: its request, cutoff included), or `source` and `version` (the fan-out: the
  source secret as Secret Manager names it and the version it publishes);
- `after`: every cluster id up to it (id order) was handled; `done` once the last one was;
- `holder` and `lease_until` (wall clock): only the holder works; another run waits until the lease is over;
- `nonce`: the fan-out's continuation, handed on with it;
- `cutoff`, `started`, the counts and the failures (cluster id -> why, the first FAILED_KEPT): `rekey`'s summary.

Each user's invariants are stated where it runs (rotation.py's R1-R3, rekey.py's K1-K3). What holds here: a record
is checked when read and never trusted as it stands (`check`): finite times, none in the future but the lease (at
most the ledger's `max_lease_s` ahead), `after` a cluster id (it becomes a listing's `search` cursor), non-negative
counts and version, a holder and a nonce that are ids. A record that fails raises UntrustedRecord with why, the
etag kept: its user reports it and sets it aside, replacing it by compare-and-swap.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any

from pullsecret.model.names import SAFE_CLUSTER_ID_RE
from pullsecret.retrying import Deadline
from pullsecret.settings.common import Settings

if TYPE_CHECKING:
    from pullsecret.secretstore import SecretStore

A_ROTATION = "hyperfleet-rotation"  # the fan-out's record
A_REKEY = "hyperfleet-rekey"  # rekey's record
FAILED_KEPT = 50  # failures kept by name (an annotation holds a few KiB); the count is exact
_SLACK_S = 60.0  # clocks of two machines disagree by less
_ID_RE = re.compile(r"^[A-Za-z0-9_-]{0,64}$")  # a holder (uuid4 hex) or a nonce (token_urlsafe), or none


@dataclass
class RunRecord:
    """How far one run over the fleet got, and who runs it now (see the module's docstring)."""

    key: str = ""
    source: str = ""
    version: int = 0
    after: str = ""
    done: bool = False
    holder: str = ""
    lease_until: float = 0.0
    nonce: str = ""
    cutoff: float = 0.0
    started: float = 0.0
    rotated: int = 0
    current: int = 0
    failed: int = 0
    failures: dict[str, str] = field(default_factory=dict)

    def fail(self, cluster_id: str, why: str) -> None:
        self.failed += 1
        if len(self.failures) < FAILED_KEPT:
            self.failures[cluster_id] = why[:160]

    def encode(self, annotation: str) -> dict[str, str]:
        return {annotation: json.dumps(asdict(self), separators=(",", ":"), sort_keys=True)}

    @staticmethod
    def decode(annotations: dict[str, str], annotation: str, *, now: float, max_lease_s: float) -> RunRecord | None:
        """The record (None when absent); raises UntrustedRecord, with why, when it is unreadable or fails a check.
        A field the record lacks takes its default (a record of the other run's shape, or an older one)."""
        raw = annotations.get(annotation)
        if not raw:
            return None
        try:
            value = json.loads(raw)
            if not isinstance(value, dict):
                raise TypeError("not an object")
            record = RunRecord(**{f.name: _typed(f.name, value[f.name]) for f in fields(RunRecord) if f.name in value})
        except (ValueError, TypeError, RecursionError) as exc:
            raise UntrustedRecord(f"unreadable ({type(exc).__name__})") from None
        problem = record.check(now, max_lease_s=max_lease_s)
        if problem is not None:
            raise UntrustedRecord(problem)
        return record

    def check(self, now: float, *, max_lease_s: float) -> str | None:
        """Why the record cannot be trusted, or None."""
        return self._times_problem(now, max_lease_s) or self._names_problem()

    def _times_problem(self, now: float, max_lease_s: float) -> str | None:
        for name in ("cutoff", "started"):
            moment = getattr(self, name)
            if not math.isfinite(moment) or moment < 0 or moment > now + _SLACK_S:
                return f"{name} {moment!r} is not a time up to now"
        if not math.isfinite(self.lease_until) or not 0 <= self.lease_until <= now + max_lease_s + _SLACK_S:
            return f"lease_until {self.lease_until!r} is not a time within a lease from now"
        for name in ("rotated", "current", "failed", "version"):
            if getattr(self, name) < 0:
                return f"{name} {getattr(self, name)} is negative"
        return None

    def _names_problem(self) -> str | None:
        if self.after and not SAFE_CLUSTER_ID_RE.match(self.after):
            return f"after {self.after[:40]!r} is not a cluster id"
        for name in ("holder", "nonce"):
            if not _ID_RE.match(getattr(self, name)):
                return f"{name} is not a run's id"
        if len(self.key) > 64 or len(self.source) > 512 or not self.source.isprintable():
            return "key or source is not one"
        return None


_TYPES: dict[str, type] = {f: str for f in ("key", "source", "after", "holder", "nonce")}
_TYPES.update({f: int for f in ("version", "rotated", "current", "failed")})
_TYPES.update({f: float for f in ("lease_until", "cutoff", "started")})


def _typed(name: str, value: Any) -> Any:
    """A field's value as its type, or TypeError (a boolean is no number, a number no boolean)."""
    if name == "done":
        if not isinstance(value, bool):
            raise TypeError("done is not a boolean")
        return value
    if name == "failures":
        if not isinstance(value, dict):
            raise TypeError("failures is not an object")
        return {str(k)[:128]: str(v)[:160] for k, v in list(value.items())[:FAILED_KEPT]}
    wanted = _TYPES[name]
    if isinstance(value, bool) or (wanted is str) != isinstance(value, str):
        raise TypeError(f"{name} is not a {wanted.__name__}")
    if wanted is int and not isinstance(value, int):
        raise TypeError(f"{name} is not an integer")
    return wanted(value)


class UntrustedRecord(Exception):
    """The record failed a check when read: reported, set aside, never trusted."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def progress_secret_id(settings: Settings) -> str:
    """The fan-out's record: SECRET_ID_TEMPLATE for `_rotation_ADAPTER` (cluster ids never contain "_")."""
    return settings.secret_id_template.format(cluster_id=f"_rotation_{settings.adapter_name}")


def rekey_secret_id(settings: Settings) -> str:
    """`rekey`'s record: SECRET_ID_TEMPLATE for `_rekey_ADAPTER`."""
    return settings.secret_id_template.format(cluster_id=f"_rekey_{settings.adapter_name}")


class Ledger:
    """One run's record (one secret, one annotation; compare-and-swap on the secret's etag)."""

    def __init__(
        self,
        store: SecretStore,
        *,
        name: str,
        annotation: str,
        labels: dict[str, str],
        deadline: Callable[[], Deadline],
        max_lease_s: float,
    ) -> None:
        self.store = store
        self.name = name
        self.annotation = annotation
        self.labels = labels
        self.deadline = deadline  # each read or save waits at most this (a long run asks a fresh one each time)
        self.max_lease_s = max_lease_s
        self.etag: str | None = None

    def load(self, now: float) -> RunRecord | None:
        """The record as checked (RunRecord.decode); raises UntrustedRecord, the etag kept so that the run
        replaces the bad record by compare-and-swap."""
        found = self.store.records.read_record(self.name, self.deadline())
        self.etag = None if found is None else found[1]
        if found is None:
            return None
        return RunRecord.decode(found[0], self.annotation, now=now, max_lease_s=self.max_lease_s)

    def save(self, record: RunRecord) -> bool:
        """Record it if nobody changed the record since we read or wrote it; False when someone did."""
        etag = self.store.records.write_record(
            self.name, record.encode(self.annotation), etag=self.etag, labels=self.labels, deadline=self.deadline()
        )
        if etag is None:
            return False
        self.etag = etag
        return True
