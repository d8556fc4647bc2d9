"""`make demo SOURCE=service` as a person runs it: a real process, the Pull Secret Service's rotation and revocation
shown, success said, and no credential printed."""

from __future__ import annotations

import subprocess
import sys

from tests.support import ROOT, clean_env


def test_the_service_mode_demo_shows_a_rotation_and_a_revocation() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "emulators", "demo", "--source", "service"],
        cwd=ROOT,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    assert "Demo succeeded." in out
    assert "minted for it by the Pull Secret Service" in out
    assert "the registry now\n      refuses the old credential" in out
    assert "Finalized  True" in out and "revoked at their source (confirmed)" in out
    assert "pss-" not in out  # the service token the stack wrote never shows
