"""Where the reality checks find their real tools, and what happens when a tool is missing.

A reality check (a real Terraform, the real Cloud SDK, the provider schema) skips with the reason on a
developer's machine that lacks the tool, and fails with the same reason in CI (CI=true) or inside
Cloud Build (which sets BUILDER_OUTPUT in every step): there a skip would hide a defect.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true" or "BUILDER_OUTPUT" in os.environ


def missing(reason: str) -> None:
    """Skip (locally) or fail (in CI) the calling test because a real tool is missing."""
    if in_ci():
        pytest.fail(f"{reason} (a skip is a failure under CI=true / Cloud Build)", pytrace=False)
    pytest.skip(reason)


def candidates(name: str) -> list[Path]:
    """Every executable NAME on PATH, in PATH order (like `which -a`)."""
    found = []
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        path = Path(directory or ".") / name
        if path.is_file() and os.access(path, os.X_OK) and path.resolve() not in [p.resolve() for p in found]:
            found.append(path)
    return found


def terraform_version(binary: Path) -> tuple[int, ...] | None:
    try:
        completed = subprocess.run(
            [str(binary), "version", "-json"], capture_output=True, text=True, timeout=60, check=False
        )
        version = json.loads(completed.stdout)["terraform_version"]
    except (OSError, ValueError, KeyError, subprocess.TimeoutExpired):
        return None
    match = re.match(r"(\d+)\.(\d+)\.(\d+)", version)
    return tuple(int(part) for part in match.groups()) if match else None


def terraform(minimum: tuple[int, int]) -> tuple[Path | None, str]:
    """A real terraform at least MINIMUM: $TERRAFORM, else the first on PATH; (None, why) when none is."""
    explicit = os.environ.get("TERRAFORM")
    paths = [Path(explicit)] if explicit else candidates("terraform")
    seen = []
    for path in paths:
        version = terraform_version(path)
        seen.append(f"{path} ({'.'.join(map(str, version)) if version else 'unusable'})")
        if version is not None and version[:2] >= minimum:
            return path, ""
    wanted = ".".join(map(str, minimum))
    return None, f"no terraform >= {wanted} found (tried: {', '.join(seen) or 'nothing on PATH'}); set TERRAFORM"


def gcloud() -> Path | None:
    found = shutil.which("gcloud")
    return Path(found) if found else None


def terraform_env(work: Path) -> dict[str, str]:
    """An environment for an offline terraform run in WORK (no CLI config, no checkpoint calls)."""
    cli_config = work / "terraformrc"
    cli_config.write_text("")
    return {
        **os.environ,
        "TF_CLI_CONFIG_FILE": str(cli_config),
        "TF_IN_AUTOMATION": "1",
        "CHECKPOINT_DISABLE": "1",
        "TF_DATA_DIR": str(work / "data"),
    }


def terraform_outputs(binary: Path, folder: Path) -> dict[str, Any]:
    """Each output's value after an offline `init` and `apply` of the configuration in FOLDER (outputs only)."""
    env = terraform_env(folder)
    for command in (["init", "-backend=false", "-input=false"], ["apply", "-auto-approve", "-input=false"]):
        done = subprocess.run(
            [str(binary), *command, "-no-color"], cwd=folder, env=env, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, f"terraform {command[0]}: {done.stderr[-2000:]}"
    shown = subprocess.run(
        [str(binary), "output", "-json"], cwd=folder, env=env, capture_output=True, text=True, check=True
    )
    return {name: output["value"] for name, output in json.loads(shown.stdout).items()}
