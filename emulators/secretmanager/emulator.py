"""Secret Manager emulator: google.cloud.secretmanager.v1.SecretManagerService over real gRPC.

Built on the client library's own message classes, so the official ``SecretManagerServiceClient``
talks to it unchanged.  It models the rules the adapter meets in production: project numbers in
answers, ``latest`` = newest version whatever its state, version states and etags, CRC32C checks,
label/annotation/id/payload validation, immutable replication, delayed destruction, the per-project
write quota (RESOURCE_EXHAUSTED), bearer-token authentication and IAM (`emulators.iam`).

Each RPC needs one permission, checked on one resource before the service says anything about
existence (https://cloud.google.com/secret-manager/docs/access-control, "Secret Manager permissions";
https://cloud.google.com/iam/docs/roles-permissions/secretmanager):

    CreateSecret          secretmanager.secrets.create    the project (projects/NUMBER)
    ListSecrets           secretmanager.secrets.list      the project
    GetSecret             secretmanager.secrets.get       the secret (projects/NUMBER/secrets/ID)
    UpdateSecret          secretmanager.secrets.update    the secret
    DeleteSecret          secretmanager.secrets.delete    the secret
    AddSecretVersion      secretmanager.versions.add      the secret
    ListSecretVersions    secretmanager.versions.list     the secret
    GetSecretVersion      secretmanager.versions.get      the version (.../versions/N|latest)
    AccessSecretVersion   secretmanager.versions.access   the version
    DisableSecretVersion  secretmanager.versions.disable  the version
    EnableSecretVersion   secretmanager.versions.enable   the version
    DestroySecretVersion  secretmanager.versions.destroy  the version
    TestIamPermissions    none                            (answers which of the asked permissions the
                                                           caller holds on the secret; see _test_iam_permissions)
    GetIamPolicy          secretmanager.secrets.getIamPolicy  the secret (etags and versions: secret_iam_policy.py)
    SetIamPolicy          secretmanager.secrets.setIamPolicy  the secret

Admin routes (paths relative to ``/secretmanager``; bodies and answers are JSON):

    GET  /secrets                          every secret of every project (payloads base64)
    PUT  /projects/{p}/secrets/{id}        seed/replace a secret: {"labels": {}, "annotations": {},
                                           "versions": ["<base64>", ...], "locations": ["us-east1"],
                                           "version_destroy_ttl_s": 86400}
    GET  /projects/{p}/secrets/{id}        one secret with its versions and IAM policy (404 when absent)
    PUT  /projects/{p}/secrets/{id}/iamPolicy  another writer sets the secret's policy: {"bindings": [{"role",
                                           "members": [...]}]} (the etag changes)
    POST /projects/{p}/secrets/{id}/iamPolicyRace  the same body, applied by another writer right after the
                                           next GetIamPolicy of that secret is answered (one shot): the
                                           reader's SetIamPolicy then carries a stale etag
    POST /projects                         {"project_id": "my-proj", "number": "123456789012"}
    POST /iam                              {"project": p, "identity": "sa@p.iam.gserviceaccount.com"} (owner on p),
                                           or {"identity", "resource": "projects/p/secrets/s", "role",
                                           "permissions": [...], "condition": "resource.name..."}
    GET  /quota                            quota settings and rejected-write count
    PUT  /quota                            {"writes_per_minute": N | null, "window_s": 60}
    POST /reset                            drop all secrets, IAM grants and quota usage (projects stay)
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import functools
import importlib
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.cloud.secretmanager_v1 import types as t
from google.iam.v1 import iam_policy_pb2, policy_pb2  # type: ignore[import-untyped]
from google.iam.v1.iam_policy_pb2 import TestIamPermissionsRequest as TestRequest  # type: ignore[import-untyped]
from google.iam.v1.iam_policy_pb2 import TestIamPermissionsResponse as TestResponse
from google.protobuf import any_pb2, field_mask_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2  # type: ignore[import-untyped]

from emulators import secret_iam_policy
from emulators.faults import FaultBook, WriteQuota
from emulators.grpcbase import Authenticator, GrpcEmulator, RpcError, fail
from emulators.iam import Resource
from emulators.secret_iam_policy import PolicyMessages

INVALID = grpc.StatusCode.INVALID_ARGUMENT
NOT_FOUND = grpc.StatusCode.NOT_FOUND
FAILED_PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION

MAX_PAYLOAD_BYTES = 64 * 1024
MAX_LABELS = 64
MAX_ANNOTATIONS_BYTES = 16 * 1024
MAX_PAGE_SIZE = 25_000

_SECRET_ID = re.compile(r"^[A-Za-z0-9_-]{1,255}$")
_LABEL_KEY = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
_LABEL_VALUE = re.compile(r"^[a-z0-9_-]{0,63}$")
_ANNOTATION_KEY = re.compile(r"^[a-zA-Z0-9]([a-zA-Z0-9_.-]{0,61}[a-zA-Z0-9])?$")
_PARENT = re.compile(r"^projects/([^/]+)$")
_SECRET_NAME = re.compile(r"^projects/([^/]+)/secrets/([^/]+)$")
_VERSION_NAME = re.compile(r"^projects/([^/]+)/secrets/([^/]+)/versions/([^/]+)$")
_VERSION_NUMBER = re.compile(r"^[1-9][0-9]{0,18}$")
_FILTER_TERM = re.compile(r"^(-|NOT\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*(:|=)\s*(\"[^\"]*\"|\S+)$")

# UpdateSecret may touch these fields; the others are immutable or output only.
_UPDATABLE = {"labels", "annotations", "topics", "expire_time", "ttl", "rotation", "version_aliases"}
_UPDATABLE |= {"version_destroy_ttl"}
_WRITES = {
    "CreateSecret",
    "UpdateSecret",
    "DeleteSecret",
    "AddSecretVersion",
    "DisableSecretVersion",
    "EnableSecretVersion",
    "DestroySecretVersion",
}

ENABLED, DISABLED, DESTROYED = "ENABLED", "DISABLED", "DESTROYED"


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _iso(value: dt.datetime | None) -> str | None:
    return None if value is None else value.isoformat().replace("+00:00", "Z")


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        crc = n
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC32C_TABLE = _crc32c_table()

_google_crc32c: Any
try:  # the C implementation when installed; the table fallback keeps the emulator self-contained
    _google_crc32c = importlib.import_module("google_crc32c")
except ImportError:  # pragma: no cover
    _google_crc32c = None


def crc32c(data: bytes) -> int:
    """CRC32C (Castagnoli), the checksum Secret Manager uses for data_crc32c."""
    if _google_crc32c is not None:
        return int(_google_crc32c.value(data))
    return crc32c_pure(data)


def crc32c_pure(data: bytes) -> int:
    """Table-driven CRC32C; the fallback when google-crc32c is absent."""
    crc = 0xFFFFFFFF
    table = _CRC32C_TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


class AdminError(ValueError):
    """A seed or admin request the emulator refuses; carries the HTTP status to answer."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class _Version:
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
class _Secret:
    project_number: str
    secret_id: str
    meta: t.Secret  # labels, annotations, replication and the other user fields
    create_time: dt.datetime
    etag: str
    created_by: str | None
    updated_by: str | None = None
    versions: dict[int, _Version] = field(default_factory=dict)
    next_version: int = 1
    policy: policy_pb2.Policy = field(default_factory=policy_pb2.Policy)  # its allow policy (etag set on create)

    @property
    def name(self) -> str:
        return f"projects/{self.project_number}/secrets/{self.secret_id}"


# -- validation (shared by the RPCs and the seed path) --------------------------------------
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


def _validate_user_fields(meta: t.Secret) -> None:
    validate_labels(dict(meta.labels))
    validate_annotations(dict(meta.annotations))
    pb = t.Secret.pb(meta)
    if pb.HasField("version_destroy_ttl") and pb.version_destroy_ttl.ToTimedelta() <= dt.timedelta(0):
        fail(INVALID, "Secret.version_destroy_ttl must be a positive duration.")


class SecretManagerEmulator(GrpcEmulator):
    """An in-memory Secret Manager answering the official gRPC client; thread-safe (one lock)."""

    service = "secretmanager"
    grpc_service = "google.cloud.secretmanager.v1.SecretManagerService"

    def __init__(self, book: FaultBook, *, authenticate: Authenticator | None = None) -> None:
        super().__init__(book, authenticate=authenticate)
        self.quota = WriteQuota()
        self._lock = threading.RLock()
        self._secrets: dict[tuple[str, str], _Secret] = {}
        self._last_etag = 0
        # Another writer's policy, applied right after the next GetIamPolicy of that secret (admin iamPolicyRace).
        self._policy_races: dict[tuple[str, str], policy_pb2.Policy] = {}

    # -- gRPC surface -------------------------------------------------------------------
    def handlers(self) -> dict[str, grpc.RpcMethodHandler]:
        table: list[tuple[str, Callable[[Any, str | None], Any], Any, Any]] = [
            ("CreateSecret", self._create_secret, t.CreateSecretRequest, t.Secret),
            ("GetSecret", self._get_secret, t.GetSecretRequest, t.Secret),
            ("UpdateSecret", self._update_secret, t.UpdateSecretRequest, t.Secret),
            ("DeleteSecret", self._delete_secret, t.DeleteSecretRequest, _Empty),
            ("ListSecrets", self._list_secrets, t.ListSecretsRequest, t.ListSecretsResponse),
            ("AddSecretVersion", self._add_version, t.AddSecretVersionRequest, t.SecretVersion),
            ("GetSecretVersion", self._get_version, t.GetSecretVersionRequest, t.SecretVersion),
            (
                "AccessSecretVersion",
                self._access_version,
                t.AccessSecretVersionRequest,
                t.AccessSecretVersionResponse,
            ),
            (
                "ListSecretVersions",
                self._list_versions,
                t.ListSecretVersionsRequest,
                t.ListSecretVersionsResponse,
            ),
            ("DisableSecretVersion", self._disable_version, t.DisableSecretVersionRequest, t.SecretVersion),
            ("EnableSecretVersion", self._enable_version, t.EnableSecretVersionRequest, t.SecretVersion),
            ("DestroySecretVersion", self._destroy_version, t.DestroySecretVersionRequest, t.SecretVersion),
            (
                "GetIamPolicy",
                self._get_iam_policy,
                PolicyMessages(iam_policy_pb2.GetIamPolicyRequest),
                PolicyMessages(policy_pb2.Policy),
            ),
            (
                "SetIamPolicy",
                self._set_iam_policy,
                PolicyMessages(iam_policy_pb2.SetIamPolicyRequest),
                PolicyMessages(policy_pb2.Policy),
            ),
        ]
        handlers = {rpc: self.unary(rpc, self._guarded(fn), req, resp) for rpc, fn, req, resp in table}
        handlers["TestIamPermissions"] = self.unary(
            "TestIamPermissions", self._guarded(self._test_iam_permissions), _Pb(TestRequest), _Pb(TestResponse)
        )
        return handlers

    def _guarded(self, fn: Callable[[Any, str | None], Any]) -> Callable[[Any, str | None], Any]:
        def call(request: Any, identity: str | None) -> Any:
            with self._lock:
                return fn(request, identity)

        return call

    def _test_iam_permissions(self, req: Any, identity: str | None) -> Any:
        """TestIamPermissions on a secret: the asked permissions the caller's bindings grant on it, judged by the
        same policy every other RPC is authorized with (grants on the project and on the secret, conditions on
        the secret's name). google.iam.v1 iam_policy.proto: "If the resource does not exist, this will return an
        empty set of permissions, not a NOT_FOUND error"; the call itself needs no permission
        (https://cloud.google.com/iam/docs/testing-permissions). Wildcards are refused, as IAM refuses them."""
        match = _SECRET_NAME.match(req.resource)
        if not match:
            fail(INVALID, f"The provided Secret name [{req.resource}] is invalid; expected projects/*/secrets/*.")
        if any("*" in p for p in req.permissions):
            fail(INVALID, "Permissions with wildcards (such as '*' or 'storage.*') are not allowed.")
        number, secret_id = self.project_number(match.group(1)), match.group(2)
        if (number, secret_id) not in self._secrets:
            return TestResponse()
        resource = Resource.secret(number, secret_id)
        allowed = [p for p in req.permissions if identity is None or self.iam.allows(identity, p, resource)]
        return TestResponse(permissions=allowed)

    # -- helpers ------------------------------------------------------------------------
    def _etag(self) -> str:
        # The real etags are quoted hex timestamps (microseconds); strictly increasing here.
        with self._lock:
            self._last_etag = max(self._last_etag + 1, time.time_ns() // 1000)
            return f'"{self._last_etag:x}"'

    def _check_write(self, rpc: str, project_number: str) -> None:
        if rpc in _WRITES and not self.quota.admit(project_number):
            raise RpcError(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                _quota_message(project_number),
                details=_quota_status(project_number),
            )

    def _project(
        self,
        raw: str,
        identity: str | None,
        permission: str,
        rpc: str,
        resource: Callable[[str], Resource] = Resource.project,
    ) -> str:
        """The project number; PERMISSION_DENIED (before anything about existence) or RESOURCE_EXHAUSTED."""
        number = self.project_number(raw)
        self.authorize(identity, permission, resource(number))
        self._check_write(rpc, number)
        return number

    def _parse_secret(self, name: str, identity: str | None, permission: str, rpc: str) -> tuple[str, str]:
        match = _SECRET_NAME.match(name)
        if not match:
            fail(INVALID, f"The provided Secret name [{name}] is invalid; expected projects/*/secrets/*.")
        secret_id = match.group(2)
        number = self._project(match.group(1), identity, permission, rpc, lambda n: Resource.secret(n, secret_id))
        if not _SECRET_ID.match(match.group(2)):
            fail(INVALID, f"The provided Secret ID [{match.group(2)}] does not match [[a-zA-Z_0-9-]{{1,255}}].")
        return number, match.group(2)

    def _find(self, number: str, secret_id: str, *, for_access: bool = False) -> _Secret:
        secret = self._secrets.get((number, secret_id))
        if secret is None:
            suffix = " or has no versions" if for_access else ""
            fail(NOT_FOUND, f"Secret [projects/{number}/secrets/{secret_id}] not found{suffix}.")
        return secret

    def _parse_version(
        self, name: str, identity: str | None, permission: str, rpc: str, *, allow_alias: bool
    ) -> tuple[_Secret, _Version]:
        match = _VERSION_NAME.match(name)
        if not match:
            fail(
                INVALID,
                f"The provided Secret Version name [{name}] is invalid; expected projects/*/secrets/*/versions/*.",
            )
        secret_id, ref = match.group(2), match.group(3)
        number = self._project(
            match.group(1), identity, permission, rpc, lambda n: Resource.secret_version(n, secret_id, ref)
        )
        if not _SECRET_ID.match(secret_id):
            fail(INVALID, f"The provided Secret ID [{secret_id}] does not match [[a-zA-Z_0-9-]{{1,255}}].")
        if not allow_alias and not _VERSION_NUMBER.match(ref):
            fail(INVALID, f"The version [{ref}] must be a positive version number for this method.")
        secret = self._find(number, secret_id, for_access=ref == "latest")
        version_number = self._resolve(secret, ref)
        version = secret.versions.get(version_number) if version_number else None
        if version is None and ref == "latest":
            fail(NOT_FOUND, f"Secret [{secret.name}] not found or has no versions.")
        if version is None:
            fail(NOT_FOUND, f"Secret Version [{secret.name}/versions/{ref}] not found.")
        self._settle(version)
        return secret, version

    def _resolve(self, secret: _Secret, ref: str) -> int | None:
        if _VERSION_NUMBER.match(ref):
            return int(ref)
        if ref == "latest":
            # The real `latest` is the most recently created version whatever its state.
            return max(secret.versions) if secret.versions else None
        if ref.isdigit():
            fail(INVALID, f"Invalid version id [{ref}].")
        alias = dict(secret.meta.version_aliases).get(ref)
        return int(alias) if alias else None

    @staticmethod
    def _settle(version: _Version) -> None:
        # Delayed destruction happens lazily: a version past its scheduled time reads as destroyed.
        when = version.scheduled_destroy_time
        if version.state == DISABLED and when is not None and _now() >= when:
            version.state, version.payload, version.destroy_time = DESTROYED, None, when
            version.scheduled_destroy_time = None

    def _secret_pb(self, secret: _Secret) -> t.Secret:
        out: t.Secret = t.Secret.deserialize(t.Secret.serialize(secret.meta))
        out.name = secret.name
        out.create_time = secret.create_time
        out.etag = secret.etag
        return out

    def _version_pb(self, secret: _Secret, version: _Version) -> t.SecretVersion:
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

    # -- secrets ------------------------------------------------------------------------
    def _create_secret(self, req: t.CreateSecretRequest, identity: str | None) -> t.Secret:
        match = _PARENT.match(req.parent)
        if not match:
            fail(INVALID, f"The provided parent [{req.parent}] is invalid; expected projects/*.")
        number = self._project(match.group(1), identity, "secretmanager.secrets.create", "CreateSecret")
        if not _SECRET_ID.match(req.secret_id):
            fail(
                INVALID,
                f"The provided Secret ID [{req.secret_id}] does not match the expected format "
                "[[a-zA-Z_0-9-]{1,255}].",
            )
        meta = t.Secret.deserialize(t.Secret.serialize(req.secret))
        validate_replication(meta)
        _validate_user_fields(meta)
        if (number, req.secret_id) in self._secrets:
            fail(
                grpc.StatusCode.ALREADY_EXISTS,
                f"Secret [projects/{number}/secrets/{req.secret_id}] already exists.",
            )
        secret = self._store(number, req.secret_id, meta, identity)
        return self._secret_pb(secret)

    def _store(self, number: str, secret_id: str, meta: t.Secret, identity: str | None) -> _Secret:
        pb = t.Secret.pb(meta)
        for output_only in ("name", "create_time", "etag"):
            pb.ClearField(output_only)
        if pb.HasField("ttl"):  # ttl is input only: the service turns it into expire_time
            expire = _now() + pb.ttl.ToTimedelta()
            pb.ClearField("ttl")
            pb.expire_time.FromDatetime(expire)
        secret = _Secret(number, secret_id, meta, _now(), self._etag(), created_by=identity)
        secret.policy.etag = self._etag().encode()
        self._secrets[(number, secret_id)] = secret
        return secret

    def _get_secret(self, req: t.GetSecretRequest, identity: str | None) -> t.Secret:
        number, secret_id = self._parse_secret(req.name, identity, "secretmanager.secrets.get", "GetSecret")
        return self._secret_pb(self._find(number, secret_id))

    def _update_secret(self, req: t.UpdateSecretRequest, identity: str | None) -> t.Secret:
        number, secret_id = self._parse_secret(
            req.secret.name, identity, "secretmanager.secrets.update", "UpdateSecret"
        )
        paths = list(req.update_mask.paths)
        if not paths:
            fail(INVALID, "update_mask must be specified and non-empty.")
        for path in paths:
            if path not in _UPDATABLE:
                fail(INVALID, f"The field [{path}] cannot be updated (immutable or unknown field).")
        secret = self._find(number, secret_id)
        if req.secret.etag and req.secret.etag != secret.etag:
            fail(FAILED_PRECONDITION, f"The etag provided [{req.secret.etag}] does not match the current etag.")
        merged = t.Secret.deserialize(t.Secret.serialize(secret.meta))
        mask = field_mask_pb2.FieldMask(paths=paths)
        mask.MergeMessage(
            t.Secret.pb(req.secret),
            t.Secret.pb(merged),
            replace_message_field=True,
            replace_repeated_field=True,
        )
        _validate_user_fields(merged)
        merged_pb = t.Secret.pb(merged)
        if merged_pb.HasField("ttl"):
            expire = _now() + merged_pb.ttl.ToTimedelta()
            merged_pb.ClearField("ttl")
            merged_pb.expire_time.FromDatetime(expire)
        for alias, target in merged.version_aliases.items():
            if target not in secret.versions:
                fail(INVALID, f"Version alias [{alias}] points at version [{target}], which does not exist.")
        secret.meta = merged
        secret.etag = self._etag()
        secret.updated_by = identity
        return self._secret_pb(secret)

    def _delete_secret(self, req: t.DeleteSecretRequest, identity: str | None) -> Any:
        number, secret_id = self._parse_secret(req.name, identity, "secretmanager.secrets.delete", "DeleteSecret")
        secret = self._find(number, secret_id)
        if req.etag and req.etag != secret.etag:
            fail(FAILED_PRECONDITION, f"The etag provided [{req.etag}] does not match the current etag.")
        del self._secrets[(number, secret_id)]
        return _EMPTY

    # -- allow policies (emulators/secret_iam_policy.py states the rules) --------------------------------------
    def _get_iam_policy(self, req: Any, identity: str | None) -> policy_pb2.Policy:
        number, secret_id = self._parse_secret(
            req.resource, identity, "secretmanager.secrets.getIamPolicy", "GetIamPolicy"
        )
        secret = self._find(number, secret_id)
        answer = policy_pb2.Policy()
        answer.CopyFrom(secret.policy)
        race = self._policy_races.pop((number, secret_id), None)
        if race is not None:  # another writer lands after this read: the answer's etag is stale from now on
            self._replace_policy(secret, race)
        return answer

    def _set_iam_policy(self, req: Any, identity: str | None) -> policy_pb2.Policy:
        number, secret_id = self._parse_secret(
            req.resource, identity, "secretmanager.secrets.setIamPolicy", "SetIamPolicy"
        )
        secret = self._find(number, secret_id)
        secret_iam_policy.check_etag(secret.policy, req.policy.etag)
        secret_iam_policy.validate(req.policy)
        self._replace_policy(secret, req.policy)
        answer = policy_pb2.Policy()
        answer.CopyFrom(secret.policy)
        return answer

    def _replace_policy(self, secret: _Secret, policy: policy_pb2.Policy) -> None:
        stored = policy_pb2.Policy()
        stored.CopyFrom(policy)
        stored.etag = self._etag().encode()
        secret.policy = stored

    def _list_secrets(self, req: t.ListSecretsRequest, identity: str | None) -> t.ListSecretsResponse:
        match = _PARENT.match(req.parent)
        if not match:
            fail(INVALID, f"The provided parent [{req.parent}] is invalid; expected projects/*.")
        number = self._project(match.group(1), identity, "secretmanager.secrets.list", "ListSecrets")
        keep = _compile_filter(req.filter)
        items = [s for (p, _), s in self._secrets.items() if p == number and keep(functools.partial(_secret_field, s))]
        page, token = _page(items, req.page_size, req.page_token)
        return t.ListSecretsResponse(
            secrets=[self._secret_pb(s) for s in page], next_page_token=token, total_size=len(items)
        )

    # -- versions -----------------------------------------------------------------------
    def _add_version(self, req: t.AddSecretVersionRequest, identity: str | None) -> t.SecretVersion:
        number, secret_id = self._parse_secret(req.parent, identity, "secretmanager.versions.add", "AddSecretVersion")
        secret = self._find(number, secret_id)
        data = req.payload.data
        if not data:
            fail(INVALID, "Secret Payload cannot be empty.")
        if len(data) > MAX_PAYLOAD_BYTES:
            fail(INVALID, f"Secret payload data must be at most {MAX_PAYLOAD_BYTES} bytes, got {len(data)}.")
        checksum = crc32c(data)
        sent = "data_crc32c" in req.payload
        if sent and req.payload.data_crc32c != checksum:
            fail(grpc.StatusCode.DATA_LOSS, "Checksum mismatch: the data_crc32c does not match the payload.")
        version = self._append(secret, data, identity, client_checksum=sent)
        return self._version_pb(secret, version)

    def _append(self, secret: _Secret, data: bytes, identity: str | None, *, client_checksum: bool) -> _Version:
        version = _Version(
            number=secret.next_version,
            state=ENABLED,
            payload=data,
            crc32c=crc32c(data),
            create_time=_now(),
            etag=self._etag(),
            client_checksum=client_checksum,
            created_by=identity,
        )
        secret.versions[version.number] = version
        secret.next_version += 1
        return version

    def _get_version(self, req: t.GetSecretVersionRequest, identity: str | None) -> t.SecretVersion:
        secret, version = self._parse_version(
            req.name, identity, "secretmanager.versions.get", "GetSecretVersion", allow_alias=True
        )
        return self._version_pb(secret, version)

    def _access_version(self, req: t.AccessSecretVersionRequest, identity: str | None) -> t.AccessSecretVersionResponse:
        secret, version = self._parse_version(
            req.name, identity, "secretmanager.versions.access", "AccessSecretVersion", allow_alias=True
        )
        name = f"{secret.name}/versions/{version.number}"
        if version.state != ENABLED or version.payload is None:
            fail(FAILED_PRECONDITION, f"Secret Version [{name}] is in {version.state} state.")
        return t.AccessSecretVersionResponse(
            name=name, payload=t.SecretPayload(data=version.payload, data_crc32c=version.crc32c)
        )

    def _list_versions(self, req: t.ListSecretVersionsRequest, identity: str | None) -> t.ListSecretVersionsResponse:
        number, secret_id = self._parse_secret(
            req.parent, identity, "secretmanager.versions.list", "ListSecretVersions"
        )
        secret = self._find(number, secret_id)
        keep = _compile_filter(req.filter)
        items = []
        for num in sorted(secret.versions, reverse=True):  # newest first, as the real service
            version = secret.versions[num]
            self._settle(version)
            if keep(functools.partial(_version_field, secret, version)):
                items.append(version)
        page, token = _page(items, req.page_size, req.page_token)
        return t.ListSecretVersionsResponse(
            versions=[self._version_pb(secret, v) for v in page], next_page_token=token, total_size=len(items)
        )

    def _transition(self, rpc: str, permission: str, req: Any, identity: str | None) -> t.SecretVersion:
        secret, version = self._parse_version(req.name, identity, permission, rpc, allow_alias=False)
        if req.etag and req.etag != version.etag:
            fail(FAILED_PRECONDITION, f"The etag provided [{req.etag}] does not match the current etag.")
        name = f"{secret.name}/versions/{version.number}"
        if version.state == DESTROYED:
            fail(FAILED_PRECONDITION, f"Secret Version [{name}] is in DESTROYED state.")
        if rpc == "DisableSecretVersion":
            version.state = DISABLED
        elif rpc == "EnableSecretVersion":
            version.state, version.scheduled_destroy_time = ENABLED, None  # enabling cancels a schedule
        else:
            ttl = t.Secret.pb(secret.meta)
            if ttl.HasField("version_destroy_ttl"):
                if version.scheduled_destroy_time is None:
                    version.scheduled_destroy_time = _now() + ttl.version_destroy_ttl.ToTimedelta()
                version.state = DISABLED
            else:
                version.state, version.payload, version.destroy_time = DESTROYED, None, _now()
        version.etag = self._etag()
        return self._version_pb(secret, version)

    def _disable_version(self, req: t.DisableSecretVersionRequest, identity: str | None) -> t.SecretVersion:
        return self._transition("DisableSecretVersion", "secretmanager.versions.disable", req, identity)

    def _enable_version(self, req: t.EnableSecretVersionRequest, identity: str | None) -> t.SecretVersion:
        return self._transition("EnableSecretVersion", "secretmanager.versions.enable", req, identity)

    def _destroy_version(self, req: t.DestroySecretVersionRequest, identity: str | None) -> t.SecretVersion:
        return self._transition("DestroySecretVersion", "secretmanager.versions.destroy", req, identity)

    # -- in-process API for tests and the admin routes --------------------------------------
    def seed_secret(
        self,
        project: str,
        secret_id: str,
        *,
        payloads: Iterable[bytes] = (),
        labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None,
        locations: list[str] | None = None,
        version_destroy_ttl_s: float | None = None,
        created_by: str | None = "seed",
    ) -> dict[str, Any]:
        """Create or replace a secret with enabled versions; raises AdminError on invalid input."""
        if not _SECRET_ID.match(secret_id):
            raise AdminError(f"invalid secret id {secret_id!r}")
        if locations:
            replication = t.Replication(
                user_managed=t.Replication.UserManaged(
                    replicas=[t.Replication.UserManaged.Replica(location=loc) for loc in locations]
                )
            )
        else:
            replication = t.Replication(automatic=t.Replication.Automatic())
        meta = t.Secret(replication=replication, labels=labels or {}, annotations=annotations or {})
        if version_destroy_ttl_s is not None:
            meta.version_destroy_ttl = dt.timedelta(seconds=version_destroy_ttl_s)
        datas = list(payloads)
        try:
            number = self.projects.number(project)
            validate_replication(meta)
            _validate_user_fields(meta)
            for data in datas:
                if not data or len(data) > MAX_PAYLOAD_BYTES:
                    raise AdminError(f"payload size {len(data)} outside 1..{MAX_PAYLOAD_BYTES}")
        except RpcError as err:
            raise AdminError(err.message) from err
        with self._lock:
            secret = self._store(number, secret_id, meta, created_by)
            for data in datas:
                self._append(secret, data, created_by, client_checksum=False)
            return self._secret_json(secret)

    def secret(self, project: str, secret_id: str) -> dict[str, Any] | None:
        """One secret with its versions (JSON form), or None."""
        with self._lock:
            found = self._secrets.get((self.projects.number(project), secret_id))
            return None if found is None else self._secret_json(found)

    def versions(self, project: str, secret_id: str) -> list[dict[str, Any]]:
        """The versions of a secret, oldest first (JSON form); [] when the secret is absent."""
        found = self.secret(project, secret_id)
        return [] if found is None else list(found["versions"])

    def payload(self, project: str, secret_id: str, version: int | None = None) -> bytes | None:
        """The bytes of a version (newest when None), None when absent or destroyed."""
        with self._lock:
            found = self._secrets.get((self.projects.number(project), secret_id))
            if found is None or not found.versions:
                return None
            return found.versions[version or max(found.versions)].payload

    def reset(self) -> None:
        with self._lock:
            self._secrets.clear()
            self._policy_races.clear()
        # Project id/number pairs are configuration (a stack registers them once), so they stay.
        self.iam.clear()
        self.quota.configure(self.quota.limit, self.quota.window_s)

    def state(self) -> dict[str, Any]:
        with self._lock:
            secrets = [self._secret_json(s) for s in self._secrets.values()]
        return {
            "projects": self.projects.to_json(),
            "iam": self.iam.to_json(),
            "quota": self.quota.to_json(),
            "secrets": secrets,
        }

    def _secret_json(self, secret: _Secret) -> dict[str, Any]:
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
            self._settle(v)
            versions.append(
                {
                    "name": f"{secret.name}/versions/{num}",
                    "version": num,
                    "state": v.state,
                    "etag": v.etag,
                    "payload_b64": None if v.payload is None else base64.b64encode(v.payload).decode(),
                    "crc32c": v.crc32c,
                    "client_specified_payload_checksum": v.client_checksum,
                    "create_time": _iso(v.create_time),
                    "destroy_time": _iso(v.destroy_time),
                    "scheduled_destroy_time": _iso(v.scheduled_destroy_time),
                    "created_by": v.created_by,
                }
            )
        return {
            "name": secret.name,
            "project_number": secret.project_number,
            "project_id": self.projects.project_id(secret.project_number),
            "secret_id": secret.secret_id,
            "labels": dict(pb.labels),
            "annotations": dict(pb.annotations),
            "replication": replication,
            "version_destroy_ttl_s": (
                pb.version_destroy_ttl.ToTimedelta().total_seconds() if pb.HasField("version_destroy_ttl") else None
            ),
            "etag": secret.etag,
            "create_time": _iso(secret.create_time),
            "created_by": secret.created_by,
            "updated_by": secret.updated_by,
            "versions": versions,
            "iam_policy": secret_iam_policy.to_json(secret.policy),
        }

    # -- admin HTTP routes ----------------------------------------------------------------
    def handle_admin(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        """Serve an admin route (path relative to /secretmanager); answers (status, json)."""
        parts = [p for p in path.split("/") if p]
        try:
            if method == "GET" and parts == ["secrets"]:
                with self._lock:
                    return 200, [self._secret_json(s) for s in self._secrets.values()]
            if len(parts) == 4 and parts[0] == "projects" and parts[2] == "secrets":
                return self._admin_secret(method, parts[1], parts[3], body)
            if len(parts) == 5 and parts[0] == "projects" and parts[2] == "secrets":
                return self._admin_policy(method, parts[1], parts[3], parts[4], body)
            if method == "POST" and parts == ["projects"]:
                spec = _object(body)
                self.add_project(str(spec["project_id"]), str(spec["number"]))
                return 200, {"projects": self.projects.to_json()}
            if method == "POST" and parts == ["iam"]:
                return 200, self.admin_bind(_object(body))
            if parts == ["quota"] and method == "GET":
                return 200, self.quota.to_json()
            if parts == ["quota"] and method == "PUT":
                spec = _object(body)
                limit = spec.get("writes_per_minute")
                self.quota.configure(None if limit is None else int(limit), float(spec.get("window_s", 60.0)))
                return 200, self.quota.to_json()
            if method == "POST" and parts == ["reset"]:
                self.reset()
                return 200, {"reset": True}
        except AdminError as err:
            return err.status, {"error": str(err)}
        except (KeyError, TypeError, ValueError, binascii.Error) as err:
            return 400, {"error": f"bad request: {err}"}
        return 404, {"error": f"no admin route {method} /{self.service}{path}"}

    def _admin_secret(self, method: str, project: str, secret_id: str, body: Any) -> tuple[int, Any]:
        if method == "GET":
            found = self.secret(project, secret_id)
            return (404, {"error": "secret not found"}) if found is None else (200, found)
        if method == "PUT":
            spec = _object(body)
            ttl = spec.get("version_destroy_ttl_s")
            return 200, self.seed_secret(
                project,
                secret_id,
                payloads=[base64.b64decode(v, validate=True) for v in spec.get("versions", [])],
                labels={str(k): str(v) for k, v in dict(spec.get("labels", {})).items()},
                annotations={str(k): str(v) for k, v in dict(spec.get("annotations", {})).items()},
                locations=[str(x) for x in spec.get("locations", [])] or None,
                version_destroy_ttl_s=None if ttl is None else float(ttl),
                created_by=str(spec.get("created_by", "seed")),
            )
        return 405, {"error": f"method {method} not allowed"}

    def _admin_policy(self, method: str, project: str, secret_id: str, what: str, body: Any) -> tuple[int, Any]:
        """Another writer changes a policy: now (PUT iamPolicy), or after its next read (POST iamPolicyRace)."""
        policy = secret_iam_policy.from_json(_object(body))
        with self._lock:
            key = (self.projects.number(project), secret_id)
            secret = self._secrets.get(key)
            if secret is None:
                return 404, {"error": "secret not found"}
            if method == "PUT" and what == "iamPolicy":
                self._replace_policy(secret, policy)
                return 200, secret_iam_policy.to_json(secret.policy)
            if method == "POST" and what == "iamPolicyRace":
                self._policy_races[key] = policy
                return 200, {"armed": True}
        return 404, {"error": f"no admin route {method} {what}"}


# -- module helpers --------------------------------------------------------------------------
class _Empty:
    """Serializer for google.protobuf.Empty answers."""

    @staticmethod
    def serialize(_: Any) -> bytes:
        return b""


_EMPTY = object()


class _Pb:
    """(De)serializer for the plain protobuf messages of google.iam.v1 (not proto-plus like the service's own)."""

    def __init__(self, message: Any) -> None:
        self.deserialize = message.FromString
        self.serialize = message.SerializeToString


def _object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise AdminError("body must be a JSON object")
    return body


def _quota_message(project_number: str) -> str:
    return (
        "Quota exceeded for quota metric 'Write requests' and limit 'Write requests per minute' of "
        f"service 'secretmanager.googleapis.com' for consumer 'project_number:{project_number}'."
    )


def _quota_status(project_number: str) -> Any:
    info = error_details_pb2.ErrorInfo(
        reason="RATE_LIMIT_EXCEEDED",
        domain="googleapis.com",
        metadata={
            "quota_metric": "secretmanager.googleapis.com/write_requests",
            "quota_limit": "WriteRequestsPerMinutePerProject",
            "service": "secretmanager.googleapis.com",
            "consumer": f"projects/{project_number}",
        },
    )
    detail = any_pb2.Any()
    detail.Pack(info)
    return status_pb2.Status(code=code_pb2.RESOURCE_EXHAUSTED, message=_quota_message(project_number), details=[detail])


def _page(items: list[Any], page_size: int, page_token: str) -> tuple[list[Any], str]:
    if page_size < 0:
        fail(INVALID, "page_size must not be negative.")
    size = min(page_size or MAX_PAGE_SIZE, MAX_PAGE_SIZE)
    start = 0
    if page_token:
        try:
            start = int(base64.urlsafe_b64decode(page_token.encode()).decode().removeprefix("offset:"))
        except (ValueError, binascii.Error):
            fail(INVALID, f"Invalid page token [{page_token}].")
        if start < 0 or start > len(items):
            fail(INVALID, f"Invalid page token [{page_token}].")
    end = start + size
    token = base64.urlsafe_b64encode(f"offset:{end}".encode()).decode() if end < len(items) else ""
    return items[start:end], token


FieldGetter = Callable[[str], str | None]


def _compile_filter(text: str) -> Callable[[FieldGetter], bool]:
    """A small subset of the List filter syntax: AND-ed ``[NOT|-]field(:|=)value`` terms.

    ``:`` is "has" (substring; ``*`` = present), ``=`` is equality.  Anything else is refused with
    INVALID_ARGUMENT rather than silently ignored, so a filter the emulator cannot honour is noticed.
    """
    terms: list[tuple[bool, str, str, str]] = []
    tokens = re.findall(r'(?:NOT\s+)?[^\s"]+(?:"[^"]*")?', text.strip())
    for token in tokens:
        if token == "AND":
            continue
        if token == "OR":
            fail(INVALID, "The emulator does not support OR in filters.")
        match = _FILTER_TERM.match(token)
        if not match:
            fail(INVALID, f"Invalid filter term [{token}].")
        negate, key, op, value = match.groups()
        terms.append((bool(negate), key, op, value.strip('"')))

    def keep(get: FieldGetter) -> bool:
        for negate, key, op, value in terms:
            actual = get(key)
            if op == "=":
                hit = actual is not None and actual == value
            elif value == "*":
                hit = actual is not None
            else:
                hit = actual is not None and value.lower() in actual.lower()
            if hit == negate:
                return False
        return True

    return keep


def _secret_field(secret: _Secret, key: str) -> str | None:
    if key == "name":
        return secret.name
    if key.startswith("labels."):
        return dict(secret.meta.labels).get(key.removeprefix("labels."))
    if key.startswith("annotations."):
        return dict(secret.meta.annotations).get(key.removeprefix("annotations."))
    fail(INVALID, f"The emulator cannot filter secrets on [{key}].")


def _version_field(secret: _Secret, version: _Version, key: str) -> str | None:
    if key == "state":
        return version.state
    if key == "name":
        return f"{secret.name}/versions/{version.number}"
    fail(INVALID, f"The emulator cannot filter versions on [{key}].")
