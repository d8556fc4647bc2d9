"""The verbs: optimistic concurrency on resourceVersion, the three patch flavours and server-side apply."""

from __future__ import annotations

import copy
import json
import secrets as pysecrets
import uuid
from collections.abc import Callable
from typing import Any

import yaml

from emulators.kubernetes.base import Json, Path, utc_now
from emulators.kubernetes.fields import (
    JsonPatchError,
    Owner,
    apply_conflict,
    del_leaf,
    json_patch,
    leaves,
    map_nodes,
    merge_patch,
    owners_of,
    set_leaf,
    store_owners,
    strategic_merge_patch,
    track_update,
)
from emulators.kubernetes.reads import POLICY_RESOURCES, Reads, Request
from emulators.kubernetes.status import (
    OPTIMISTIC_LOCK,
    ApiError,
    FieldError,
    already_exists,
    bad_request,
    conflict,
    forbidden,
    invalid,
    not_found,
)
from emulators.kubernetes.validation import canonical, decode_secret, validate_secret

# SafeLoader's constructor and resolver over libyaml's parser when PyYAML was built with it (its wheels are):
# the same documents, a tenth of the CPU of the pure-Python scanner, which was a fifth of the emulators' CPU
# under load (every apply of the adapter is an apply-patch+yaml).
_YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
)
GENERATE_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


class Verbs(Reads):
    """The API verbs on Secrets (and reads of Namespaces): get, list, create, update, patch, apply, delete."""

    def _dispatch(self, req: Request) -> tuple[int, Any, dict[str, str]]:
        if req.param("watch") in ("true", "1"):
            raise bad_request("watch is not supported by this emulator")
        if req.resource in POLICY_RESOURCES:
            return self._get_policy(req)
        if req.resource == "namespaces":
            with self._lock:
                if req.verb == "list":
                    items = [self._namespaces[n] for n in sorted(self._namespaces)]
                    return 200, self._list("NamespaceList", items), {}
                found = self._namespaces.get(req.namespace)
                if found is None:
                    raise not_found("namespaces", req.namespace)
                return 200, copy.deepcopy(found), {}
        handlers: dict[str, Callable[[Request], tuple[int, Any, dict[str, str]]]] = {
            "get": self._get,
            "list": self._list_secrets,
            "create": self._create,
            "update": self._update,
            "patch": self._patch,
            "delete": self._delete,
            "deletecollection": self._delete_collection,
        }
        return handlers[req.verb](req)

    def _dry_run(self, req: Request, kind: str) -> bool:
        values = req.query.get("dryRun", [])
        if any(v != "All" for v in values):
            raise invalid(
                kind,
                "",
                [FieldError("FieldValueNotSupported", "dryRun", 'supported values: "All"', values)],
                group="meta.k8s.io",
            )
        return bool(values)

    def _decode_body(self, req: Request) -> tuple[Json, list[str]]:
        content_type = req.headers.get("content-type", "application/json").split(";")[0].strip()
        if content_type not in ("application/json", "application/yaml", ""):
            raise ApiError(
                415,
                "UnsupportedMediaType",
                "the body of the request was in an unknown format - accepted media types include: "
                "application/json, application/yaml, application/vnd.kubernetes.protobuf",
                {},
            )
        try:
            raw = json.loads(req.body) if content_type != "application/yaml" else yaml.safe_load(req.body)
        except (ValueError, yaml.YAMLError) as exc:
            raise bad_request(f"couldn't get version/kind; json parse error: {exc}") from None
        strict = req.param("fieldValidation") == "Strict"
        return decode_secret(raw, strict=strict)

    def _manager(self, req: Request) -> str:
        manager = req.param("fieldManager")
        if manager:
            return manager
        # The apiserver names an anonymous writer after its User-Agent product token.
        return req.headers.get("user-agent", "").split("/", 1)[0]

    def _check_namespace(self, obj: Json, namespace: str) -> None:
        body_ns = obj["metadata"].get("namespace")
        if body_ns and body_ns != namespace:
            raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
        obj["metadata"]["namespace"] = namespace

    def _create(self, req: Request) -> tuple[int, Any, dict[str, str]]:
        dry = self._dry_run(req, "CreateOptions")
        obj, warnings = self._decode_body(req)
        self._check_namespace(obj, req.namespace)
        with self._lock:
            if req.namespace not in self._namespaces:
                raise not_found("namespaces", req.namespace)
            meta = obj["metadata"]
            if not meta.get("name") and meta.get("generateName"):
                suffix = "".join(pysecrets.choice(GENERATE_NAME_ALPHABET) for _ in range(5))
                meta["name"] = meta["generateName"][:58] + suffix
            for key in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "generation"):
                meta.pop(key, None)
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = utc_now()
            errs = validate_secret(obj)
            if errs:
                raise invalid("Secret", meta.get("name", ""), errs)
            if meta.pop("resourceVersion", None) is not None:
                raise ApiError(500, "Unknown", "resourceVersion should not be set on objects to be created")
            name = meta["name"]
            base = owners_of(obj) if meta.get("managedFields") else []
            store_owners(obj, track_update(None, obj, base, self._manager(req), utc_now()))
            # Validating admission runs after field validation and before storage (store.go Create).
            self._admit(req, "CREATE", canonical(obj), None, dry)
            if (req.namespace, name) in self._secrets:
                raise already_exists("secrets", name)
            if not dry:
                meta["resourceVersion"] = self._bump()
            stored = canonical(obj)
            if not dry:
                self._secrets[(req.namespace, name)] = stored
            return 201, copy.deepcopy(stored), _warning_headers(warnings)

    def _commit_update(self, req: Request, old: Json, new: Json, owners: list[Owner], dry: bool) -> Json:
        """Validate and store `new` over `old`; an identical result is not a write."""
        meta = new["metadata"]
        meta["uid"] = old["metadata"]["uid"]
        meta["creationTimestamp"] = old["metadata"]["creationTimestamp"]
        meta["namespace"] = req.namespace
        for key in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "generation"):
            meta.pop(key, None)
        errs = validate_secret(new, old)
        if errs:
            raise invalid("Secret", req.name, errs)
        store_owners(new, owners)
        meta["resourceVersion"] = old["metadata"]["resourceVersion"]
        candidate = canonical(new)
        # Admission sees every update, a no-op included: the no-op is only found at the storage layer
        # (store.go Update runs updateValidation inside GuaranteedUpdate's tryUpdate, before the byte compare).
        self._admit(req, "UPDATE", candidate, old, dry)
        if candidate == old or dry:
            return copy.deepcopy(old if candidate == old else candidate)
        candidate["metadata"]["resourceVersion"] = self._bump()
        self._secrets[(req.namespace, req.name)] = candidate
        return copy.deepcopy(candidate)

    def _preconditions(self, req: Request, new: Json, old: Json) -> None:
        uid = new["metadata"].get("uid")
        if uid and uid != old["metadata"]["uid"]:
            raise conflict(
                "secrets",
                req.name,
                f"Precondition failed: UID in precondition: {uid}, UID in object meta: {old['metadata']['uid']}",
            )
        rv = new["metadata"].get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            if not rv.isdigit():
                raise bad_request(f'invalid resourceVersion "{rv}"')
            raise conflict("secrets", req.name, OPTIMISTIC_LOCK)

    def _update(self, req: Request) -> tuple[int, Any, dict[str, str]]:
        dry = self._dry_run(req, "UpdateOptions")
        obj, warnings = self._decode_body(req)
        if obj["metadata"].get("name", "") != req.name:
            raise bad_request(_name_mismatch(obj, req.name))
        self._check_namespace(obj, req.namespace)
        with self._lock:
            old = self._secrets.get((req.namespace, req.name))
            if old is None:
                raise not_found("secrets", req.name)
            self._preconditions(req, obj, old)
            base = owners_of(obj) if "managedFields" in obj["metadata"] else owners_of(old)
            owners = track_update(old, obj, base, self._manager(req), utc_now())
            return 200, self._commit_update(req, old, obj, owners, dry), _warning_headers(warnings)

    def _patch(self, req: Request) -> tuple[int, Any, dict[str, str]]:
        content_type = req.headers.get("content-type", "").split(";")[0].strip()
        if content_type not in PATCH_TYPES:
            raise ApiError(
                415,
                "UnsupportedMediaType",
                "the body of the request was in an unknown format - accepted media types include: "
                + ", ".join(PATCH_TYPES),
                {},
            )
        dry = self._dry_run(req, "PatchOptions")
        force = req.param("force")
        if content_type == "application/apply-patch+yaml":
            if not req.param("fieldManager"):
                raise invalid(
                    "PatchOptions",
                    "",
                    [FieldError("FieldValueRequired", "fieldManager", "is required for apply patch")],
                    group="meta.k8s.io",
                )
            return self._apply(req, force in ("true", "1"), dry)
        if "force" in req.query:
            raise invalid(
                "PatchOptions",
                "",
                [FieldError("FieldValueForbidden", "force", "may not be specified for non-apply patch")],
                group="meta.k8s.io",
            )
        try:
            patch = json.loads(req.body)
        except ValueError as exc:
            raise bad_request(f"error decoding patch: {exc}") from None
        with self._lock:
            old = self._secrets.get((req.namespace, req.name))
            if old is None:
                raise not_found("secrets", req.name)
            if content_type == "application/merge-patch+json":
                patched = merge_patch(old, patch)
            elif content_type == "application/strategic-merge-patch+json":
                if not isinstance(patch, dict):
                    raise bad_request("json: cannot unmarshal array into Go value of type map[string]interface {}")
                patched = strategic_merge_patch(old, patch)
            else:
                try:
                    patched = json_patch(old, patch)
                except JsonPatchError as exc:
                    raise ApiError(
                        422,
                        "Invalid",
                        "the server rejected our request due to an error in our request",
                        {"causes": [{"reason": "UnexpectedServerResponse", "message": str(exc)}]},
                    ) from None
            obj, warnings = decode_secret(patched, strict=req.param("fieldValidation") == "Strict")
            if obj["metadata"].get("name") != req.name:
                raise bad_request(_name_mismatch(obj, req.name))
            self._check_namespace(obj, req.namespace)
            self._preconditions(req, obj, old)
            base = owners_of(obj)
            owners = track_update(old, obj, base, self._manager(req), utc_now())
            return 200, self._commit_update(req, old, obj, owners, dry), _warning_headers(warnings)

    def _apply(self, req: Request, force: bool, dry: bool) -> tuple[int, Any, dict[str, str]]:
        try:
            raw = yaml.load(req.body, Loader=_YAML_LOADER)  # noqa: S506 - a safe loader (SafeLoader's rules)
        except yaml.YAMLError as exc:
            raise bad_request(f"error decoding YAML: {exc}") from None
        applied, _ = decode_secret(raw, apply=True)
        meta = applied["metadata"]
        if meta.get("name") != req.name:
            raise bad_request(_name_mismatch(applied, req.name))
        if meta.get("managedFields"):
            raise bad_request("metadata.managedFields must be nil")
        self._check_namespace(applied, req.namespace)
        manager = req.param("fieldManager")
        now = utc_now()
        with self._lock:
            old = self._secrets.get((req.namespace, req.name))
            if old is None and req.namespace not in self._namespaces:
                raise not_found("namespaces", req.namespace)
            if old is not None:
                self._preconditions(req, applied, old)
            elif meta.get("resourceVersion"):
                raise not_found("secrets", req.name)
            live = old or {"metadata": {"name": req.name, "namespace": req.namespace}}
            owners = [
                Owner(o.manager, o.operation, set(o.fields), o.time, o.api_version, o.subresource)
                for o in owners_of(live)
            ]
            key = (manager, "Apply", "")
            mine = next((o for o in owners if o.key() == key), None)
            last = set(mine.fields) if mine else set()
            applied_leaves = leaves(applied)
            live_leaves = leaves(live)
            conflicts: list[tuple[Owner, Path]] = []
            for path in sorted(applied_leaves):
                if path in live_leaves and live_leaves[path] != applied_leaves[path]:
                    conflicts += [(o, path) for o in owners if o.key() != key and path in o.fields]
            if conflicts and not force:
                raise apply_conflict(conflicts)
            for owner, path in conflicts:
                owner.fields.discard(path)
            merged = copy.deepcopy(live)
            for path, value in applied_leaves.items():
                set_leaf(merged, path, value)
            others: set[Path] = set()
            for owner in owners:
                if owner.key() != key:
                    others |= owner.fields
            for path in last - set(applied_leaves) - others:
                del_leaf(merged, path)
            if mine is None:
                mine = Owner(manager, "Apply", set(), now)
                owners.append(mine)
            mine.fields = set(applied_leaves)
            merged_obj, _ = decode_secret(merged)
            remaining = set(leaves(merged_obj)) | map_nodes(merged_obj)
            for owner in owners:
                owner.fields &= remaining
            if old is None:
                return self._apply_create(req, merged_obj, owners, dry)
            if mine.fields != last or leaves(merged_obj) != leaves(old):
                mine.time = now
            return 200, self._commit_update(req, old, merged_obj, owners, dry), {}

    def _apply_create(self, req: Request, obj: Json, owners: list[Owner], dry: bool) -> tuple[int, Any, dict[str, str]]:
        meta = obj["metadata"]
        meta.pop("resourceVersion", None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = utc_now()
        errs = validate_secret(obj)
        if errs:
            raise invalid("Secret", req.name, errs)
        store_owners(obj, owners)
        # An apply that creates also needs the create verb (patch.go: withAuthorization on createValidation).
        if not self.authorize(req.user, "create", "secrets", req.namespace, name=req.name):
            raise forbidden(req.user, "create", "secrets", req.name, req.namespace)
        self._admit(req, "CREATE", canonical(obj), None, dry)
        if not dry:
            meta["resourceVersion"] = self._bump()
        stored = canonical(obj)
        if not dry:
            self._secrets[(req.namespace, req.name)] = stored
        return 201, copy.deepcopy(stored), {}

    def _admit(self, req: Request, operation: str, obj: Json | None, old: Json | None, dry: bool) -> None:
        name = (obj or old or {}).get("metadata", {}).get("name", req.name)
        self.admit(
            operation=operation, user=req.user, namespace=req.namespace, name=name, obj=obj, old=old, dry_run=dry
        )

    def _delete_options(self, req: Request) -> Json:
        if not req.body.strip():
            return {}
        try:
            options = json.loads(req.body)
        except ValueError as exc:
            raise bad_request(f"couldn't get version/kind; json parse error: {exc}") from None
        return options if isinstance(options, dict) else {}

    def _delete(self, req: Request) -> tuple[int, Any, dict[str, str]]:
        dry = self._dry_run(req, "DeleteOptions")
        options = self._delete_options(req)
        pre = options.get("preconditions") or {}
        with self._lock:
            old = self._secrets.get((req.namespace, req.name))
            if old is None:
                raise not_found("secrets", req.name)
            uid, rv = pre.get("uid"), pre.get("resourceVersion")
            if uid is not None and uid != old["metadata"]["uid"]:
                raise conflict(
                    "secrets",
                    req.name,
                    f"Precondition failed: UID in precondition: {uid}, UID in object meta: {old['metadata']['uid']}",
                )
            if rv is not None and rv != old["metadata"]["resourceVersion"]:
                raise conflict(
                    "secrets",
                    req.name,
                    f"Precondition failed: ResourceVersion in precondition: {rv}, "
                    f"ResourceVersion in object meta: {old['metadata']['resourceVersion']}",
                )
            # etcd3 store conditionalDelete: preconditions, then validateDeletion (admission) on the live object.
            self._admit(req, "DELETE", None, old, dry)
            if not dry:
                del self._secrets[(req.namespace, req.name)]
                self._bump()
            return (
                200,
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Success",
                    "details": {"name": req.name, "kind": "secrets", "uid": old["metadata"]["uid"]},
                },
                {},
            )

    def _delete_collection(self, req: Request) -> tuple[int, Any, dict[str, str]]:
        dry = self._dry_run(req, "DeleteOptions")
        with self._lock:
            items = self._select(req)
            for obj in items:
                self._admit(req, "DELETE", None, obj, dry)
            if not dry:
                for obj in items:
                    del self._secrets[(req.namespace, obj["metadata"]["name"])]
                if items:
                    self._bump()
            return 200, self._list("SecretList", items), {}


def _name_mismatch(obj: Json, url_name: str) -> str:
    given = obj["metadata"].get("name", "")
    return f"the name of the object ({given}) does not match the name on the URL ({url_name})"


def _warning_headers(warnings: list[str]) -> dict[str, str]:
    if not warnings:
        return {}
    return {"Warning": ", ".join(f'299 - "{w.replace(chr(34), chr(92) + chr(34))}"' for w in warnings)}
