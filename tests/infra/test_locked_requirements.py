"""Every Python package a build installs comes from a fully resolved, hash-pinned lock, installed with
--require-hashes (issue 51, item 9: the test dependencies were pinned by version only, so a re-uploaded or
substituted file would have run in the build beside the deployer's token).

Each lock is pip-compile --generate-hashes of its .in file (the command is in the lock's header); the .in says what
is wanted, the lock is what is installed. A lock whose .in changed without re-running its command is stale: the pins
of the .in (and of every .in it reads with -r) must be the lock's.
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

import pytest
import yaml

from tests.infra import reality

ROOT = reality.REPOSITORY_ROOT
# lock -> the .in it is compiled from; every file the Makefile installs is one of these locks.
LOCKS = {
    "requirements.txt": "requirements.in",
    "requirements-emulators.txt": "requirements-emulators.in",
    "requirements-dev.txt": "requirements-dev.in",
    "requirements-checkov.txt": "requirements-checkov.in",
    "requirements-mutation.txt": "requirements-mutation.in",
}
_PIN = re.compile(r"^([A-Za-z0-9_.-]+)==([^\s\\;#]+)")
_INCLUDE = re.compile(r"^-r\s+(\S+)")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins_of_in(name: str) -> dict[str, str]:
    """The pins an .in file asks for, with those of every file it includes with -r."""
    found: dict[str, str] = {}
    for line in (ROOT / name).read_text().splitlines():
        if include := _INCLUDE.match(line):
            found.update(pins_of_in(include.group(1)))
        elif pin := _PIN.match(line):
            found[canonical(pin.group(1))] = pin.group(2)
    return found


def lock_entries(name: str) -> dict[str, str]:
    """Each pinned entry of a lock, name -> its whole text (the pin, its hashes, pip-compile's `# via` lines)."""
    text = (ROOT / name).read_text()
    entries = re.split(r"\n(?=[A-Za-z0-9])", text)
    return {canonical(m.group(1)): entry for entry in entries if (m := _PIN.match(entry))}


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_each_lock_is_hash_pinned_and_compiled_from_its_in(lock: str) -> None:
    text = (ROOT / lock).read_text()
    header = text.split("\n\n", 1)[0] if text.startswith("#") else ""
    command = re.search(r"#\s+(pip-compile .*)", header)
    assert command, f"{lock} has no pip-compile command in its header"
    assert "--generate-hashes" in command.group(1) and f"--output-file={lock}" in command.group(1), command.group(1)
    assert command.group(1).endswith(f" {LOCKS[lock]}"), command.group(1)
    entries = lock_entries(lock)
    assert entries, lock
    for name, entry in entries.items():
        assert re.search(r"--hash=sha256:[0-9a-f]{64}", entry), f"{lock}: {name} has no hash"
    assert not re.search(r"^\s*(-e|--find-links|--index-url|--extra-index-url|--trusted-host|git\+)", text, re.M)
    assert not re.search(r"^\s*[A-Za-z0-9_.-]+\s*(>=|<=|~=|>|<|$)", text, re.M), f"{lock}: an unpinned entry"


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_each_lock_holds_the_pins_of_its_in(lock: str) -> None:
    wanted = pins_of_in(LOCKS[lock])
    locked = {name: _PIN.match(entry).group(2) for name, entry in lock_entries(lock).items()}  # type: ignore[union-attr]
    stale = {name: (version, locked.get(name)) for name, version in wanted.items() if locked.get(name) != version}
    assert wanted and not stale, f"{lock} is stale against {LOCKS[lock]} (re-run its header's command): {stale}"


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_each_lock_agrees_with_the_constraints_it_was_compiled_under(lock: str) -> None:
    header = (ROOT / lock).read_text().split("\n\n", 1)[0]
    constraint = re.search(r"--constraint=(\S+)", header)
    if constraint is None:
        return  # compiled alone (checkov's own virtualenv)
    constrained = {
        canonical(m.group(1)): m.group(2)
        for m in map(_PIN.match, (ROOT / constraint.group(1)).read_text().splitlines())
        if m
    }
    locked = {name: _PIN.match(entry).group(2) for name, entry in lock_entries(lock).items()}  # type: ignore[union-attr]
    differ = {n: (v, constrained[n]) for n, v in locked.items() if n in constrained and constrained[n] != v}
    assert not differ, f"{lock} and {constraint.group(1)} disagree: {differ}"


def makefile_installs() -> list[str]:
    """Every pip install command line of the Makefile (recipe lines, the PIP_INSTALL macro expanded)."""
    text = (ROOT / "Makefile").read_text()
    macro = re.search(r"^PIP_INSTALL := (.*)$", text, re.M)
    assert macro, "the Makefile's PIP_INSTALL is gone"
    lines = [line.replace("$(PIP_INSTALL)", macro.group(1)) for line in text.splitlines() if line.startswith("\t")]
    return [line for line in lines if "pip install" in line]


def test_every_pip_install_of_the_makefile_requires_hashes_and_installs_a_lock() -> None:
    installs = makefile_installs()
    assert len(installs) >= 4, installs
    installed: set[str] = set()
    for line in installs:
        assert "--require-hashes" in line, line
        assert not re.search(r"\s-c\s", line), f"a constraint file instead of a lock: {line}"
        files = re.findall(r"\s-r\s+(\S+)", line)
        assert files and set(files) <= set(LOCKS), line
        installed.update(files)
    # The function's runtime, the emulators', the test tools', checkov's and mutmut's: each lock is installed.
    assert installed == set(LOCKS)


def test_the_test_build_installs_python_packages_only_through_the_makefile() -> None:
    build = yaml.safe_load((ROOT / "cloudbuild-test.yaml").read_text())
    for step in build["steps"]:
        script = " ".join(map(str, step.get("args", [])))
        assert "pip install" not in script and "pip3 install" not in script, step.get("id")
    assert any("make test" in " ".join(map(str, s.get("args", []))) for s in build["steps"])


def test_the_test_environment_runs_exactly_the_locked_test_tools() -> None:
    locked = {name: _PIN.match(entry).group(2) for name, entry in lock_entries("requirements-dev.txt").items()}  # type: ignore[union-attr]
    installed = {name: _installed(name) for name in locked}
    assert installed == locked, {n: (installed[n], v) for n, v in locked.items() if installed[n] != v}


def _installed(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def test_no_lock_is_left_beside_a_path_nothing_installs() -> None:
    # Every requirements*.txt is a lock above, or the provider schemas' (hash-pinned too, downloaded with
    # --require-hashes by tests/infra/provider_schema.py and never installed): no requirements file escapes the rules.
    found = {p.name for p in Path(ROOT).glob("requirements*.txt")}
    assert found == set(LOCKS) | {"requirements-provider-schema.txt"}, found
