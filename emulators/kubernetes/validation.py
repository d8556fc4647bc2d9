"""Validation and decoding of Secrets as kube-apiserver does it (field errors, canonical form)."""

from __future__ import annotations

import base64
import binascii
import copy
import json
import re
from typing import Any

from emulators.kubernetes.base import Json
from emulators.kubernetes.status import ApiError, FieldError, bad_request

MAX_SECRET_SIZE = 1024 * 1024
MAX_ANNOTATIONS_SIZE = 256 * 1024

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
