"""An operator's second day on the playground (issue 43), the pieces that need no playground running: the env
file unsets what an earlier one left, a failed start's line is readable, `make logs` after a stop says so, the
first line of `make up` comes before its slow imports, the trigger refuses an invalid id in one line, and the
trigger's exit codes and ids are the CLI's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from emulators import playground_env, trigger
from emulators.playground import failure_line
from tests.support import ROOT, clean_env

DUMP = "import json, os; print(json.dumps(dict(os.environ)))"


def test_sourcing_the_env_file_leaves_nothing_of_an_earlier_playground(tmp_path: Path) -> None:
    now = {"HYPERFLEET_API_URL": "http://127.0.0.1:1", "FUNCTION_URL": "http://127.0.0.1:2/"}
    path = tmp_path / "env"
    path.write_text(playground_env.env_file_text(now))
    earlier = {
        "KUBERNETES_DELIVERY": "external-secrets",
        "EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE": "principal://x/{namespace}",
        "ALLOWED_SECRET_PROJECTS": "elsewhere",  # read by settings/secret_projects.py, not in operator/settings.py
        "PUBSUB_EMULATOR_HOST": "127.0.0.1:3",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_PUBSUB": "http://127.0.0.1:3/",
        "PULLSECRET_DEPLOYED_FUNCTION": "projects/p/locations/l/functions/f",
        "HYPERFLEET_API_URL": "http://127.0.0.1:9",
    }
    shell = subprocess.run(
        ["bash", "-c", f'source "{path}" && "{sys.executable}" -c "{DUMP}"'],
        env=clean_env(**earlier),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    env = json.loads(shell.stdout)
    left = sorted(k for k in earlier if k in env and k not in now)
    assert left == [], left
    assert {k: env[k] for k in now} == now
    # Every variable the code under pullsecret/ reads is managed, whichever way it reads it.
    sources = [p.read_text() for p in (ROOT / "pullsecret").rglob("*.py")]
    assert playground_env.names_read(sources) <= playground_env.function_variables()


def test_a_failed_start_logged_as_json_is_its_message_shortened_at_a_word() -> None:
    message = (
        "configuration error: MANAGEMENT_CLUSTER 'projects/hf-demo-project/locations/us-central1/clusters/mgmt-2' "
        "is not among ALLOWED_MANAGEMENT_CLUSTERS " + "and some more words of explanation " * 12
    )
    record = {"severity": "ERROR", "message": message, "time": "2026-11-27T11:09:04Z", "reason": "ConfigError"}
    line = failure_line("Booting worker\n" + json.dumps(record) + "\n")
    assert not line.startswith("{") and '"severity"' not in line, line
    assert line.startswith("configuration error: MANAGEMENT_CLUSTER 'projects/") and len(line) <= 300, line
    assert line.endswith(" …") and message.startswith(line[: -len(" …")] + " "), line  # cut between two words


def test_logs_after_a_stop_say_the_playground_is_down(tmp_path: Path) -> None:
    (tmp_path / "function.log").write_text(json.dumps({"severity": "INFO", "message": "adapter configured"}) + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "emulators", "logs", "--state-dir", str(tmp_path)],
        cwd=ROOT,
        env=clean_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0 and "adapter configured" in done.stdout, done.stdout + done.stderr
    assert "The playground is down" in done.stderr and "last run" in done.stderr, done.stderr


def test_make_up_says_its_first_line_before_the_slow_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import emulators
    from emulators import __main__ as cli

    # The import that takes seconds (the stack, the client libraries) fails at once here: whatever was printed
    # before it was printed before any of that work.
    monkeypatch.setitem(sys.modules, "emulators.playground", None)
    monkeypatch.delattr(emulators, "playground", raising=False)
    with pytest.raises(ImportError):
        cli.main(["playground", "--state-dir", str(tmp_path), "--no-pubsub"])
    assert capsys.readouterr().out.startswith("# Starting the playground")


def test_an_invalid_cluster_id_is_one_line_and_sends_nothing(tmp_path: Path) -> None:
    for via in ("push", "pubsub"):
        done = subprocess.run(
            [sys.executable, "-m", "emulators", "trigger", "cls nope!", "--via", via, "--state-dir", str(tmp_path)],
            cwd=ROOT,
            env=clean_env(FUNCTION_URL="http://127.0.0.1:9/", EMULATORS_ADMIN="http://127.0.0.1:9"),
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert done.returncode == 2 and done.stderr == "", done.stdout + done.stderr
        assert done.stdout.splitlines() == ["error: 'cls nope!' is not a HyperFleet cluster id; nothing was sent"]


def test_the_trigger_speaks_the_clis_exit_codes_and_ids() -> None:
    from pullsecret.model.events import _CLUSTER_ID
    from pullsecret.operator.cli import _RESULT_EXIT

    assert trigger.RESULT_EXIT == _RESULT_EXIT
    assert trigger.CLUSTER_ID.pattern == _CLUSTER_ID.pattern
