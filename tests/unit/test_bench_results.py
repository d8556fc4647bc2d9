"""Trying the bench out (`python -m bench --quick`, `--only`) never overwrites the tracked figures and plots."""

from __future__ import annotations

import subprocess

from bench.__main__ import RESULTS, results_path
from tests.support import ROOT


def test_only_the_full_run_writes_the_tracked_results() -> None:
    assert results_path(quick=False, only=None) == RESULTS
    for quick, only in ((True, None), (False, "burst"), (True, "flows")):
        elsewhere = results_path(quick=quick, only=only)
        assert elsewhere.parent != RESULTS.parent
        relative = str(elsewhere.relative_to(ROOT))
        # Ignored by git, so a quick run leaves `git status` clean.
        ignored = subprocess.run(["git", "check-ignore", "-q", relative], cwd=ROOT, check=False)
        assert ignored.returncode == 0, relative
