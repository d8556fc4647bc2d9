"""Reading a request's resource name: the project number, IAM (before anything about existence) and the write quota.

Each RPC needs one permission on one resource (the table in emulators/secretmanager/__init__.py), checked
before the service says whether the secret or version exists, then the write quota, then the name's syntax.
"""

from __future__ import annotations

from collections.abc import Callable

import grpc

from emulators.faults import WriteQuota
from emulators.grpcbase import GrpcEmulator, RpcError, fail
from emulators.iam import Resource
from emulators.secretmanager.model import INVALID, NOT_FOUND, Secret, Version, settle
from emulators.secretmanager.quota import WRITES, quota_message, quota_status
from emulators.secretmanager.store import SecretStore
from emulators.secretmanager.validation import SECRET_ID, SECRET_NAME, VERSION_NAME, VERSION_NUMBER


class Access:
    """Resolve a request's name to stored objects, after authorizing the caller and charging the write quota."""

    def __init__(self, *, emulator: GrpcEmulator, store: SecretStore, quota: WriteQuota) -> None:
        self.emulator = emulator
        self.store = store
        self.quota = quota

    def check_write(self, rpc: str, project_number: str) -> None:
        if rpc in WRITES and not self.quota.admit(project_number):
            raise RpcError(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                quota_message(project_number),
                details=quota_status(project_number),
            )

    def project(
        self,
        raw: str,
        identity: str | None,
        permission: str,
        rpc: str,
        resource: Callable[[str], Resource] = Resource.project,
    ) -> str:
        """The project number; PERMISSION_DENIED (before anything about existence) or RESOURCE_EXHAUSTED."""
        number = self.emulator.project_number(raw)
        self.emulator.authorize(identity, permission, resource(number))
        self.check_write(rpc, number)
        return number

    def secret(self, name: str, identity: str | None, permission: str, rpc: str) -> tuple[str, str]:
        """(project number, secret id) of a secret name, authorized."""
        match = SECRET_NAME.match(name)
        if not match:
            fail(INVALID, f"The provided Secret name [{name}] is invalid; expected projects/*/secrets/*.")
        secret_id = match.group(2)
        number = self.project(match.group(1), identity, permission, rpc, lambda n: Resource.secret(n, secret_id))
        if not SECRET_ID.match(match.group(2)):
            fail(INVALID, f"The provided Secret ID [{match.group(2)}] does not match [[a-zA-Z_0-9-]{{1,255}}].")
        return number, match.group(2)

    def version(
        self, name: str, identity: str | None, permission: str, rpc: str, *, allow_alias: bool
    ) -> tuple[Secret, Version]:
        """The secret and the version a version name refers to (``latest`` and aliases when `allow_alias`)."""
        match = VERSION_NAME.match(name)
        if not match:
            fail(
                INVALID,
                f"The provided Secret Version name [{name}] is invalid; expected projects/*/secrets/*/versions/*.",
            )
        secret_id, ref = match.group(2), match.group(3)
        number = self.project(
            match.group(1), identity, permission, rpc, lambda n: Resource.secret_version(n, secret_id, ref)
        )
        if not SECRET_ID.match(secret_id):
            fail(INVALID, f"The provided Secret ID [{secret_id}] does not match [[a-zA-Z_0-9-]{{1,255}}].")
        if not allow_alias and not VERSION_NUMBER.match(ref):
            fail(INVALID, f"The version [{ref}] must be a positive version number for this method.")
        secret = self.store.find(number, secret_id, for_access=ref == "latest")
        version_number = self.store.resolve(secret, ref)
        version = secret.versions.get(version_number) if version_number else None
        if version is None and ref == "latest":
            fail(NOT_FOUND, f"Secret [{secret.name}] not found or has no versions.")
        if version is None:
            fail(NOT_FOUND, f"Secret Version [{secret.name}/versions/{ref}] not found.")
        settle(version)
        return secret, version
