"""Secret Manager: one module per job, one object (`SecretStore`) callers hold, composed of parts sharing one client.

- `versions`: the per-cluster secret's write protocol and its invariants (read it first); `reads`: its reads;
- `records`: progress records (one annotation, compare-and-swap on the etag: a fan-out's, a rekey's);
- `retention`: old versions and DELETION_POLICY; `describe`: the operator CLI's view;
- `calls`: the one client object every part holds (paced writes, failure classes); `payload`: the checksum;
- `labels`: ownership labels.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pullsecret.model.dockerconfig import PullSecret
from pullsecret.retrying import Deadline
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

    Its parts (public attributes) each hold the one `calls` object and their own state; the methods below
    are theirs, kept here so callers hold one object.
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

    # -- the per-cluster secret (reads, versions) --------------------------------------------------------
    def latest(self, secret_name: str, deadline: Deadline) -> Latest:
        return self.reads.latest(secret_name, deadline)

    def store(
        self,
        *,
        project: str,
        secret_id: str,
        secret: PullSecret,
        generation: int,
        labels: dict[str, str],
        deadline: Deadline,
        latest: Latest | None = None,
        current_generation: Callable[[], int | None] | None = None,
        owned: bool = False,
    ) -> StoreResult:
        return self.versions.store(
            project=project,
            secret_id=secret_id,
            secret=secret,
            generation=generation,
            labels=labels,
            deadline=deadline,
            latest=latest,
            current_generation=current_generation,
            owned=owned,
        )

    def created_at(self, version_name: str, deadline: Deadline) -> int | None:
        return self.reads.created_at(version_name, deadline)

    def verify(self, version_name: str, expected: bytes, deadline: Deadline) -> None:
        self.reads.verify(version_name, expected, deadline)

    # -- rotation progress records -------------------------------------------------------------------
    def read_record(self, name: str, deadline: Deadline) -> tuple[dict[str, str], str] | None:
        return self.records.read_record(name, deadline)

    def write_record(
        self, name: str, annotations: dict[str, str], *, etag: str | None, labels: dict[str, str], deadline: Deadline
    ) -> str | None:
        return self.records.write_record(name, annotations, etag=etag, labels=labels, deadline=deadline)

    # -- retention and deletion ----------------------------------------------------------------------
    def apply_retention(
        self, secret_name: str, *, keep: int, protected: set[str], deadline: Deadline
    ) -> RetentionResult:
        return self.retention.apply_retention(secret_name, keep=keep, protected=protected, deadline=deadline)

    def delete_secret(self, *, project: str, secret_id: str, policy: str, deadline: Deadline) -> str:
        return self.retention.delete_secret(project=project, secret_id=secret_id, policy=policy, deadline=deadline)

    # -- the operator CLI's view ---------------------------------------------------------------------
    def describe(self, *, project: str, secret_id: str, deadline: Deadline) -> dict[str, Any] | None:
        return self.description.describe(project=project, secret_id=secret_id, deadline=deadline)
