"""CI must not pass by skipping: a Pub/Sub-emulator test that skips for lack of the Cloud SDK fails under CI=true."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.infra import reality

EMULATOR_TESTS = "tests/emulators/test_pubsub.py"


def run_without_cloud_sdk(tmp_path: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    # An empty PATH: no gcloud, no java, so PubSubEmulator.available() says why it cannot run.
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "BUILDER_OUTPUT")}
    env.update(PATH=str(tmp_path), **extra)
    return subprocess.run(
        [sys.executable, "-m", "pytest", EMULATOR_TESTS, "-q", "-p", "no:cacheprovider"],
        cwd=reality.REPOSITORY_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_pubsub_emulator_skips_are_failures_in_ci(tmp_path: Path) -> None:
    local = run_without_cloud_sdk(tmp_path)
    assert local.returncode == 0, local.stdout[-2000:]
    assert "skipped" in local.stdout and "failed" not in local.stdout, local.stdout[-2000:]
    for ci in ({"CI": "true"}, {"BUILDER_OUTPUT": "/builder/outputs"}):
        result = run_without_cloud_sdk(tmp_path, **ci)
        assert result.returncode == 1, (ci, result.stdout[-2000:])
        assert "skipped in CI, which must run the Pub/Sub emulator tests" in result.stdout, result.stdout[-2000:]
        assert "gcloud is not installed" in result.stdout
