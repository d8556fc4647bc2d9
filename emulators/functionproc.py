"""Run the function as Cloud Run does: a functions-framework (gunicorn) process serving main.py.

Used by `make demo`, `make up` and the end-to-end tests; the environment is the stack's plus the function's
settings, and the process's stdout (the function's JSON log lines) goes to a file; stderr joins it, or goes to
a file of its own (`stderr_path`) for tests that must see what the function printed outside its logger.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import IO

import requests

from emulators.signals import signals_deferred

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class FunctionProcess:
    """`functions-framework --target handle_cluster_event --signature-type cloudevent` on a free port."""

    def __init__(
        self,
        env: dict[str, str],
        log_path: Path,
        *,
        threads: int = 8,
        stderr_path: Path | None = None,
        port: int = 0,
        append_log: bool = False,
        drop: Iterable[str] = (),
    ) -> None:
        self.port = port or free_port()
        self.log_path = log_path
        self.stderr_path = stderr_path
        self._log_mode = "ab" if append_log else "wb"  # a restart keeps what the earlier process logged
        # `drop`: names the process must not inherit from ours (the playground gives it every setting itself).
        dropped = {"GOOGLE_APPLICATION_CREDENTIALS", "PYTHONSTARTUP", *drop}
        self._env = {k: v for k, v in os.environ.items() if k not in dropped}
        self._env.update(env)
        self._env.update({"PORT": str(self.port), "THREADS": str(threads), "WORKERS": "1"})
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._err: IO[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self, timeout: float = 30.0) -> float:
        """Start and wait until it answers; returns the seconds that took."""
        executable = Path(sys.executable).parent / "functions-framework"
        self._log = open(self.log_path, self._log_mode)  # noqa: SIM115 - closed in stop()
        if self.stderr_path is not None:
            self._err = open(self.stderr_path, "wb")  # noqa: SIM115 - closed in stop()
        started = time.monotonic()
        try:  # a Ctrl-C while it boots must not orphan it (its own session gets no SIGINT)
            with signals_deferred():  # none lands before _proc is recorded
                self._proc = subprocess.Popen(
                    [
                        str(executable),
                        "--target",
                        "handle_cluster_event",
                        "--source",
                        str(ROOT / "main.py"),
                        "--signature-type",
                        "cloudevent",
                        "--host",
                        "127.0.0.1",
                        "--port",
                        str(self.port),
                    ],
                    cwd=ROOT,
                    env=self._env,
                    stdout=self._log,
                    stderr=self._err if self._err is not None else subprocess.STDOUT,
                    start_new_session=True,
                )
            return self._wait_until_serving(self._proc, started, timeout)
        except BaseException:
            self.stop()
            raise

    def _wait_until_serving(self, proc: subprocess.Popen[bytes], started: float, timeout: float) -> float:
        while time.monotonic() - started < timeout:
            if proc.poll() is not None:
                said = (self.output() + self.errors())[-3000:]
                raise RuntimeError(f"the function process exited with {proc.returncode}:\n{said}")
            with contextlib.suppress(requests.RequestException):
                # A GET is no CloudEvent: functions-framework answers 4xx/405 once it serves.
                requests.get(self.url, timeout=0.5)
                return time.monotonic() - started
            time.sleep(0.05)
        said = (self.output() + self.errors())[-3000:]
        raise RuntimeError(f"the function did not answer within {timeout:.0f} s:\n{said}")

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def errors(self) -> str:
        """What the process wrote on stderr (empty unless `stderr_path` was given)."""
        path = self.stderr_path
        return path.read_text(errors="replace") if path is not None and path.exists() else ""

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
        for handle in (self._log, self._err):
            if handle is not None:
                handle.close()
        self._log = self._err = None
