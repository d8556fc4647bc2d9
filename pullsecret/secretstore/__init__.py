"""Secret Manager: one module per job; `SecretStore` builds the parts, sharing one client, and callers use the part.

- `versions`: the per-cluster secret's write protocol and its invariants (read it first); `reads`: its reads;
- `records`: progress records (one annotation, compare-and-swap on the etag: a fan-out's, a rekey's);
- `retention`: old versions and DELETION_POLICY; `describe`: the operator CLI's view;
- `calls`: the one client object every part holds (paced writes, failure classes); `payload`: the checksum;
- `labels`: ownership labels.
"""

from __future__ import annotations

from pullsecret.secretstore.calls import Calls, SecretManagerService
from pullsecret.secretstore.describe import Description
from pullsecret.secretstore.labels import OwnershipConflict, sm_label_value, sm_labels
from pullsecret.secretstore.pacing import PACER, WritePacer
from pullsecret.secretstore.reads import Latest, VersionReads
from pullsecret.secretstore.records import Records
from pullsecret.secretstore.retention import Retention, RetentionResult
from pullsecret.secretstore.versions import StoreResult, VersionWrites

__all__ = [
    "Latest",
    "OwnershipConflict",
    "RetentionResult",
    "SecretStore",
    "StoreResult",
    "sm_label_value",
    "sm_labels",
]


class SecretStore:
    """Per-cluster secrets and progress records, through one shared SecretManagerServiceClient (a source that reads
    Secret Manager holds its own reads over the same `calls`).

    Its parts (public attributes) each hold the one `calls` object and their own state; a caller uses the part
    whose job it needs (`store.versions.store(...)`, `store.records.read_record(...)`): nothing is forwarded.
    """

    def __init__(
        self,
        client: SecretManagerService,
        *,
        replication_locations: tuple[str, ...] = (),
        kms_key: str | None = None,
        pacer: WritePacer = PACER,
    ) -> None:
        self.calls = Calls(client, replication_locations=replication_locations, kms_key=kms_key, pacer=pacer)
        self.reads = VersionReads(self.calls)
        self.versions = VersionWrites(self.calls, self.reads)
        self.records = Records(self.calls)
        self.retention = Retention(self.calls)
        self.description = Description(self.calls)
