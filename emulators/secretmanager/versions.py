"""The version RPCs: AddSecretVersion (sizes, CRC32C), Get/Access (``latest``, aliases), List, and the state changes.

States: ENABLED -> DISABLED <-> ENABLED; DESTROYED is final. With the secret's ``version_destroy_ttl`` a
destroy disables the version and schedules its destruction (enabling cancels the schedule).
"""

from __future__ import annotations

import functools
from typing import Any

import grpc
from google.cloud.secretmanager_v1 import types as t

from emulators.grpcbase import fail
from emulators.secretmanager.access import Access
from emulators.secretmanager.checksums import crc32c
from emulators.secretmanager.listing import compile_filter, paginate, version_field
from emulators.secretmanager.messages import version_pb
from emulators.secretmanager.model import DESTROYED, DISABLED, ENABLED, FAILED_PRECONDITION, INVALID, now, settle
from emulators.secretmanager.store import SecretStore
from emulators.secretmanager.validation import MAX_PAYLOAD_BYTES


class VersionRpcs:
    """The RPCs on secret versions (each called with the store's lock held)."""

    def __init__(self, *, access: Access, store: SecretStore) -> None:
        self.access = access
        self.store = store

    def add_version(self, req: t.AddSecretVersionRequest, identity: str | None) -> t.SecretVersion:
        number, secret_id = self.access.secret(req.parent, identity, "secretmanager.versions.add", "AddSecretVersion")
        secret = self.store.find(number, secret_id)
        data = req.payload.data
        if not data:
            fail(INVALID, "Secret Payload cannot be empty.")
        if len(data) > MAX_PAYLOAD_BYTES:
            fail(INVALID, f"Secret payload data must be at most {MAX_PAYLOAD_BYTES} bytes, got {len(data)}.")
        checksum = crc32c(data)
        sent = "data_crc32c" in req.payload
        if sent and req.payload.data_crc32c != checksum:
            fail(grpc.StatusCode.DATA_LOSS, "Checksum mismatch: the data_crc32c does not match the payload.")
        version = self.store.append(secret, data, identity, client_checksum=sent)
        return version_pb(secret, version)

    def get_version(self, req: t.GetSecretVersionRequest, identity: str | None) -> t.SecretVersion:
        secret, version = self.access.version(
            req.name, identity, "secretmanager.versions.get", "GetSecretVersion", allow_alias=True
        )
        return version_pb(secret, version)

    def access_version(self, req: t.AccessSecretVersionRequest, identity: str | None) -> t.AccessSecretVersionResponse:
        secret, version = self.access.version(
            req.name, identity, "secretmanager.versions.access", "AccessSecretVersion", allow_alias=True
        )
        name = f"{secret.name}/versions/{version.number}"
        if version.state != ENABLED or version.payload is None:
            fail(FAILED_PRECONDITION, f"Secret Version [{name}] is in {version.state} state.")
        return t.AccessSecretVersionResponse(
            name=name, payload=t.SecretPayload(data=version.payload, data_crc32c=version.crc32c)
        )

    def list_versions(self, req: t.ListSecretVersionsRequest, identity: str | None) -> t.ListSecretVersionsResponse:
        number, secret_id = self.access.secret(
            req.parent, identity, "secretmanager.versions.list", "ListSecretVersions"
        )
        secret = self.store.find(number, secret_id)
        keep = compile_filter(req.filter)
        items = []
        for num in sorted(secret.versions, reverse=True):  # newest first, as the real service
            version = secret.versions[num]
            settle(version)
            if keep(functools.partial(version_field, secret, version)):
                items.append(version)
        page, token = paginate(items, req.page_size, req.page_token)
        return t.ListSecretVersionsResponse(
            versions=[version_pb(secret, v) for v in page], next_page_token=token, total_size=len(items)
        )

    def transition(self, rpc: str, permission: str, req: Any, identity: str | None) -> t.SecretVersion:
        secret, version = self.access.version(req.name, identity, permission, rpc, allow_alias=False)
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
                    version.scheduled_destroy_time = now() + ttl.version_destroy_ttl.ToTimedelta()
                version.state = DISABLED
            else:
                version.state, version.payload, version.destroy_time = DESTROYED, None, now()
        version.etag = self.store.etag()
        return version_pb(secret, version)

    def disable_version(self, req: t.DisableSecretVersionRequest, identity: str | None) -> t.SecretVersion:
        return self.transition("DisableSecretVersion", "secretmanager.versions.disable", req, identity)

    def enable_version(self, req: t.EnableSecretVersionRequest, identity: str | None) -> t.SecretVersion:
        return self.transition("EnableSecretVersion", "secretmanager.versions.enable", req, identity)

    def destroy_version(self, req: t.DestroySecretVersionRequest, identity: str | None) -> t.SecretVersion:
        return self.transition("DestroySecretVersion", "secretmanager.versions.destroy", req, identity)
