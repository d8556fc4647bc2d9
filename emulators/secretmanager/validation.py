"""What Secret Manager refuses as INVALID_ARGUMENT: resource names and ids, labels, annotations, replication, sizes.

Shared by the RPCs and the seed path, so a seeded secret obeys the same rules as a created one.
"""

from __future__ import annotations

import datetime as dt
import re

from google.cloud.secretmanager_v1 import types as t

from emulators.grpcbase import fail
from emulators.secretmanager.model import INVALID

MAX_PAYLOAD_BYTES = 64 * 1024
MAX_LABELS = 64
MAX_ANNOTATIONS_BYTES = 16 * 1024

SECRET_ID = re.compile(r"^[A-Za-z0-9_-]{1,255}$")
_LABEL_KEY = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
_LABEL_VALUE = re.compile(r"^[a-z0-9_-]{0,63}$")
_ANNOTATION_KEY = re.compile(r"^[a-zA-Z0-9]([a-zA-Z0-9_.-]{0,61}[a-zA-Z0-9])?$")
PARENT = re.compile(r"^projects/([^/]+)$")
SECRET_NAME = re.compile(r"^projects/([^/]+)/secrets/([^/]+)$")
VERSION_NAME = re.compile(r"^projects/([^/]+)/secrets/([^/]+)/versions/([^/]+)$")
VERSION_NUMBER = re.compile(r"^[1-9][0-9]{0,18}$")


def validate_labels(labels: dict[str, str]) -> None:
    if len(labels) > MAX_LABELS:
        fail(INVALID, f"Secret can have at most {MAX_LABELS} labels, got {len(labels)}.")
    for key, value in labels.items():
        if not _LABEL_KEY.match(key):
            fail(
                INVALID,
                f"Label key [{key}] is invalid: keys must start with a lowercase letter and contain only "
                "lowercase letters, digits, underscores and dashes (at most 63 characters).",
            )
        if not _LABEL_VALUE.match(value):
            fail(
                INVALID,
                f"Label value [{value}] of key [{key}] is invalid: values may contain only lowercase "
                "letters, digits, underscores and dashes (at most 63 characters).",
            )


def validate_annotations(annotations: dict[str, str]) -> None:
    total = 0
    for key, value in annotations.items():
        if not _ANNOTATION_KEY.match(key):
            fail(
                INVALID,
                f"Annotation key [{key}] is invalid: keys must be 1-63 characters, begin and end with an "
                "alphanumeric character and contain only alphanumerics, dashes, underscores and dots.",
            )
        total += len(key.encode()) + len(value.encode())
    if total >= MAX_ANNOTATIONS_BYTES:
        fail(INVALID, f"Total size of annotation keys and values must be less than 16KiB, got {total} bytes.")


def validate_replication(meta: t.Secret) -> None:
    pb = t.Secret.pb(meta)
    if not pb.HasField("replication") or pb.replication.WhichOneof("replication") is None:
        fail(INVALID, "Secret.replication must be specified (automatic or user_managed).")
    if pb.replication.WhichOneof("replication") == "user_managed":
        replicas = pb.replication.user_managed.replicas
        if not replicas:
            fail(INVALID, "Secret.replication.user_managed.replicas must contain at least one replica.")
        locations = [r.location for r in replicas]
        if any(not loc for loc in locations):
            fail(INVALID, "Every replica in Secret.replication.user_managed must have a location.")
        if len(set(locations)) != len(locations):
            fail(INVALID, "Secret.replication.user_managed.replicas must have distinct locations.")


def validate_user_fields(meta: t.Secret) -> None:
    validate_labels(dict(meta.labels))
    validate_annotations(dict(meta.annotations))
    pb = t.Secret.pb(meta)
    if pb.HasField("version_destroy_ttl") and pb.version_destroy_ttl.ToTimedelta() <= dt.timedelta(0):
        fail(INVALID, "Secret.version_destroy_ttl must be a positive duration.")
