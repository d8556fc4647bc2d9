"""`make logs`: the function's JSON log lines (Cloud Logging's structured format) as lines a person reads.

One line per record: time, severity, the cluster, the message (it says what happened), then `reason`,
`service` and the duration (a DEBUG record: every field it carries). Lines that are not JSON (what
functions-framework or gunicorn print themselves) are shown as they are. Reads `<state>/function.log` of
`make up` (or any file of such lines); `--follow` keeps reading as the function writes, `--cluster` keeps one
cluster's lines, `--raw` prints the JSON as it is.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

LABELS = "logging.googleapis.com/labels"
# Fields worth a glance beside the message; everything else stays in the JSON (`--raw`).
SHOWN = ("reason", "service")  # the message says the rest (result, written, the HTTP answer)
# A DEBUG line is there for its fields: it shows every one but these (the line's frame, not its content).
FRAME = frozenset(
    {"severity", "message", "time", "timestamp", "duration_ms", "@type", "stack_trace", LABELS, *SHOWN}
) | {f"logging.googleapis.com/{key}" for key in ("trace", "spanId", "trace_sampled", "sourceLocation")}
_SEVERITY_WIDTH = 7


def parse(line: str) -> dict[str, Any] | None:
    """The record of one JSON log line, or None for anything else."""
    if not line.startswith("{"):
        return None
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def cluster_of(record: dict[str, Any]) -> str | None:
    labels = record.get(LABELS)
    value = labels.get("cluster_id") if isinstance(labels, dict) else None
    return str(value) if value else None


def readable(record: dict[str, Any], *, clock: bool = True) -> str:
    """One record as one line: `HH:MM:SS.mmm SEVERITY [cluster] message  (field=value ..., N ms)`."""
    stamp = str(record.get("time") or record.get("timestamp") or "")
    when = (stamp[11:23] if len(stamp) >= 23 else stamp) + " " if clock else ""  # 2026-...T14:11:06.123Z
    severity = str(record.get("severity", "")).ljust(_SEVERITY_WIDTH)
    cluster = cluster_of(record)
    message = str(record.get("message", "")).split("\n", 1)[0]  # a stack trace stays in the JSON
    fields = [f"{key}={record[key]}" for key in SHOWN if record.get(key) not in (None, "")]
    if record.get("severity") == "DEBUG":  # LOG_LEVEL=DEBUG: its fields are what it is for
        fields += [f"{key}={record[key]}" for key in sorted(record) if key not in FRAME and record[key] is not None]
    if record.get("duration_ms") is not None:
        fields.append(f"{record['duration_ms']} ms")
    tail = f"  ({', '.join(fields)})" if fields else ""
    return f"{when}{severity} {'[' + cluster + '] ' if cluster else ''}{message}{tail}".rstrip()


def render(lines: Iterable[str], *, cluster: str | None = None, raw: bool = False) -> Iterator[str]:
    """The lines to print for `lines` of a function log."""
    for text in lines:
        line = text.rstrip("\n")
        if not line:
            continue
        record = parse(line)
        if record is None:
            if cluster is None:
                yield line
            continue
        if cluster is not None and cluster_of(record) != cluster:
            continue
        yield line if raw else readable(record)


def _follow(handle: IO[str]) -> Iterator[str]:
    while True:
        line = handle.readline()
        if line:
            yield line
        else:
            time.sleep(0.2)


EXIT_NOTHING_FOUND = 4  # = the operator CLI's "nothing done": no line of that cluster


def show(path: Path, *, cluster: str | None = None, raw: bool = False, follow: bool = False) -> int:
    """Print `path` readably; exit code 2 when there is no such log, 4 when `--cluster` matched no line (one line on
    stderr says so, naming the clusters the log does have); `--follow` keeps reading (Ctrl-C ends it, 130)."""
    if not path.exists():
        print(f"No function log at {path}: `make up` writes it while the playground runs.", file=sys.stderr)
        return 2
    with path.open(encoding="utf-8", errors="replace") as handle:
        if follow:
            for out in render(_follow(handle), cluster=cluster, raw=raw):
                print(out, flush=True)
        shown = 0
        for out in render(handle, cluster=cluster, raw=raw):
            print(out)
            shown += 1
    if cluster is not None and shown == 0:
        print(f"No line of cluster {cluster} in {path}{_named(path)}.", file=sys.stderr)
        return EXIT_NOTHING_FOUND
    return 0


def _named(path: Path) -> str:
    """`; it names cls-a, cls-b` for the clusters the log has lines of (at most five), or `; it names none`."""
    with path.open(encoding="utf-8", errors="replace") as handle:
        found = sorted({c for c in (cluster_of(r) for r in map(parse, handle) if r is not None) if c})
    shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
    return f"; it names {shown or 'no cluster'}"
