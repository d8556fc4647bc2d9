"""Status error bodies with the real apiserver's codes, reasons and messages."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from emulators.kubernetes.base import Json

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


def forbidden(user: str, verb: str, resource: str, name: str, namespace: str, *, group: str = "") -> ApiError:
    """RBAC's refusal (k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go, ForbiddenStatusError)."""
    # ForbiddenStatusError names the resource without its subresource; the message's "cannot" part names both.
    base = resource.split("/", 1)[0]
    qualified = f"{base}.{group}" if group else base
    subject = f'{qualified} "{name}"' if name else qualified
    where = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
    details: Json = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    details["kind"] = base
    return ApiError(
        403,
        "Forbidden",
        f'{subject} is forbidden: User "{user}" cannot {verb} resource "{resource}" in API group "{group}"{where}',
        details,
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
