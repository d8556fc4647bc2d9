"""An operator's second day on the playground (issue 43), as real processes: two playgrounds one after the other
in one shell, the operator's read-only identity, a setting the playground cannot run with refused before anything
starts, the push and the Pub/Sub path agreeing on an unknown cluster, `make rotate`, and an early Ctrl-C of a
background `make up`."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from emulators.pubsub import PubSubEmulator
from tests.emulators.playground_process import Playground, emulators_cli
from tests.support import ROOT, Admin, clean_env

KUBECTL = shutil.which("kubectl")
MGMT_2 = "projects/hf-demo-project/locations/us-central1/clusters/mgmt-2"


def _sourced(*files: Path, before: dict[str, str]) -> dict[str, str]:
    """The environment of one bash that sourced `files` in order, starting from `before`."""
    sources = " && ".join(f'source "{f}"' for f in files)
    done = subprocess.run(
        ["bash", "-c", f'{sources} && "{sys.executable}" -c "import json, os; print(json.dumps(dict(os.environ)))"'],
        env=clean_env(**before),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    env: dict[str, str] = json.loads(done.stdout)
    return env


def test_a_shell_that_sourced_two_playgrounds_holds_the_second_ones_settings_and_the_cli_agrees(
    tmp_path: Path,
    playgrounds: list[Playground],
) -> None:
    state = tmp_path / "state"
    earlier = Playground(tmp_path, state, "--no-pubsub", env={"KUBERNETES_DELIVERY": "external-secrets"})
    playgrounds.append(earlier)
    earlier.wait_ready()
    first = tmp_path / "first.env"
    shutil.copy(state / "env", first)
    assert emulators_cli("down", "--state-dir", str(state)).returncode == 0
    assert not (state / "settings.json").exists()

    now = Playground(tmp_path, state, "--no-pubsub")
    playgrounds.append(now)
    now.wait_ready()
    record = json.loads((state / "settings.json").read_text())
    assert record["format"] == 1 and record["pid"] == now.proc.pid
    assert (record["source"], record["delivery"]) == ("platform", "direct")

    env = _sourced(first, state / "env", before={"LOG_LEVEL": "DEBUG"})
    assert {k: env.get(k) for k in record["settings"]} == record["settings"]
    assert [k for k in record["unset"] if k in env] == []  # KUBERNETES_DELIVERY and the template included
    assert "KUBERNETES_DELIVERY" in record["unset"] and "EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE" in record["unset"]
    assert env["PULLSECRET_OPERATOR_KUBECONFIG"] == record["operator_kubeconfig"]

    # The CLI from that shell decides as the function does: a healthy cluster, no PermissionDenied reported.
    done = subprocess.run(
        [sys.executable, "-m", "pullsecret", "reconcile", "cls-demo01"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0 and "Applied=True" in done.stdout, done.stdout + done.stderr
    assert "PermissionDenied" not in done.stdout + done.stderr

    if KUBECTL is None:
        pytest.skip("kubectl is not installed: the operator's kubeconfig is checked as a file only")
    kubeconfig = ["--kubeconfig", env["PULLSECRET_OPERATOR_KUBECONFIG"], "-n", "clusters-cls-demo01"]
    got = subprocess.run(
        [KUBECTL, *kubeconfig, "get", "secret", "cls-demo01-pull-secret", "-o", "json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["type"] == "kubernetes.io/dockerconfigjson"
    for verb in ("create", "patch", "delete"):
        can = subprocess.run(
            [KUBECTL, *kubeconfig, "auth", "can-i", verb, "secrets"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert can.stdout.strip() == "no", (verb, can.stdout, can.stderr)


def test_a_management_cluster_the_playground_does_not_allow_is_refused_before_anything_starts(
    tmp_path: Path,
    playgrounds: list[Playground],
) -> None:
    played = Playground(tmp_path, tmp_path / "state", "--no-pubsub", env={"MANAGEMENT_CLUSTER": MGMT_2})
    playgrounds.append(played)
    assert played.wait_exit(timeout=60) == 2
    lines = [line for line in played.output().splitlines() if not line.startswith("# Starting")]
    assert len(lines) == 2 and lines[0].startswith("configuration error: MANAGEMENT_CLUSTER"), lines
    assert "the playground sets ALLOWED_MANAGEMENT_CLUSTERS=projects/hf-demo-project/" in lines[0], lines
    assert "{" not in lines[0] and "Nothing was started" in lines[1], lines
    assert "Stopped" not in played.output()  # nothing started, so nothing to stop
    played.assert_nothing_left()


def test_an_unknown_cluster_is_one_answer_on_both_paths_and_rotate_reaches_the_next_trigger(
    tmp_path: Path,
    playgrounds: list[Playground],
) -> None:
    if not PubSubEmulator.available()[0]:
        pytest.skip(PubSubEmulator.available()[1])
    state = tmp_path / "state"
    played = Playground(tmp_path, state, "--source", "service")
    playgrounds.append(played)
    played.wait_ready()
    answers = {}
    for via in ("push", "pubsub"):
        done = emulators_cli("trigger", "cls-nope", "--via", via, "--state-dir", str(state))
        said = done.stdout.splitlines()
        sent = [line for line in said if line.startswith(("Pushed", "Published", "Waiting"))]
        answers[via] = (done.returncode, [line for line in said if line not in sent])
        if via == "pubsub":
            assert any(line.startswith("Waiting (up to") for line in said), said  # said before it waits
    assert answers["push"] == answers["pubsub"], answers
    code, lines = answers["push"]
    assert code == 4 and any("HyperFleet has no cluster cls-nope" in line for line in lines), answers

    early = emulators_cli("rotate", "cls-demo01", "--state-dir", str(state))
    assert early.returncode == 1 and "make trigger CLUSTER=cls-demo01 first" in early.stdout, early.stdout
    assert emulators_cli("trigger", "cls-demo01", "--state-dir", str(state)).returncode == 0
    started = emulators_cli("rotate", "cls-demo01", "--state-dir", str(state))
    assert started.returncode == 0 and "Started rotation" in started.stdout, started.stdout + started.stderr
    done = emulators_cli("trigger", "cls-demo01", "--state-dir", str(state))
    assert done.returncode == 0 and "secretmanager.store: written" in done.stdout, done.stdout
    ended = emulators_cli("rotate", "cls-demo01", "--complete", "--state-dir", str(state))
    assert ended.returncode == 0 and "old set is deleted" in ended.stdout, ended.stdout + ended.stderr


def test_make_rotate_of_the_platform_pull_secret_reaches_the_next_trigger(
    tmp_path: Path,
    playgrounds: list[Playground],
) -> None:
    state = tmp_path / "state"
    played = Playground(tmp_path, state, "--no-pubsub")
    playgrounds.append(played)
    played.wait_ready()
    assert emulators_cli("trigger", "cls-demo01", "--state-dir", str(state)).returncode == 0
    rotated = emulators_cli("rotate", "--state-dir", str(state))
    assert rotated.returncode == 0 and "Added version 2" in rotated.stdout, rotated.stdout + rotated.stderr
    done = emulators_cli("trigger", "cls-demo01", "--state-dir", str(state))
    assert done.returncode == 0 and "secretmanager.store: written" in done.stdout, done.stdout
    assert "kubernetes.apply_secret: written" in done.stdout, done.stdout


def test_a_ctrl_c_in_the_first_moment_of_a_background_make_up_is_not_lost(
    tmp_path: Path,
    playgrounds: list[Playground],
) -> None:
    played = Playground(tmp_path, tmp_path / "state", "--no-pubsub", sigint_ignored=True)
    playgrounds.append(played)
    cmdline = Path(f"/proc/{played.proc.pid}/cmdline")
    deadline = time.monotonic() + 30
    while b"emulators" not in cmdline.read_bytes():  # bash has exec'd Python, SIGINT still ignored
        assert time.monotonic() < deadline
        time.sleep(0.01)
    time.sleep(0.3)  # Python is loading: long before the playground installs its own handlers
    played.proc.send_signal(signal.SIGINT)
    assert played.wait_exit(timeout=60) == 130, played.output()
    assert "Interrupted" in played.output() and "Traceback" not in played.output(), played.output()
    played.assert_nothing_left()


def test_a_shell_left_from_an_earlier_playground_is_refused_before_any_write(
    tmp_path: Path,
    playgrounds: list[Playground],
) -> None:
    """The stale shell: it sourced an external-secrets playground, which stopped; a direct one runs now and the
    shell never sourced its file. `reconcile` refuses before it writes, naming each difference and the fix."""
    state = tmp_path / ".playground"  # the checkout's own state folder: the CLI runs from tmp_path
    earlier = Playground(tmp_path, state, "--no-pubsub", env={"KUBERNETES_DELIVERY": "external-secrets"})
    playgrounds.append(earlier)
    earlier.wait_ready()
    shell = _sourced(state / "env", before={})
    assert emulators_cli("down", "--state-dir", str(state)).returncode == 0
    now = Playground(tmp_path, state, "--no-pubsub")
    playgrounds.append(now)
    played = now.wait_ready()
    admin = Admin(played["EMULATORS_ADMIN"], played["HYPERFLEET_API_URL"])
    reported = len(admin.reports())

    done = subprocess.run(
        [sys.executable, "-m", "pullsecret", "reconcile", "cls-demo01"],
        cwd=tmp_path,
        env={**shell, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    said = done.stdout + done.stderr
    assert done.returncode == 5 and done.stderr.startswith("refusing to write: this shell's settings differ"), said
    assert "KUBERNETES_DELIVERY: here 'external-secrets', playground unset" in said, said
    assert "EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE: here" in said and "HYPERFLEET_API_URL: here" in said, said
    assert "run `source .playground/env` in this shell" in said and "Traceback" not in said, said
    assert len(admin.reports()) == reported  # nothing reported to HyperFleet

    # Sourced, then the earlier playground's `export` lines pasted again from the scrollback: the URL and token
    # are live, so nothing looks stale; the delivery is not the function's. Refused before any write too.
    fixed = _sourced(state / "env", before=shell)
    pasted = {k: shell[k] for k in ("KUBERNETES_DELIVERY", "EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE")}
    done = subprocess.run(
        [sys.executable, "-m", "pullsecret", "reconcile", "cls-demo01"],
        cwd=tmp_path,
        env={**fixed, **pasted, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    said = done.stdout + done.stderr
    assert done.returncode == 5 and "KUBERNETES_DELIVERY: here 'external-secrets', playground unset" in said, said
    assert "HYPERFLEET_API_URL" not in said and len(admin.reports()) == reported, said  # nothing reported

    # Sourced again, it agrees: the reconcile applies, and inspect reads the Secret with the operator's identity.
    for command in (["reconcile", "cls-demo01"], ["inspect", "cls-demo01"]):
        done = subprocess.run(
            [sys.executable, "-m", "pullsecret", *command],
            cwd=tmp_path,
            env={**fixed, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr
    shown = json.loads(done.stdout)
    assert shown["in_sync"] is True and shown["kubernetes"]["exists"] is True, shown  # direct mode's delivery shows
