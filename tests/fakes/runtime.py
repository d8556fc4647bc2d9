"""The function's in-process parts, faked for in-memory runs: its pool run inline, registry checks that check nothing,
and `Calm`, the `Run` of a plain (unexplored) run."""

from __future__ import annotations

from concurrent.futures import Executor, Future
from typing import Any


class Calm:
    """A `Run` of the in-memory services with no scheduler: every call proceeds, every write answers."""

    def point(self, label: str) -> None:
        return None

    def fault(self, label: str) -> str:
        return "ok"


class InlineExecutor(Executor):
    """The reconcile's pool, run on the calling actor's thread (so every call stays a scheduling point)."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
            future.set_exception(exc)
        return future


class NoRegistryChecks:
    def start(self, *_: Any, **__: Any) -> None:
        return None
