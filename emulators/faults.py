"""Shared machinery of the emulators: call counters and fault injection.

Every emulator owns one `ServiceControl` (its service name, e.g. ``"secretmanager"``) and calls
``control.enter(method)`` at the start of every request it serves.  ``enter`` counts the call,
sleeps for any configured latency and returns the fault to inject, if any; the emulator then
answers with that fault in its own protocol (a gRPC status code name such as ``"UNAVAILABLE"``,
an HTTP status such as ``"503"``, or ``"reset"`` to drop the connection / ``"timeout"`` to hang).

Faults are configured through the admin API (see emulators/README.md) as JSON objects:

    {"service": "secretmanager", "method": "AddSecretVersion" | "*",
     "code": "UNAVAILABLE", "count": 3}            # fail the next 3 matching calls
    {"service": "kubernetes", "method": "*", "code": "503", "rate": 0.5, "seed": 7}
    {"service": "*", "method": "*", "latency_ms": 25}  # added latency on every call
    {"service": "secretmanager", "method": "ListSecretVersions",
     "code": "UNAVAILABLE", "count": 1, "skip": 1}  # let 1 call through, then fail (a pager's page 2)
    {"service": "secretmanager", "method": "AddSecretVersion",
     "code": "UNAVAILABLE", "count": 1, "lost_response": true}  # applied, then answered with the code

``lost_response`` (gRPC emulators) models a response lost on the way back: the call takes effect and the
client still sees the failure, as after a dropped connection or a deadline that expired server-side
(https://cloud.google.com/apis/design/errors#error_retries: UNAVAILABLE/DEADLINE_EXCEEDED "may have been
applied"). ``enter`` returns such a code prefixed with ``LOST_RESPONSE``.

A write quota (Secret Manager's per-project write limit) is configured separately with
``WriteQuota``; see emulators/secretmanager/.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

LOST_RESPONSE = "lost-response:"  # prefix of a fault code injected after the call took effect


@dataclass
class FaultRule:
    """One fault rule; matches calls by service and method (``"*"`` matches any)."""

    service: str = "*"
    method: str = "*"
    code: str | None = None
    count: int | None = None  # fail the next N matching calls, then the rule is spent
    rate: float | None = None  # fail this fraction of matching calls
    latency_ms: float = 0.0
    seed: int | None = None
    skip: int = 0  # matching calls let through untouched before the rule applies
    lost_response: bool = False  # apply the call, then answer with `code`
    injected: int = 0
    skipped: int = 0
    _rng: random.Random = field(default_factory=random.Random, repr=False)

    @classmethod
    def from_json(cls, spec: dict[str, Any]) -> FaultRule:
        """Build a rule from its admin-API JSON form; raises ValueError on a malformed spec."""
        known = {"service", "method", "code", "count", "rate", "latency_ms", "seed", "skip", "lost_response"}
        unknown = set(spec) - known
        if unknown:
            raise ValueError(f"unknown fault fields: {sorted(unknown)}")
        rule = cls(
            service=str(spec.get("service", "*")),
            method=str(spec.get("method", "*")),
            code=None if spec.get("code") is None else str(spec["code"]),
            count=None if spec.get("count") is None else int(spec["count"]),
            rate=None if spec.get("rate") is None else float(spec["rate"]),
            latency_ms=float(spec.get("latency_ms", 0.0)),
            seed=None if spec.get("seed") is None else int(spec["seed"]),
            skip=int(spec.get("skip", 0)),
            lost_response=bool(spec.get("lost_response", False)),
        )
        if rule.lost_response and rule.code is None:
            raise ValueError("lost_response needs a code")
        if rule.code is None and not rule.latency_ms:
            raise ValueError("a fault needs a code or a latency_ms")
        if rule.code is not None and rule.count is None and rule.rate is None:
            raise ValueError("a fault with a code needs a count or a rate")
        if rule.rate is not None and not 0.0 <= rule.rate <= 1.0:
            raise ValueError("rate must lie in [0, 1]")
        if rule.seed is not None:
            rule._rng = random.Random(rule.seed)
        return rule

    def matches(self, service: str, method: str) -> bool:
        return self.service in ("*", service) and self.method in ("*", method)

    def spent(self) -> bool:
        return self.count is not None and self.injected >= self.count

    def to_json(self) -> dict[str, Any]:
        return {
            "service": self.service,
            "method": self.method,
            "code": self.code,
            "count": self.count,
            "rate": self.rate,
            "latency_ms": self.latency_ms,
            "seed": self.seed,
            "skip": self.skip,
            "lost_response": self.lost_response,
            "injected": self.injected,
        }


class FaultBook:
    """All fault rules and call counters of one emulator stack; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rules: list[FaultRule] = []
        self._calls: Counter[tuple[str, str]] = Counter()
        self._faults: Counter[tuple[str, str]] = Counter()

    # -- configuration -------------------------------------------------------------------
    def add(self, spec: dict[str, Any]) -> FaultRule:
        rule = FaultRule.from_json(spec)
        with self._lock:
            self._rules.append(rule)
        return rule

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()

    def rules(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r.to_json() for r in self._rules]

    # -- counters ------------------------------------------------------------------------
    def calls(self) -> dict[str, dict[str, int]]:
        """Calls served, as {service: {method: count}}."""
        out: dict[str, dict[str, int]] = {}
        with self._lock:
            for (service, method), n in sorted(self._calls.items()):
                out.setdefault(service, {})[method] = n
        return out

    def faults_injected(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        with self._lock:
            for (service, method), n in sorted(self._faults.items()):
                out.setdefault(service, {})[method] = n
        return out

    def reset_counters(self) -> None:
        with self._lock:
            self._calls.clear()
            self._faults.clear()

    # -- the hot path --------------------------------------------------------------------
    def enter(self, service: str, method: str) -> str | None:
        """Count one call; sleep for configured latency; return a fault code to inject or None."""
        latency = 0.0
        code: str | None = None
        with self._lock:
            self._calls[(service, method)] += 1
            for rule in self._rules:
                if not rule.matches(service, method) or rule.spent():
                    continue
                if rule.skipped < rule.skip:
                    rule.skipped += 1
                    continue
                latency += rule.latency_ms
                fires = rule.count is not None or rule._rng.random() < (rule.rate or 0.0)
                if code is None and rule.code is not None and fires:
                    rule.injected += 1
                    code = LOST_RESPONSE + rule.code if rule.lost_response else rule.code
            if code is not None:
                self._faults[(service, method)] += 1
        if latency:
            time.sleep(latency / 1000.0)
        return code


class ServiceControl:
    """The view of a `FaultBook` one emulator uses: its service name bound in."""

    def __init__(self, book: FaultBook, service: str) -> None:
        self.book = book
        self.service = service

    def enter(self, method: str) -> str | None:
        return self.book.enter(self.service, method)


class WriteQuota:
    """A per-key sliding-window write quota (Secret Manager: writes per minute per project)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.limit: int | None = None
        self.window_s = 60.0
        self._writes: dict[str, list[float]] = {}
        self.rejected = 0

    def configure(self, limit: int | None, window_s: float = 60.0) -> None:
        with self._lock:
            self.limit = limit
            self.window_s = window_s
            self._writes.clear()
            self.rejected = 0

    def admit(self, key: str) -> bool:
        """Record one write for `key`; False when it would exceed the quota (nothing recorded)."""
        with self._lock:
            if self.limit is None:
                return True
            now = time.monotonic()
            stamps = [t for t in self._writes.get(key, []) if now - t < self.window_s]
            if len(stamps) >= self.limit:
                self._writes[key] = stamps
                self.rejected += 1
                return False
            stamps.append(now)
            self._writes[key] = stamps
            return True

    def to_json(self) -> dict[str, Any]:
        with self._lock:
            return {"limit": self.limit, "window_s": self.window_s, "rejected": self.rejected}
