"""What main.py needs around the handler: the cold start, the 503 that has Pub/Sub redeliver, and the one line
for a request functions-framework could not turn into a CloudEvent (Flask and werkzeug stay out of the handler)."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import werkzeug.exceptions

from pullsecret import handler
from pullsecret.errors import ConfigError, TransientError
from pullsecret.logs import log
from pullsecret.settings.common import Settings


class Redeliver(werkzeug.exceptions.ServiceUnavailable):
    """A transient failure, answered 503 so that Pub/Sub redelivers.

    Flask renders an HTTPException raised by a view as its response and logs nothing, whereas any other
    exception is printed to stderr as a raw traceback (outside the JSON logger and the redactor, and into
    Error Reporting on every redelivery). The structured warning line has already been written.
    """

    def __init__(self, error: TransientError) -> None:
        super().__init__(f"transient failure ({error.reason}); Pub/Sub redelivers the event")


def log_malformed_delivery(content_type: str | None, body: bytes) -> str:
    """Log a request that is neither a CloudEvent nor a Pub/Sub push envelope; returns the answer's text.

    functions-framework rejects it (400) before the function runs and logs nothing; its HTML answer echoes
    the request's headers and body. The line names the body's top-level keys only: never its values.
    """
    keys: list[str] = []
    try:
        parsed = json.loads(body) if body else None
    except (ValueError, RecursionError):
        parsed = None
    if isinstance(parsed, dict):
        keys = [str(key)[:40] for key in list(parsed)[:10]]
    shape = f"top-level keys {keys}" if keys else "no JSON object"
    reason = (
        "neither a CloudEvent nor a Pub/Sub push envelope (which needs `subscription` and a `message` with "
        f"`data` and `messageId`): {shape}, Content-Type {str(content_type or '-')[:60]}, {len(body)} bytes"
    )
    log.warning(
        f"delivery rejected (400) without action: {reason}",
        operation="reconcile",
        result="malformed",
        reason="MalformedDelivery",
    )
    return f"malformed delivery: {reason}\n"


def _shown(value: Any) -> Any:
    """One setting as JSON shows it: a pattern's text, a tuple as a list, a record as its fields."""
    if isinstance(value, re.Pattern):
        return value.pattern
    if isinstance(value, tuple):
        return [_shown(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _shown(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return value


def effective_configuration(settings: Settings) -> dict[str, Any]:
    """The settings as one log line shows them: every field, no secret (the API URL loses any user:password)."""
    shown: dict[str, Any] = {}
    for item in dataclasses.fields(settings):
        value = getattr(settings, item.name)
        if item.name == "own":  # each registered implementation's own record, by its class (no secret either)
            value = {type(record).__name__: _shown(record) for record in settings.own}
        shown[item.name] = _shown(value)
    url = urlsplit(settings.hyperfleet_api_url)
    if url.username or url.password:
        host = (url.hostname or "") + (f":{url.port}" if url.port else "")
        shown["hyperfleet_api_url"] = urlunsplit(url._replace(netloc=host))
    return shown


def start() -> handler.Adapter:
    """Cold start of the function: build the adapter, log the effective configuration in one line.

    A configuration error is one structured ERROR line naming the variable and the reason, then the process
    exits (status 1): the instance fails to start instead of failing every event, and no traceback is printed.
    """
    try:
        built = handler.adapter()
    except ConfigError as exc:
        log.error(
            f"configuration error: {exc}",
            operation="startup",
            variable=exc.variable,
            reason=str(exc),
        )
        raise SystemExit(1) from None
    log.info(
        "adapter configured",
        operation="startup",
        configuration=effective_configuration(built.settings),
    )
    return built
