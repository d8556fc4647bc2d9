"""Whether this shell's environment is left from a local playground that is no longer running, and what to run.

`make up` writes its settings to `.playground/env`; a shell that sourced it keeps them after the playground
stops or restarts (new ports, a new temporary token file). Before the CLI builds anything, `hint` checks the two
things that give it away, for loopback endpoints only (a production API is never probed here): a token file
that no longer exists, and an API port nothing listens on. A loopback URL is also what `kubectl port-forward` to
a real API gives: only a shell that holds what the env file exports beside the settings (PLAYGROUND_MARKERS) is
said to be left from a playground; any other is told that its local URL answers nothing.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

ENV_FILE = Path(".playground") / "env"
CONNECT_TIMEOUT_S = 0.5
# Exported by the playground's env file (emulators/playground_env.py) and by nothing else a shell sets.
PLAYGROUND_MARKERS = ("EMULATORS_ADMIN", "FUNCTION_URL", "PULLSECRET_OPERATOR_KUBECONFIG", "PULLSECRET_PLAYGROUND")


def _loopback(host: str | None) -> bool:
    if host in ("localhost",):
        return True
    try:
        return host is not None and ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _what_to_run(env: Mapping[str, str], cwd: Path) -> str:
    """A running playground's env file to source again (the one this shell came from, PULLSECRET_PLAYGROUND), or
    how to start one."""
    from pullsecret.operator.playground import env_file, state_dir

    if (state_dir(env, cwd) / "env").exists():
        return f"a playground is running: run `source {env_file(env, cwd)}` again in this shell"
    if (cwd / ENV_FILE).exists():
        return f"a playground is running: run `source {ENV_FILE}` in this shell"
    return f"start the playground with `make up`, then `source {ENV_FILE}` in this shell"


def _from_playground(env: Mapping[str, str]) -> bool:
    """Whether the shell holds what only the playground's env file exports (PLAYGROUND_MARKERS)."""
    marks = (
        env.get("EMULATORS_ADMIN"),
        env.get("FUNCTION_URL"),
        env.get("PULLSECRET_OPERATOR_KUBECONFIG"),
        env.get("PULLSECRET_PLAYGROUND"),
    )
    return any((value or "").strip() for value in marks)


def _listening(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
            return True
    except OSError:
        return False


def hint(env: Mapping[str, str], *, cwd: Path | None = None) -> str | None:
    """A person's sentence when the environment points at a local playground that is gone, or at a local URL
    nothing serves, else None."""
    url = urlsplit((env.get("HYPERFLEET_API_URL") or "").strip())
    if not _loopback(url.hostname):
        return None
    where = Path.cwd() if cwd is None else cwd
    token = (env.get("HYPERFLEET_API_TOKEN_FILE") or "").strip()
    playground = _from_playground(env)
    if playground and token and not os.path.exists(token):
        return (
            f"this shell's settings are left from a playground that stopped: HYPERFLEET_API_TOKEN_FILE names "
            f"{token}, which no longer exists; {_what_to_run(env, where)}"
        )
    try:
        port = url.port or (443 if url.scheme == "https" else 80)
    except ValueError:
        return None
    if _listening(url.hostname or "127.0.0.1", port):
        return None
    if playground:
        return (
            f"this shell's settings are left from a playground that stopped: nothing listens at "
            f"{url.scheme}://{url.netloc} (HYPERFLEET_API_URL); {_what_to_run(env, where)}"
        )
    return (
        f"nothing listens at {url.scheme}://{url.netloc} (HYPERFLEET_API_URL, no playground's): start what "
        "should serve it there again (a `kubectl port-forward`, a local API), or set HYPERFLEET_API_URL to the "
        f"API's address; for the playground, `make up` then `source {ENV_FILE}`"
    )
