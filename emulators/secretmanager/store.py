"""The secrets of every project under one lock, the etag clock, and the armed policy races."""

from __future__ import annotations

import threading
import time

from google.cloud.secretmanager_v1 import types as t
from google.iam.v1 import policy_pb2  # type: ignore[import-untyped]

from emulators.grpcbase import fail
from emulators.secretmanager.checksums import crc32c
from emulators.secretmanager.model import ENABLED, INVALID, NOT_FOUND, Secret, Version, now
from emulators.secretmanager.validation import VERSION_NUMBER


class SecretStore:
    """Secrets keyed by (project number, secret id); every RPC runs under ``lock`` (one at a time)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.secrets: dict[tuple[str, str], Secret] = {}
        self._last_etag = 0
        # Another writer's policy, applied right after the next GetIamPolicy of that secret (admin iamPolicyRace).
        self.policy_races: dict[tuple[str, str], policy_pb2.Policy] = {}

    def clear(self) -> None:
        with self.lock:
            self.secrets.clear()
            self.policy_races.clear()

    def etag(self) -> str:
        # The real etags are quoted hex timestamps (microseconds); strictly increasing here.
        with self.lock:
            self._last_etag = max(self._last_etag + 1, time.time_ns() // 1000)
            return f'"{self._last_etag:x}"'

    def add(self, number: str, secret_id: str, meta: t.Secret, identity: str | None) -> Secret:
        """Store a new secret (replacing one of that name) from validated metadata; output-only fields dropped."""
        pb = t.Secret.pb(meta)
        for output_only in ("name", "create_time", "etag"):
            pb.ClearField(output_only)
        if pb.HasField("ttl"):  # ttl is input only: the service turns it into expire_time
            expire = now() + pb.ttl.ToTimedelta()
            pb.ClearField("ttl")
            pb.expire_time.FromDatetime(expire)
        secret = Secret(number, secret_id, meta, now(), self.etag(), created_by=identity)
        secret.policy.etag = self.etag().encode()
        self.secrets[(number, secret_id)] = secret
        return secret

    def append(self, secret: Secret, data: bytes, identity: str | None, *, client_checksum: bool) -> Version:
        """A new enabled version holding `data`, numbered after every version the secret ever had."""
        version = Version(
            number=secret.next_version,
            state=ENABLED,
            payload=data,
            crc32c=crc32c(data),
            create_time=now(),
            etag=self.etag(),
            client_checksum=client_checksum,
            created_by=identity,
        )
        secret.versions[version.number] = version
        secret.next_version += 1
        return version

    def find(self, number: str, secret_id: str, *, for_access: bool = False) -> Secret:
        secret = self.secrets.get((number, secret_id))
        if secret is None:
            suffix = " or has no versions" if for_access else ""
            fail(NOT_FOUND, f"Secret [projects/{number}/secrets/{secret_id}] not found{suffix}.")
        return secret

    @staticmethod
    def resolve(secret: Secret, ref: str) -> int | None:
        """The version number a reference names: a number, ``latest`` or an alias; None when it names none."""
        if VERSION_NUMBER.match(ref):
            return int(ref)
        if ref == "latest":
            # The real `latest` is the most recently created version whatever its state.
            return max(secret.versions) if secret.versions else None
        if ref.isdigit():
            fail(INVALID, f"Invalid version id [{ref}].")
        alias = dict(secret.meta.version_aliases).get(ref)
        return int(alias) if alias else None

    def replace_policy(self, secret: Secret, policy: policy_pb2.Policy) -> None:
        stored = policy_pb2.Policy()
        stored.CopyFrom(policy)
        stored.etag = self.etag().encode()
        secret.policy = stored
