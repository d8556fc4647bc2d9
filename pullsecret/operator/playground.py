"""The running local playground's settings (`.playground/settings.json`) against this shell's, before the CLI acts.

`make up` records what its function runs with in `<state>/settings.json` (emulators/playground_env.py,
`settings_record`: format 1, the pid of the `make up` that holds it, `settings` and `unset`). A shell aimed at the
playground (HYPERFLEET_API_URL unset or on a loopback address) that holds other values of the settings that change
the result (pullsecret.operator.settings.RESULT_VARIABLES) would have the CLI decide otherwise than the function:
say, KUBERNETES_DELIVERY=external-secrets left from an earlier playground reports PermissionDenied for a healthy
direct-mode cluster. `refusal` names each difference and the fix (`source .playground/env`), as
pullsecret.operator.deployed does for a deployed function. A shell aimed elsewhere (a real API) is not compared: the
playground is not what it runs against. A record whose pid is gone is no running playground (staleness says so).
Which playground: the one whose env file the shell sourced (PULLSECRET_PLAYGROUND, its state folder: a second
playground's shell is compared with that one), else this checkout's `.playground/`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pullsecret.operator.deployed import differences
from pullsecret.settings.envvars import is_loopback

STATE_DIR = Path(".playground")
SETTINGS_FILE = STATE_DIR / "settings.json"
ENV_FILE = STATE_DIR / "env"
FORMAT = 1
STATE_VARIABLE = "PULLSECRET_PLAYGROUND"  # = emulators.playground_env.PLAYGROUND_STATE


def state_dir(env: Mapping[str, str], cwd: Path | None = None) -> Path:
    """The state folder of the playground this shell sourced (PULLSECRET_PLAYGROUND), else this checkout's."""
    named = (env.get(STATE_VARIABLE) or "").strip()
    return Path(named) if named else (Path.cwd() if cwd is None else cwd) / STATE_DIR


def env_file(env: Mapping[str, str], cwd: Path | None = None) -> str:
    """That playground's env file as a person types it: relative to `cwd` when inside it."""
    where = Path.cwd() if cwd is None else cwd
    path = state_dir(env, where) / "env"
    return str(path.relative_to(where)) if path.is_relative_to(where) else str(path)


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def running(cwd: Path | None = None, env: Mapping[str, str] | None = None) -> dict[str, str] | None:
    """The settings of the playground this shell is aimed at (`state_dir`), or None (none, stopped, unreadable)."""
    path = state_dir(env or {}, cwd) / "settings.json"
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("format") != FORMAT or not _alive(record.get("pid")):
        return None
    settings = record.get("settings")
    if not isinstance(settings, dict):
        return None
    return {str(k): str(v) for k, v in settings.items()}


def aimed_at_playground(env: Mapping[str, str]) -> bool:
    """Whether this shell would talk to a local playground: HYPERFLEET_API_URL unset, or a loopback URL."""
    url = (env.get("HYPERFLEET_API_URL") or "").strip()
    if not url:
        return True
    try:
        return is_loopback(urlsplit(url).hostname)
    except ValueError:
        return False


def found_differences(env: Mapping[str, str], cwd: Path | None = None) -> list[str]:
    """Each result-changing setting in which this shell differs from the running playground's function."""
    if not aimed_at_playground(env):
        return []
    theirs = running(cwd, env)
    if theirs is None:
        return []
    return differences(env, theirs, there="playground")


def refusal(env: Mapping[str, str], cwd: Path | None = None) -> str | None:
    """Why the CLI must not write from this shell (a person's text), or None (no playground here, or agreement)."""
    found = found_differences(env, cwd)
    if not found:
        return None
    shown = env_file(env, cwd)
    return (
        f"refusing to write: this shell's settings differ from the running playground's ({shown[: -len('env')]}"
        "settings.json) in what changes the result:\n  " + "\n  ".join(found) + f"\nrun `source {shown}` in this "
        "shell (it sets or unsets every variable the function reads); nothing was written"
    )


def warning(env: Mapping[str, str], cwd: Path | None = None) -> str | None:
    """One line for a command that only reads: what it shows follows this shell's settings, not the playground's."""
    found = found_differences(env, cwd)
    if not found:
        return None
    names = ", ".join(line.split(":", 1)[0] for line in found)
    return (
        f"warning: this shell's settings differ from the running playground's in {names}: what follows is what "
        f"this shell's configuration sees; run `source {env_file(env, cwd)}` to see the function's"
    )


def unsourced_hint(env: Mapping[str, str], cwd: Path | None = None) -> str:
    """The fix to append to a configuration error of a shell next to a running playground, or ''."""
    if not aimed_at_playground(env) or running(cwd, env) is None:
        return ""
    return f"; a playground is running in this checkout: run `source {env_file(env, cwd)}` in this shell first"
