"""The Secret Manager servicer: its gRPC method table, the in-process API tests seed through, and the admin routes."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
from collections.abc import Callable, Iterable
from typing import Any

import grpc
from google.cloud.secretmanager_v1 import types as t
from google.iam.v1 import iam_policy_pb2, policy_pb2  # type: ignore[import-untyped]
from google.iam.v1.iam_policy_pb2 import TestIamPermissionsRequest as TestRequest  # type: ignore[import-untyped]
from google.iam.v1.iam_policy_pb2 import TestIamPermissionsResponse as TestResponse

from emulators import secret_iam_policy
from emulators.faults import FaultBook, WriteQuota
from emulators.grpcbase import Authenticator, GrpcEmulator, RpcError
from emulators.routes import AdminCall, AdminRouter, Answer, Handler
from emulators.secret_iam_policy import PolicyMessages
from emulators.secretmanager.access import Access
from emulators.secretmanager.messages import EmptyMessage, PlainMessage, secret_json
from emulators.secretmanager.model import Secret
from emulators.secretmanager.policies import PolicyRpcs
from emulators.secretmanager.secrets import SecretRpcs
from emulators.secretmanager.store import SecretStore
from emulators.secretmanager.validation import (
    MAX_PAYLOAD_BYTES,
    SECRET_ID,
    validate_replication,
    validate_user_fields,
)
from emulators.secretmanager.versions import VersionRpcs


class AdminError(ValueError):
    """A seed or admin request the emulator refuses; carries the HTTP status to answer."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class SecretManagerEmulator(GrpcEmulator):
    """An in-memory Secret Manager answering the official gRPC client; thread-safe (one lock)."""

    service = "secretmanager"
    grpc_service = "google.cloud.secretmanager.v1.SecretManagerService"

    def __init__(self, book: FaultBook, *, authenticate: Authenticator | None = None) -> None:
        super().__init__(book, authenticate=authenticate)
        self.quota = WriteQuota()
        self.store = SecretStore()
        access = Access(emulator=self, store=self.store, quota=self.quota)
        self.secret_rpcs = SecretRpcs(access=access, store=self.store)
        self.version_rpcs = VersionRpcs(access=access, store=self.store)
        self.policy_rpcs = PolicyRpcs(access=access, store=self.store)
        self._admin = AdminRouter(self._admin_table())

    # -- gRPC surface -------------------------------------------------------------------
    def handlers(self) -> dict[str, grpc.RpcMethodHandler]:
        secrets, versions, policies = self.secret_rpcs, self.version_rpcs, self.policy_rpcs
        table: list[tuple[str, Callable[[Any, str | None], Any], Any, Any]] = [
            ("CreateSecret", secrets.create_secret, t.CreateSecretRequest, t.Secret),
            ("GetSecret", secrets.get_secret, t.GetSecretRequest, t.Secret),
            ("UpdateSecret", secrets.update_secret, t.UpdateSecretRequest, t.Secret),
            ("DeleteSecret", secrets.delete_secret, t.DeleteSecretRequest, EmptyMessage),
            ("ListSecrets", secrets.list_secrets, t.ListSecretsRequest, t.ListSecretsResponse),
            ("AddSecretVersion", versions.add_version, t.AddSecretVersionRequest, t.SecretVersion),
            ("GetSecretVersion", versions.get_version, t.GetSecretVersionRequest, t.SecretVersion),
            (
                "AccessSecretVersion",
                versions.access_version,
                t.AccessSecretVersionRequest,
                t.AccessSecretVersionResponse,
            ),
            (
                "ListSecretVersions",
                versions.list_versions,
                t.ListSecretVersionsRequest,
                t.ListSecretVersionsResponse,
            ),
            ("DisableSecretVersion", versions.disable_version, t.DisableSecretVersionRequest, t.SecretVersion),
            ("EnableSecretVersion", versions.enable_version, t.EnableSecretVersionRequest, t.SecretVersion),
            ("DestroySecretVersion", versions.destroy_version, t.DestroySecretVersionRequest, t.SecretVersion),
            (
                "GetIamPolicy",
                policies.get_iam_policy,
                PolicyMessages(iam_policy_pb2.GetIamPolicyRequest),
                PolicyMessages(policy_pb2.Policy),
            ),
            (
                "SetIamPolicy",
                policies.set_iam_policy,
                PolicyMessages(iam_policy_pb2.SetIamPolicyRequest),
                PolicyMessages(policy_pb2.Policy),
            ),
        ]
        handlers = {rpc: self.unary(rpc, self._guarded(fn), req, resp) for rpc, fn, req, resp in table}
        handlers["TestIamPermissions"] = self.unary(
            "TestIamPermissions",
            self._guarded(policies.test_iam_permissions),
            PlainMessage(TestRequest),
            PlainMessage(TestResponse),
        )
        return handlers

    def _guarded(self, fn: Callable[[Any, str | None], Any]) -> Callable[[Any, str | None], Any]:
        def call(request: Any, identity: str | None) -> Any:
            with self.store.lock:
                return fn(request, identity)

        return call

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
        if not SECRET_ID.match(secret_id):
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
            validate_user_fields(meta)
            for data in datas:
                if not data or len(data) > MAX_PAYLOAD_BYTES:
                    raise AdminError(f"payload size {len(data)} outside 1..{MAX_PAYLOAD_BYTES}")
        except RpcError as err:
            raise AdminError(err.message) from err
        with self.store.lock:
            secret = self.store.add(number, secret_id, meta, created_by)
            for data in datas:
                self.store.append(secret, data, created_by, client_checksum=False)
            return self._json(secret)

    def secret(self, project: str, secret_id: str) -> dict[str, Any] | None:
        """One secret with its versions (JSON form), or None."""
        with self.store.lock:
            found = self.store.secrets.get((self.projects.number(project), secret_id))
            return None if found is None else self._json(found)

    def versions(self, project: str, secret_id: str) -> list[dict[str, Any]]:
        """The versions of a secret, oldest first (JSON form); [] when the secret is absent."""
        found = self.secret(project, secret_id)
        return [] if found is None else list(found["versions"])

    def payload(self, project: str, secret_id: str, version: int | None = None) -> bytes | None:
        """The bytes of a version (newest when None), None when absent or destroyed."""
        with self.store.lock:
            found = self.store.secrets.get((self.projects.number(project), secret_id))
            if found is None or not found.versions:
                return None
            return found.versions[version or max(found.versions)].payload

    def reset(self) -> None:
        with self.store.lock:
            self.store.clear()
            # Project id/number pairs are configuration (a stack registers them once), so they stay.
        self.iam.clear()
        self.quota.configure(self.quota.limit, self.quota.window_s)

    def state(self) -> dict[str, Any]:
        with self.store.lock:
            secrets = [self._json(s) for s in self.store.secrets.values()]
        return {
            "projects": self.projects.to_json(),
            "iam": self.iam.to_json(),
            "quota": self.quota.to_json(),
            "secrets": secrets,
        }

    def _json(self, secret: Secret) -> dict[str, Any]:
        return secret_json(secret, self.projects.project_id(secret.project_number))

    # -- admin HTTP routes ----------------------------------------------------------------
    def handle_admin(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        """Serve an admin route (path relative to /secretmanager); answers (status, json)."""
        try:
            answer = self._admin.dispatch(method, path, body)
        except AdminError as err:
            return err.status, {"error": str(err)}
        except (KeyError, TypeError, ValueError, binascii.Error) as err:
            return 400, {"error": f"bad request: {err}"}
        if answer is None:
            return 404, {"error": f"no admin route {method} /{self.service}{path}"}
        return answer

    def _admin_table(self) -> dict[tuple[str, str], Handler]:
        return {
            ("GET", "/secrets"): self._admin_secrets,
            ("GET", "/projects/{project}/secrets/{secret}"): self._admin_get_secret,
            ("PUT", "/projects/{project}/secrets/{secret}"): self._admin_put_secret,
            ("*", "/projects/{project}/secrets/{secret}"): lambda call: (
                405,
                {"error": f"method {call.method} not allowed"},
            ),
            ("POST", "/projects/{project}/secrets/{secret}/versions"): self._admin_add_version,
            ("*", "/projects/{project}/secrets/{secret}/{what}"): self._admin_policy,
            ("POST", "/projects"): self._admin_project,
            ("POST", "/iam"): lambda call: (200, self.admin_bind(_object(call.body))),
            ("GET", "/quota"): lambda _: (200, self.quota.to_json()),
            ("PUT", "/quota"): self._admin_quota,
            ("POST", "/reset"): self._admin_reset,
        }

    def _admin_secrets(self, _: AdminCall) -> Answer:
        with self.store.lock:
            return 200, [self._json(s) for s in self.store.secrets.values()]

    def _admin_get_secret(self, call: AdminCall) -> Answer:
        found = self.secret(call.params["project"], call.params["secret"])
        return (404, {"error": "secret not found"}) if found is None else (200, found)

    def _admin_put_secret(self, call: AdminCall) -> Answer:
        spec = _object(call.body)
        ttl = spec.get("version_destroy_ttl_s")
        return 200, self.seed_secret(
            call.params["project"],
            call.params["secret"],
            payloads=[base64.b64decode(v, validate=True) for v in spec.get("versions", [])],
            labels={str(k): str(v) for k, v in dict(spec.get("labels", {})).items()},
            annotations={str(k): str(v) for k, v in dict(spec.get("annotations", {})).items()},
            locations=[str(x) for x in spec.get("locations", [])] or None,
            version_destroy_ttl_s=None if ttl is None else float(ttl),
            created_by=str(spec.get("created_by", "seed")),
        )

    def _admin_add_version(self, call: AdminCall) -> Answer:
        """Another writer adds a version (the platform team rotating its pull secret): `{"payload": b64}`."""
        raw = _object(call.body).get("payload")
        try:
            data = base64.b64decode(raw, validate=True) if isinstance(raw, str) else b""
        except ValueError:
            data = b""
        if not data or len(data) > MAX_PAYLOAD_BYTES:
            raise AdminError(f"payload must be base64 of 1..{MAX_PAYLOAD_BYTES} bytes")
        with self.store.lock:
            key = (self.projects.number(call.params["project"]), call.params["secret"])
            secret = self.store.secrets.get(key)
            if secret is None:
                return 404, {"error": "secret not found"}
            self.store.append(secret, data, "admin", client_checksum=False)
            return 200, self._json(secret)

    def _admin_policy(self, call: AdminCall) -> Answer:
        """Another writer changes a policy: now (PUT iamPolicy), or after its next read (POST iamPolicyRace)."""
        method, what = call.method, call.params["what"]
        policy = secret_iam_policy.from_json(_object(call.body))
        with self.store.lock:
            key = (self.projects.number(call.params["project"]), call.params["secret"])
            secret = self.store.secrets.get(key)
            if secret is None:
                return 404, {"error": "secret not found"}
            if method == "PUT" and what == "iamPolicy":
                self.store.replace_policy(secret, policy)
                return 200, secret_iam_policy.to_json(secret.policy)
            if method == "POST" and what == "iamPolicyRace":
                self.store.policy_races[key] = policy
                return 200, {"armed": True}
        return 404, {"error": f"no admin route {method} {what}"}

    def _admin_project(self, call: AdminCall) -> Answer:
        spec = _object(call.body)
        self.add_project(str(spec["project_id"]), str(spec["number"]))
        return 200, {"projects": self.projects.to_json()}

    def _admin_quota(self, call: AdminCall) -> Answer:
        spec = _object(call.body)
        limit = spec.get("writes_per_minute")
        self.quota.configure(None if limit is None else int(limit), float(spec.get("window_s", 60.0)))
        return 200, self.quota.to_json()

    def _admin_reset(self, _: AdminCall) -> Answer:
        self.reset()
        return 200, {"reset": True}


def _object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise AdminError("body must be a JSON object")
    return body
