"""A local Kubernetes API server (core/v1 Namespaces and Secrets) spoken to over real HTTPS.

The official ``kubernetes`` client talks to it exactly as it talks to a GKE control plane:
bearer-token authentication, a minimal RBAC table, Status error bodies with the real reasons and
messages, optimistic concurrency on ``resourceVersion``, the three patch flavours and server-side
apply with field ownership in ``metadata.managedFields``.  Where a real kube-apiserver rejects a
request, this one rejects it too, with the same code, reason and message shape.

Recipe::

    emu = KubernetesEmulator(book, authenticate=lambda token: "sa@p.iam.gserviceaccount.com")
    emu.start()                       # HTTPS on 127.0.0.1:<free port>, fresh CA
    emu.add_namespace("clusters-abc")
    emu.grant("sa@p.iam.gserviceaccount.com", namespace="clusters-abc", verbs=("get", "patch"))
    # clients use https://{emu.address} and trust emu.ca_pem

Admin routes (``handle_admin``; the stack mounts them under ``/kubernetes``):

    GET    /state                              namespaces, secrets (full objects), rbac, resourceVersion
    POST   /reset                              drop namespaces, secrets, RBAC rules and static tokens
    PUT    /namespaces/{ns}                    create a namespace (body optional: {"labels": {...}})
    DELETE /namespaces/{ns}                    delete a namespace and everything in it
    PUT    /rbac                               {"identity", "namespace": "*"|ns, "verbs": [...],
                                                "resources": [...] (optional, default all)}
    DELETE /rbac                               {"identity"}: revoke every rule of that identity
    PUT    /tokens                             {"token", "identity"}: a static bearer token
    GET    /namespaces/{ns}/secrets/{name}     the stored Secret, bypassing auth
    PUT    /namespaces/{ns}/secrets/{name}     seed a raw Secret (managedFields kept as given; with
                                                body {"object": {...}, "manager": "m"} ownership of
                                                every field is recorded for manager m, operation Update)
    DELETE /namespaces/{ns}/secrets/{name}     someone else deletes the Secret

Fault injection: every request first calls ``control.enter("<verb>.<resource>")`` (``get.secrets``,
``list.secrets``, ``create.secrets``, ``update.secrets``, ``patch.secrets``, ``delete.secrets``,
``deletecollection.secrets``, ``get.namespaces``, ``list.namespaces``, ``get.discovery``,
``get.version``).  Codes: an HTTP status (``"429"``, ``"500"``, ``"503"``, ``"504"``, any other
4xx/5xx) answers with a Status body; ``"429-text"`` answers like API Priority and Fairness does
(plain text plus Retry-After); ``"reset"`` drops the connection; ``"timeout"`` hangs for 30 s or
until the client goes away.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import copy
import datetime
import json
import re
import secrets as pysecrets
import select
import socket
import ssl
import struct
import threading
import urllib.parse
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import yaml

from emulators.core import FaultBook, ServiceControl
from emulators.tlsutil import TLSMaterial, make_tls_material, server_context

Path = tuple[str, ...]
Json = dict[str, Any]

MAX_SECRET_SIZE = 1024 * 1024
MAX_ANNOTATIONS_SIZE = 256 * 1024
MAX_REQUEST_BODY = 3 * 1024 * 1024  # kube-apiserver's MaxRequestBodyBytes
HANG_SECONDS = 30.0
PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
)
GENERATE_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


# --------------------------------------------------------------------------------------------
# Status errors
# --------------------------------------------------------------------------------------------
class ApiError(Exception):
    """A failure answered with a ``Status`` body."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: Json | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def status(self) -> Json:
        body: Json = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:
            body["reason"] = self.reason
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body


def _details(name: str, kind: str) -> Json:
    out: Json = {}
    if name:
        out["name"] = name
    out["kind"] = kind
    return out


def not_found(resource: str, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{resource} "{name}" not found', _details(name, resource))


def already_exists(resource: str, name: str) -> ApiError:
    return ApiError(409, "AlreadyExists", f'{resource} "{name}" already exists', _details(name, resource))


def conflict(resource: str, name: str, why: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {resource} "{name}": {why}',
        _details(name, resource),
    )


OPTIMISTIC_LOCK = "the object has been modified; please apply your changes to the latest version and try again"


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def forbidden(user: str, verb: str, resource: str, name: str, namespace: str) -> ApiError:
    subject = f'{resource} "{name}"' if name else resource
    where = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
    return ApiError(
        403,
        "Forbidden",
        f'{subject} is forbidden: User "{user}" cannot {verb} resource "{resource}" in API group ""{where}',
        _details(name, resource),
    )


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


@dataclass(frozen=True)
class FieldError:
    """One validation error, as k8s.io/apimachinery/pkg/util/validation/field.Error."""

    type: str  # "FieldValueRequired", "FieldValueInvalid", ...
    field: str
    detail: str = ""
    value: Any = None

    def body(self) -> str:
        labels = {
            "FieldValueRequired": "Required value",
            "FieldValueForbidden": "Forbidden",
            "FieldValueTooLong": "Too long",
            "FieldValueInvalid": "Invalid value",
            "FieldValueNotSupported": "Unsupported value",
        }
        text = labels[self.type]
        if self.type in ("FieldValueInvalid", "FieldValueNotSupported"):
            text += ": " + json.dumps(self.value)
        if self.detail:
            text += ": " + self.detail
        return text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"


def invalid(kind: str, name: str, errors: list[FieldError], group: str = "") -> ApiError:
    qualified = f"{kind}.{group}" if group else kind
    unique: list[str] = []
    for err in errors:
        if str(err) not in unique:
            unique.append(str(err))
    aggregate = unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"
    details: Json = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    details["kind"] = kind
    details["causes"] = [{"reason": e.type, "message": e.body(), "field": e.field} for e in errors]
    return ApiError(422, "Invalid", f'{qualified} "{name}" is invalid: {aggregate}', details)


def fault_error(code: str) -> ApiError:
    """The Status a real server (or its front end) sends for an overload or failure code."""
    status = int(code) if code.isdigit() else 500  # a non-HTTP code is a misconfigured rule
    if status == 429:
        return ApiError(
            429,
            "TooManyRequests",
            "Too many requests, please try again later.",
            {"retryAfterSeconds": 1},
            {"Retry-After": "1"},
        )
    if status == 500:
        return ApiError(
            500,
            "InternalError",
            "Internal error occurred: injected fault",
            {"causes": [{"message": "injected fault"}]},
        )
    if status == 503:
        return ApiError(503, "ServiceUnavailable", "the server is currently unable to handle the request", {})
    if status == 504:
        return ApiError(
            504,
            "Timeout",
            "Timeout: request did not complete within requested timeout - context deadline exceeded",
            {},
        )
    return ApiError(status, REASONS.get(status, "Unknown"), f"injected fault {status}", {})


# --------------------------------------------------------------------------------------------
# Validation (k8s.io/apimachinery/pkg/util/validation and pkg/apis/core/validation)
# --------------------------------------------------------------------------------------------
DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN = DNS1123_LABEL + r"(\." + DNS1123_LABEL + r")*"
QUALIFIED_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE = r"(" + QUALIFIED_NAME + r")?"
CONFIG_MAP_KEY = r"[-._a-zA-Z0-9]+"


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    out = msg + " (e.g. "
    for i, ex in enumerate(examples):
        if i:
            out += " or "
        out += f"'{ex}', "
    return out + f"regex used for validation is '{fmt}')"


def is_dns1123_subdomain(value: str) -> list[str]:
    errs = []
    if len(value) > 253:
        errs.append("must be no more than 253 characters")
    if not re.fullmatch(DNS1123_SUBDOMAIN, value):
        errs.append(
            _regex_error(
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                "'-' or '.', and must start and end with an alphanumeric character",
                DNS1123_SUBDOMAIN,
                "example.com",
            )
        )
    return errs


def is_qualified_name(value: str) -> list[str]:
    errs: list[str] = []
    parts = value.split("/")
    name_msg = (
        "must consist of alphanumeric characters, '-', '_' or '.', "
        "and must start and end with an alphanumeric character"
    )
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs += ["prefix part " + m for m in is_dns1123_subdomain(prefix)]
    else:
        return [
            "a qualified name "
            + _regex_error(name_msg, QUALIFIED_NAME, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if not re.fullmatch(QUALIFIED_NAME, name):
        errs.append("name part " + _regex_error(name_msg, QUALIFIED_NAME, "MyName", "my.name", "123-abc"))
    return errs


def is_label_value(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not re.fullmatch(LABEL_VALUE, value):
        errs.append(
            _regex_error(
                "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
                "or '.', and must start and end with an alphanumeric character",
                LABEL_VALUE,
                "MyValue",
                "my_value",
                "12345",
            )
        )
    return errs


def is_config_map_key(value: str) -> list[str]:
    errs = []
    if len(value) > 253:
        errs.append("must be no more than 253 characters")
    if not re.fullmatch(CONFIG_MAP_KEY, value):
        errs.append(
            _regex_error(
                "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
                CONFIG_MAP_KEY,
                "key.name",
                "KEY_NAME",
                "key-name",
            )
        )
    if value == ".":
        errs.append("must not be '.'")
    elif value == "..":
        errs.append("must not be '..'")
    elif value.startswith(".."):
        errs.append("must not start with '..'")
    return errs


def _go_json_error(raw: bytes) -> str | None:
    """Why Go's json.Unmarshal into map[string]interface{} rejects `raw`, or None if it accepts it."""

    def no_constants(name: str) -> Any:
        raise ValueError(name)

    try:
        value = json.loads(raw.decode("utf-8", errors="replace"), parse_constant=no_constants)
    except (ValueError, json.JSONDecodeError) as exc:
        text = raw.strip()
        if not text:
            return "unexpected end of JSON input"
        pos = getattr(exc, "pos", 0) or 0
        stripped = raw.decode("utf-8", errors="replace")
        if pos >= len(stripped.rstrip()):
            return "unexpected end of JSON input"
        return f"invalid character {stripped[pos]!r} looking for beginning of value"
    kinds = {list: "array", str: "string", bool: "bool", int: "number", float: "number"}
    if value is None or isinstance(value, dict):
        return None  # Go accepts null into a map
    return f"json: cannot unmarshal {kinds[type(value)]} into Go value of type map[string]interface {{}}"


def validate_metadata(meta: Json, *, creating: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    name = meta.get("name", "")
    if creating and not name and not meta.get("generateName"):
        errs.append(FieldError("FieldValueRequired", "metadata.name", "name or generateName is required"))
    elif name:
        errs += [FieldError("FieldValueInvalid", "metadata.name", m, name) for m in is_dns1123_subdomain(name)]
    for key, value in sorted(meta.get("labels", {}).items()):
        errs += [FieldError("FieldValueInvalid", "metadata.labels", m, key) for m in is_qualified_name(key)]
        errs += [FieldError("FieldValueInvalid", "metadata.labels", m, value) for m in is_label_value(value)]
    total = 0
    for key, value in sorted(meta.get("annotations", {}).items()):
        errs += [
            FieldError("FieldValueInvalid", "metadata.annotations", m, key) for m in is_qualified_name(key.lower())
        ]
        total += len(key.encode()) + len(value.encode())
    if total > MAX_ANNOTATIONS_SIZE:
        errs.append(
            FieldError(
                "FieldValueTooLong",
                "metadata.annotations",
                f"may not be more than {MAX_ANNOTATIONS_SIZE} bytes",
            )
        )
    return errs


def validate_secret(obj: Json, old: Json | None = None) -> list[FieldError]:
    """ValidateSecret (+ ValidateSecretUpdate when `old` is given)."""
    errs: list[FieldError] = []
    if old is not None:
        if obj.get("type") != old.get("type"):
            errs.append(FieldError("FieldValueInvalid", "type", "field is immutable", obj.get("type", "")))
        if old.get("immutable") is True:
            if obj.get("immutable") is not True:
                errs.append(
                    FieldError("FieldValueForbidden", "immutable", "field is immutable when `immutable` is set")
                )
            if obj.get("data", {}) != old.get("data", {}):
                errs.append(FieldError("FieldValueForbidden", "data", "field is immutable when `immutable` is set"))
    errs += validate_metadata(obj["metadata"], creating=old is None)
    data: dict[str, str] = obj.get("data", {})
    total = 0
    for key in sorted(data):
        errs += [FieldError("FieldValueInvalid", f"data[{key}]", m, key) for m in is_config_map_key(key)]
        total += len(base64.b64decode(data[key]))
    if total > MAX_SECRET_SIZE:
        errs.append(FieldError("FieldValueTooLong", "data", f"may not be more than {MAX_SECRET_SIZE} bytes"))
    kind = obj.get("type", "Opaque")
    json_keys = {"kubernetes.io/dockerconfigjson": ".dockerconfigjson", "kubernetes.io/dockercfg": ".dockercfg"}
    if kind in json_keys:
        key = json_keys[kind]
        if key not in data:
            errs.append(FieldError("FieldValueRequired", f"data[{key}]"))
        else:
            why = _go_json_error(base64.b64decode(data[key]))
            if why:
                errs.append(FieldError("FieldValueInvalid", f"data[{key}]", why, "<secret contents redacted>"))
    elif kind == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            errs.append(FieldError("FieldValueRequired", "data[username]"))
            errs.append(FieldError("FieldValueRequired", "data[password]"))
    elif kind == "kubernetes.io/ssh-auth":
        if "ssh-privatekey" not in data:
            errs.append(FieldError("FieldValueRequired", "data[ssh-privatekey]"))
    elif kind == "kubernetes.io/tls":
        for key in ("tls.crt", "tls.key"):
            if key not in data:
                errs.append(FieldError("FieldValueRequired", f"data[{key}]"))
    elif kind == "kubernetes.io/service-account-token" and not obj["metadata"].get("annotations", {}).get(
        "kubernetes.io/service-account.name"
    ):
        errs.append(FieldError("FieldValueRequired", "metadata.annotations[kubernetes.io/service-account.name]"))
    return errs


# --------------------------------------------------------------------------------------------
# Decoding request bodies into canonical Secrets
# --------------------------------------------------------------------------------------------
SECRET_FIELDS = ("apiVersion", "kind", "metadata", "immutable", "data", "stringData", "type")
META_FIELDS = (
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
)
_GO_TYPES = {dict: "object", list: "array", str: "string", bool: "bool", int: "number", float: "number"}


def _cannot_handle(why: str) -> ApiError:
    return bad_request(f'Secret in version "v1" cannot be handled as a Secret: {why}')


def _type_error(value: Any, where: str, gotype: str) -> ApiError:
    return _cannot_handle(
        f"json: cannot unmarshal {_GO_TYPES.get(type(value), 'value')} into Go struct field {where} of type {gotype}"
    )


def _string_map(value: Any, where: str, gotype: str = "string") -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _type_error(value, where, f"map[string]{gotype}")
    out: dict[str, str] = {}
    for key, given in value.items():
        item = "" if given is None else given
        if not isinstance(item, str):
            raise _type_error(item, where, gotype)
        out[key] = item
    return out


def _canonical_b64(value: str) -> str:
    cleaned = value.replace("\r", "").replace("\n", "")
    try:
        raw = base64.b64decode(cleaned, validate=True)
    except (binascii.Error, ValueError):
        pos = next(
            (
                i
                for i, c in enumerate(cleaned)
                if c not in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="
            ),
            max(len(cleaned) - len(cleaned) % 4, 0),
        )
        raise _cannot_handle(f"illegal base64 data at input byte {pos}") from None
    return base64.b64encode(raw).decode()


def decode_secret(raw: Any, *, strict: bool = False, apply: bool = False) -> tuple[Json, list[str]]:
    """Turn a request body into a canonical Secret (data canonical base64, stringData folded).

    Returns the object and the unknown-field warnings; raises ApiError 400 on undecodable input.
    The Secret is not defaulted when `apply` is set, since defaults are not part of an apply config.
    """
    if not isinstance(raw, dict):
        raise bad_request(
            "couldn't get version/kind; json parse error: json: cannot unmarshal "
            f"{_GO_TYPES.get(type(raw), 'value')} into Go value of type struct "
            '{ APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }'
        )
    api_version, kind = raw.get("apiVersion"), raw.get("kind")
    if apply and (not kind or not api_version):
        missing = "Kind" if not kind else "apiVersion"
        raise bad_request(f"Object '{missing}' is missing in '{json.dumps(raw, separators=(',', ':'))}'")
    if api_version not in (None, "", "v1"):
        raise bad_request(f"the API version in the data ({api_version}) does not match the expected API version (v1)")
    if kind not in (None, "", "Secret"):
        raise bad_request(f"the kind in the data ({kind}) does not match the expected kind (Secret)")
    unknown = [f'unknown field "{k}"' for k in raw if k not in SECRET_FIELDS]
    meta_in = raw.get("metadata") or {}
    if not isinstance(meta_in, dict):
        raise _type_error(meta_in, "Secret.metadata", "v1.ObjectMeta")
    unknown += [f'unknown field "metadata.{k}"' for k in meta_in if k not in META_FIELDS]
    if unknown and apply:
        field = unknown[0].split('"')[1]
        raise bad_request(
            f"failed to create typed patch object (/v1, Kind=Secret): .{field}: field not declared in schema"
        )
    if unknown and strict:
        raise bad_request("strict decoding error: " + ", ".join(unknown))
    meta: Json = {}
    for key in META_FIELDS:
        value = meta_in.get(key)
        if value is None:
            continue
        if key in ("labels", "annotations"):
            value = _string_map(value, f"Secret.metadata.{key}")
            if value:
                meta[key] = dict(sorted(value.items()))
            continue
        if key in ("ownerReferences", "finalizers", "managedFields"):
            if not isinstance(value, list):
                raise _type_error(value, f"Secret.metadata.{key}", "[]")
            if key == "finalizers" and not all(isinstance(v, str) for v in value):
                raise _type_error(value, "Secret.metadata.finalizers", "string")
            meta[key] = copy.deepcopy(value)
            continue
        if key in ("generation", "deletionGracePeriodSeconds"):
            if not isinstance(value, int) or isinstance(value, bool):
                raise _type_error(value, f"Secret.metadata.{key}", "int64")
        elif not isinstance(value, str):
            raise _type_error(value, f"Secret.metadata.{key}", "string")
        if value != "":
            meta[key] = value
    obj: Json = {"kind": "Secret", "apiVersion": "v1", "metadata": meta}
    immutable = raw.get("immutable")
    if immutable is not None:
        if not isinstance(immutable, bool):
            raise _type_error(immutable, "Secret.immutable", "bool")
        obj["immutable"] = immutable
    data = {k: _canonical_b64(v) for k, v in _string_map(raw.get("data"), "Secret.data", "[]uint8").items()}
    for key, value in _string_map(raw.get("stringData"), "Secret.stringData").items():
        data[key] = base64.b64encode(value.encode()).decode()
    if data:
        obj["data"] = dict(sorted(data.items()))
    secret_type = raw.get("type")
    if secret_type is not None and not isinstance(secret_type, str):
        raise _type_error(secret_type, "Secret.type", "v1.SecretType")
    if secret_type:
        obj["type"] = secret_type
    elif not apply:
        obj["type"] = "Opaque"
    return obj, unknown


def canonical(obj: Json) -> Json:
    """Key order and empty-field elision as the real server encodes a Secret."""
    meta = obj["metadata"]
    out_meta = {k: meta[k] for k in META_FIELDS if meta.get(k) not in (None, "", {}, [])}
    out: Json = {"kind": "Secret", "apiVersion": "v1", "metadata": out_meta}
    for key in ("immutable", "data", "type"):
        if obj.get(key) not in (None, {}, ""):
            out[key] = obj[key]
    return out


# --------------------------------------------------------------------------------------------
# Field ownership (metadata.managedFields, fieldsV1)
# --------------------------------------------------------------------------------------------
MAP_FIELDS: tuple[Path, ...] = (("metadata", "labels"), ("metadata", "annotations"), ("data",))
ATOMIC_FIELDS: tuple[Path, ...] = (
    ("metadata", "ownerReferences"),
    ("metadata", "finalizers"),
    ("immutable",),
    ("type",),
)


def _get(obj: Json, path: Path) -> Any:
    node: Any = obj
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def leaves(obj: Json) -> dict[Path, Any]:
    """Every owned leaf of a Secret with its value: map entries and atomic fields."""
    out: dict[Path, Any] = {}
    for path in MAP_FIELDS:
        for key, value in (_get(obj, path) or {}).items():
            out[(*path, key)] = value
    for path in ATOMIC_FIELDS:
        value = _get(obj, path)
        if value is not None:
            out[path] = value
    return out


def map_nodes(obj: Json) -> set[Path]:
    return {path for path in MAP_FIELDS if _get(obj, path)}


def _set_leaf(obj: Json, path: Path, value: Any) -> None:
    node = obj
    for part in path[:-1]:
        node = node.setdefault(part, {})
    node[path[-1]] = copy.deepcopy(value)


def _del_leaf(obj: Json, path: Path) -> None:
    node: Any = obj
    for part in path[:-1]:
        node = node.get(part)
        if not isinstance(node, dict):
            return
    node.pop(path[-1], None)


def fields_v1(paths: Iterable[Path]) -> Json:
    """Encode a field set in the fieldsV1 form: {"f:data": {".": {}, "f:key": {}}}."""
    tree: Json = {}
    members = set(paths)
    for path in sorted(members):
        node = tree
        for part in path:
            node = node.setdefault("f:" + part, {})
    for path in members:
        node = tree
        for part in path:
            node = node["f:" + part]
        if any(k != "." for k in node):
            node["."] = {}
    return _sorted_tree(tree)


def _sorted_tree(tree: Json) -> Json:
    return {k: _sorted_tree(v) for k, v in sorted(tree.items())}


def parse_fields_v1(tree: Any, prefix: Path = ()) -> set[Path]:
    """Decode fieldsV1; list-element keys (k:, v:, i:) collapse onto their atomic list."""
    out: set[Path] = set()
    if not isinstance(tree, dict):
        return out
    for key, child in tree.items():
        if key == ".":
            out.add(prefix)
        elif key.startswith("f:"):
            path = (*prefix, key[2:])
            if (*path,) in ATOMIC_FIELDS or not child:
                out.add(path)
            else:
                out |= parse_fields_v1(child, path)
        elif key[:2] in ("k:", "v:", "i:"):
            out.add(prefix)
    return out


@dataclass
class Owner:
    manager: str
    operation: str
    fields: set[Path]
    time: str
    api_version: str = "v1"
    subresource: str = ""

    def key(self) -> tuple[str, str, str]:
        return (self.manager, self.operation, self.subresource)

    def to_json(self) -> Json:
        out: Json = {
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
            "time": self.time,
            "fieldsType": "FieldsV1",
            "fieldsV1": fields_v1(self.fields),
        }
        if self.subresource:
            out["subresource"] = self.subresource
        return out

    def describe(self) -> str:
        """As the apiserver's printManager: Update managers carry their API version."""
        if self.operation == "Update":
            return f'"{self.manager}" using {self.api_version}'
        return f'"{self.manager}"'


def owners_of(obj: Json) -> list[Owner]:
    out = []
    for entry in obj.get("metadata", {}).get("managedFields", []) or []:
        if not isinstance(entry, dict):
            continue
        out.append(
            Owner(
                manager=str(entry.get("manager", "")),
                operation=str(entry.get("operation", "Update")),
                fields=parse_fields_v1(entry.get("fieldsV1", {})),
                time=_rfc3339(entry.get("time")),
                api_version=str(entry.get("apiVersion", "v1")),
                subresource=str(entry.get("subresource", "")),
            )
        )
    return out


def _store_owners(obj: Json, owners: list[Owner]) -> None:
    kept = [o.to_json() for o in owners if o.fields]
    if kept:
        obj["metadata"]["managedFields"] = kept
    else:
        obj["metadata"].pop("managedFields", None)


def track_update(old: Json | None, new: Json, base: list[Owner], manager: str, now: str) -> list[Owner]:
    """Ownership after a non-apply write: the writer takes what changed, nobody keeps what is gone."""
    old_leaves = leaves(old) if old else {}
    new_leaves = leaves(new)
    old_maps = map_nodes(old) if old else set()
    new_maps = map_nodes(new)
    changed = {p for p, v in new_leaves.items() if p not in old_leaves or old_leaves[p] != v}
    changed |= new_maps - old_maps
    gone = (set(old_leaves) - set(new_leaves)) | (old_maps - new_maps)
    owners = [Owner(o.manager, o.operation, set(o.fields), o.time, o.api_version, o.subresource) for o in base]
    mine = next((o for o in owners if o.key() == (manager, "Update", "")), None)
    for owner in owners:
        owner.fields -= changed | gone
    if changed:
        if mine is None:
            mine = Owner(manager, "Update", set(), now)
            owners.append(mine)
        mine.fields |= changed
        mine.time = now
    return [o for o in owners if o.fields]


# --------------------------------------------------------------------------------------------
# Selectors
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # exists, !, =, !=, in, notin, gt, lt
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        has = self.key in labels
        value = labels.get(self.key)
        if self.op == "exists":
            return has
        if self.op == "!":
            return not has
        if self.op in ("=", "in"):
            return has and value in self.values
        if self.op in ("!=", "notin"):
            return not has or value not in self.values
        try:
            number, bound = int(value or ""), int(self.values[0])
        except ValueError:
            return False
        return number > bound if self.op == "gt" else number < bound


def _split_selector(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return parts


def parse_label_selector(text: str) -> list[Requirement]:
    """labels.Parse: equality, set-based and existence requirements, comma = AND."""
    reqs: list[Requirement] = []
    if not text.strip():
        return reqs
    key_re = r"([A-Za-z0-9][-A-Za-z0-9_./]*)"
    for raw_part in _split_selector(text):
        part = raw_part.strip()
        if m := re.fullmatch(r"(!?)\s*" + key_re, part):
            req = Requirement(m.group(2), "!" if m.group(1) else "exists")
        elif m := re.fullmatch(key_re + r"\s*(==|=|!=|>|<)\s*([^\s,()=!<>]*)", part):
            op = {"==": "=", ">": "gt", "<": "lt"}.get(m.group(2), m.group(2))
            req = Requirement(m.group(1), op, (m.group(3),))
        elif m := re.fullmatch(key_re + r"\s+(in|notin)\s*\(([^()]*)\)", part):
            values = tuple(v.strip() for v in m.group(3).split(","))
            req = Requirement(m.group(1), m.group(2), values)
        else:
            raise bad_request(f"unable to parse requirement: found '{part}', expected: valid requirement")
        for msg in is_qualified_name(req.key):
            raise bad_request(f'unable to parse requirement: key: Invalid value: "{req.key}": {msg}')
        for value in req.values:
            if req.op in ("gt", "lt"):
                if not re.fullmatch(r"-?\d+", value):
                    raise bad_request(
                        f"unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer: {value}"
                    )
                continue
            for msg in is_label_value(value):
                raise bad_request(f'unable to parse requirement: values[0][{req.key}]: Invalid value: "{value}": {msg}')
        reqs.append(req)
    return reqs


def parse_field_selector(text: str, allowed: tuple[str, ...]) -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    if not text.strip():
        return out
    for part in text.split(","):
        m = re.fullmatch(r"\s*([^=!\s]+)\s*(==|=|!=)\s*(.*?)\s*", part)
        if not m:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        key, op, value = m.groups()
        if key not in allowed:
            raise bad_request(f'"{key}" is not a known field selector: only "' + '", "'.join(allowed) + '"')
        out.append((key, "!=" if op == "!=" else "=", value))
    return out


# --------------------------------------------------------------------------------------------
# Patches
# --------------------------------------------------------------------------------------------
def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def strategic_merge_patch(target: Any, patch: Any, path: Path = ()) -> Any:
    """Strategic merge patch for a Secret: maps merge, finalizers and ownerReferences merge by key."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "delete":
        return None
    body = {k: v for k, v in patch.items() if not k.startswith("$")}
    if directive == "replace":
        return copy.deepcopy(body)
    if directive not in (None, "merge"):
        raise bad_request(f"Unknown patch type: {directive}")
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    if "$retainKeys" in patch:
        keep = set(patch["$retainKeys"] or [])
        out = {k: v for k, v in out.items() if k in keep}
    for key, values in patch.items():
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            if isinstance(out.get(field), list):
                out[field] = [v for v in out[field] if v not in values]
    for key, value in body.items():
        child = (*path, key)
        if value is None:
            out.pop(key, None)
        elif child == ("metadata", "finalizers") and isinstance(value, list):
            merged = list(out.get(key) or [])
            merged += [v for v in value if v not in merged]
            out[key] = merged
        elif child == ("metadata", "ownerReferences") and isinstance(value, list):
            merged_refs = list(out.get(key) or [])
            for ref in value:
                uid = ref.get("uid") if isinstance(ref, dict) else None
                index = next((i for i, r in enumerate(merged_refs) if r.get("uid") == uid), None)
                if isinstance(ref, dict) and ref.get("$patch") == "delete":
                    if index is not None:
                        merged_refs.pop(index)
                elif index is None:
                    merged_refs.append(ref)
                else:
                    merged_refs[index] = strategic_merge_patch(merged_refs[index], ref, child)
            out[key] = merged_refs
        else:
            result = strategic_merge_patch(out.get(key), value, child)
            if result is None:
                out.pop(key, None)
            else:
                out[key] = result
    return out


class JsonPatchError(Exception):
    pass


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise JsonPatchError(f"JSON pointer must start with '/': {path}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _container(doc: Any, parts: list[str]) -> Any:
    node = doc
    for part in parts[:-1]:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise JsonPatchError(f"doc is missing path: /{'/'.join(parts)}: missing value")
    return node


def json_patch(doc: Any, ops: Any) -> Any:
    """RFC 6902 JSON patch."""
    if not isinstance(ops, list):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    doc = copy.deepcopy(doc)

    def get(parts: list[str]) -> Any:
        node = _container(doc, parts)
        last = parts[-1]
        if isinstance(node, dict) and last in node:
            return node[last]
        if isinstance(node, list) and last.isdigit() and int(last) < len(node):
            return node[int(last)]
        raise JsonPatchError(f"Unable to get nonexistent key: {last}: missing value")

    def remove(parts: list[str]) -> Any:
        node = _container(doc, parts)
        last = parts[-1]
        if isinstance(node, dict) and last in node:
            return node.pop(last)
        if isinstance(node, list) and last.isdigit() and int(last) < len(node):
            return node.pop(int(last))
        raise JsonPatchError(f"Unable to remove nonexistent key: {last}: missing value")

    def add(parts: list[str], value: Any, replace: bool = False) -> None:
        nonlocal doc
        if not parts:
            doc = copy.deepcopy(value)
            return
        node = _container(doc, parts)
        last = parts[-1]
        if isinstance(node, dict):
            if replace and last not in node:
                raise JsonPatchError(
                    f"replace operation does not apply: doc is missing key: /{'/'.join(parts)}: missing value"
                )
            node[last] = copy.deepcopy(value)
        elif isinstance(node, list):
            if last == "-" and not replace:
                node.append(copy.deepcopy(value))
            elif last.isdigit() and int(last) <= len(node) - (1 if replace else 0):
                if replace:
                    node[int(last)] = copy.deepcopy(value)
                else:
                    node.insert(int(last), copy.deepcopy(value))
            else:
                raise JsonPatchError(f"Unable to access invalid index: {last}: invalid index referenced")
        else:
            raise JsonPatchError(f"doc is missing path: /{'/'.join(parts)}: missing value")

    for op in ops:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise JsonPatchError("Unexpected kind: ")
        kind, parts = op["op"], _pointer(op["path"])
        if kind == "add":
            add(parts, op.get("value"))
        elif kind == "remove":
            remove(parts)
        elif kind == "replace":
            add(parts, op.get("value"), replace=True)
        elif kind == "move":
            add(parts, remove(_pointer(op["from"])))
        elif kind == "copy":
            add(parts, get(_pointer(op["from"])))
        elif kind == "test":
            if get(parts) != op.get("value"):
                raise JsonPatchError(f"testing value /{'/'.join(parts)} failed: test failed")
        else:
            raise JsonPatchError(f"Unexpected kind: {kind}")
    return doc


# --------------------------------------------------------------------------------------------
# The server state
# --------------------------------------------------------------------------------------------
def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _rfc3339(value: Any) -> str:
    """Normalise a timestamp to the server's form (clients send e.g. +00:00 offsets back)."""
    if not isinstance(value, str) or not value:
        return ""
    try:
        parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.UTC)
    return parsed.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Rule:
    identity: str
    namespace: str
    verbs: frozenset[str]
    resources: frozenset[str]

    def allows(self, identity: str, verb: str, resource: str, namespace: str) -> bool:
        return (
            self.identity == identity
            and (self.namespace == "*" or (namespace != "" and self.namespace == namespace))
            and ("*" in self.verbs or verb in self.verbs)
            and ("*" in self.resources or resource in self.resources)
        )

    def to_json(self) -> Json:
        return {
            "identity": self.identity,
            "namespace": self.namespace,
            "verbs": sorted(self.verbs),
            "resources": sorted(self.resources),
        }


@dataclass
class Request:
    """One parsed API request."""

    method: str
    verb: str
    resource: str
    namespace: str
    name: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    def param(self, key: str, default: str = "") -> str:
        return self.query.get(key, [default])[-1]


class Hangup(Exception):
    """Answer by dropping (``reset``) or stalling (``timeout``) the connection."""

    def __init__(self, how: str) -> None:
        super().__init__(how)
        self.how = how


class KubernetesEmulator:
    """A faithful-enough kube-apiserver for core/v1 Namespaces and Secrets, over HTTPS."""

    service = "kubernetes"

    def __init__(self, book: FaultBook, *, authenticate: Callable[[str], str | None] | None = None) -> None:
        self.book = book
        self.control = ServiceControl(book, self.service)
        self._authenticate = authenticate
        self._lock = threading.RLock()
        self._rv = 0
        self._namespaces: dict[str, Json] = {}
        self._secrets: dict[tuple[str, str], Json] = {}
        self._rules: list[Rule] = []
        self._tokens: dict[str, str] = {}
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._tls: TLSMaterial | None = None
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._conn_lock = threading.Lock()

    # -- lifecycle -------------------------------------------------------------------------
    def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        """Serve HTTPS on host:port (0 = a free port) with a freshly generated CA."""
        self._tls = make_tls_material()
        ctx = server_context(self._tls)
        emulator = self

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            block_on_close = False
            request_queue_size = 256

            def finish_request(self, request: Any, client_address: Any) -> None:
                # The TLS handshake runs here, on the connection's own thread, so one slow
                # or hostile client cannot stall the accept loop.
                request.settimeout(10.0)
                try:
                    conn = ctx.wrap_socket(request, server_side=True)
                except (OSError, ssl.SSLError):
                    request.close()
                    return
                conn.settimeout(None)
                with emulator._conn_lock:
                    emulator._connections.add(conn)
                try:
                    _Handler(conn, client_address, self, emulator)
                except (OSError, ssl.SSLError):
                    pass
                finally:
                    with emulator._conn_lock:
                        emulator._connections.discard(conn)
                    with contextlib.suppress(OSError):
                        conn.close()

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # client disconnects are routine here, not worth a traceback

        self._stopping.clear()
        self._server = Server((host, port), _Handler)  # type: ignore[arg-type]
        self._thread = threading.Thread(target=self._server.serve_forever, name="k8s-emulator", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        with self._conn_lock:
            conns = list(self._connections)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    @property
    def address(self) -> str:
        if self._server is None:
            raise RuntimeError("emulator not started")
        host, port = self._server.server_address[:2]
        return f"{host!s}:{port}"

    @property
    def ca_pem(self) -> bytes:
        if self._tls is None:
            raise RuntimeError("emulator not started")
        return self._tls.ca_pem

    # -- in-process helpers ----------------------------------------------------------------
    def _bump(self) -> str:
        self._rv += 1
        return str(self._rv)

    def add_namespace(self, name: str, labels: dict[str, str] | None = None) -> Json:
        """Create a namespace (idempotent) and return it."""
        with self._lock:
            if name in self._namespaces:
                return copy.deepcopy(self._namespaces[name])
            ns = {
                "kind": "Namespace",
                "apiVersion": "v1",
                "metadata": {
                    "name": name,
                    "uid": str(uuid.uuid4()),
                    "resourceVersion": self._bump(),
                    "creationTimestamp": _now(),
                    "labels": {"kubernetes.io/metadata.name": name, **(labels or {})},
                },
                "spec": {"finalizers": ["kubernetes"]},
                "status": {"phase": "Active"},
            }
            self._namespaces[name] = ns
            return copy.deepcopy(ns)

    def delete_namespace(self, name: str) -> bool:
        """Delete a namespace and its Secrets at once (no Terminating phase)."""
        with self._lock:
            if self._namespaces.pop(name, None) is None:
                return False
            for key in [k for k in self._secrets if k[0] == name]:
                del self._secrets[key]
            self._bump()
            return True

    def grant(
        self,
        identity: str,
        namespace: str = "*",
        verbs: Iterable[str] = ("*",),
        resources: Iterable[str] = ("*",),
    ) -> None:
        """Allow `identity` the verbs on the resources in a namespace ("*" = cluster-wide)."""
        with self._lock:
            self._rules.append(Rule(identity, namespace, frozenset(verbs), frozenset(resources)))

    def revoke(self, identity: str) -> None:
        with self._lock:
            self._rules = [r for r in self._rules if r.identity != identity]

    def add_token(self, token: str, identity: str) -> None:
        with self._lock:
            self._tokens[token] = identity

    def get_secret(self, namespace: str, name: str) -> Json | None:
        with self._lock:
            obj = self._secrets.get((namespace, name))
            return copy.deepcopy(obj) if obj else None

    def put_secret(self, obj: Json, *, manager: str | None = None) -> Json:
        """Seed a Secret bypassing auth and validation; creates its namespace when missing."""
        decoded, _ = decode_secret(obj)
        meta = decoded["metadata"]
        name, namespace = meta.get("name"), meta.get("namespace")
        if not name or not namespace:
            raise ValueError("a seeded Secret needs metadata.name and metadata.namespace")
        with self._lock:
            self.add_namespace(namespace)
            old = self._secrets.get((namespace, name))
            meta.setdefault("uid", old["metadata"]["uid"] if old else str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", old["metadata"]["creationTimestamp"] if old else _now())
            if manager is not None:
                _store_owners(decoded, track_update(None, decoded, [], manager, _now()))
            meta["resourceVersion"] = self._bump()
            stored = canonical(decoded)
            self._secrets[(namespace, name)] = stored
            return copy.deepcopy(stored)

    def delete_secret(self, namespace: str, name: str) -> bool:
        with self._lock:
            if self._secrets.pop((namespace, name), None) is None:
                return False
            self._bump()
            return True

    def state(self) -> dict[str, Any]:
        with self._lock:
            return {
                "resourceVersion": str(self._rv),
                "namespaces": sorted(self._namespaces),
                "secrets": [copy.deepcopy(self._secrets[k]) for k in sorted(self._secrets)],
                "rbac": [r.to_json() for r in self._rules],
                "tokens": len(self._tokens),
            }

    def reset(self) -> None:
        """Forget namespaces, Secrets, RBAC and static tokens; resourceVersions keep growing."""
        with self._lock:
            self._namespaces.clear()
            self._secrets.clear()
            self._rules.clear()
            self._tokens.clear()
            self._bump()

    # -- admin API -------------------------------------------------------------------------
    def handle_admin(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        """Serve an admin route (path relative to /kubernetes); see the module docstring."""
        parts = [p for p in path.split("?", maxsplit=1)[0].split("/") if p]
        body = body if body is not None else {}
        try:
            if method == "GET" and parts == ["state"]:
                return 200, self.state()
            if method == "POST" and parts == ["reset"]:
                self.reset()
                return 200, {}
            if parts == ["rbac"] and method == "PUT":
                verbs = body.get("verbs", ["*"])
                resources = body.get("resources", ["*"])
                if not isinstance(body.get("identity"), str) or not isinstance(verbs, list):
                    return 400, {"error": "rbac needs identity (string) and verbs (list)"}
                self.grant(body["identity"], str(body.get("namespace", "*")), verbs, resources)
                return 200, self.state()["rbac"]
            if parts == ["rbac"] and method == "DELETE":
                self.revoke(str(body.get("identity", "")))
                return 200, self.state()["rbac"]
            if parts == ["tokens"] and method == "PUT":
                if not isinstance(body.get("token"), str) or not isinstance(body.get("identity"), str):
                    return 400, {"error": "tokens needs token and identity (strings)"}
                self.add_token(body["token"], body["identity"])
                return 200, {}
            if len(parts) == 2 and parts[0] == "namespaces":
                if method == "PUT":
                    return 200, self.add_namespace(parts[1], body.get("labels"))
                if method == "DELETE":
                    if self.delete_namespace(parts[1]):
                        return 200, {}
                    return 404, {"error": f"namespace {parts[1]} not found"}
            if len(parts) == 4 and parts[0] == "namespaces" and parts[2] == "secrets":
                ns, name = parts[1], parts[3]
                if method == "GET":
                    found = self.get_secret(ns, name)
                    return (200, found) if found else (404, {"error": f"secret {ns}/{name} not found"})
                if method == "PUT":
                    manager = body.get("manager") if "object" in body else None
                    raw = copy.deepcopy(body.get("object", body))
                    if not isinstance(raw, dict):
                        return 400, {"error": "body must be a Secret object"}
                    meta = raw.setdefault("metadata", {})
                    meta["name"], meta["namespace"] = name, ns
                    return 200, self.put_secret(raw, manager=manager)
                if method == "DELETE":
                    if self.delete_secret(ns, name):
                        return 200, {}
                    return 404, {"error": f"secret {ns}/{name} not found"}
        except ApiError as exc:
            return 400, {"error": exc.message}
        except (ValueError, TypeError, AttributeError) as exc:
            return 400, {"error": str(exc)}
        return 404, {"error": f"no admin route {method} /kubernetes/{'/'.join(parts)}"}

    # -- request routing -------------------------------------------------------------------
    @staticmethod
    def route(method: str, path: str) -> tuple[str, str, str, str]:
        """(verb, resource, namespace, name) of an API path; resource "" when unknown."""
        parts = [urllib.parse.unquote(p) for p in path.split("/") if p]
        is_get = method == "GET"
        if parts == ["version"]:
            return "get", "version", "", ""
        if parts in (["api"], ["api", "v1"]):
            return "get", "discovery", "", ""
        if parts[:2] != ["api", "v1"]:
            return "", "", "", ""
        rest = parts[2:]
        collection_verbs = {"GET": "list", "POST": "create", "DELETE": "deletecollection"}
        item_verbs = {"GET": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
        if rest == ["secrets"] and is_get:
            return "list", "secrets", "", ""
        if rest == ["namespaces"] and is_get:
            return "list", "namespaces", "", ""
        if len(rest) == 2 and rest[0] == "namespaces" and is_get:
            return "get", "namespaces", rest[1], rest[1]
        if len(rest) == 3 and rest[0] == "namespaces" and rest[2] == "secrets":
            return collection_verbs.get(method, ""), "secrets", rest[1], ""
        if len(rest) == 4 and rest[0] == "namespaces" and rest[2] == "secrets":
            return item_verbs.get(method, ""), "secrets", rest[1], rest[3]
        return "", "", "", ""

    def identify(self, headers: dict[str, str]) -> str | None:
        """The user behind the request's bearer token, or None."""
        auth = headers.get("authorization", "")
        scheme, _, token = auth.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return None
        with self._lock:
            if token in self._tokens:
                return self._tokens[token]
        if self._authenticate is not None:
            return self._authenticate(token)
        return None

    def authorize(self, user: str, verb: str, resource: str, namespace: str) -> bool:
        with self._lock:
            return any(rule.allows(user, verb, resource, namespace) for rule in self._rules)

    def serve(
        self, method: str, path: str, query: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, Any, dict[str, str]]:
        """Answer one API request: (status code, JSON body, extra headers); raises Hangup."""
        verb, resource, namespace, name = self.route(method, path)
        fault = self.control.enter(f"{verb or method.lower()}.{resource or 'unknown'}")
        if fault in ("reset", "timeout"):
            raise Hangup(fault)
        if fault == "429-text":
            return 429, b"Too many requests, please try again later.\n", {"Retry-After": "1"}
        try:
            if fault is not None:
                raise fault_error(fault)
            anonymous_ok = resource == "version"
            user = self.identify(headers)
            if user is None and not (anonymous_ok and "authorization" not in headers):
                raise unauthorized()
            if not verb or not resource:
                if resource or (path.startswith("/api/v1/") and self.route("GET", path)[1]):
                    raise ApiError(
                        405, "MethodNotAllowed", "the server does not allow this method on the requested resource", {}
                    )
                raise ApiError(404, "NotFound", "the server could not find the requested resource", {})
            accept = headers.get("accept", "application/json")
            if not any(t in accept for t in ("json", "*/*")) and accept.strip():
                raise ApiError(
                    406,
                    "NotAcceptable",
                    "the server was unable to respond with a content type that the client supports",
                    {},
                )
            req = Request(
                method,
                verb,
                resource,
                namespace,
                name,
                urllib.parse.parse_qs(query, keep_blank_values=True),
                headers,
                body,
            )
            if resource in ("version", "discovery"):
                return 200, self._discovery(path), {}
            if not self.authorize(user or "", verb, resource, namespace):
                raise forbidden(user or "system:anonymous", verb, resource, name, namespace)
            return self._dispatch(req)
        except ApiError as exc:
            return exc.code, exc.status(), exc.headers

    def _discovery(self, path: str) -> Json:
        if path.rstrip("/") == "/version":
            return {
                "major": "1",
                "minor": "33",
                "gitVersion": "v1.33.5-gke.emulator",
                "gitCommit": "0000000000000000000000000000000000000000",
                "gitTreeState": "clean",
                "buildDate": "2026-01-01T00:00:00Z",
                "goVersion": "go1.24.6",
                "compiler": "gc",
                "platform": "linux/amd64",
            }
        if path.rstrip("/") == "/api":
            return {
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": self.address}],
            }

        def resource(name: str, kind: str, namespaced: bool, verbs: list[str], short: list[str]) -> Json:
            out: Json = {
                "name": name,
                "singularName": kind.lower(),
                "namespaced": namespaced,
                "kind": kind,
                "verbs": verbs,
            }
            if short:
                out["shortNames"] = short
            return out

        return {
            "kind": "APIResourceList",
            "groupVersion": "v1",
            "resources": [
                resource(
                    "namespaces",
                    "Namespace",
                    False,
                    ["create", "delete", "get", "list", "patch", "update", "watch"],
                    ["ns"],
                ),
                resource(
                    "secrets",
                    "Secret",
                    True,
                    ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
                    [],
                ),
            ],
        }

    def _dispatch(self, req: Request) -> tuple[int, Any, dict[str, str]]:
        if req.param("watch") in ("true", "1"):
            raise bad_request("watch is not supported by this emulator")
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

    def _list(self, kind: str, items: list[Json]) -> Json:
        stripped = []
        for item in items:
            # Items of a list carry no kind/apiVersion on the wire.
            copied = copy.deepcopy(item)
            copied.pop("kind", None)
            copied.pop("apiVersion", None)
            stripped.append(copied)
        return {"kind": kind, "apiVersion": "v1", "metadata": {"resourceVersion": str(self._rv)}, "items": stripped}

    # -- verbs -----------------------------------------------------------------------------
    def _get(self, req: Request) -> tuple[int, Any, dict[str, str]]:
        with self._lock:
            found = self._secrets.get((req.namespace, req.name))
            if found is None:
                raise not_found("secrets", req.name)
            return 200, copy.deepcopy(found), {}

    def _select(self, req: Request) -> list[Json]:
        labels = parse_label_selector(req.param("labelSelector"))
        fields = parse_field_selector(req.param("fieldSelector"), ("metadata.name", "metadata.namespace", "type"))
        out = []
        for (ns, _), obj in sorted(self._secrets.items()):
            if req.namespace and ns != req.namespace:
                continue
            if not all(r.matches(obj["metadata"].get("labels", {})) for r in labels):
                continue
            values = {"metadata.name": obj["metadata"]["name"], "metadata.namespace": ns, "type": obj.get("type", "")}
            if all((values[k] == v) == (op == "=") for k, op, v in fields):
                out.append(obj)
        return out

    def _list_secrets(self, req: Request) -> tuple[int, Any, dict[str, str]]:
        with self._lock:
            items = self._select(req)
            start = 0
            token = req.param("continue")
            if token:
                try:
                    state = json.loads(base64.urlsafe_b64decode(token.encode()))
                    start = int(state["start"])
                except (ValueError, KeyError, TypeError, binascii.Error):
                    raise bad_request(
                        "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
                    ) from None
            limit = int(req.param("limit", "0") or 0)
            page = items[start : start + limit] if limit > 0 else items[start:]
            body = self._list("SecretList", page)
            if limit > 0 and start + limit < len(items):
                body["metadata"]["continue"] = base64.urlsafe_b64encode(
                    json.dumps({"start": start + limit}).encode()
                ).decode()
                body["metadata"]["remainingItemCount"] = len(items) - start - limit
            return 200, body, {}

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
            meta["creationTimestamp"] = _now()
            errs = validate_secret(obj)
            if errs:
                raise invalid("Secret", meta.get("name", ""), errs)
            if meta.pop("resourceVersion", None) is not None:
                raise ApiError(500, "Unknown", "resourceVersion should not be set on objects to be created")
            name = meta["name"]
            base = owners_of(obj) if meta.get("managedFields") else []
            _store_owners(obj, track_update(None, obj, base, self._manager(req), _now()))
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
        _store_owners(new, owners)
        meta["resourceVersion"] = old["metadata"]["resourceVersion"]
        candidate = canonical(new)
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
            owners = track_update(old, obj, base, self._manager(req), _now())
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
            owners = track_update(old, obj, base, self._manager(req), _now())
            return 200, self._commit_update(req, old, obj, owners, dry), _warning_headers(warnings)

    def _apply(self, req: Request, force: bool, dry: bool) -> tuple[int, Any, dict[str, str]]:
        try:
            raw = yaml.safe_load(req.body)
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
        now = _now()
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
                raise _apply_conflict(conflicts)
            for owner, path in conflicts:
                owner.fields.discard(path)
            merged = copy.deepcopy(live)
            for path, value in applied_leaves.items():
                _set_leaf(merged, path, value)
            others: set[Path] = set()
            for owner in owners:
                if owner.key() != key:
                    others |= owner.fields
            for path in last - set(applied_leaves) - others:
                _del_leaf(merged, path)
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
        meta["creationTimestamp"] = _now()
        errs = validate_secret(obj)
        if errs:
            raise invalid("Secret", req.name, errs)
        _store_owners(obj, owners)
        if not dry:
            meta["resourceVersion"] = self._bump()
        stored = canonical(obj)
        if not dry:
            self._secrets[(req.namespace, req.name)] = stored
        return 201, copy.deepcopy(stored), {}

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
            if not dry:
                for obj in items:
                    del self._secrets[(req.namespace, obj["metadata"]["name"])]
                if items:
                    self._bump()
            return 200, self._list("SecretList", items), {}


def _apply_conflict(conflicts: list[tuple[Owner, Path]]) -> ApiError:
    def path_text(path: Path) -> str:
        return "".join("." + part for part in path)

    causes = [
        {"reason": "FieldManagerConflict", "message": f"conflict with {o.describe()}", "field": path_text(p)}
        for o, p in conflicts
    ]
    if len(conflicts) == 1:
        owner, path = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {owner.describe()}: {path_text(path)}"
    else:
        by_manager: dict[str, list[str]] = {}
        for owner, path in conflicts:
            by_manager.setdefault(owner.describe(), []).append(path_text(path))
        lines = []
        for manager in sorted(by_manager):
            lines.append(f"conflicts with {manager}:")
            lines += [f"- {p}" for p in by_manager[manager]]
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return ApiError(409, "Conflict", message, {"causes": causes})


def _name_mismatch(obj: Json, url_name: str) -> str:
    given = obj["metadata"].get("name", "")
    return f"the name of the object ({given}) does not match the name on the URL ({url_name})"


def _warning_headers(warnings: list[str]) -> dict[str, str]:
    if not warnings:
        return {}
    return {"Warning": ", ".join(f'299 - "{w.replace(chr(34), chr(92) + chr(34))}"' for w in warnings)}


# --------------------------------------------------------------------------------------------
# HTTP plumbing
# --------------------------------------------------------------------------------------------
class _Handler(BaseHTTPRequestHandler):
    # Real API frontends send small answers at once; with Nagle, a client's delayed ACK adds ~40 ms.
    disable_nagle_algorithm = True
    protocol_version = "HTTP/1.1"
    server_version = "kube-apiserver-emulator"
    sys_version = ""
    timeout = 300  # idle keep-alive connections are closed after this long

    def __init__(self, request: Any, client_address: Any, server: Any, emulator: KubernetesEmulator) -> None:
        self.emulator_ref = emulator
        super().__init__(request, client_address, server)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            total = 0
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline().strip():
                        pass
                    break
                total += size
                if total > MAX_REQUEST_BODY:
                    raise ApiError(413, "RequestEntityTooLarge", "the request body is too large", {})
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_REQUEST_BODY:
            self.close_connection = True
            raise ApiError(413, "RequestEntityTooLarge", "the request body is too large", {})
        return self.rfile.read(length) if length else b""

    def _serve(self) -> None:
        split = urllib.parse.urlsplit(self.path)
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            body = self._read_body()
        except ApiError as exc:
            self._send(exc.code, exc.status(), exc.headers)
            return
        try:
            code, payload, extra = self.emulator_ref.serve(self.command, split.path, split.query, headers, body)
        except Hangup as hang:
            self._hang_up(hang.how)
            return
        self._send(code, payload, extra)

    def _send(self, code: int, payload: Any, extra: dict[str, str]) -> None:
        if isinstance(payload, bytes):
            data, content_type = payload, "text/plain; charset=utf-8"
        else:
            data, content_type = json.dumps(payload, separators=(",", ":")).encode() + b"\n", "application/json"
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Audit-Id", str(uuid.uuid4()))
        for key, value in extra.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _hang_up(self, how: str) -> None:
        self.close_connection = True
        conn = self.connection
        if how == "timeout":
            deadline = HANG_SECONDS
            while deadline > 0 and not self.emulator_ref._stopping.is_set():
                # A readable socket while we owe an answer means the client gave up (EOF).
                readable, _, _ = select.select([conn], [], [], 0.25)
                if readable:
                    break
                deadline -= 0.25
        with contextlib.suppress(OSError):
            # SO_LINGER 0: close with RST, as a crashed or reset peer would.
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        with contextlib.suppress(OSError):
            conn.close()

    do_GET = _serve
    do_POST = _serve
    do_PUT = _serve
    do_PATCH = _serve
    do_DELETE = _serve
    do_HEAD = _serve
    do_OPTIONS = _serve
