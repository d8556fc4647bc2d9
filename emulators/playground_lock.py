"""One playground per state folder: `<state>/lock`, held by the running `make up`, and `make down`.

`up` holds an exclusive flock on `<state>/lock` (which also records its pid) for as long as it runs, and refuses
to start while another one holds it, before it touches anything there. The kernel drops the lock when the process
dies, however it dies, so a stale file never blocks a new start. `down` sends the holder SIGTERM and waits until
the lock is free. Light on imports: `make trigger` and `make logs` ask who holds it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from emulators.playground_env import read_env_file

STATE_DIR = Path(".playground")
DOWN_TIMEOUT_S = 60.0
DOWN_FILE = "function-down"  # why the function is not running after a restart failed; `make trigger` reads it


class AlreadyRunning(Exception):
    """Another `up` holds the state folder's lock."""


@contextlib.contextmanager
def holding_lock(state_dir: Path) -> Iterator[None]:
    """Hold `<state>/lock` (flock, exclusive, released by the kernel at exit) with our pid in it.

    Raises AlreadyRunning with a person's sentence when another process holds it.
    """
    state_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(state_dir / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise AlreadyRunning(_running_text(state_dir)) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # releases the lock


def holder(state_dir: Path) -> int | None:
    """The pid of the `up` holding `<state>/lock`, or None when none does."""
    path = state_dir / "lock"
    if not path.exists():
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = path.read_text().strip()
            return int(text) if text.isdigit() else -1  # held, pid not written yet
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _running_text(state_dir: Path) -> str:
    pid = holder(state_dir)
    env = read_env_file(state_dir / "env")
    shown = shown_path(state_dir)
    where = f" (pid {pid}" + (f", function at {env['FUNCTION_URL']}" if "FUNCTION_URL" in env else "") + ")"
    return (
        f"A playground is already running from {shown}{where if pid and pid > 0 else ''}; one per checkout.\n"
        f"Use it (source {shown}/env), or stop it first: make down (or Ctrl-C in its terminal).\n"
        "A second, separate one: .venv/bin/python -m emulators playground --state-dir .playground-2"
    )


def shown_path(state_dir: Path) -> str:
    return os.path.relpath(state_dir) if state_dir.is_relative_to(Path.cwd()) else str(state_dir)


def down(state_dir: Path = STATE_DIR, timeout: float = DOWN_TIMEOUT_S) -> int:
    """Stop the playground running from `state_dir` (SIGTERM, then wait for its lock); exit code."""
    state_dir = state_dir.resolve()
    pid = holder(state_dir)
    if pid is None:
        print(f"No playground is running from {shown_path(state_dir)}.")
        return 0
    if pid <= 0:
        print(f"The playground of {shown_path(state_dir)} is starting and has not written its pid yet; try again.")
        return 1
    print(f"Stopping the playground (pid {pid}) ...", flush=True)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, 15)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if holder(state_dir) is None:
            print(f"Stopped the playground (pid {pid}): its function and emulators, its env file and token are gone.")
            return 0
        time.sleep(0.1)
    print(f"The playground (pid {pid}) did not stop within {timeout:.0f} s.")
    return 1
