"""The allow-policy RPCs: GetIamPolicy, SetIamPolicy (rules in emulators/secret_iam_policy.py), TestIamPermissions."""

from __future__ import annotations

from typing import Any

from google.iam.v1 import policy_pb2  # type: ignore[import-untyped]
from google.iam.v1.iam_policy_pb2 import TestIamPermissionsResponse as TestResponse  # type: ignore[import-untyped]

from emulators import secret_iam_policy
from emulators.grpcbase import fail
from emulators.iam import Resource
from emulators.secretmanager.access import Access
from emulators.secretmanager.model import INVALID
from emulators.secretmanager.store import SecretStore
from emulators.secretmanager.validation import SECRET_NAME


class PolicyRpcs:
    """A secret's allow policy: read, replace (etag-checked), and which permissions a caller holds on it."""

    def __init__(self, *, access: Access, store: SecretStore) -> None:
        self.access = access
        self.store = store

    def get_iam_policy(self, req: Any, identity: str | None) -> policy_pb2.Policy:
        number, secret_id = self.access.secret(
            req.resource, identity, "secretmanager.secrets.getIamPolicy", "GetIamPolicy"
        )
        secret = self.store.find(number, secret_id)
        answer = policy_pb2.Policy()
        answer.CopyFrom(secret.policy)
        race = self.store.policy_races.pop((number, secret_id), None)
        if race is not None:  # another writer lands after this read: the answer's etag is stale from now on
            self.store.replace_policy(secret, race)
        return answer

    def set_iam_policy(self, req: Any, identity: str | None) -> policy_pb2.Policy:
        number, secret_id = self.access.secret(
            req.resource, identity, "secretmanager.secrets.setIamPolicy", "SetIamPolicy"
        )
        secret = self.store.find(number, secret_id)
        secret_iam_policy.check_etag(secret.policy, req.policy.etag)
        secret_iam_policy.validate(req.policy)
        self.store.replace_policy(secret, req.policy)
        answer = policy_pb2.Policy()
        answer.CopyFrom(secret.policy)
        return answer

    def test_iam_permissions(self, req: Any, identity: str | None) -> Any:
        """TestIamPermissions on a secret: the asked permissions the caller's bindings grant on it, judged by the
        same policy every other RPC is authorized with (grants on the project and on the secret, conditions on
        the secret's name). google.iam.v1 iam_policy.proto: "If the resource does not exist, this will return an
        empty set of permissions, not a NOT_FOUND error"; the call itself needs no permission
        (https://cloud.google.com/iam/docs/testing-permissions). Wildcards are refused, as IAM refuses them."""
        match = SECRET_NAME.match(req.resource)
        if not match:
            fail(INVALID, f"The provided Secret name [{req.resource}] is invalid; expected projects/*/secrets/*.")
        if any("*" in p for p in req.permissions):
            fail(INVALID, "Permissions with wildcards (such as '*' or 'storage.*') are not allowed.")
        number, secret_id = self.access.emulator.project_number(match.group(1)), match.group(2)
        if (number, secret_id) not in self.store.secrets:
            return TestResponse()
        resource = Resource.secret(number, secret_id)
        allowed = [
            p for p in req.permissions if identity is None or self.access.emulator.iam.allows(identity, p, resource)
        ]
        return TestResponse(permissions=allowed)
