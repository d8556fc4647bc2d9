"""Shared types and the server's clock (timestamps as the apiserver writes them)."""

from __future__ import annotations

import datetime
from typing import Any

Path = tuple[str, ...]
Json = dict[str, Any]


def utc_now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339(value: Any) -> str:
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
