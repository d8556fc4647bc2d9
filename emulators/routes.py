"""One table-driven router for the emulators' admin APIs: ``{(method, pattern): handler}``.

A pattern is a path whose ``{name}`` segments capture one segment each (``/clusters/{id}/statuses/{adapter}``);
method ``*`` matches any method, so a table can answer "this path, another method" after its exact entries.
Paths are compared segment by segment, empty segments ignored (``/state``, ``state`` and ``/state/`` are one
route), and the first matching entry in table order wins. The router answers nothing itself: ``dispatch``
returns None when no entry matches, and each emulator keeps its own error mapping and "no admin route" answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

Answer = tuple[int, Any]  # (HTTP status, JSON answer)


@dataclass(frozen=True)
class AdminCall:
    """One admin request as a handler sees it: the method, the path, the captured segments and the JSON body."""

    method: str
    path: str
    params: dict[str, str]
    body: Any


Handler = Callable[[AdminCall], Answer]


def _segments(path: str) -> list[str]:
    return [p for p in path.split("/") if p]


class AdminRouter:
    """Dispatch (method, path, body) to the handler of the first matching table entry."""

    def __init__(self, table: Mapping[tuple[str, str], Handler]) -> None:
        self._routes = [(method, _segments(pattern), handler) for (method, pattern), handler in table.items()]

    def dispatch(self, method: str, path: str, body: Any) -> Answer | None:
        parts = _segments(path)
        for wanted, pattern, handler in self._routes:
            if wanted not in ("*", method) or len(pattern) != len(parts):
                continue
            params: dict[str, str] = {}
            for expected, actual in zip(pattern, parts, strict=True):
                if expected.startswith("{") and expected.endswith("}"):
                    params[expected[1:-1]] = actual
                elif expected != actual:
                    break
            else:
                return handler(AdminCall(method, path, params, body))
        return None
