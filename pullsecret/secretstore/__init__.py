"""Secret Manager: one module per job, one class (`SecretStore`) callers hold.

- `versions`: the per-cluster secret's write protocol and its invariants (read it first);
- `source`: the platform pull secret; `records`: the rotation progress record;
- `retention`: old versions and DELETION_POLICY; `describe`: the operator CLI's view;
- `calls`: the shared client, paced writes and failure classes; `labels`: ownership.
"""

from __future__ import annotations

from pullsecret.secretstore.describe import Description
from pullsecret.secretstore.labels import OwnershipConflict, label_value, secret_labels
from pullsecret.secretstore.records import Records
from pullsecret.secretstore.retention import Retention, RetentionResult
from pullsecret.secretstore.source import SourceReads
from pullsecret.secretstore.versions import Latest, StoreResult, VersionWrites

__all__ = [
    "Latest",
    "OwnershipConflict",
    "RetentionResult",
    "SecretStore",
    "StoreResult",
    "label_value",
    "secret_labels",
]


class SecretStore(VersionWrites, SourceReads, Records, Retention, Description):
    """Per-cluster secrets and the platform source, through one shared SecretManagerServiceClient."""
