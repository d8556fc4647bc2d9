"""A deterministic scheduler that explores every order of a few actors' external calls (bounded depth-first search).

Each actor runs the product's code in a thread of its own, but only one thread runs at a time: every external
call goes through `Run.point`, which hands control back to the scheduler, and the scheduler picks who goes next.
A run is therefore a sequence of choices (who runs, and at a write: does the answer come back, is it lost after
the write landed, or lost with the write never applied, and when a lost write lands relative to the others'
calls). `explore` replays the product from scratch for every sequence, depth first: the next run keeps the
longest prefix that still has an untried alternative. Bounds keep the count finite and the test fast: at most
`preemptions` switches away from an actor that could have gone on (CHESS-style preemption bounding, which
still covers every order of whole steps), at most `faults` lost answers per run.

A write that lands late is a pending commit: a schedulable item of its own, so it can land after any of the
other actors' calls that come before its sender learns the outcome (a linearizable service commits a request
somewhere between sending it and the answer, or never).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

SWITCH_TIMEOUT_S = 20.0  # a harness bug, not a product one, when a handover takes this long
MAX_STEPS = 2_000


class HarnessError(AssertionError):
    pass


@dataclass
class _Actor:
    name: str
    body: Callable[[], Any]
    state: str = "new"  # new | ready | running | blocked | done
    blocked_on: SchedEvent | None = None
    doing: str = "start"  # the call it waits to make (for the trace)
    woken_by_timeout: bool = False
    error: BaseException | None = None
    result: Any = None
    thread: threading.Thread | None = None
    resume: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(0))


def _woken(actor: _Actor) -> bool:
    return actor.state == "blocked" and actor.blocked_on is not None and actor.blocked_on.is_set()


@dataclass
class _Pending:
    """A write sent whose answer was lost: it lands when the scheduler picks it."""

    name: str
    commit: Callable[[], None]
    sender: _Actor


@dataclass
class Stats:
    runs: int = 0
    seconds: float = 0.0
    longest: int = 0
    failures: list[str] = field(default_factory=list)


class SchedEvent:
    """threading.Event for code running under a `Run`: waiting is a scheduling point, a timeout is a choice."""

    def __init__(self, run: Run) -> None:
        self._run = run
        self._flag = False

    def is_set(self) -> bool:
        return self._flag

    def set(self) -> None:
        self._flag = True

    def wait(self, timeout: float | None = None) -> bool:
        if self._flag:
            return True
        return self._run.block_on(self)


class Run:
    """One execution of the actors under one sequence of choices."""

    def __init__(self, prefix: list[int], *, preemptions: int, faults: int) -> None:
        self.prefix = prefix
        self.trace: list[tuple[int, int]] = []
        self.labels: list[str] = []
        self.max_preemptions = preemptions
        self.max_faults = faults
        self.preemptions = 0
        self.faults = 0
        self.actors: list[_Actor] = []
        self.pending: list[_Pending] = []
        self._scheduler = threading.Semaphore(0)  # released when the running actor yields, blocks or ends
        self._local = threading.local()

    # -- choices --------------------------------------------------------------------------------
    def choose(self, options: int, label: str) -> int:
        """The next choice among `options` (0 when the prefix is used up: the default path)."""
        if options <= 1:
            return 0
        index = len(self.trace)
        chosen = self.prefix[index] if index < len(self.prefix) else 0
        self.trace.append((chosen, options))
        if label != "who":
            self.labels.append(f"  {label}: choice {chosen} of {options}")
        return chosen

    # -- actors ---------------------------------------------------------------------------------
    def spawn(self, name: str, body: Callable[[], Any]) -> None:
        self.actors.append(_Actor(name, body))

    def me(self) -> _Actor:
        actor: _Actor | None = getattr(self._local, "actor", None)
        if actor is None:
            raise HarnessError("an external call outside an actor")
        return actor

    def point(self, label: str) -> None:
        """Called by an actor before an external call: let the scheduler decide who goes next."""
        actor = self.me()
        actor.state, actor.doing = "ready", label
        self._yield(actor)

    def block_on(self, event: SchedEvent) -> bool:
        actor = self.me()
        actor.state, actor.blocked_on, actor.woken_by_timeout, actor.doing = "blocked", event, False, "wait"
        self._yield(actor)
        actor.blocked_on = None
        return not actor.woken_by_timeout

    def _yield(self, actor: _Actor) -> None:
        self._scheduler.release()
        if not actor.resume.acquire(timeout=SWITCH_TIMEOUT_S):
            raise HarnessError(f"{actor.name} was never scheduled again")

    def fault(self, label: str) -> str:
        """At a write: "ok", "landed" (the answer is lost after the write landed) or "lost" (never applied)."""
        if self.faults >= self.max_faults:
            return "ok"
        choice = ("ok", "landed", "lost")[self.choose(3, f"fault {label}")]
        if choice != "ok":
            self.faults += 1
        return choice

    def land_later(self, label: str, commit: Callable[[], None]) -> None:
        """The current actor's write lands when the scheduler picks it; the actor waits for that."""
        actor = self.me()
        event = SchedEvent(self)
        self.pending.append(_Pending(label, lambda: (commit(), event.set()), actor))
        event.wait()

    def _thread(self, actor: _Actor) -> None:
        self._local.actor = actor
        if not actor.resume.acquire(timeout=SWITCH_TIMEOUT_S):
            return
        try:
            actor.result = actor.body()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            actor.error = exc
        finally:
            actor.state = "done"
            self._scheduler.release()

    # -- the scheduler --------------------------------------------------------------------------
    def execute(self) -> None:
        """Run the actors to the end; only one thread (an actor or this one) runs at any time."""
        for actor in self.actors:
            actor.state = "ready"
            actor.thread = threading.Thread(target=self._thread, args=(actor,), daemon=True, name=actor.name)
            actor.thread.start()
        current: _Actor | None = None
        for _ in range(MAX_STEPS):
            if current is not None and not self._scheduler.acquire(timeout=SWITCH_TIMEOUT_S):
                raise HarnessError(f"{current.name} ran without reaching a scheduling point")
            runnable: list[_Actor | _Pending] = [a for a in self.actors if a.state == "ready" or _woken(a)]
            runnable += self.pending
            if not runnable:
                blocked = [a for a in self.actors if a.state == "blocked"]
                if not blocked:
                    break  # every actor is done
                # Nobody can move: a wait times out (which one is a choice).
                actor = blocked[self.choose(len(blocked), "timeout")]
                actor.woken_by_timeout = True
                runnable = [actor]
            if current is not None and current in runnable and self.preemptions >= self.max_preemptions:
                chosen: _Actor | _Pending = current
            else:
                # The current actor first: the default path runs each actor as far as it goes.
                if current is not None and current in runnable:
                    runnable.remove(current)
                    runnable.insert(0, current)
                chosen = runnable[self.choose(len(runnable), "who")]
                if current is not None and current in runnable and chosen is not current:
                    self.preemptions += 1
            if isinstance(chosen, _Pending):
                self.pending.remove(chosen)
                self.labels.append(f"  the lost {chosen.name} of {chosen.sender.name} lands")
                chosen.commit()
                self._scheduler.release()  # nobody ran: decide again at once
                continue
            current = chosen
            self.labels.append(f"{chosen.name}: {chosen.doing if chosen.state == 'ready' else 'wakes'}")
            chosen.state = "running"
            chosen.resume.release()
        else:
            raise HarnessError("too many steps: a livelock in the product or the harness")
        for actor in self.actors:
            assert actor.thread is not None
            actor.thread.join(timeout=SWITCH_TIMEOUT_S)

    def next_prefix(self) -> list[int] | None:
        """The depth-first successor of this run's choices, or None when every sequence was tried."""
        for index in range(len(self.trace) - 1, -1, -1):
            chosen, options = self.trace[index]
            if chosen + 1 < options:
                return [c for c, _ in self.trace[:index]] + [chosen + 1]
        return None


def explore(
    build: Callable[[Run], Callable[[], None]],
    *,
    preemptions: int,
    faults: int,
    limit: int = 1_000_000,
) -> Stats:
    """Run every choice sequence within the bounds; `build` spawns the actors and returns the invariant check.

    The check raises AssertionError with the run's trace appended; the first failure stops the search.
    """
    stats = Stats()
    started = time.monotonic()
    prefix: list[int] | None = []
    while prefix is not None and stats.runs < limit:
        run = Run(prefix, preemptions=preemptions, faults=faults)
        check = build(run)
        run.execute()
        stats.runs += 1
        stats.longest = max(stats.longest, len(run.trace))
        try:
            for actor in run.actors:
                if actor.error is not None and not isinstance(actor.error, AssertionError):
                    raise AssertionError(f"{actor.name} raised {type(actor.error).__name__}: {actor.error}")
                if actor.error is not None:
                    raise actor.error
            check()
        except AssertionError as exc:
            stats.seconds = time.monotonic() - started
            trace = "\n  ".join(run.labels)
            raise AssertionError(f"{exc}\nafter {stats.runs} interleaving(s); this one:\n  {trace}") from None
        prefix = run.next_prefix()
    stats.seconds = time.monotonic() - started
    return stats
