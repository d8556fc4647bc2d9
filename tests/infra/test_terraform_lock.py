"""terraform/.terraform.lock.hcl: what Cloud Build deploys with is what the offline checks read.

The lock names exactly the providers of versions.tf (`terraform init -lockfile=readonly` fails on any other
set), each at a version inside versions.tf's constraint; google and google-beta are locked at the release
whose schema `make provider-schema` reads (the top end of the range: `terraform init -upgrade` cannot go past
what is checked); every entry carries HashiCorp's `zh:` sums, so Terraform refuses a package that differs; and
Cloud Build initialises read-only. Where each locked version comes from is in terraform/README.md.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import hcl2
import pytest
import yaml

from tests.infra import provider_schema, reality

TERRAFORM_DIR = reality.REPOSITORY_ROOT / "terraform"
LOCK = TERRAFORM_DIR / ".terraform.lock.hcl"
REGISTRY = "registry.terraform.io/"
SCHEMA_CHECKED = ("google", "google-beta")
CONSTRAINT = re.compile(r"\s*(>=|<=|!=|~>|>|<|=)?\s*(\d+(?:\.\d+){0,2})\s*")
ZH = re.compile(r"zh:[0-9a-f]{64}")
H1 = re.compile(r"h1:[A-Za-z0-9+/]{43}=")

Version = tuple[int, int, int]


def parse_version(text: str) -> Version:
    major, minor, patch, *_ = [*(int(part) for part in text.split(".")), 0, 0, 0]
    return major, minor, patch


def satisfies(version: str, constraint: str) -> bool:
    """Terraform's version-constraint syntax.

    Source: developer.hashicorp.com/terraform/language/expressions/version-constraints
    """
    have = parse_version(version)
    for clause in constraint.split(","):
        match = CONSTRAINT.fullmatch(clause)
        assert match, f"not a version constraint: {clause!r} in {constraint!r}"
        operator, text = match.group(1) or "=", match.group(2)
        want = parse_version(text)
        if operator == "~>":
            # ~> 1.2 allows 1.x from 1.2; ~> 1.2.3 allows 1.2.x from 1.2.3: only the rightmost part may grow.
            fixed = len(text.split(".")) - 1
            ok = have >= want and have[:fixed] == want[:fixed]
        else:
            ok = {
                "=": have == want,
                "!=": have != want,
                ">": have > want,
                ">=": have >= want,
                "<": have < want,
                "<=": have <= want,
            }[operator]
        if not ok:
            return False
    return True


def normalised(constraint: str) -> str:
    """The constraint as `terraform init` records it in the lock file (every version with three parts)."""
    clauses = []
    for clause in constraint.split(","):
        match = CONSTRAINT.fullmatch(clause)
        assert match, clause
        operator, text = match.group(1) or "=", match.group(2)
        if operator != "~>":
            text = ".".join(map(str, parse_version(text)))
        clauses.append(f"{operator} {text}")
    return ", ".join(clauses)


def required_providers(directory: Path = TERRAFORM_DIR) -> dict[str, tuple[str, str]]:
    """{local name: (source address, version constraint)} from every required_providers block."""
    found: dict[str, tuple[str, str]] = {}
    for path in sorted(directory.glob("*.tf")):
        with path.open() as handle:
            parsed = hcl2.load(handle, serialization_options=provider_schema.OPTIONS)
        for terraform in parsed.get("terraform", []):
            for block in terraform.get("required_providers", []):
                for name, spec in block.items():
                    if isinstance(spec, dict):
                        found[name] = (REGISTRY + str(spec["source"]), str(spec["version"]))
    return found


def locked_providers(lock: Path = LOCK) -> dict[str, dict[str, Any]]:
    """{provider address: {version, constraints, hashes}} from a lock file."""
    with lock.open() as handle:
        parsed = hcl2.load(handle, serialization_options=provider_schema.OPTIONS)
    return {address: body for block in parsed.get("provider", []) for address, body in block.items()}


def lock_problems(required: dict[str, tuple[str, str]], locked: dict[str, dict[str, Any]]) -> list[str]:
    problems = []
    wanted = {source for source, _ in required.values()}
    if set(locked) != wanted:
        problems.append(f"the lock names {sorted(locked)}, versions.tf requires {sorted(wanted)}")
    for name, (source, constraint) in sorted(required.items()):
        entry = locked.get(source)
        if entry is None:
            continue
        if not satisfies(str(entry["version"]), constraint):
            problems.append(f"{name}: locked {entry['version']} is outside versions.tf's {constraint!r}")
        if entry.get("constraints") != normalised(constraint):
            problems.append(f"{name}: the lock records {entry.get('constraints')!r}, versions.tf says {constraint!r}")
        hashes = list(entry.get("hashes", []))
        if not any(ZH.fullmatch(h) for h in hashes):
            problems.append(f"{name}: no zh: (release zip SHA256) hash")
        malformed = [h for h in hashes if not (ZH.fullmatch(h) or H1.fullmatch(h))]
        if malformed:
            problems.append(f"{name}: malformed hashes {malformed}")
    return problems


def test_the_lock_file_is_committed_and_matches_versions_tf() -> None:
    assert LOCK.is_file(), "terraform/.terraform.lock.hcl is missing: Cloud Build's init -lockfile=readonly needs it"
    problems = lock_problems(required_providers(), locked_providers())
    assert not problems, "\n".join(problems)


def test_the_check_refuses_a_lock_outside_the_constraints(tmp_path: Path) -> None:
    required = required_providers()
    text = LOCK.read_text()
    google = locked_providers()[REGISTRY + "hashicorp/google"]["version"]
    stale = tmp_path / "stale.lock.hcl"
    stale.write_text(text.replace(f'version     = "{google}"', 'version     = "7.46.1"', 1))
    assert "google: locked 7.46.1 is outside versions.tf's '>= 7.31, <= 7.45.0'" in lock_problems(
        required, locked_providers(stale)
    )
    missing = tmp_path / "missing.lock.hcl"
    missing.write_text(re.sub(r'provider "registry\.terraform\.io/hashicorp/time" \{.*?\n\}\n', "", text, flags=re.S))
    assert any("versions.tf requires" in p for p in lock_problems(required, locked_providers(missing)))


@pytest.mark.parametrize(
    ("version", "constraint", "expected"),
    [
        ("7.45.0", ">= 7.31, <= 7.45.0", True),
        ("7.46.1", ">= 7.31, <= 7.45.0", False),
        ("7.30.9", ">= 7.31, <= 7.45.0", False),
        ("0.13.1", ">= 0.9, < 1.0", True),
        ("1.0.0", ">= 0.9, < 1.0", False),
        ("2.7.1", "~> 2.4", True),
        ("3.0.0", "~> 2.4", False),
        ("2.5.0", "~> 2.4.0", False),
        ("2.4.9", "~> 2.4.0", True),
        ("7.45.0", "7.45.0", True),
    ],
)
def test_constraints_are_read_as_terraform_reads_them(version: str, constraint: str, expected: bool) -> None:
    assert satisfies(version, constraint) is expected


def test_google_and_google_beta_are_locked_at_the_schema_checked_release() -> None:
    schemas = provider_schema.load_schemas()
    if not set(SCHEMA_CHECKED) <= set(schemas):
        reality.missing(f"no provider schemas in {provider_schema.SCHEMA_DIR}: run make provider-schema")
    locked = locked_providers()
    for provider in SCHEMA_CHECKED:
        checked = sorted(parse_version(s["version"]) for s in schemas[provider])
        version = parse_version(str(locked[f"{REGISTRY}hashicorp/{provider}"]["version"]))
        # The newest schema checked is the locked release, and versions.tf's range ends there.
        assert version == checked[-1], (provider, version, checked)


def test_cloud_build_initialises_read_only() -> None:
    build = yaml.safe_load((reality.REPOSITORY_ROOT / "cloudbuild.yaml").read_text())
    inits = [
        line
        for step in build["steps"]
        for arg in step.get("args", [])
        for line in str(arg).replace("\\\n", " ").splitlines()
        if re.search(r"\bterraform\s+init\b", line)
    ]
    assert inits, "cloudbuild.yaml runs no terraform init"
    for line in inits:
        assert "-lockfile=readonly" in line, f"terraform init without -lockfile=readonly: {line.strip()}"
        assert "-upgrade" not in line, line


def test_the_readme_names_where_each_locked_version_comes_from() -> None:
    readme = (TERRAFORM_DIR / "README.md").read_text()
    for address, entry in locked_providers().items():
        name = address.removeprefix(REGISTRY)
        assert f"`{name}` {entry['version']}" in readme, f"terraform/README.md does not say where {name} comes from"
