"""A fan-out's progress record, saved by compare-and-swap (the invariants it serves: rotation.py beside it)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from pullsecret.retrying import Deadline
from pullsecret.secretstore import SecretStore
from pullsecret.settings.common import Settings

A_PROGRESS = "hyperfleet-rotation"


@dataclass(frozen=True)
class Progress:
    """How far the fan-out of one source version got, and who publishes it now (see rotation.py beside it)."""

    source: str  # projects/NUMBER/secrets/ID
    version: int
    after: str = ""  # every cluster id <= after (in id order) was published
    done: bool = False
    holder: str = ""
    lease_until: float = 0.0  # unix seconds
    nonce: str = ""

    def encode(self) -> dict[str, str]:
        return {A_PROGRESS: json.dumps(asdict(self), separators=(",", ":"), sort_keys=True)}

    @staticmethod
    def decode(annotations: dict[str, str]) -> Progress | None:
        """The record, or None when absent or unreadable (an older format included: the fan-out starts over)."""
        try:
            value = json.loads(annotations.get(A_PROGRESS) or "")
            return Progress(
                str(value["source"]),
                int(value["version"]),
                str(value["after"]),
                bool(value["done"]),
                str(value["holder"]),
                float(value["lease_until"]),
                str(value["nonce"]),
            )
        except (ValueError, KeyError, TypeError):
            return None


def progress_secret_id(settings: Settings) -> str:
    """The progress record's secret id: SECRET_ID_TEMPLATE for `_rotation_ADAPTER`, a name no cluster has
    (cluster ids never contain "_"), inside the IAM condition that covers the per-cluster secrets."""
    return settings.secret_id_template.format(cluster_id=f"_rotation_{settings.adapter_name}")


class Ledger:
    """The progress record of this adapter's fan-outs (one secret; compare-and-swap on its etag)."""

    def __init__(self, store: SecretStore, *, name: str, labels: dict[str, str], deadline: Deadline) -> None:
        self.store = store
        self.name = name
        self.labels = labels
        self.deadline = deadline
        self.etag: str | None = None

    def load(self) -> Progress | None:
        found = self.store.records.read_record(self.name, self.deadline)
        self.etag = None if found is None else found[1]
        return None if found is None else Progress.decode(found[0])

    def save(self, progress: Progress) -> bool:
        """Record `progress` if nobody changed the record since we read or wrote it; False when someone did."""
        etag = self.store.records.write_record(
            self.name, progress.encode(), etag=self.etag, labels=self.labels, deadline=self.deadline
        )
        if etag is None:
            return False
        self.etag = etag
        return True
