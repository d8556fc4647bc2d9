"""The secret RPCs: CreateSecret, GetSecret, UpdateSecret (field masks, etags, aliases), DeleteSecret, ListSecrets."""

from __future__ import annotations

import functools
from typing import Any

import grpc
from google.cloud.secretmanager_v1 import types as t
from google.protobuf import field_mask_pb2

from emulators.grpcbase import fail
from emulators.secretmanager.access import Access
from emulators.secretmanager.listing import compile_filter, paginate, secret_field
from emulators.secretmanager.messages import EMPTY, secret_pb
from emulators.secretmanager.model import FAILED_PRECONDITION, INVALID, now
from emulators.secretmanager.store import SecretStore
from emulators.secretmanager.validation import PARENT, SECRET_ID, validate_replication, validate_user_fields

# UpdateSecret may touch these fields; the others are immutable or output only.
_UPDATABLE = {"labels", "annotations", "topics", "expire_time", "ttl", "rotation", "version_aliases"}
_UPDATABLE |= {"version_destroy_ttl"}


class SecretRpcs:
    """The RPCs on secrets themselves (each called with the store's lock held)."""

    def __init__(self, *, access: Access, store: SecretStore) -> None:
        self.access = access
        self.store = store

    def create_secret(self, req: t.CreateSecretRequest, identity: str | None) -> t.Secret:
        match = PARENT.match(req.parent)
        if not match:
            fail(INVALID, f"The provided parent [{req.parent}] is invalid; expected projects/*.")
        number = self.access.project(match.group(1), identity, "secretmanager.secrets.create", "CreateSecret")
        if not SECRET_ID.match(req.secret_id):
            fail(
                INVALID,
                f"The provided Secret ID [{req.secret_id}] does not match the expected format "
                "[[a-zA-Z_0-9-]{1,255}].",
            )
        meta = t.Secret.deserialize(t.Secret.serialize(req.secret))
        validate_replication(meta)
        validate_user_fields(meta)
        if (number, req.secret_id) in self.store.secrets:
            fail(
                grpc.StatusCode.ALREADY_EXISTS,
                f"Secret [projects/{number}/secrets/{req.secret_id}] already exists.",
            )
        secret = self.store.add(number, req.secret_id, meta, identity)
        return secret_pb(secret)

    def get_secret(self, req: t.GetSecretRequest, identity: str | None) -> t.Secret:
        number, secret_id = self.access.secret(req.name, identity, "secretmanager.secrets.get", "GetSecret")
        return secret_pb(self.store.find(number, secret_id))

    def update_secret(self, req: t.UpdateSecretRequest, identity: str | None) -> t.Secret:
        number, secret_id = self.access.secret(
            req.secret.name, identity, "secretmanager.secrets.update", "UpdateSecret"
        )
        paths = list(req.update_mask.paths)
        if not paths:
            fail(INVALID, "update_mask must be specified and non-empty.")
        for path in paths:
            if path not in _UPDATABLE:
                fail(INVALID, f"The field [{path}] cannot be updated (immutable or unknown field).")
        secret = self.store.find(number, secret_id)
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
        validate_user_fields(merged)
        merged_pb = t.Secret.pb(merged)
        if merged_pb.HasField("ttl"):
            expire = now() + merged_pb.ttl.ToTimedelta()
            merged_pb.ClearField("ttl")
            merged_pb.expire_time.FromDatetime(expire)
        for alias, target in merged.version_aliases.items():
            if target not in secret.versions:
                fail(INVALID, f"Version alias [{alias}] points at version [{target}], which does not exist.")
        secret.meta = merged
        secret.etag = self.store.etag()
        secret.updated_by = identity
        return secret_pb(secret)

    def delete_secret(self, req: t.DeleteSecretRequest, identity: str | None) -> Any:
        number, secret_id = self.access.secret(req.name, identity, "secretmanager.secrets.delete", "DeleteSecret")
        secret = self.store.find(number, secret_id)
        if req.etag and req.etag != secret.etag:
            fail(FAILED_PRECONDITION, f"The etag provided [{req.etag}] does not match the current etag.")
        del self.store.secrets[(number, secret_id)]
        return EMPTY

    def list_secrets(self, req: t.ListSecretsRequest, identity: str | None) -> t.ListSecretsResponse:
        match = PARENT.match(req.parent)
        if not match:
            fail(INVALID, f"The provided parent [{req.parent}] is invalid; expected projects/*.")
        number = self.access.project(match.group(1), identity, "secretmanager.secrets.list", "ListSecrets")
        keep = compile_filter(req.filter)
        items = [
            s for (p, _), s in self.store.secrets.items() if p == number and keep(functools.partial(secret_field, s))
        ]
        page, token = paginate(items, req.page_size, req.page_token)
        return t.ListSecretsResponse(secrets=[secret_pb(s) for s in page], next_page_token=token, total_size=len(items))
