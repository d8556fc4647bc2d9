"""The function ships a fully resolved, hash-pinned requirements.txt (pip-compile of requirements.in), and the
test environment runs exactly that set (`make venv` installs it first, with --require-hashes)."""

from __future__ import annotations

import re
from importlib import metadata

from tests.infra import reality

ROOT = reality.REPOSITORY_ROOT
_PIN = re.compile(r"^([A-Za-z0-9_.-]+)==([^\s\\]+)")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(text: str) -> dict[str, str]:
    return {canonical(m.group(1)): m.group(2) for line in text.splitlines() if (m := _PIN.match(line))}


def test_every_runtime_requirement_is_pinned_with_hashes() -> None:
    text = (ROOT / "requirements.txt").read_text()
    entries = re.split(r"\n(?=[A-Za-z0-9])", text.split("\n\n", 1)[-1] if text.startswith("#") else text)
    entries = [e for e in entries if _PIN.match(e)]
    assert len(entries) > len(pins((ROOT / "requirements.in").read_text())), "requirements.txt is not resolved"
    for entry in entries:
        assert "--hash=sha256:" in entry, f"no hash: {entry.splitlines()[0]}"
    assert not re.search(r"^(-e|--find-links|--index-url|git\+)", text, re.MULTILINE)


def test_the_direct_dependencies_resolve_to_their_pins() -> None:
    direct = pins((ROOT / "requirements.in").read_text())
    resolved = pins((ROOT / "requirements.txt").read_text())
    assert direct and {name: resolved.get(name) for name in direct} == direct


def test_the_test_environment_runs_exactly_the_shipped_set() -> None:
    resolved = pins((ROOT / "requirements.txt").read_text())
    installed = {name: _installed(name) for name in resolved}
    assert installed == resolved, {n: (installed[n], v) for n, v in resolved.items() if installed[n] != v}


def _installed(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
