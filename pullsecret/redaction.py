"""Redaction: every registered secret string, and its JSON-escaped form, replaced wherever a log line quotes it.

What is replaced is the union of the spans of every occurrence of every registered string found in a line:
overlapping or nested secrets become one `[REDACTED]`, so no part of any of them is left (replacing one string
after another would leave the part of one that overlaps another already replaced).

Cost model (a cluster owner chooses how many strings a pull secret registers, up to MAX_REGISTRIES entries):
`add` only records strings; the matcher is built when a line is scrubbed after an add. Two matchers by size:
- up to SMALL strings (every ordinary event: a few dozen), one regular expression of them all, scanned in C;
- past that, their first WINDOW characters in a set, and a text's windows of that length intersected with it
  (a compiled alternation of thousands of literals costs about 90 ms to build and about 0.8 ms to search one log
  line on Python 3.11; the windows cost a few microseconds per hundred characters, and the set is built in one
  pass).
Two tiers keep that cheap when strings arrive one by one (a registry token per handshake) after thousands arrived
at once (every form of the pull secret, registered up front): late strings go to a small second matcher, merged
into the first once they outnumber a quarter of it. Thread-safe: registry jobs add while lines are logged.

Two more pieces, for the text a service answers (a problem detail, a title, a message), which may quote what it was
sent (RFC 9457 §5: problem details can leak what the server saw):
- `Held`: the credentials the process itself holds (its tokens, read from a file, minted or fetched; they outlive any
  one event), the newest KEEP of them, scrubbed wherever an event's own strings are;
- `bounded`: answer text redacted first, then cut (a secret straddling the cut would otherwise leave its prefix), and
  with `shapes` every credential-shaped token redacted too, registered or not: a value after `Bearer` or after an
  `Authorization` header name (RFC 6750 §2.1 b64token), and a compact JWS/JWT (RFC 7515 §7.1, its header `eyJ`).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable

REDACTED = "[REDACTED]"
MIN_SECRET = 4  # shorter strings are not registered (they would redact ordinary words)
SMALL = 256
WINDOW = MIN_SECRET
# Group 1: a credential after a bearer scheme or after `Authorization:` and any scheme; group 2: a compact JWS.
# At least 8 characters, so that a scheme's parameters (`Bearer realm="..."`) stay readable.
_SHAPES = re.compile(
    r"(?:\b(?i:bearer)\s+|\b(?i:authorization)[\\\"']{0,2}\s*[:=]\s*[\\\"']{0,2}[A-Za-z][\w.-]*\s+)"
    r"([A-Za-z0-9\-._~+/]{8,}=*)"
    r"|\b(eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*)"
)


class _Regex:
    """Any of a few strings, by one regular expression of them all."""

    def __init__(self, secrets: set[str]) -> None:
        self._ordered = tuple(sorted(secrets, key=len, reverse=True))
        self._pattern = re.compile("|".join(map(re.escape, self._ordered)))

    def hits(self, text: str) -> list[str]:
        if self._pattern.search(text) is None:
            return []
        return [secret for secret in self._ordered if secret in text]


class _Windows:
    """Any of many strings, by the set of their first WINDOW characters."""

    def __init__(self, secrets: set[str]) -> None:
        self._by_head: dict[str, list[str]] = {}
        for secret in secrets:
            self._by_head.setdefault(secret[:WINDOW], []).append(secret)
        self._heads = frozenset(self._by_head)

    def hits(self, text: str) -> list[str]:
        found = self._heads.intersection({text[i : i + WINDOW] for i in range(len(text) - WINDOW + 1)})
        return [secret for head in found for secret in self._by_head[head] if secret in text]


class _Nothing:
    def hits(self, text: str) -> list[str]:
        return []


_Matcher = _Regex | _Windows | _Nothing
_NOTHING = _Nothing()


def _matcher(secrets: set[str]) -> _Matcher:
    if not secrets:
        return _NOTHING
    return _Regex(secrets) if len(secrets) <= SMALL else _Windows(secrets)


def _json_escaped(value: str) -> str:
    """`value` as it reads inside a JSON string (the same text for the usual printable ASCII credential)."""
    if value.isascii() and value.isprintable() and '"' not in value and "\\" not in value:
        return value
    return json.dumps(value)[1:-1]


class Redactor:
    """Scrubs known secret strings (and their JSON-escaped forms, should a value quote JSON) out of text."""

    _LATE_MAX = 64

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known: set[str] = set()
        self._bulk: set[str] = set()
        self._late: set[str] = set()
        self._pending: list[str] = []
        # Matchers are swapped whole: a reader sees one built from a consistent set.
        self._bulk_matcher: _Matcher = _NOTHING
        self._late_matcher: _Matcher = _NOTHING

    def __repr__(self) -> str:
        return f"Redactor({len(self._known)} strings)"

    def __len__(self) -> int:
        return len(self._known)

    def add(self, values: Iterable[str]) -> None:
        with self._lock:
            for value in values:
                if value and len(value) >= MIN_SECRET and value not in self._known:
                    for form in (value, _json_escaped(value)):
                        if form not in self._known:
                            self._known.add(form)
                            self._pending.append(form)

    def _matchers(self) -> tuple[_Matcher, _Matcher]:
        if self._pending:
            with self._lock:
                if self._pending:
                    self._late.update(self._pending)
                    self._pending.clear()
                    if len(self._late) > max(self._LATE_MAX, len(self._bulk) // 4):
                        self._bulk |= self._late
                        self._late = set()
                        self._bulk_matcher = _matcher(self._bulk)
                    self._late_matcher = _matcher(self._late)
        return self._bulk_matcher, self._late_matcher

    def scrub(self, text: str) -> str:
        """`text` with the union of every occurrence of every registered string replaced: overlapping or nested
        occurrences (`abcdefgh` and `efghijkl` in `abcdefghijkl`) are one span, one REDACTED, so no part of any
        secret survives; spans that only touch stay apart."""
        spans = self.occurrences(text)
        if not spans:
            return text
        return _replace(text, _union(spans))

    def occurrences(self, text: str) -> list[tuple[int, int]]:
        """Every (start, end) of a registered string in `text`, overlapping ones included (not merged)."""
        bulk, late = self._matchers()
        hits = bulk.hits(text) + late.hits(text)  # a string is in one tier only: no duplicates
        return _occurrences(text, hits) if hits else []


class Held:
    """The credentials the process holds, the newest `keep` of them (a token held again becomes the newest); their
    redactor is replaced whole when the oldest is dropped. Thread-safe."""

    KEEP = 32

    def __init__(self, keep: int = KEEP) -> None:
        self._keep = keep
        self._lock = threading.Lock()
        self._values: list[str] = []  # oldest first; at most `keep`, so a search costs nothing
        self.redactor = Redactor()

    def __repr__(self) -> str:
        return f"Held({len(self._values)} credentials)"

    def values(self) -> list[str]:
        """The credentials held, oldest first (a copy)."""
        with self._lock:
            return list(self._values)

    def add(self, values: Iterable[str]) -> None:
        with self._lock:
            for value in values:
                if not value or len(value) < MIN_SECRET:
                    continue
                if value in self._values:
                    self._values.remove(value)
                    self._values.append(value)
                    continue
                self._values.append(value)
                if len(self._values) <= self._keep:
                    self.redactor.add([value])
                    continue
                del self._values[0]
                fresh = Redactor()
                fresh.add(self._values)
                self.redactor = fresh


def shaped(text: str) -> list[tuple[int, int]]:
    """Every (start, end) of a credential-shaped token in `text` (the module's docstring says which shapes)."""
    return [match.span(1) if match.group(1) else match.span(2) for match in _SHAPES.finditer(text)]


def redact(text: str, redactors: Iterable[Redactor], *, shapes: bool = False) -> str:
    """`text` with every string any of `redactors` holds (and with `shapes`, every credential-shaped token) replaced,
    overlapping occurrences as one span (as `Redactor.scrub`)."""
    spans = [span for redactor in redactors for span in redactor.occurrences(text)]
    if shapes:
        spans += shaped(text)
    return _replace(text, _union(spans)) if spans else text


def bounded(text: str, limit: int, redactors: Iterable[Redactor]) -> str:
    """A service's answer text fit for a message: redacted (registered strings and credential shapes) BEFORE it is
    cut to `limit` characters, each character that is not printable shown as `?`."""
    redacted = redact(text, redactors, shapes=True)
    return "".join(c if c.isprintable() else "?" for c in redacted[:limit])


def _occurrences(text: str, secrets: Iterable[str]) -> list[tuple[int, int]]:
    """Every (start, end) at which one of `secrets` occurs in `text`, overlapping occurrences included."""
    spans: list[tuple[int, int]] = []
    for secret in secrets:
        start = text.find(secret)
        while start >= 0:
            spans.append((start, start + len(secret)))
            start = text.find(secret, start + 1)
    return spans


def _union(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Overlapping spans merged, in order."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _replace(text: str, spans: list[tuple[int, int]]) -> str:
    pieces: list[str] = []
    at = 0
    for start, end in spans:
        pieces += [text[at:start], REDACTED]
        at = end
    pieces.append(text[at:])
    return "".join(pieces)
