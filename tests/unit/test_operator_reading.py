"""What a person reads: a stale shell's one line (pullsecret.operator.staleness), a DEBUG record's fields in
`make logs` (emulators.logview), a second playground's hints naming its own state folder, a failed start's
line naming the file and line (emulators.playground)."""

from __future__ import annotations

import socket
from pathlib import Path

from emulators import logview, playground
from pullsecret.operator import staleness


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port  # closed again: nothing listens there


def test_a_token_file_that_no_longer_exists_is_a_stale_shell(tmp_path: Path) -> None:
    env = {
        "HYPERFLEET_API_URL": "http://127.0.0.1:1/",
        "HYPERFLEET_API_TOKEN_FILE": str(tmp_path / "gone"),
        "EMULATORS_ADMIN": "http://127.0.0.1:2",
    }
    said = staleness.hint(env, cwd=tmp_path)
    assert said is not None and "no longer exists" in said and "make up" in said
    (tmp_path / ".playground").mkdir()
    (tmp_path / ".playground" / "env").write_text("export X=1\n")
    assert "source .playground/env` again" in str(staleness.hint(env, cwd=tmp_path))


def test_a_port_nothing_listens_on_is_a_stale_shell_and_production_is_never_probed(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/"
    said = staleness.hint({"HYPERFLEET_API_URL": url, "FUNCTION_URL": "http://127.0.0.1:3/"}, cwd=tmp_path)
    assert said is not None and "nothing listens at http://127.0.0.1:" in said and "playground that stopped" in said
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        url = f"http://127.0.0.1:{listening.getsockname()[1]}/"
        assert staleness.hint({"HYPERFLEET_API_URL": url}, cwd=tmp_path) is None
    assert staleness.hint({"HYPERFLEET_API_URL": "https://api.example.com", "HYPERFLEET_API_TOKEN_FILE": "/x"}) is None


def test_a_debug_record_shows_its_fields_an_info_record_only_reason_and_service() -> None:
    debug = {
        "severity": "DEBUG",
        "message": "preconditions decided: Act",
        "time": "2026-11-26T00:00:00.123456Z",
        "operation": "preconditions",
        "namespace": "clusters-cls-demo01",
        "generation": 1,
        "logging.googleapis.com/labels": {"cluster_id": "cls-demo01"},
        "logging.googleapis.com/trace": "t",
    }
    line = logview.readable(debug)
    assert "generation=1" in line and "namespace=clusters-cls-demo01" in line and "operation=preconditions" in line
    assert "trace" not in line and "labels" not in line
    info = {**debug, "severity": "INFO", "reason": "Why"}
    assert logview.readable(info).endswith("(reason=Why)")


def test_a_second_playground_names_its_own_state_folder() -> None:
    first = playground.next_steps("cls-demo01", playground.STATE_DIR, None)
    assert "make trigger CLUSTER=cls-demo01" in first and "make down" in first
    second = playground.next_steps("cls-demo01", Path(".playground-2"), None)
    assert "make trigger" not in second and "make logs" not in second and "`make down`" not in second
    assert "-m emulators trigger cls-demo01 --state-dir .playground-2" in second
    assert "-m emulators logs --state-dir .playground-2" in second
    assert "-m emulators down --state-dir .playground-2" in second


def test_a_failed_start_names_the_configuration_error_or_the_file_and_line() -> None:
    root = playground.ROOT
    traceback = (
        "Traceback (most recent call last):\n"
        f'  File "{root}/main.py", line 3, in <module>\n'
        f'  File "{root}/pullsecret/errors.py", line 240\n'
        "    def broken(:\n"
        "               ^\n"
        "SyntaxError: invalid syntax\n"
    )
    assert playground.failure_line(traceback) == "pullsecret/errors.py, line 240: SyntaxError: invalid syntax"
    config = "Traceback ...\npullsecret.errors.ConfigError: REGISTRY_VERIFICATION must be one of ('off',)\n"
    assert playground.failure_line(config) == "REGISTRY_VERIFICATION must be one of ('off',)"
