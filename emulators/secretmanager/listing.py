"""The List RPCs' paging (opaque offset tokens, at most 25,000 per page) and the subset of the filter syntax served."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from typing import Any

from emulators.grpcbase import fail
from emulators.secretmanager.model import INVALID, Secret, Version

MAX_PAGE_SIZE = 25_000
_FILTER_TERM = re.compile(r"^(-|NOT\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*(:|=)\s*(\"[^\"]*\"|\S+)$")


def paginate(items: list[Any], page_size: int, page_token: str) -> tuple[list[Any], str]:
    if page_size < 0:
        fail(INVALID, "page_size must not be negative.")
    size = min(page_size or MAX_PAGE_SIZE, MAX_PAGE_SIZE)
    start = 0
    if page_token:
        try:
            start = int(base64.urlsafe_b64decode(page_token.encode()).decode().removeprefix("offset:"))
        except (ValueError, binascii.Error):
            fail(INVALID, f"Invalid page token [{page_token}].")
        if start < 0 or start > len(items):
            fail(INVALID, f"Invalid page token [{page_token}].")
    end = start + size
    token = base64.urlsafe_b64encode(f"offset:{end}".encode()).decode() if end < len(items) else ""
    return items[start:end], token


FieldGetter = Callable[[str], str | None]


def compile_filter(text: str) -> Callable[[FieldGetter], bool]:
    """A small subset of the List filter syntax: AND-ed ``[NOT|-]field(:|=)value`` terms.

    ``:`` is "has" (substring; ``*`` = present), ``=`` is equality.  Anything else is refused with
    INVALID_ARGUMENT rather than silently ignored, so a filter the emulator cannot honour is noticed.
    """
    terms: list[tuple[bool, str, str, str]] = []
    tokens = re.findall(r'(?:NOT\s+)?[^\s"]+(?:"[^"]*")?', text.strip())
    for token in tokens:
        if token == "AND":
            continue
        if token == "OR":
            fail(INVALID, "The emulator does not support OR in filters.")
        match = _FILTER_TERM.match(token)
        if not match:
            fail(INVALID, f"Invalid filter term [{token}].")
        negate, key, op, value = match.groups()
        terms.append((bool(negate), key, op, value.strip('"')))

    def keep(get: FieldGetter) -> bool:
        for negate, key, op, value in terms:
            actual = get(key)
            if op == "=":
                hit = actual is not None and actual == value
            elif value == "*":
                hit = actual is not None
            else:
                hit = actual is not None and value.lower() in actual.lower()
            if hit == negate:
                return False
        return True

    return keep


def secret_field(secret: Secret, key: str) -> str | None:
    if key == "name":
        return secret.name
    if key.startswith("labels."):
        return dict(secret.meta.labels).get(key.removeprefix("labels."))
    if key.startswith("annotations."):
        return dict(secret.meta.annotations).get(key.removeprefix("annotations."))
    fail(INVALID, f"The emulator cannot filter secrets on [{key}].")


def version_field(secret: Secret, version: Version, key: str) -> str | None:
    if key == "state":
        return version.state
    if key == "name":
        return f"{secret.name}/versions/{version.number}"
    fail(INVALID, f"The emulator cannot filter versions on [{key}].")
