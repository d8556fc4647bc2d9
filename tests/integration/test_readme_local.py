"""The README's local walkthrough and emulators/README.md's admin examples run as written, against `make up`.

The playground runs from a bare copy of the tracked files (this checkout's .venv linked in, see
tests/infra/test_self_contained.py), so the walkthrough cannot lean on anything outside the repository and does
not touch this checkout's `.playground/`. The command blocks of each section run in one bash session, in order,
as a reader would paste them into the shell the README tells them to open.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

from emulators.pubsub import PubSubEmulator
from tests.support import ROOT, bare_copy, clean_env, shell_blocks

README_SECTION = "## The playground (`make up`)"
ADMIN_SECTION = "## The admin API"


class Playground:
    """`make up` in a bare copy; its printed output is collected by a reader thread."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.lines: list[str] = []
        self.proc = subprocess.Popen(
            ["make", "-s", "up"],
            cwd=repo,
            env=clean_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        assert self.proc.stdout is not None
        self._reader = threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True)
        self._reader.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self.lines.append(line.rstrip("\n"))

    def wait_ready(self, timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any("Ctrl-C stops everything" in line for line in self.lines):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError("make up did not get ready:\n" + "\n".join(self.lines[-60:]))

    def stop(self) -> int:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self._reader.join(timeout=5)
        return self.proc.returncode


@pytest.fixture(scope="module")
def playground(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Playground]:
    """One `make up` for the module: the walkthrough first, then the admin examples (they expect its state)."""
    repo = bare_copy(tmp_path_factory.mktemp("readme") / "repo", venv=True)
    running = Playground(repo)
    try:
        running.wait_ready()
        yield running
    finally:
        # make dies of the SIGINT it passes on (-2) once its child, the playground, has stopped cleanly.
        assert running.stop() in (0, -signal.SIGINT, 130), "\n".join(running.lines[-40:])
        assert not (repo / ".playground" / "env").exists(), "make up left its env file behind"


def run_session(repo: Path, blocks: list[str], *, first: str = "") -> str:
    """The blocks in one bash session (`set -e`), each announced, as a reader pastes them; returns the output."""
    script = ["set -euo pipefail", first]
    for index, block in enumerate(blocks, start=1):
        script += [f"echo '### block {index}'", block]
    done = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        cwd=repo,
        env=clean_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"exit {done.returncode}:\n{output[-5000:]}"
    return output


def test_the_readme_local_walkthrough_runs_as_written(playground: Playground) -> None:
    readme = (playground.repo / "README.md").read_text()
    blocks = shell_blocks(readme, README_SECTION)
    assert blocks[0] == "make up", "the walkthrough starts with `make up` (what this test started)"
    assert any(block.startswith("source .playground/env") for block in blocks[1:])
    printed = "\n".join(playground.lines)
    assert "export FUNCTION_URL=" in printed and "# Next commands to try:" in printed
    has_pubsub, reason = PubSubEmulator.available()
    runnable = [b for b in blocks[1:] if has_pubsub or ("pubsub" not in b and "gcloud" not in b)]
    if len(runnable) < len(blocks) - 1:
        print(f"Pub/Sub blocks not run: {reason}")
    output = run_session(playground.repo, runnable)

    assert output.count("HTTP 200, acknowledged.") >= 3, output
    assert "Available  True   PullSecretAvailable" in output
    assert "Available  False  PreconditionsNotMet" in output, "the PATCH must bump the generation"
    if has_pubsub:
        assert "the emulator pushes it to the function" in output and "messageIds:" in output
    assert f"cluster cls-demo01: {'unchanged'}" in output  # the operator CLI's summary
    # inspect reads the Kubernetes Secret with the operator's read-only identity (PULLSECRET_OPERATOR_KUBECONFIG).
    assert '"in_sync": true' in output and '"content_fingerprint"' in output, output
    # The sample output the README shows for `make trigger` is what it prints: every sample line is a line of
    # the real output (ports, timings and spaces aside; "…" stands for the rest of a value).
    missing = [line for line in sample_output(readme, "### Trigger a reconcile") if not printed_line(line, output)]
    assert not missing, "README sample lines that make trigger does not print:\n" + "\n".join(missing)
    missing = [line for line in sample_output(readme, "### Start the playground") if not printed_line(line, printed)]
    assert not missing, "README sample lines that make up does not print:\n" + "\n".join(missing)
    # The doctor on the playground: everything holds but the demo's refused registry credential (emulators/demo.py).
    doctor = [line for line in output.splitlines() if line.startswith(("ok  ", "FAIL", "skip", "doctor:"))]
    failed = [line for line in doctor if line.startswith("FAIL")]
    assert len(failed) == 1 and "/demo: the registry refused the credential" in failed[0], output
    assert doctor[-1].startswith("doctor: ") and ", 1 failed" in doctor[-1] and "doctor exit status: 1" in output


def _normalised(line: str) -> str:
    line = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", line)
    line = re.sub(r"\(\d+(?:\.\d+)? ms\)", "(T ms)", line)
    line = re.sub(r"\b[0-9a-f]{8}-(?:…|[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b)", "UUID", line)
    return " ".join(line.split())


def sample_output(markdown: str, heading: str) -> list[str]:
    """The lines of the ```text blocks under `heading` (up to the next heading)."""
    lines, fence, found = markdown.splitlines(), "", []
    for line in lines[lines.index(heading) + 1 :]:
        if line.startswith("```"):
            fence = "" if fence else line[3:] or "plain"
        elif not fence and line.startswith("#"):
            break  # the next heading
        elif fence == "text" and line.strip() and line.strip() != "...":  # "..." elides lines
            found.append(line)
    return found


def printed_line(sample: str, output: str) -> bool:
    pattern = ".*".join(re.escape(part) for part in _normalised(sample).split("…"))
    return any(re.fullmatch(pattern, _normalised(line)) for line in output.splitlines())


def test_every_admin_example_of_the_emulators_readme_runs(playground: Playground) -> None:
    readme = (playground.repo / "emulators" / "README.md").read_text()
    blocks = shell_blocks(readme, ADMIN_SECTION)
    assert len(blocks) >= 7, "one example block per service and the stack-wide routes"
    has_pubsub, _ = PubSubEmulator.available()
    runnable = [b for b in blocks if has_pubsub or "/pubsub/" not in b]
    first = "source .playground/env\nmake -s trigger CLUSTER=cls-demo01 > /dev/null"
    output = run_session(playground.repo, runnable, first=first)
    assert '"generation": 1' in output.replace('"generation":1', '"generation": 1')
    # What the prose around the examples claims: a revoked or forgotten token costs at most one 503 each, then
    # the next event is acknowledged.
    assert output.count("HTTP 503, not acknowledged") <= 2, output[-4000:]
    pushes = [line for line in output.splitlines() if line.startswith("Pushed event")]
    assert "HTTP 200, acknowledged" in pushes[-1], pushes


def documented_routes(markdown: str) -> list[tuple[str, str]]:
    """(method, path pattern) of every route row in the admin section's tables, with its service prefix."""
    lines = markdown.splitlines()
    start = lines.index(ADMIN_SECTION)
    routes, prefix = [], ""
    for line in lines[start + 1 :]:
        if line.startswith("## "):
            break
        heading = re.match(r"^### .*?\(`(/[a-z]+)`", line)
        if heading:
            prefix = heading.group(1)
        elif line.startswith("### "):
            prefix = ""
        row = re.match(r"^\| `(GET|PUT|POST|PATCH|DELETE) (/[^`]*)`", line)
        if row:
            routes.append((row.group(1), prefix + row.group(2).rstrip("/")))
    return routes


def test_every_documented_admin_route_has_an_example() -> None:
    readme = (ROOT / "emulators" / "README.md").read_text()
    examples = set()
    for block in shell_blocks(readme, ADMIN_SECTION):
        for line in block.splitlines():
            for path in re.findall(r'"\$EMULATORS_ADMIN(/[^"?\s]*)"', line):
                method = re.search(r"-X (GET|PUT|POST|PATCH|DELETE)\b", line)
                examples.add((method.group(1) if method else "GET", path.rstrip("/") or "/"))
    routes = documented_routes(readme)
    assert len(routes) >= 40, routes
    missing = []
    for method, route in routes:
        pattern = re.sub(r"\\\{[a-z_]+\\\}", "[^/]+", re.escape(route or "/")) + "$"
        if not any(m == method and re.match(pattern, path) for m, path in examples):
            missing.append(f"{method} {route}")
    assert missing == [], f"admin routes without a copy-pasteable example in emulators/README.md: {missing}"
