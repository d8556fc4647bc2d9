"""The playground in every mode, as real processes: the Pull Secret Service as the source (`make up SOURCE=service`),
external-secrets delivery (`KUBERNETES_DELIVERY=external-secrets make up`), settings given to `make up` reaching
the env file (so the CLI run from that shell decides as the function does), and mistakes answered in one line:
an invalid setting, a syntax error in a saved file (and `make trigger` then saying why the function is down)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from tests.emulators.playground_process import READY_S, Playground, emulators_cli
from tests.support import ROOT, bare_copy, clean_env


def pullsecret_cli(*args: str, env: dict[str, str], root: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pullsecret", *args],
        cwd=root,
        env=clean_env(**env),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_service_mode_with_settings_given_to_make_up_the_cli_agrees_with_the_function(
    tmp_path: Path,
    playgrounds: list[Playground],
) -> None:
    root = bare_copy(tmp_path / "repo", venv=True)
    state = root / ".playground"
    given = {"REGISTRY_VERIFICATION": "enforce", "REGISTRY_ENFORCE_PLATFORM": "true", "LOG_LEVEL": "DEBUG"}
    # A shell left with an earlier platform playground's source must not bring it back (both sources: refused).
    shell = {**given, "PULL_SECRET_SOURCE": "projects/p/secrets/s/versions/latest"}
    played = Playground(tmp_path, state, root=root, env=shell, make=("SOURCE=service",))
    playgrounds.append(played)
    env = played.wait_ready()
    assert "source service, delivery direct" in played.output()
    for key, value in given.items():
        assert env[key] == value, (key, env)  # the env file carries every setting the function runs with
    assert env["PULL_SECRET_SERVICE_URL"] and "PULL_SECRET_SOURCE" not in env

    done = emulators_cli("trigger", "cls-demo01", "--state-dir", str(state))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Available  True" in done.stdout and "The function: " in done.stdout, done.stdout
    # The function's DEBUG lines show their fields in the readable view.
    logs = emulators_cli("logs", "--state-dir", str(state))
    assert "preconditions decided: Act" in logs.stdout and "namespace=clusters-cls-demo01" in logs.stdout

    # The CLI from a shell that sourced the env file: the same settings, the same decision (nothing to write).
    again = pullsecret_cli("reconcile", "cls-demo01", env=env)
    assert again.returncode == 0 and again.stdout.startswith("cluster cls-demo01: unchanged"), again.stdout
    assert again.stderr == ""  # the log lines only with -v


def test_external_secrets_mode_needs_one_setting(tmp_path: Path, playgrounds: list[Playground]) -> None:
    root = bare_copy(tmp_path / "repo", venv=True)
    state = root / ".playground"
    played = Playground(tmp_path, state, root=root, env={"KUBERNETES_DELIVERY": "external-secrets"}, make=())
    playgrounds.append(played)
    env = played.wait_ready()
    assert env["KUBERNETES_DELIVERY"] == "external-secrets"
    assert env["EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE"].startswith("principal://iam.googleapis.com/projects/")
    done = emulators_cli("trigger", "cls-demo01", "--state-dir", str(state))
    assert done.returncode == 0 and "Available  True" in done.stdout, done.stdout
    outcome = pullsecret_cli("reconcile", "cls-demo01", "--json", env=env)
    body = json.loads(outcome.stdout)
    assert body["result"] == "unchanged", body
    inspected = json.loads(pullsecret_cli("inspect", "cls-demo01", env=env).stdout)
    assert inspected["kubernetes"]["delivery"] == "external-secrets"
    assert "ns/clusters-cls-demo01/sa/" in inspected["kubernetes"]["access_member"]


def test_service_account_token_mode_needs_one_setting_and_the_doctor_is_green(
    tmp_path: Path,
    playgrounds: list[Playground],
) -> None:
    """`HYPERFLEET_API_AUTH=service-account-token make up`: the gateway in front of the API, the token minted on the
    regional cluster; the function reconciles through it and the doctor, from the sourced shell, is green."""
    root = bare_copy(tmp_path / "repo", venv=True)
    state = root / ".playground"
    played = Playground(tmp_path, state, root=root, env={"HYPERFLEET_API_AUTH": "service-account-token"}, make=())
    playgrounds.append(played)
    env = played.wait_ready()
    assert env["HYPERFLEET_API_AUTH"] == "service-account-token" and "HYPERFLEET_API_TOKEN_FILE" not in env
    assert env["HYPERFLEET_API_TOKEN_CLUSTER"].endswith("/clusters/hyperfleet-regional")
    done = emulators_cli("trigger", "cls-demo01", "--state-dir", str(state))
    assert done.returncode == 0 and "Available  True" in done.stdout, done.stdout
    doctor = pullsecret_cli("doctor", env=env)
    lines = doctor.stdout.splitlines()
    assert sum(line.split()[:2] == ["ok", "service-account-token"] for line in lines) == 2, doctor.stdout
    assert any(line.split()[:2] == ["ok", "hyperfleet-api"] for line in lines), doctor.stdout
    # Red only where the demo's pull secret is meant to be (a registry that refuses its credential).
    assert {line.split()[1] for line in lines if line.startswith("FAIL")} <= {"registries"}, doctor.stdout


def test_an_invalid_setting_is_one_line_and_starts_nothing(tmp_path: Path, playgrounds: list[Playground]) -> None:
    state = tmp_path / "state"
    played = Playground(tmp_path, state, "--no-pubsub", env={"REGISTRY_VERIFICATION": "enforced"})
    playgrounds.append(played)
    assert played.wait_exit(timeout=60) == 2
    started, said = played.output().split("\n", 1)
    assert started.startswith("# Starting the playground"), started  # at once, before the slow imports
    assert "Traceback" not in said, said
    assert said.startswith("configuration error: REGISTRY_VERIFICATION must be one of"), said
    assert "make up" in said and len(said.strip().splitlines()) == 2, said
    played.assert_nothing_left()


def test_a_syntax_error_names_its_file_and_line_and_trigger_says_the_function_is_down(
    tmp_path: Path,
    playgrounds: list[Playground],
) -> None:
    root = bare_copy(tmp_path / "repo", venv=True)
    state = tmp_path / "state"
    played = Playground(tmp_path, state, "--no-pubsub", root=root)
    playgrounds.append(played)
    played.wait_ready()
    broken = root / "pullsecret" / "errors.py"
    original = broken.read_text()
    broken.write_text(original + "\ndef broken(:\n")
    line = len((original + "\n").splitlines()) + 1
    deadline = time.monotonic() + READY_S
    while "did not start" not in played.output():
        assert time.monotonic() < deadline, played.output()
        time.sleep(0.2)
    time.sleep(0.2)
    said = next(text for text in played.output().splitlines() if "did not start" in text)
    assert f"pullsecret/errors.py, line {line}: SyntaxError" in said, said
    done = subprocess.run(
        [sys.executable, "-m", "emulators", "trigger", "cls-demo01", "--state-dir", str(state)],
        cwd=root,
        env=clean_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 2 and "its function does not" in done.stdout, done.stdout + done.stderr
    assert f"pullsecret/errors.py, line {line}" in done.stdout and "make up" not in done.stdout
    broken.write_text(original)
    deadline = time.monotonic() + READY_S
    while "serves the new code again" not in played.output():
        assert time.monotonic() < deadline, played.output()
        time.sleep(0.2)
    assert not (state / "function-down").exists()
