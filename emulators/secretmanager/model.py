"""The stored shapes: a secret with its metadata, versions and allow policy; a version and its states."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import grpc
from google.cloud.secretmanager_v1 import types as t
from google.iam.v1 import policy_pb2  # type: ignore[import-untyped]

INVALID = grpc.StatusCode.INVALID_ARGUMENT
NOT_FOUND = grpc.StatusCode.NOT_FOUND
FAILED_PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION

ENABLED, DISABLED, DESTROYED = "ENABLED", "DISABLED", "DESTROYED"


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def iso(value: dt.datetime | None) -> str | None:
    return None if value is None else value.isoformat().replace("+00:00", "Z")


@dataclass
class Version:
    number: int
    state: str
    payload: bytes | None
    crc32c: int
    create_time: dt.datetime
    etag: str
    client_checksum: bool
    created_by: str | None
    destroy_time: dt.datetime | None = None
    scheduled_destroy_time: dt.datetime | None = None


@dataclass
class Secret:
    project_number: str
    secret_id: str
    meta: t.Secret  # labels, annotations, replication and the other user fields
    create_time: dt.datetime
    etag: str
    created_by: str | None
    updated_by: str | None = None
    versions: dict[int, Version] = field(default_factory=dict)
    next_version: int = 1
    policy: policy_pb2.Policy = field(default_factory=policy_pb2.Policy)  # its allow policy (etag set on create)

    @property
    def name(self) -> str:
        return f"projects/{self.project_number}/secrets/{self.secret_id}"


def settle(version: Version) -> None:
    # Delayed destruction happens lazily: a version past its scheduled time reads as destroyed.
    when = version.scheduled_destroy_time
    if version.state == DISABLED and when is not None and now() >= when:
        version.state, version.payload, version.destroy_time = DESTROYED, None, when
        version.scheduled_destroy_time = None
