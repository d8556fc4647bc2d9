"""Shared machinery of the reliability suites: corpus macros, the figures of the report, the leak scanner.

Figures are process-wide counters (the suites run in one pytest process); `tests/reliability/conftest.py`
prints them as the report table at the end of the session and fails the session when a must-be-zero
figure is not zero.
"""

from __future__ import annotations

import base64
import json
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tests.support import QUIET_PLATFORM_HOST, SENSITIVE, quiet_platform_source  # noqa: F401 - re-exported

CORPUS_DIR = Path(__file__).resolve().parent.parent / "corpus"
FULL = os.environ.get("RELIABILITY_FULL", "") not in ("", "0", "false", "no")

# Order of the report table; the last four must be zero.
FIGURES = (
    "cases tried",
    "faults injected",
    "deliveries",
    "events converged",
    "events lost",
    "duplicate versions",
    "regressions",
    "leaks",
)
MUST_BE_ZERO = ("events lost", "duplicate versions", "regressions", "leaks")

_lock = threading.Lock()
_figures: dict[str, int] = dict.fromkeys(FIGURES, 0)
_leak_details: list[str] = []
_texts_scanned = 0


def count(figure: str, n: int = 1) -> None:
    assert figure in _figures, figure
    with _lock:
        _figures[figure] += n


def figures() -> dict[str, int]:
    with _lock:
        return dict(_figures)


def texts_scanned() -> int:
    return _texts_scanned


def leak_details() -> list[str]:
    with _lock:
        return list(_leak_details)


# --- credentials: every form a leak could take ----------------------------------------------------------


def credential_forms(document: Any) -> set[str]:
    """Every string whose appearance in output leaks a credential of this (possibly invalid) pull secret.

    Raw `auth` (padded and unpadded), decoded `user:password`, the password alone, `password`,
    `identitytoken` / `registrytoken` values, and the JSON fragment of each registry entry.
    Short values (< 8 characters) are skipped: they would match innocent text.
    """
    forms: set[str] = set()
    if isinstance(document, str):
        try:
            document = json.loads(document)
        except (ValueError, RecursionError):
            return forms
    auths = document.get("auths") if isinstance(document, dict) else None
    if not isinstance(auths, dict):
        return forms
    for entry in auths.values():
        if not isinstance(entry, dict):
            continue
        for key in ("auth", "password", "identitytoken", "registrytoken"):
            value = entry.get(key)
            if isinstance(value, str) and value:
                forms.add(value)
                forms.add(value.rstrip("="))
        auth = entry.get("auth")
        if isinstance(auth, str) and auth:
            try:
                decoded = base64.b64decode(auth + "=" * (-len(auth) % 4), validate=True).decode("utf-8")
            except (ValueError, UnicodeDecodeError):
                decoded = ""
            if decoded:
                forms.add(decoded)
                if ":" in decoded:
                    forms.add(decoded.split(":", 1)[1])
        for dumps in (
            json.dumps(entry, separators=(",", ":"), sort_keys=True),
            json.dumps(entry, sort_keys=True),
            json.dumps(entry),
        ):
            if len(entry) > 0:
                forms.add(dumps)
    return {form for form in forms if len(form) >= 8}


BASE_FORMS: frozenset[str] = frozenset(SENSITIVE)
# The files holding the adapter's own tokens (the HyperFleet API's, the Pull Secret Service's) in the running test's
# stack: every scan also looks for what they hold at the time of the scan (tests/reliability/conftest.py sets them).
_token_files: list[str] = []


def watch_token_files(paths: Iterable[str]) -> None:
    _token_files[:] = list(paths)


def own_tokens() -> set[str]:
    """The adapter's own tokens, as the watched files hold them now."""
    found: set[str] = set()
    for path in _token_files:
        try:
            token = Path(path).read_text(encoding="utf-8").strip()
        except OSError:
            continue
        if len(token) >= 8:
            found.add(token)
    return found


def scan(where: str, texts: Iterable[str], extra_forms: Iterable[str] = ()) -> list[str]:
    """Count and return every credential form found in `texts` (log lines, exception texts, status bodies): the
    shared pull secrets', `extra_forms`, and the adapter's own tokens (`own_tokens`)."""
    global _texts_scanned  # noqa: PLW0603 - a process-wide figure, like the others
    forms = set(BASE_FORMS) | set(extra_forms) | own_tokens()
    found: list[str] = []
    scanned = 0
    for text in texts:
        scanned += 1
        for form in forms:
            if form and form in text:
                # Name the place, never the credential.
                found.append(f"{where}: a credential form of {len(form)} characters")
    with _lock:
        _texts_scanned += scanned
        _leak_details.extend(found)
        _figures["leaks"] += len(found)
    return found


# --- corpus macros ----------------------------------------------------------------------------------------


def expand(value: Any) -> Any:
    """Expand the corpus macros, innermost first.

    {"$repeat": [text, n]}      text repeated n times
    {"$b64": value}             base64 of value (text as UTF-8, anything else as its JSON)
    {"$json": value}            the JSON text of value
    {"$auth": "user:password"}  base64 of the text (a docker `auth` value)
    {"$concat": [a, b, ...]}    the texts joined
    """
    if isinstance(value, list):
        return [expand(item) for item in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        ((key, arg),) = value.items()
        if key == "$repeat":
            text, times = expand(arg)
            return str(text) * int(times)
        if key == "$b64":
            inner = expand(arg)
            raw = inner.encode("utf-8") if isinstance(inner, str) else json.dumps(inner).encode("utf-8")
            return base64.b64encode(raw).decode("ascii")
        if key == "$json":
            return json.dumps(expand(arg))
        if key == "$auth":
            return base64.b64encode(str(expand(arg)).encode("utf-8")).decode("ascii")
        if key == "$concat":
            return "".join(str(part) for part in expand(arg))
    return {key: expand(item) for key, item in value.items()}


def load_corpus() -> list[dict[str, Any]]:
    """Every case of every `tests/corpus/**/*.json` file (a list of cases, or {"cases": [...]})."""
    cases: list[dict[str, Any]] = []
    for path in sorted(CORPUS_DIR.rglob("*.json")):
        body = json.loads(path.read_text(encoding="utf-8"))
        items = body["cases"] if isinstance(body, dict) else body
        for item in items:
            case = dict(item)
            case["_file"] = str(path.relative_to(CORPUS_DIR))
            cases.append(case)
    return cases
