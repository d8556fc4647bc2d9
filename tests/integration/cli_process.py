"""The operator CLI run as a real process (`python -m pullsecret`) from the repository's root; its output never holds
a credential of tests.support.SENSITIVE."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support import SENSITIVE

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "pullsecret", *args],
        check=False,
        cwd=ROOT,
        env=env if env is not None else dict(os.environ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    for secret in SENSITIVE:
        assert secret not in result.stdout + result.stderr, "a credential reached the CLI output"
    return result
