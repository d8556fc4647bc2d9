"""Structured logs: one Cloud Logging JSON line per record on stdout, with trace correlation and redaction.

Every line carries `severity`, `message`, `logging.googleapis.com/labels` (cluster id, event id,
adapter) and `logging.googleapis.com/trace` when the event carried a trace.  Error lines with a
stack trace carry the Error Reporting `@type` so they are grouped there.  Every string value that may
hold secret material is scrubbed by `Redactor` before the line is serialised; field names (ours, never secret
material) and the JSON structure are never touched, so a credential such as `", "` or `severity` cannot make
a line invalid JSON or rename its keys.

Two sets of strings are scrubbed: the event's (`protect`: its pull secrets, the registry tokens of its checks) and
the process's own credentials (`hold`: every token the adapter reads, mints or fetches, registered when it is read
or minted and again whenever it is handed out; they outlive events, so the CLI's texts are scrubbed of them too).
An event's redactor starts with the credentials held then and gets each one handed out during the event, so a line
is searched by one matcher. Text that a service answered (a problem detail, a title) reaches a message only through
`answer_text`: scrubbed of both and of anything shaped like a bearer token or a JWT, then cut.
"""

from __future__ import annotations

import contextvars
import json
import re
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any

from pullsecret.redaction import Held, Redactor, bounded, redact

_LEVELS = {"DEBUG": 10, "INFO": 20, "NOTICE": 25, "WARNING": 30, "ERROR": 40, "CRITICAL": 50, "OFF": 100}
_ERROR_REPORTING_TYPE = "type.googleapis.com/google.devtools.clouderrorreporting.v1beta1.ReportedErrorEvent"
_ENCODER = json.JSONEncoder(ensure_ascii=False)  # built once: json.dumps with options builds one per line


@dataclass(frozen=True)
class TraceContext:
    """A trace id (32 hex) and optional span id, from `traceparent` or `X-Cloud-Trace-Context`."""

    trace_id: str
    span_id: str | None = None
    sampled: bool = False


_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
_CLOUD_TRACE = re.compile(r"^([0-9a-fA-F]{32})(?:/(\d+))?(?:;o=([01]))?$")


def parse_trace(traceparent: str | None = None, cloud_trace_context: str | None = None) -> TraceContext | None:
    """Parse W3C `traceparent` (preferred) or `X-Cloud-Trace-Context`; None when neither is valid."""
    if traceparent:
        m = _TRACEPARENT.match(traceparent.strip().lower())
        if m and m.group(1) != "0" * 32:
            return TraceContext(m.group(1), m.group(2), bool(int(m.group(3), 16) & 1))
    if cloud_trace_context:
        m = _CLOUD_TRACE.match(cloud_trace_context.strip())
        if m:
            span = format(int(m.group(2)), "016x") if m.group(2) else None
            return TraceContext(m.group(1).lower(), span, m.group(3) == "1")
    return None


@dataclass
class LogContext:
    labels: dict[str, str] = field(default_factory=dict)
    trace: TraceContext | None = None
    redactor: Redactor = field(default_factory=Redactor)


_context: contextvars.ContextVar[LogContext | None] = contextvars.ContextVar("pullsecret_log_context", default=None)


def current() -> LogContext:
    ctx = _context.get()
    return ctx if ctx is not None else LogContext()


@contextmanager
def event_context(*, labels: dict[str, str], trace: TraceContext | None) -> Iterator[LogContext]:
    """Bind labels, trace and a fresh redactor (knowing the credentials the process holds) to every log line of one
    event."""
    ctx = LogContext(labels=dict(labels), trace=trace)
    ctx.redactor.add(_held.values())
    token = _context.set(ctx)
    try:
        yield ctx
    finally:
        _context.reset(token)


def bind(**labels: str) -> None:
    """Add labels (e.g. cluster_id once known) to the current event's log lines."""
    current().labels.update(labels)


def protect(values: Iterable[str]) -> None:
    """Register secret strings that must never appear in this event's output."""
    ctx = _context.get()
    if ctx is not None:
        ctx.redactor.add(values)


# The process's own credentials (module docstring); one per process, as the credentials are.
_held = Held()


def hold(values: Iterable[str]) -> None:
    """Register credentials the process holds (a token read, minted or fetched): never printed, in or out of events."""
    values = list(values)
    _held.add(values)
    protect(values)


def _redactors() -> tuple[Redactor]:
    """An event's redactor (it knows the held credentials too), else, outside any event, the held credentials'."""
    ctx = _context.get()
    return (ctx.redactor if ctx is not None else _held.redactor,)


def scrub(text: str) -> str:
    """`text` without any string of this event's or of the process's credentials."""
    return redact(text, _redactors())


def answer_text(text: str, limit: int) -> str:
    """A service's answer text (a problem detail, a title, a header) fit for a message, a status or a log line:
    scrubbed of every registered string and credential shape, then cut to `limit` printable characters."""
    return bounded(text, limit, _redactors())


def scrubbed(value: Any) -> Any:
    """`value` (a JSON-like document, e.g. a status body) with every string in it scrubbed as a log line's are."""
    return _scrubbed(value, _redactors()[0].scrub)


class Logger:
    """Writes Cloud Logging structured lines; thread-safe; level from configuration."""

    def __init__(self, stream: IO[str] | None = None, level: str = "INFO", project_id: str | None = None) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self.level = _LEVELS.get(level.upper(), 20)
        self.project_id = project_id

    def configure(
        self, *, level: str | None = None, project_id: str | None = None, stream: IO[str] | None = None
    ) -> None:
        """Change the level (OFF: nothing), the project of trace names, or the stream (default stdout)."""
        if stream is not None:
            self._stream = stream
        if level is not None:
            self.level = _LEVELS.get(level.upper(), 20)
        if project_id is not None:
            self.project_id = project_id

    def log(self, severity: str, message: str, *, exc: BaseException | None = None, **fields: Any) -> None:
        if _LEVELS.get(severity, 20) < self.level:
            return
        ctx = current()
        entry: dict[str, Any] = {
            "severity": severity,
            "message": message,
            "time": datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z"),
        }
        entry.update({k: v for k, v in fields.items() if v is not None})
        if ctx.labels:
            entry["logging.googleapis.com/labels"] = dict(ctx.labels)
        if ctx.trace is not None:
            trace = ctx.trace.trace_id
            entry["logging.googleapis.com/trace"] = (
                f"projects/{self.project_id}/traces/{trace}" if self.project_id else trace
            )
            if ctx.trace.span_id:
                entry["logging.googleapis.com/spanId"] = ctx.trace.span_id
            entry["logging.googleapis.com/trace_sampled"] = ctx.trace.sampled
        if exc is not None:
            # Error Reporting groups entries whose jsonPayload has this @type and a stack trace.
            entry["@type"] = _ERROR_REPORTING_TYPE
            entry["stack_trace"] = "".join(traceback.format_exception(exc))
            entry["message"] = f"{message}\n{entry['stack_trace']}"
        line = _ENCODER.encode(_scrubbed(entry, _redactors()[0].scrub))
        stream = self._stream or sys.stdout
        with self._lock:
            stream.write(line + "\n")
            stream.flush()

    def debug(self, message: str, **fields: Any) -> None:
        self.log("DEBUG", message, **fields)

    def info(self, message: str, **fields: Any) -> None:
        self.log("INFO", message, **fields)

    def warning(self, message: str, **fields: Any) -> None:
        self.log("WARNING", message, **fields)

    def error(self, message: str, **fields: Any) -> None:
        self.log("ERROR", message, **fields)

    @contextmanager
    def step(self, operation: str, **fields: Any) -> Iterator[dict[str, Any]]:
        """Log one line for a step with its duration; the caller may add fields to the yielded dict."""
        extra: dict[str, Any] = {}
        start = time.perf_counter()
        try:
            yield extra
        except BaseException as exc:
            duration = round((time.perf_counter() - start) * 1000, 2)
            self.log(
                "WARNING",
                f"{operation} failed: {exc}",
                operation=operation,
                duration_ms=duration,
                outcome="error",
                **fields,
                **extra,
            )
            raise
        duration = round((time.perf_counter() - start) * 1000, 2)
        self.log("INFO", f"{operation}: {did(extra)}", operation=operation, duration_ms=duration, **fields, **extra)


def did(fields: dict[str, Any]) -> str:
    """What a step did, in words, from the fields it recorded (`written`, `stale`, `http_status`)."""
    if fields.get("stale"):
        return "nothing written (a newer generation is recorded)"
    if fields.get("written") is True:
        writes = fields.get("writes")
        return "written" + (f" ({writes} writes)" if isinstance(writes, int) and writes > 1 else "")
    if fields.get("written") is False:
        return "nothing written (already up to date)"
    if fields.get("http_status") is not None:
        return f"answered {fields['http_status']}"
    return "done"


def _scrubbed(value: Any, scrub: Callable[[str], str]) -> Any:
    """`value` with every string in it scrubbed; keys and structure unchanged, other objects as their text."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        # Strings (most values) without a call per value; the rest recursively.
        return {key: scrub(item) if type(item) is str else _scrubbed(item, scrub) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_scrubbed(item, scrub) for item in value]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return scrub(str(value))


log = Logger()
