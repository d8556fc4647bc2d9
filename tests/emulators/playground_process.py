"""The playground as a process (`python -m emulators playground`, what `make up` runs) with its own TMPDIR and state
folder, and what it left running: shared by the playground tests of this suite."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from emulators.playground import read_env_file
from tests.support import ROOT, clean_env

READY_S = 120.0


def carrying(tmpdir: Path) -> list[str]:
    """Processes whose environment holds TMPDIR=`tmpdir`: what a playground started, still alive."""
    marker = f"TMPDIR={tmpdir}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker in (entry / "environ").read_bytes().split(b"\0"):
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                found.append(f"{entry.name}: {command[:200]}")
        except OSError:
            continue
    return found


class Playground:
    """`python -m emulators playground` (what `make up` runs) with its own TMPDIR and state folder."""

    def __init__(
        self,
        base: Path,
        state: Path,
        *options: str,
        sigint_ignored: bool = False,
        root: Path = ROOT,
        env: dict[str, str] | None = None,
        make: tuple[str, ...] | None = None,
    ) -> None:
        self.tmpdir = base / "tmp"
        self.tmpdir.mkdir(exist_ok=True)
        self.state = state
        self.out = base / f"out-{time.monotonic_ns()}.txt"
        with self.out.open("w") as sink:
            command = [sys.executable, "-m", "emulators", "playground", "--state-dir", str(state), *options]
            if make is not None:  # `make up VAR=...` in `root` (its state folder is root/.playground)
                command = ["make", "-s", "up", *make]
            if sigint_ignored:  # what a shell does to a background job (`make up &`); kept across exec
                command = ["bash", "-c", 'trap "" INT; exec "$0" "$@"', *command]
            self.proc = subprocess.Popen(
                command,
                cwd=root,
                env=clean_env(TMPDIR=str(self.tmpdir), **(env or {})),
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def output(self) -> str:
        return self.out.read_text()

    def wait_ready(self) -> dict[str, str]:
        deadline = time.monotonic() + READY_S
        while time.monotonic() < deadline:
            if "Ctrl-C stops everything" in self.output():
                return read_env_file(self.state / "env")
            assert self.proc.poll() is None, self.output()
            time.sleep(0.1)
        raise AssertionError("the playground did not get ready:\n" + self.output())

    def wait_exit(self, timeout: float = 60.0) -> int:
        return self.proc.wait(timeout=timeout)

    def kill(self) -> None:
        """After a test, whatever happened: let it stop what it started, then kill whatever is left of it."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        for left in carrying(self.tmpdir):  # children in sessions of their own, when the playground could not
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(left.split(":", 1)[0]), signal.SIGKILL)

    def assert_nothing_left(self) -> None:
        assert carrying(self.tmpdir) == [], "processes left behind"
        assert list(self.tmpdir.iterdir()) == [], "temporary folders left behind (the token and the CA)"
        assert not (self.state / "env").exists(), "the env file was left behind"


def emulators_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "emulators", *args],
        cwd=ROOT,
        env=env or clean_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
