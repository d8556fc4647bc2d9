"""The service's answers: Secret and SecretVersion messages from the store, their JSON form, and serializers."""

from __future__ import annotations

import base64
from typing import Any

from google.cloud.secretmanager_v1 import types as t

from emulators import secret_iam_policy
from emulators.secretmanager.model import Secret, Version, iso, settle


def secret_pb(secret: Secret) -> t.Secret:
    out: t.Secret = t.Secret.deserialize(t.Secret.serialize(secret.meta))
    out.name = secret.name
    out.create_time = secret.create_time
    out.etag = secret.etag
    return out


def version_pb(secret: Secret, version: Version) -> t.SecretVersion:
    out = t.SecretVersion(
        name=f"{secret.name}/versions/{version.number}",
        create_time=version.create_time,
        state=getattr(t.SecretVersion.State, version.state),
        etag=version.etag,
        client_specified_payload_checksum=version.client_checksum,
    )
    if version.destroy_time is not None:
        out.destroy_time = version.destroy_time
    if version.scheduled_destroy_time is not None:
        out.scheduled_destroy_time = version.scheduled_destroy_time
    replication = t.Secret.pb(secret.meta).replication
    if replication.WhichOneof("replication") == "user_managed":
        out.replication_status = t.ReplicationStatus(
            user_managed=t.ReplicationStatus.UserManagedStatus(
                replicas=[
                    t.ReplicationStatus.UserManagedStatus.ReplicaStatus(location=r.location)
                    for r in replication.user_managed.replicas
                ]
            )
        )
    else:
        out.replication_status = t.ReplicationStatus(automatic=t.ReplicationStatus.AutomaticStatus())
    return out


def secret_json(secret: Secret, project_id: str) -> dict[str, Any]:
    pb = t.Secret.pb(secret.meta)
    if pb.replication.WhichOneof("replication") == "user_managed":
        replication: dict[str, Any] = {
            "user_managed": {"locations": [r.location for r in pb.replication.user_managed.replicas]}
        }
    else:
        replication = {"automatic": {}}
    versions = []
    for num in sorted(secret.versions):
        v = secret.versions[num]
        settle(v)
        versions.append(
            {
                "name": f"{secret.name}/versions/{num}",
                "version": num,
                "state": v.state,
                "etag": v.etag,
                "payload_b64": None if v.payload is None else base64.b64encode(v.payload).decode(),
                "crc32c": v.crc32c,
                "client_specified_payload_checksum": v.client_checksum,
                "create_time": iso(v.create_time),
                "destroy_time": iso(v.destroy_time),
                "scheduled_destroy_time": iso(v.scheduled_destroy_time),
                "created_by": v.created_by,
            }
        )
    return {
        "name": secret.name,
        "project_number": secret.project_number,
        "project_id": project_id,
        "secret_id": secret.secret_id,
        "labels": dict(pb.labels),
        "annotations": dict(pb.annotations),
        "replication": replication,
        "version_destroy_ttl_s": (
            pb.version_destroy_ttl.ToTimedelta().total_seconds() if pb.HasField("version_destroy_ttl") else None
        ),
        "etag": secret.etag,
        "create_time": iso(secret.create_time),
        "created_by": secret.created_by,
        "updated_by": secret.updated_by,
        "versions": versions,
        "iam_policy": secret_iam_policy.to_json(secret.policy),
    }


class EmptyMessage:
    """Serializer for google.protobuf.Empty answers."""

    @staticmethod
    def serialize(_: Any) -> bytes:
        return b""


EMPTY = object()


class PlainMessage:
    """(De)serializer for the plain protobuf messages of google.iam.v1 (not proto-plus like the service's own)."""

    def __init__(self, message: Any) -> None:
        self.deserialize = message.FromString
        self.serialize = message.SerializeToString
