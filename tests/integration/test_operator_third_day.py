"""An operator's third day (issue 52): each friction run as a person runs it, against real playgrounds.

Three playgrounds in one bare copy of the repository, started at once and shared by every test here: `make up`
(the default, `.playground/`), a second one behind hyperfleet-gateway with External Secrets delivery
(`.playground-2/`), and a third signing in with Google ID tokens under a misspelt precondition adapter
(`.playground-3/`). Commands run through `make` where the README says make, in a bash that sourced the
playground's env file, and Ctrl-C is a real SIGINT to the command's process group, as a terminal sends it.
"""

from __future__ import annotations

import json
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
import requests

from tests.support import bare_copy, clean_env

READY = "Ctrl-C stops everything"
# One worker runs the module (`--dist loadgroup`, the Makefile's PYTEST_FLAGS): the three playgrounds start once.
pytestmark = pytest.mark.xdist_group("third_day")


class Running:
    """One playground process; its output collected by a reader thread."""

    def __init__(self, repo: Path, command: list[str], **env: str) -> None:
        self.lines: list[str] = []
        self.proc = subprocess.Popen(
            command,
            cwd=repo,
            env=clean_env(**env),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        assert self.proc.stdout is not None
        threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True).start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self.lines.append(line.rstrip("\n"))

    def wait_ready(self, timeout: float = 240.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            if any(READY in line for line in self.lines):
                return
            time.sleep(0.2)
        raise AssertionError("the playground did not get ready:\n" + "\n".join(self.lines[-40:]))

    def ready_line(self) -> str:
        return next(line for line in self.lines if line.startswith("# Ready:"))

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)


class Playgrounds:
    def __init__(self, repo: Path) -> None:
        self.repo = repo
        python = [".venv/bin/python", "-m", "emulators", "playground"]
        self.first = Running(repo, ["make", "-s", "up"])
        self.gateway = Running(
            repo,
            [*python, "--state-dir", ".playground-2"],
            HYPERFLEET_API_AUTH="service-account-token",
            KUBERNETES_DELIVERY="external-secrets",
        )
        self.id_token = Running(
            repo,
            [*python, "--state-dir", ".playground-3"],
            HYPERFLEET_API_AUTH="google-id-token",
            PRECONDITION_ADAPTERS="validation,dns,placment",
        )

    def all(self) -> tuple[Running, ...]:
        return (self.first, self.gateway, self.id_token)

    def ready(self, *which: Running) -> None:
        for one in which or (self.first,):
            one.wait_ready()

    def admin(self, state: str = ".playground") -> str:
        for line in (self.repo / state / "env").read_text().splitlines():
            if line.startswith("export EMULATORS_ADMIN="):
                return line.split("=", 1)[1].strip("'")
        raise AssertionError(f"no EMULATORS_ADMIN in {state}/env")


@pytest.fixture(scope="module")
def playgrounds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Playgrounds]:
    repo = bare_copy(tmp_path_factory.mktemp("third-day") / "repo", venv=True)
    running = Playgrounds(repo)
    try:
        yield running  # each test waits for the playgrounds it uses: one that does not start fails those alone
    finally:
        for one in running.all():
            one.stop()


def shell(repo: Path, command: str, *, state: str | None = ".playground", timeout: float = 180) -> tuple[int, str]:
    """`command` in a bash that sourced `state`'s env file (None: a fresh shell); (exit code, stdout + stderr)."""
    script = f"source {state}/env\n{command}" if state else command
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=repo,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def interrupted(repo: Path, command: str, *, after: float, state: str = ".playground") -> tuple[int, str]:
    """`command` in a sourced bash of its own process group, sent SIGINT (a terminal's Ctrl-C) after `after` s."""
    proc = subprocess.Popen(
        ["bash", "-c", f"source {state}/env\nexec {command}"],
        cwd=repo,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    time.sleep(after)
    os.killpg(proc.pid, signal.SIGINT)
    output, _ = proc.communicate(timeout=120)
    return proc.returncode, output


# 1. `make demo` from the shell the README tells you to source.
def test_make_demo_from_a_sourced_shell_runs_on_its_own_and_leaves_the_playground_alone(
    playgrounds: Playgrounds,
) -> None:
    playgrounds.ready()
    admin = playgrounds.admin()
    before = requests.get(f"{admin}/calls", timeout=10).json()
    code, output = shell(playgrounds.repo, "make -s demo", timeout=300)
    assert code == 0 and "Demo succeeded." in output, output[-3000:]
    after = requests.get(f"{admin}/calls", timeout=10).json()
    assert after == before, "the demo called the running playground's emulators"


# 2, 8. Gateway and External Secrets together; the ready line names every mode; the status hint works in it.
def test_a_gateway_playground_with_external_secrets_reconciles_and_says_how_to_read_the_status(
    playgrounds: Playgrounds,
) -> None:
    playgrounds.ready(playgrounds.gateway)
    ready = playgrounds.gateway.ready_line()
    assert "delivery external-secrets, HyperFleet sign-in service-account-token" in ready, ready
    code, output = shell(
        playgrounds.repo,
        ".venv/bin/python -m emulators trigger cls-demo01 --state-dir .playground-2",
        state=".playground-2",
    )
    assert code == 0 and "Available  True   PullSecretAvailable" in output, output
    assert "HYPERFLEET_API_TOKEN_FILE" not in output  # no token file in this mode: the hint must not read one
    assert ".venv/bin/python -m pullsecret inspect cls-demo01" in output, output
    code, shown = shell(playgrounds.repo, ".venv/bin/python -m pullsecret inspect cls-demo01", state=".playground-2")
    assert code == 0 and json.loads(shown[shown.index("{") :])["hyperfleet"]["status"], shown


# 3. A second playground's shell is compared with that playground, not the first.
def test_the_cli_in_a_second_playgrounds_shell_is_not_sent_to_the_first(playgrounds: Playgrounds) -> None:
    playgrounds.ready(playgrounds.first, playgrounds.gateway)
    code, output = shell(playgrounds.repo, ".venv/bin/python -m pullsecret reconcile cls-demo01", state=".playground-2")
    assert code == 0, output
    assert "source .playground/env" not in output and "refusing" not in output, output


# 4. Ctrl-C: one line, 130, no traceback, whatever the command was doing.
@pytest.mark.parametrize(
    "command",
    ["fleet", "fleet --fix", "inspect cls-demo01", "doctor", "rekey --dry-run"],
)
def test_ctrl_c_ends_a_cli_command_in_one_line_with_130(playgrounds: Playgrounds, command: str) -> None:
    playgrounds.ready()
    admin = playgrounds.admin()
    slow = {"service": "*", "method": "*", "latency_ms": 1500}
    requests.post(f"{admin}/faults", json=slow, timeout=10).raise_for_status()
    try:
        topic = "ADAPTER_TOPIC=projects/hf-demo-project/topics/hyperfleet-cluster-events "
        line = f"env {topic}.venv/bin/python -m pullsecret {command}"
        code, output = interrupted(playgrounds.repo, line, after=4.0)
    finally:
        requests.delete(f"{admin}/faults", timeout=10).raise_for_status()
    assert code == 130, output
    assert "Traceback" not in output and "KeyboardInterrupt" not in output, output
    lines = [line for line in output.splitlines() if line.strip()]
    assert lines[-1].startswith(("interrupted: ", "rekey interrupted")), output


def test_ctrl_c_during_make_demo_stops_it(playgrounds: Playgrounds) -> None:
    playgrounds.ready()
    proc = subprocess.Popen(
        ["make", "-s", "demo"],
        cwd=playgrounds.repo,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:  # interrupted once the demo's function serves: mid-run, as a person would
        seen.append(line)
        if line.startswith("Function serving at"):
            os.killpg(proc.pid, signal.SIGINT)
            break
    rest, _ = proc.communicate(timeout=120)
    output = "".join(seen) + rest
    assert proc.returncode == -signal.SIGINT, output  # make dies of the interrupt: a shell shows 130
    assert "Demo interrupted" in output and "Demo succeeded" not in output, output


# 5. One cluster id no name can be made of.
def test_one_malformed_cluster_id_is_one_row_and_its_trigger_hint_does_not_create_it(
    playgrounds: Playgrounds,
) -> None:
    playgrounds.ready()
    code, output = shell(playgrounds.repo, "make -s trigger CLUSTER=CLS-NEVER")
    assert "ready_clusters/CLS-NEVER" not in output and "Try a lowercase id" in output, output
    admin = playgrounds.admin()
    requests.put(f"{admin}/ready_clusters/CLS-UPPER", timeout=10).raise_for_status()
    try:
        code, output = shell(playgrounds.repo, ".venv/bin/python -m pullsecret fleet")
    finally:
        gone = {"deleted_time": "2026-01-01T00:00:00Z"}
        requests.patch(f"{admin}/hyperfleet/clusters/CLS-UPPER", json=gone, timeout=10)
    assert code == 0, output
    rows = [line.split() for line in output.splitlines() if line.startswith("  ")]
    assert any(row[0] == "CLS-UPPER" and "not read:" in " ".join(row) for row in rows), output
    assert any(row[0] == "cls-demo01" for row in rows), output


# 6, 10. What fleet says --fix will do is what --fix does; --fix's rows say why they are not read.
def test_fleet_says_what_fix_removes_and_fix_removes_that(playgrounds: Playgrounds) -> None:
    playgrounds.ready()
    admin = playgrounds.admin()
    repo = playgrounds.repo
    grant = {
        "identity": "pullsecret-runtime@hf-demo-project.iam.gserviceaccount.com",
        "resource": "projects/hf-demo-project",
        "role": "roles/secretmanager.viewer",
        "permissions": ["secretmanager.secrets.list"],
    }
    requests.post(f"{admin}/secretmanager/iam", json=grant, timeout=10).raise_for_status()
    requests.put(f"{admin}/ready_clusters/cls-gone01", timeout=10).raise_for_status()
    code, output = shell(repo, "make -s trigger CLUSTER=cls-gone01")
    assert code == 0, output
    requests.delete(f"{admin}/hyperfleet/clusters/cls-gone01", timeout=10).raise_for_status()
    code, view = shell(repo, ".venv/bin/python -m pullsecret fleet")
    assert code == 0, view
    assert "status is of generation None" not in view, view
    hint = view.strip().splitlines()[-1]
    assert hint.startswith("run again with --fix to remove these 2 (ours)"), view
    code, fixed = shell(repo, ".venv/bin/python -m pullsecret fleet --fix")
    assert code == 0, fixed
    assert "not readable by these credentials" not in fixed, fixed
    assert "note: DELIVERY is not read with --fix" in fixed, fixed
    code, again = shell(repo, ".venv/bin/python -m pullsecret fleet")
    assert "cls-gone01" not in again.split("outlived", 1)[-1], again  # both went, as the hint said


# 7. Exit codes through make; a value handed over as typed; make logs for a cluster without a line.
def test_make_trigger_and_make_logs_exit_as_the_table_says(playgrounds: Playgrounds) -> None:
    playgrounds.ready()
    repo = playgrounds.repo
    code, output = shell(repo, "make -s trigger CLUSTER=cls-demo01")
    assert code == 0 and "make: ***" not in output, output
    code, output_of_nope = shell(repo, "make -s trigger CLUSTER=cls-nope")
    assert code == 2 and "make: *** [Makefile:" in output_of_nope and "] Error 4" in output_of_nope, output_of_nope
    code, output = shell(repo, "make -s trigger CLUSTER='cls nope!'")
    assert "error: 'cls nope!' is not a HyperFleet cluster id; nothing was sent" in output, output
    assert "] Error 2" in output and "unrecognized arguments" not in output, output
    code, output = shell(repo, "make -s logs CLUSTER=cls-unseen")
    assert "No line of cluster cls-unseen in" in output and "cls-demo01" in output and "] Error 4" in output, output
    code, output = shell(repo, "make -s logs CLUSTER=cls-demo01")
    assert code == 0 and "[cls-demo01]" in output, output[-2000:]
    # The one table is in the README, and it names every code the CLI has.
    from pullsecret.operator import cli

    readme = (repo / "README.md").read_text()
    table = readme.split("### Exit codes", 1)[1].split("\n### ", 1)[0]
    codes = {int(row.split("|")[1]) for row in table.splitlines() if row.startswith("| ") and row[2].isdigit()}
    assert codes == {value for name, value in vars(cli).items() if name.startswith("EXIT_")}, codes
    shown = re.search(r"make: \*\*\* \[Makefile:(\d+): trigger\] Error 4", table)
    assert shown is not None and shown.group(0) in output_of_nope, table  # the README shows make's very line


# 8, 9. An ID-token playground starts; a misspelt precondition adapter is said at once and at each trigger.
def test_an_id_token_playground_with_a_misspelt_precondition_says_so(playgrounds: Playgrounds) -> None:
    playgrounds.ready(playgrounds.id_token)
    ready = playgrounds.id_token.ready_line()
    assert "HyperFleet sign-in google-id-token" in ready, ready
    assert "preconditions NOT met: PRECONDITION_ADAPTERS names placment" in ready, ready
    code, output = shell(
        playgrounds.repo,
        ".venv/bin/python -m emulators trigger cls-demo01 --state-dir .playground-3",
        state=".playground-3",
    )
    assert code == 0 and "PreconditionsNotMet" in output, output
    assert "Note: this will not pass: PRECONDITION_ADAPTERS names placment" in output, output


def test_help_names_adapter_topic_and_deployed_offline_fails_at_once(playgrounds: Playgrounds) -> None:
    playgrounds.ready()
    code, output = shell(playgrounds.repo, ".venv/bin/python -m pullsecret rekey --help", state=None)
    assert code == 0 and "ADAPTER_TOPIC" in output, output
    started = time.monotonic()
    code, output = shell(
        playgrounds.repo,
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDFUNCTIONS=http://127.0.0.1:9/ .venv/bin/python -m pullsecret "
        "reconcile cls-demo01 --deployed projects/hf-demo-project/locations/us-central1/functions/f",
    )
    assert time.monotonic() - started < 15, output
    assert code == 5 and "cannot reach 127.0.0.1:9" in output, output


# 10. Small things: the doctor counts in words, make rotate in external-secrets mode writes no Kubernetes Secret.
def test_small_words(playgrounds: Playgrounds) -> None:
    playgrounds.ready(playgrounds.gateway)
    code, output = shell(playgrounds.repo, ".venv/bin/python -m pullsecret doctor", state=".playground-2")
    assert "(1 clusters)" not in output and "(1 cluster)" in output, output
    # Issue 52, item 2: the gateway's token is minted (GetCluster granted as Terraform grants it in these modes);
    # what fails is the demo's refused registry credential alone, on purpose.
    failed = [line for line in output.splitlines() if line.startswith("FAIL")]
    assert len(failed) == 1 and "/demo: the registry refused the credential" in failed[0], output
    code, output = shell(
        playgrounds.repo, ".venv/bin/python -m emulators rotate --state-dir .playground-2", state=".playground-2"
    )
    assert code == 0 and "Kubernetes Secret written" not in output, output
    assert "no Kubernetes write: External Secrets Operator copies the new version" in output, output
