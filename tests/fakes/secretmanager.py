"""In-memory Secret Manager: every call is a scheduling point of the current `Run` (tests/fakes/scheduler.py; `Calm`
when nothing is explored).

Only the behaviour the write protocol, the rotation fan-out and the external-secrets mode rely on, each rule from its
source:
- Secret Manager (https://cloud.google.com/secret-manager/docs/reference/rpc/google.cloud.secretmanager.v1):
  version ids count up from 1 and are never reused; `latest` is the most recently created version whatever its
  state (https://cloud.google.com/secret-manager/docs/access-secret-version), so accessing it when disabled or
  destroyed answers FAILED_PRECONDITION; a destroyed version keeps its number and loses its payload;
  UpdateSecret with a stale etag answers FAILED_PRECONDITION (ABORTED in some regions; the store handles both).
- IAM (`SecretManager`, GetIamPolicy / SetIamPolicy / TestIamPermissions on the same client): the policy is stored
  as set; a gone secret answers NOT_FOUND (TestIamPermissions: an empty set).
"""

from __future__ import annotations

import contextlib
import types as pytypes
from dataclasses import dataclass, field
from typing import Any

import google_crc32c
from google.api_core import exceptions as gexc
from google.iam.v1 import policy_pb2

from tests.fakes.runtime import Calm
from tests.fakes.scheduler import Run

PROJECT = "123456789"
ACCESSOR = "roles/secretmanager.secretAccessor"


@dataclass
class Version:
    number: int
    data: bytes | None
    state: str = "ENABLED"  # ENABLED | DISABLED | DESTROYED


@dataclass
class Secret:
    labels: dict[str, str]
    annotations: dict[str, str] = field(default_factory=dict)
    versions: list[Version] = field(default_factory=list)
    etag: int = 1


class FakeSecretManager:
    """The SecretManagerServiceClient methods the store calls, against one in-memory project."""

    def __init__(self, run: Run, on_destroy: Any = None) -> None:
        self.run = run
        self.secrets: dict[str, Secret] = {}
        self.on_destroy = on_destroy  # called with (secret, version) before a destroy (an invariant check)
        self.on_update: list[Any] = []  # called after a secret's metadata changed (waiters for a record)

    # -- helpers --------------------------------------------------------------------------------
    def _secret(self, name: str) -> Secret:
        secret = self.secrets.get(name)
        if secret is None:
            raise gexc.NotFound(f"Secret [{name}] not found.")
        return secret

    def _version(self, name: str) -> tuple[Secret, Version]:
        parent, _, ref = name.rpartition("/versions/")
        secret = self._secret(parent)
        if ref == "latest":
            if not secret.versions:
                raise gexc.NotFound(f"Secret Version [{name}] not found.")
            return secret, secret.versions[-1]
        for version in secret.versions:
            if str(version.number) == ref:
                return secret, version
        raise gexc.NotFound(f"Secret Version [{name}] not found.")

    def _write(self, label: str, apply: Any) -> Any:
        """A write: may answer, lose its answer after landing (now or later), or be lost unapplied."""
        outcome = self.run.fault(label)
        if outcome == "ok":
            return apply()
        if outcome == "landed":

            def land() -> None:
                with contextlib.suppress(gexc.GoogleAPICallError):
                    apply()  # refused when it lands (a stale etag, say): nothing changes either way

            self.run.land_later(label, land)
        raise gexc.DeadlineExceeded(f"{label}: deadline exceeded")

    # -- reads ----------------------------------------------------------------------------------
    def access_secret_version(self, *, name: str, **_: Any) -> Any:
        self.run.point(f"access {name.rsplit('/', 1)[-1]}")
        _, version = self._version(name)
        if version.state != "ENABLED" or version.data is None:
            raise gexc.FailedPrecondition(f"Secret Version [{name}] is in {version.state} state.")
        parent = name.rpartition("/versions/")[0]
        return pytypes.SimpleNamespace(
            name=f"{parent}/versions/{version.number}",
            payload=pytypes.SimpleNamespace(data=version.data, data_crc32c=google_crc32c.value(version.data)),
        )

    def get_secret_version(self, *, name: str, **_: Any) -> Any:
        self.run.point(f"get {name.rsplit('/', 1)[-1]}")
        _, version = self._version(name)
        parent = name.rpartition("/versions/")[0]
        return pytypes.SimpleNamespace(name=f"{parent}/versions/{version.number}", create_time=None)

    def get_secret(self, *, name: str, **_: Any) -> Any:
        self.run.point("get secret")
        secret = self._secret(name)
        return pytypes.SimpleNamespace(
            name=name, labels=dict(secret.labels), annotations=dict(secret.annotations), etag=str(secret.etag)
        )

    # -- writes ---------------------------------------------------------------------------------
    def create_secret(self, *, parent: str, secret_id: str, secret: Any, **_: Any) -> Any:
        self.run.point("create secret")
        name = f"{parent}/secrets/{secret_id}"

        def apply() -> Any:
            if name in self.secrets:
                raise gexc.AlreadyExists(f"Secret [{name}] already exists.")
            self.secrets[name] = Secret(labels=dict(secret.labels), annotations=dict(secret.annotations))
            return pytypes.SimpleNamespace(name=name, etag="1")

        return self._write("create secret", apply)

    def update_secret(self, *, secret: Any, **_: Any) -> Any:
        self.run.point("update secret")

        def apply() -> Any:
            current = self._secret(secret.name)
            if secret.etag and secret.etag != str(current.etag):
                raise gexc.FailedPrecondition(f"The etag provided [{secret.etag}] does not match the current etag.")
            current.annotations = dict(secret.annotations)
            current.etag += 1
            for callback in self.on_update:
                callback()
            return pytypes.SimpleNamespace(name=secret.name, etag=str(current.etag))

        return self._write("update secret", apply)

    def add_secret_version(self, *, parent: str, payload: Any, **_: Any) -> Any:
        self.run.point("add version")

        def apply() -> Any:
            secret = self._secret(parent)
            number = secret.versions[-1].number + 1 if secret.versions else 1
            secret.versions.append(Version(number, bytes(payload.data)))
            return pytypes.SimpleNamespace(name=f"{parent}/versions/{number}", create_time=None)

        return self._write("add version", apply)

    def destroy_secret_version(self, *, request: Any, **_: Any) -> Any:
        name = request.name
        self.run.point(f"destroy {name.rsplit('/', 1)[-1]}")

        def apply() -> Any:
            secret, version = self._version(name)
            if version.state == "DESTROYED":
                raise gexc.FailedPrecondition(f"Secret Version [{name}] is in DESTROYED state.")
            if self.on_destroy is not None:
                self.on_destroy(secret, version)
            version.state, version.data = "DESTROYED", None
            return pytypes.SimpleNamespace(name=name)

        return self._write(f"destroy {name.rsplit('/', 1)[-1]}", apply)

    def delete_secret(self, *, request: Any, **_: Any) -> Any:
        self.run.point("delete secret")

        def apply() -> Any:
            current = self._secret(request.name)
            if request.etag and request.etag != str(current.etag):
                raise gexc.FailedPrecondition(f"The etag provided [{request.etag}] does not match the current etag.")
            del self.secrets[request.name]

        return self._write("delete secret", apply)

    def list_secrets(self, *, request: dict[str, Any], **_: Any) -> Any:
        """ListSecrets with the label filter listing.label_filter builds (`labels.K=V AND ...`), one page."""
        self.run.point("list secrets")
        wanted = dict(term.removeprefix("labels.").split("=", 1) for term in request["filter"].split(" AND "))
        parent = request["parent"] + "/secrets/"
        return [
            pytypes.SimpleNamespace(name=name, labels=dict(secret.labels), create_time=None)
            for name, secret in sorted(self.secrets.items())
            if name.startswith(parent) and all(secret.labels.get(k) == v for k, v in wanted.items())
        ]

    def list_secret_versions(self, *, parent: str, **_: Any) -> Any:
        self.run.point("list versions")
        return [
            pytypes.SimpleNamespace(
                name=f"{parent}/versions/{v.number}", state=pytypes.SimpleNamespace(name=v.state), create_time=None
            )
            for v in self._secret(parent).versions
        ]

    # -- what the checks read (no scheduling point) ---------------------------------------------
    def newest(self, name: str) -> Version | None:
        secret = self.secrets.get(name)
        return secret.versions[-1] if secret and secret.versions else None


class SecretManager(FakeSecretManager):
    """The in-memory Secret Manager, with the IAM policy methods the external-secrets mode calls on the same client
    (GetIamPolicy / SetIamPolicy, https://cloud.google.com/secret-manager/docs/reference/rpc/google.iam.v1)."""

    def __init__(self) -> None:
        super().__init__(Calm())  # type: ignore[arg-type]
        self.policies: dict[str, bytes] = {}

    def get_iam_policy(self, *, request: dict[str, Any], **_: Any) -> policy_pb2.Policy:
        self._secret(request["resource"])  # NotFound when the secret is gone
        return policy_pb2.Policy.FromString(self.policies.get(request["resource"], b""))

    def set_iam_policy(self, *, request: dict[str, Any], **_: Any) -> policy_pb2.Policy:
        self._secret(request["resource"])
        self.policies[request["resource"]] = request["policy"].SerializeToString()
        return request["policy"]

    def test_iam_permissions(self, *, request: dict[str, Any], **_: Any) -> Any:
        """What the runtime identity holds on a secret, as Terraform grants it in external-secrets mode (its
        managed role, policy permissions included): every permission asked; none on an absent secret (the API
        answers an empty set, not NOT_FOUND)."""
        held = request["resource"] in self.secrets
        return pytypes.SimpleNamespace(permissions=list(request["permissions"]) if held else [])

    def members(self, secret_name: str) -> set[str]:
        policy = policy_pb2.Policy.FromString(self.policies.get(secret_name, b""))
        return {m for b in policy.bindings if b.role == ACCESSOR and not b.HasField("condition") for m in b.members}

    def latest(self, secret_name: str) -> bytes | None:
        version = self.newest(secret_name)
        return version.data if version is not None and version.state == "ENABLED" else None
