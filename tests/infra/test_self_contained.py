"""The repository works on its own: no tracked file points outside it, and the demo runs from a bare copy.

The copy holds exactly the tracked files (`git ls-files`) in an empty temporary folder, with nothing beside
it. It reuses this checkout's interpreter (the pinned .venv) instead of building a second virtualenv, which
would take a minute and need the package index: the interpreter is not part of the repository, and the test
checks that every project module is then imported from the copy, not from this checkout.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import bare_copy, clean_env

ROOT = Path(__file__).resolve().parent.parent.parent
# A path that only exists on the machine that wrote it: the team's reference folder or the workspace.
OUTSIDE = re.compile(r"\.\./shared\b|(?<![\w.])shared/(?:contracts|design\.md|contract\.md|style\.md)|/work/")
MARKDOWN_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def tracked_files() -> list[str]:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the tracked files are unknown")
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [name for name in listed.decode().split("\0") if name and (ROOT / name).is_file()]


def text_of(name: str) -> str | None:
    data = (ROOT / name).read_bytes()
    if b"\0" in data[:4096]:
        return None
    return data.decode("utf-8", errors="replace")


def test_no_tracked_file_refers_to_a_path_outside_the_repository() -> None:
    offenders = []
    for name in tracked_files():
        if name == "tests/infra/test_self_contained.py":
            continue  # this file names the patterns it looks for
        text = text_of(name)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if OUTSIDE.search(line):
                offenders.append(f"{name}:{number}: {line.strip()[:160]}")
    assert offenders == [], "\n".join(offenders)


def test_every_relative_markdown_link_resolves_inside_the_repository() -> None:
    broken = []
    for name in tracked_files():
        if not name.endswith(".md"):
            continue
        text = text_of(name) or ""
        for target in MARKDOWN_LINK.findall(text):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue  # https:, mailto:
            resolved = ((ROOT / name).parent / target).resolve()
            if not resolved.is_relative_to(ROOT) or not resolved.exists():
                broken.append(f"{name}: ({target})")
    assert broken == [], "\n".join(broken)


def test_the_demo_runs_from_a_bare_copy_of_the_tracked_files(tmp_path: Path) -> None:
    tracked_files()  # skips outside a git checkout
    copy = bare_copy(tmp_path / "repo")
    assert [p.name for p in tmp_path.iterdir()] == ["repo"], "the copy must have nothing beside it"
    env = clean_env(PYTHONPATH=str(copy), PYTHONDONTWRITEBYTECODE="1")
    where = subprocess.run(
        [sys.executable, "-c", "import emulators.stack, pullsecret.handler; print(emulators.stack.__file__)"],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(copy), f"imported from outside the copy: {where.stdout}"
    demo = subprocess.run(
        [sys.executable, "-m", "emulators.demo"],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=240,
    )
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert "Demo succeeded." in demo.stdout
