"""Every CLI failure one line with its fix and exit code (issue 43), as real processes: no Application Default
Credentials, credentials Google's token endpoint refuses, an emulator nothing listens at, a fresh shell next to a
running playground, a reader that stops reading (`--json | head`)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cli_process import ROOT, cli
from tests.support import clean_env, seed_ready_cluster

BASE = {
    "HYPERFLEET_API_URL": "https://api.example.com/",
    "PULL_SECRET_SOURCE": "projects/hf-proj-1/secrets/s/versions/latest",
    "SECRET_PROJECT_ID": "hf-proj-1",
    "ALLOWED_MANAGEMENT_CLUSTERS": "projects/hf-proj-1/locations/us-central1/clusters/mgmt-1",
}


def _shell(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A workstation's shell: no gcloud configuration, no metadata server, nothing of the playground's."""
    env = {k: v for k, v in clean_env().items() if not k.startswith(("GCE_", "SECRET_MANAGER", "GKE_", "HYPERFLEET"))}
    env.update({"HOME": str(tmp_path), "CLOUDSDK_CONFIG": str(tmp_path / "gcloud"), "GCE_METADATA_HOST": ""})
    env.update({"NO_GCE_CHECK": "True", "GCE_METADATA_IP": "127.0.0.1:9", **BASE, **extra})
    return env


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    said = done.stdout + done.stderr
    assert "Traceback" not in said and len(said.strip().splitlines()) == 1, said
    return said.strip()


@pytest.fixture
def listening() -> Iterator[str]:
    """host:port of a socket that accepts connections (an emulator's, as far as the CLI's probe can tell)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield f"127.0.0.1:{sock.getsockname()[1]}"


@pytest.mark.parametrize("command", [["doctor"], ["fleet"], ["inspect", "cls-x1"], ["reconcile", "cls-x1"]])
def test_no_application_default_credentials_is_one_line_with_the_fix(
    tmp_path: Path, command: list[str], listening: str
) -> None:
    env = _shell(tmp_path, SECRET_MANAGER_EMULATOR_HOST=listening, GKE_EMULATOR_HOST=listening)
    done = cli(*command, env=env)
    said = _one_line(done)
    assert done.returncode == 5 and said.startswith("no Google credentials: run `gcloud auth application-default")


class _Refusing(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.dumps({"error": "invalid_grant", "error_description": "Token has been expired or revoked."})
        self.send_response(400)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def token_endpoint() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Refusing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/token"
    server.shutdown()


def test_credentials_google_refuses_are_one_line_with_the_fix(
    tmp_path: Path, token_endpoint: str, listening: str
) -> None:
    adc = tmp_path / "adc.json"
    user = {"type": "authorized_user", "client_id": "c", "client_secret": "s", "refresh_token": "r"}
    adc.write_text(json.dumps({**user, "token_uri": token_endpoint}))
    env = _shell(tmp_path, GOOGLE_APPLICATION_CREDENTIALS=str(adc), SECRET_MANAGER_EMULATOR_HOST=listening)
    env["GKE_EMULATOR_HOST"] = listening  # emulators that accept connections: the token is what fails
    done = cli("reconcile", "cls-x1", "--dry-run", env={**env, "RETRY_DEADLINE": "5"})
    said = _one_line(done)
    assert done.returncode == 5 and said.startswith("no usable Google credentials"), said
    assert "gcloud auth application-default login" in said and "refresh_token" not in said


def test_an_emulator_nothing_listens_at_is_named_at_once(tmp_path: Path) -> None:
    adc = tmp_path / "adc.json"
    adc.write_text(
        json.dumps({"type": "authorized_user", "client_id": "c", "client_secret": "s", "refresh_token": "r"})
    )
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = _shell(tmp_path, GOOGLE_APPLICATION_CREDENTIALS=str(adc), SECRET_MANAGER_EMULATOR_HOST=f"127.0.0.1:{port}")
    done = cli("reconcile", "cls-x1", "--dry-run", env=env)
    said = _one_line(done)
    assert done.returncode == 3 and said.startswith(f"cannot reach Secret Manager at 127.0.0.1:{port} (the emulator"), (
        said
    )


def test_a_fresh_shell_next_to_a_running_playground_is_told_to_source_it(tmp_path: Path) -> None:
    (tmp_path / ".playground").mkdir()
    record = {"format": 1, "pid": os.getpid(), "settings": {"HYPERFLEET_API_URL": "http://127.0.0.1:1/"}, "unset": []}
    (tmp_path / ".playground" / "settings.json").write_text(json.dumps(record))
    env = {k: v for k, v in _shell(tmp_path).items() if k not in BASE}
    done = subprocess.run(
        [sys.executable, "-m", "pullsecret", "fleet"],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": ROOT},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    said = _one_line(done)
    assert done.returncode == 5 and "HYPERFLEET_API_URL is required" in said, said
    assert said.endswith("a playground is running in this checkout: run `source .playground/env` in this shell first")


def test_json_into_a_reader_that_stops_ends_without_a_traceback(function_env: dict[str, str], admin: Any) -> None:
    seed_ready_cluster(admin, "cls-pipe01")
    done = subprocess.run(
        [
            "bash",
            "-c",
            f'"{sys.executable}" -m pullsecret reconcile cls-pipe01 --json | head -c 0; echo "${{PIPESTATUS[0]}}"',
        ],
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
    assert done.stdout.strip() in ("0", "141"), done.stdout  # 141 when the reader had gone before the write
