"""The playground's lifecycle with real processes: `make up` twice, `make down`, a shell left with stale values,
and an interruption (Ctrl-C or SIGTERM) at start-up that must leave no process and no temporary folder.

Each playground runs with a private TMPDIR: the temporary folders it makes (the stack's, holding the HyperFleet
token and the registry CA; the Pub/Sub emulator's log) land there, and every process it starts inherits it, so
"nothing left" is checked as "TMPDIR is empty and no process carries TMPDIR=<it> in its environment".
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from emulators.faults import FaultBook
from emulators.functionproc import FunctionProcess
from emulators.playground import holder
from emulators.pubsub import PubSubEmulator
from emulators.signals import interruptible
from tests.emulators.playground_process import READY_S, Playground, carrying, emulators_cli
from tests.support import ROOT, bare_copy, clean_env


def test_a_second_up_is_refused_and_down_stops_the_first(tmp_path: Path, playgrounds: list[Playground]) -> None:
    state = tmp_path / "state"
    first = Playground(tmp_path, state, "--no-pubsub")
    playgrounds.append(first)
    env_before = first.wait_ready()
    env_text = (state / "env").read_text()
    log_size = (state / "function.log").stat().st_size

    second = Playground(tmp_path, state, "--no-pubsub")
    playgrounds.append(second)
    assert second.wait_exit(timeout=60) == 1
    said = second.output()
    assert "already running" in said and f"pid {first.proc.pid}" in said and "make down" in said, said
    # The refused one touched nothing of the running one's: its env file and its log are as they were.
    assert (state / "env").read_text() == env_text
    assert (state / "function.log").stat().st_size >= log_size
    assert first.proc.poll() is None
    assert emulators_cli("trigger", "cls-demo01", "--state-dir", str(state)).returncode == 0
    # Its output not read (`make trigger | head -1`, the reader gone at once): no complaint about the pipe.
    piped = subprocess.run(
        ["bash", "-c", f'"{sys.executable}" -m emulators trigger cls-demo01 --state-dir "{state}" | true'],
        cwd=ROOT,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert piped.returncode == 0 and "Traceback" not in piped.stderr, piped.stderr
    assert "Broken pipe" not in piped.stderr and "BrokenPipeError" not in piped.stderr, piped.stderr

    stopped = emulators_cli("down", "--state-dir", str(state))
    assert stopped.returncode == 0 and "Stopped" in stopped.stdout, stopped.stdout + stopped.stderr
    assert first.wait_exit(timeout=10) == 0
    assert "# Stopped: the function, the emulators" in first.output()
    first.assert_nothing_left()
    assert env_before["FUNCTION_URL"]
    again = emulators_cli("down", "--state-dir", str(state))
    assert again.returncode == 0 and "No playground is running" in again.stdout


def test_a_shell_with_values_of_an_earlier_up_is_told_and_a_dead_one_gets_one_line(
    tmp_path: Path, playgrounds: list[Playground]
) -> None:
    state = tmp_path / "state"
    earlier = Playground(tmp_path, state, "--no-pubsub")
    playgrounds.append(earlier)
    stale = earlier.wait_ready()
    assert emulators_cli("down", "--state-dir", str(state)).returncode == 0
    shell = clean_env(FUNCTION_URL=stale["FUNCTION_URL"], EMULATORS_ADMIN=stale["EMULATORS_ADMIN"])

    now = Playground(tmp_path, state, "--no-pubsub")
    playgrounds.append(now)
    fresh = now.wait_ready()
    assert fresh["FUNCTION_URL"] != stale["FUNCTION_URL"]
    done = emulators_cli("trigger", "cls-demo01", "--state-dir", str(state), env=shell)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "left from an earlier `make up`" in done.stdout and "HTTP 200, acknowledged" in done.stdout
    assert fresh["FUNCTION_URL"] in done.stdout

    assert emulators_cli("down", "--state-dir", str(state)).returncode == 0
    dead = emulators_cli("trigger", "cls-demo01", "--state-dir", str(state), env=shell)
    assert dead.returncode == 2
    assert dead.stderr == "" and "Traceback" not in dead.stdout
    lines = dead.stdout.strip().splitlines()
    admin_port = stale["EMULATORS_ADMIN"].rsplit(":", 1)[1]
    assert len(lines) == 1 and f"Nothing listens at http://127.0.0.1:{admin_port}" in lines[0], dead.stdout
    assert "make up" in lines[0]


def test_a_trigger_while_the_playground_is_still_starting_says_so(
    tmp_path: Path, playgrounds: list[Playground]
) -> None:
    state = tmp_path / "state"
    starting = Playground(tmp_path, state, "--no-pubsub")
    playgrounds.append(starting)
    deadline = time.monotonic() + READY_S
    while holder(state) != starting.proc.pid:
        assert time.monotonic() < deadline and starting.proc.poll() is None, starting.output()
        time.sleep(0.01)
    # Held still between taking its lock and writing its env file: on a fast start the trigger below (a new
    # interpreter, about a second) would otherwise find the playground ready (CI, k19's runs: `assert (0 == 2)`).
    os.kill(starting.proc.pid, signal.SIGSTOP)
    try:
        assert not (state / "env").exists()
        # A second shell, still holding the values of an earlier `make up`, triggers too early.
        shell = clean_env(FUNCTION_URL="http://127.0.0.1:9/", EMULATORS_ADMIN="http://127.0.0.1:9")
        early = emulators_cli("trigger", "cls-demo01", "--state-dir", str(state), env=shell)
    finally:
        os.kill(starting.proc.pid, signal.SIGCONT)
    assert early.returncode == 2 and "Traceback" not in early.stdout + early.stderr, early.stdout + early.stderr
    assert f"(pid {starting.proc.pid})" in early.stdout and "still starting" in early.stdout, early.stdout
    assert "# Ready" in early.stdout


def test_down_after_an_edit_and_retry_stops_the_restarted_function(
    tmp_path: Path, playgrounds: list[Playground]
) -> None:
    # From a copy of the repository: the playground watches its own pullsecret/, which this test edits.
    repo = bare_copy(tmp_path / "repo", venv=True)
    state = tmp_path / "state"
    playground = Playground(tmp_path, state, "--no-pubsub", root=repo)
    playgrounds.append(playground)
    playground.wait_ready()
    first = [p for p in carrying(playground.tmpdir) if "functions-framework" in p]
    edited = repo / "pullsecret" / "model" / "status.py"
    edited.write_text(edited.read_text() + "\n# edited\n")
    deadline = time.monotonic() + READY_S
    while "serves the new code again" not in playground.output():
        assert time.monotonic() < deadline and playground.proc.poll() is None, playground.output()
        time.sleep(0.1)
    restarted = [p for p in carrying(playground.tmpdir) if "functions-framework" in p]
    assert restarted and restarted != first, (first, restarted)
    stopped = emulators_cli("down", "--state-dir", str(state))
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert playground.wait_exit(timeout=30) == 0, playground.output()
    playground.assert_nothing_left()


def _function_booting(playground: Playground) -> bool:
    return any("functions-framework" in p for p in carrying(playground.tmpdir))


def _pubsub_booting(playground: Playground) -> bool:
    return any(p.name.startswith("pubsub-emulator-") for p in playground.tmpdir.iterdir())


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
@pytest.mark.parametrize("moment", ["pubsub", "function"])
def test_an_interrupt_at_start_up_leaves_no_process_and_no_temporary_folder(
    tmp_path: Path, playgrounds: list[Playground], sig: signal.Signals, moment: str
) -> None:
    if moment == "pubsub" and not PubSubEmulator.available()[0]:
        pytest.skip(PubSubEmulator.available()[1])
    playground = Playground(tmp_path, tmp_path / "state", *(["--no-pubsub"] if moment == "function" else []))
    playgrounds.append(playground)
    booting = _pubsub_booting if moment == "pubsub" else _function_booting
    deadline = time.monotonic() + READY_S
    while not booting(playground):
        assert time.monotonic() < deadline and playground.proc.poll() is None, playground.output()
        time.sleep(0.02)
    # Ctrl-C in a terminal reaches the playground's process group; its children run in sessions of their own.
    os.kill(playground.proc.pid, sig)
    assert playground.wait_exit(timeout=60) == 130, playground.output()
    said = playground.output()
    assert "Interrupted during start-up" in said and "# Stopped: the function, the emulators" in said, said
    assert "Traceback" not in said
    playground.assert_nothing_left()


def test_an_interrupted_demo_leaves_no_process_and_no_temporary_folder(tmp_path: Path) -> None:
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "emulators.demo"],
        cwd=ROOT,
        env=clean_env(TMPDIR=str(tmpdir)),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + READY_S
        while not any("functions-framework" in p for p in carrying(tmpdir)):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGTERM)
        said, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130 and "Demo interrupted" in said and "Traceback" not in said, said
    assert carrying(tmpdir) == []
    assert list(tmpdir.iterdir()) == []


def test_a_playground_started_as_a_background_job_still_stops_on_sigint(
    tmp_path: Path, playgrounds: list[Playground]
) -> None:
    playground = Playground(tmp_path, tmp_path / "state", "--no-pubsub", sigint_ignored=True)
    playgrounds.append(playground)
    playground.wait_ready()
    os.kill(playground.proc.pid, signal.SIGINT)
    assert playground.wait_exit(timeout=60) == 0, playground.output()
    assert "# Stopped: the function, the emulators" in playground.output()
    playground.assert_nothing_left()


def _loading_libraries(pid: int) -> bool:
    """True once the process maps a compiled module from site-packages: Python is importing the client libraries."""
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False
    return "site-packages" in maps and ".so" in maps


@pytest.mark.parametrize("command", ["playground", "demo"])
def test_ctrl_c_while_python_is_still_loading_says_so_in_one_line(tmp_path: Path, command: str) -> None:
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    options = ["--state-dir", str(tmp_path / "state"), "--no-pubsub"] if command == "playground" else []
    proc = subprocess.Popen(
        [sys.executable, "-m", "emulators", command, *options],
        cwd=ROOT,
        env=clean_env(TMPDIR=str(tmpdir)),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + READY_S
        while not _loading_libraries(proc.pid):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGINT)
        said, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    # Wherever the interrupt lands (the imports, or the start that follows them): exit 130, no traceback, a
    # line that says it stopped, and nothing left behind.
    assert proc.returncode == 130 and "Traceback" not in said, said
    assert "Interrupted" in said, said
    assert carrying(tmpdir) == []
    assert list(tmpdir.iterdir()) == []


def test_the_cli_defaults_are_the_playgrounds() -> None:
    from emulators import __main__ as cli
    from emulators import playground

    assert (cli.STATE_DIR, cli.DEMO_CLUSTER) == (playground.STATE_DIR, playground.DEMO_CLUSTER)


def _pubsub_start(tmp_path: Path) -> None:
    if not PubSubEmulator.available()[0]:
        pytest.skip(PubSubEmulator.available()[1])
    PubSubEmulator(FaultBook()).start()


def _function_start(tmp_path: Path) -> None:
    FunctionProcess({}, tmp_path / "function.log").start()


@pytest.mark.parametrize("start", [_pubsub_start, _function_start], ids=["pubsub", "function"])
def test_a_ctrl_c_between_the_fork_and_its_record_stops_the_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start: Callable[[Path], None]
) -> None:
    """The one moment the playground test above hits only by chance (CI, stop 26): Ctrl-C lands while `Popen`
    returns, before the emulator has recorded the child. The child runs in a session of its own, so the Ctrl-C
    never reaches it; only its owner's `stop()` can, and only if the signal waits until the child is recorded."""
    real_popen = subprocess.Popen
    children: list[subprocess.Popen[bytes]] = []

    def popen_then_ctrl_c(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        child: subprocess.Popen[bytes] = real_popen(*args, **kwargs)
        if kwargs.get("start_new_session"):  # the emulator or the function, not a helper such as `gcloud info`
            children.append(child)
            signal.raise_signal(signal.SIGINT)
        return child

    monkeypatch.setattr(subprocess, "Popen", popen_then_ctrl_c)
    try:
        with interruptible(), pytest.raises(KeyboardInterrupt):
            start(tmp_path)
        assert len(children) == 1
        assert children[0].poll() is not None, "the child outlived the Ctrl-C that stopped its start"
    finally:
        for child in children:
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGKILL)  # a session of its own: its pid is its group's
                child.wait(timeout=10)
