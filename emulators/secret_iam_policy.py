"""A secret's allow policy as Secret Manager's GetIamPolicy and SetIamPolicy keep it: bindings, version, etag.

Rules, each from its source:

- Permissions, checked on the secret before anything about its existence: GetIamPolicy needs
  `secretmanager.secrets.getIamPolicy`, SetIamPolicy `secretmanager.secrets.setIamPolicy`
  (https://cloud.google.com/secret-manager/docs/access-control; the caller's own grants, and their conditions,
  live in `emulators.iam`).
- Etags (https://cloud.google.com/iam/docs/policies#etag, "Policy concurrency control", and the `etag` field
  of google/iam/v1/policy.proto): every read returns the policy's etag and every accepted write changes it. A
  SetIamPolicy carrying an etag that no longer matches is refused with ABORTED (HTTP 409) and changes
  nothing; one carrying no etag overwrites blindly.
- Versions (https://cloud.google.com/iam/docs/policies#versions): a policy holding a conditional binding
  must be written as version 3; version 1 with a condition is INVALID_ARGUMENT. A read answers the stored
  version.
- Members (https://cloud.google.com/iam/docs/principal-identifiers): `user:`, `serviceAccount:`, `group:`,
  `domain:`, `principal://`, `principalSet://`, `deleted:` prefixes, `allUsers`, `allAuthenticatedUsers`;
  anything else is INVALID_ARGUMENT. Roles are `roles/...` or a custom `projects/P/roles/R`.
- A deleted secret's policy goes with it (it lives on the secret); a secret created again starts empty.

The policy here is data: it does not feed `emulators.iam`'s checks (the principals bound on a secret are
Kubernetes workloads, which never call these emulators).
"""

from __future__ import annotations

import re
from typing import Any

import grpc
from google.iam.v1 import policy_pb2  # type: ignore[import-untyped]

from emulators.grpcbase import fail

_MEMBER_PREFIXES = ("user:", "serviceAccount:", "group:", "domain:", "principal://", "principalSet://", "deleted:")
_MEMBER_WORDS = ("allUsers", "allAuthenticatedUsers")
_ROLE = re.compile(r"^(roles/[A-Za-z0-9_.]+|projects/[^/]+/roles/[A-Za-z0-9_.]+)$")


class PolicyMessages:
    """(De)serialisers of the plain protobuf IAM messages, in the shape `GrpcEmulator.unary` expects."""

    def __init__(self, message: Any) -> None:
        self.deserialize = message.FromString
        self.serialize = message.SerializeToString


def validate(policy: policy_pb2.Policy) -> None:
    """INVALID_ARGUMENT for a role, member or version IAM would refuse to store."""
    conditional = False
    for binding in policy.bindings:
        if not _ROLE.match(binding.role):
            fail(grpc.StatusCode.INVALID_ARGUMENT, f"Role {binding.role} is not supported for this resource.")
        for member in binding.members:
            if member not in _MEMBER_WORDS and not member.startswith(_MEMBER_PREFIXES):
                fail(grpc.StatusCode.INVALID_ARGUMENT, f"Invalid principal: {member[:200]}")
        conditional = conditional or binding.HasField("condition")
    if conditional and policy.version < 3:
        fail(
            grpc.StatusCode.INVALID_ARGUMENT,
            "A policy with conditional role bindings must be set with version 3.",
        )


def check_etag(stored: policy_pb2.Policy, request_etag: bytes) -> None:
    """ABORTED when the request carries an etag that is not the stored one (an empty etag overwrites)."""
    if request_etag and request_etag != stored.etag:
        fail(
            grpc.StatusCode.ABORTED,
            "There were concurrent policy changes. Please retry the whole read-modify-write with exponential "
            "backoff. The request's ETag does not match the current one.",
        )


def to_json(policy: policy_pb2.Policy) -> dict[str, Any]:
    """The policy as the admin routes show it (etag as text)."""
    return {
        "version": policy.version,
        "etag": policy.etag.decode(),
        "bindings": [
            {
                "role": b.role,
                "members": list(b.members),
                **({"condition": b.condition.expression} if b.HasField("condition") else {}),
            }
            for b in policy.bindings
        ],
    }


def from_json(spec: dict[str, Any]) -> policy_pb2.Policy:
    """Bindings from an admin body {"bindings": [{"role", "members": [...]}], "version"}; ValueError if malformed."""
    bindings = spec.get("bindings")
    if not isinstance(bindings, list):
        raise ValueError("bindings must be a list")
    policy = policy_pb2.Policy(version=int(spec.get("version", 1)))
    for item in bindings:
        policy.bindings.add(role=str(item["role"]), members=[str(m) for m in item["members"]])
    return policy
