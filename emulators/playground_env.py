"""What a shell that sources the playground's env file holds: every variable the function reads, set or unset.

`<state>/env` is a shell script of `unset` and `export` lines. Every variable the function (or its client
libraries) reads, and every one the playground hands a shell (URLs, gcloud's Pub/Sub override, the operator's
kubeconfig), appears in it exactly once: exported with the value the running function has, or unset. So a shell
that sourced an earlier playground's file (say, one in external-secrets mode) and then this one holds exactly this
playground's settings: nothing of the earlier one survives, and the CLI run from it decides as the function does.

Which variables the function reads is derived, not listed by hand: `pullsecret.operator.settings.FUNCTION_VARIABLES`
plus every name the code under `pullsecret/` (and `main.py`) reads through `envvars.<reader>(env, "NAME")`,
`os.environ.get("NAME")` or `os.environ["NAME"]`, plus what the client libraries read (CLIENT_VARIABLES).

`<state>/settings.json` (written beside it, removed with it) is the same record for programs; its format is
`settings_record`'s docstring. Neither file holds a credential: tokens stay in files whose paths they name.
"""

from __future__ import annotations

import functools
import json
import re
import shlex
import textwrap
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SETTINGS_FORMAT = 1
OPERATOR_KUBECONFIG = "PULLSECRET_OPERATOR_KUBECONFIG"
# The state folder of the playground a shell sourced (= pullsecret.operator.playground.STATE_VARIABLE): the CLI
# compares that one's settings, not the default folder's (a second playground, `--state-dir .playground-2`).
PLAYGROUND_STATE = "PULLSECRET_PLAYGROUND"
# Read by the client libraries in the function process (google-auth, the Cloud clients, gcloud), not by pullsecret/.
CLIENT_VARIABLES = frozenset(
    {
        "GOOGLE_APPLICATION_CREDENTIALS",  # an ADC file would shadow the metadata emulator
        "GCE_METADATA_HOST",
        "GCE_METADATA_IP",
        "GOOGLE_CLOUD_PROJECT",
        "CLOUDSDK_CONFIG",
        "PUBSUB_EMULATOR_HOST",
    }
)
# What the playground hands a shell beside the function's settings (and the CLI's own switch to a deployed
# function, which a shell aimed at the playground must not keep).
SHELL_VARIABLES = frozenset(
    {
        "EMULATORS_ADMIN",
        "FUNCTION_URL",
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_PUBSUB",
        "CLOUDSDK_CORE_PROJECT",
        "CLOUDSDK_AUTH_DISABLE_CREDENTIALS",
        OPERATOR_KUBECONFIG,
        PLAYGROUND_STATE,
        "PULLSECRET_DEPLOYED_FUNCTION",
    }
)
_READ = re.compile(
    r'(?:envvars\.\w+\(\s*env,\s*|environ\.get\(\s*|environ\[\s*|getenv\(\s*)"([A-Z][A-Z0-9_]+)"', re.MULTILINE
)


def names_read(texts: Iterable[str]) -> set[str]:
    """The variable names these source texts read."""
    return {name for text in texts for name in _READ.findall(text)}


@functools.cache
def function_variables() -> frozenset[str]:
    """Every variable the function reads: its settings, what its code reads, what its client libraries read."""
    from pullsecret.operator.settings import FUNCTION_VARIABLES

    files = [ROOT / "main.py", *sorted((ROOT / "pullsecret").rglob("*.py"))]
    read = names_read(path.read_text(encoding="utf-8") for path in files if path.exists())
    return frozenset(FUNCTION_VARIABLES) | read | CLIENT_VARIABLES


def managed_variables(env: Mapping[str, str]) -> list[str]:
    """Every name the env file sets or unsets: the function's, the shell's, and whatever `env` exports."""
    return sorted(function_variables() | SHELL_VARIABLES | set(env))


def env_file_text(env: Mapping[str, str]) -> str:
    """The env file: one `unset` (wrapped) of every managed name `env` leaves out, then `env` as `export` lines."""
    absent = [name for name in managed_variables(env) if name not in env]
    lines = textwrap.wrap(" ".join(absent), width=108, break_on_hyphens=False)
    text = "unset " + " \\\n  ".join(lines) + "\n" if lines else ""
    return text + "".join(f"export {key}={shlex.quote(value)}\n" for key, value in env.items())


def read_env_file(path: Path) -> dict[str, str]:
    """The `export K=V` lines `up` wrote (values shell-quoted)."""
    found: dict[str, str] = {}
    if not path.exists():
        return found
    for line in path.read_text().splitlines():
        if line.startswith("export "):
            key, _, value = line[len("export ") :].partition("=")
            parsed = shlex.split(value)
            found[key] = parsed[0] if parsed else ""
    return found


def settings_record(
    settings: Mapping[str, str], env: Mapping[str, str], *, pid: int, source: str, delivery: str
) -> dict[str, Any]:
    """`<state>/settings.json`: what the running playground's function runs with, for a program to compare.

        {"format": 1,                 # this layout; a reader refuses another number
         "pid": 4242,                 # the `make up` holding <state>/lock (stale when that process is gone)
         "source": "platform",        # or "service" (SOURCE=)
         "delivery": "direct",        # or "external-secrets" (KUBERNETES_DELIVERY, lower-cased)
         "function_url": "http://127.0.0.1:PORT/",
         "emulators_admin": "http://127.0.0.1:PORT",
         "operator_kubeconfig": "/tmp/hf-emulators-.../operator-kubeconfig",  # PULLSECRET_OPERATOR_KUBECONFIG
         "settings": {"NAME": "value", ...},  # every variable the function reads that it runs with, as it has it
         "unset": ["NAME", ...]}      # every other variable the function reads: it runs without them

    A variable is in exactly one of `settings` and `unset`; together they are `function_variables()`.
    """
    names = function_variables()
    return {
        "format": SETTINGS_FORMAT,
        "pid": pid,
        "source": source,
        "delivery": delivery,
        "function_url": env.get("FUNCTION_URL", ""),
        "emulators_admin": env.get("EMULATORS_ADMIN", ""),
        "operator_kubeconfig": env.get(OPERATOR_KUBECONFIG, ""),
        "settings": {k: settings[k] for k in sorted(names) if k in settings},
        "unset": sorted(k for k in names if k not in settings),
    }


def write_state_files(state_dir: Path, env: Mapping[str, str], record: Mapping[str, Any]) -> None:
    """`<state>/settings.json` and `<state>/env`, each written whole (a reader never sees half of one)."""
    for name, text in (("settings.json", json.dumps(record, indent=2) + "\n"), ("env", env_file_text(env))):
        partial = state_dir / f".{name}.partial"
        partial.write_text(text)
        partial.replace(state_dir / name)


def remove_state_files(state_dir: Path) -> None:
    for name in ("env", "settings.json"):
        (state_dir / name).unlink(missing_ok=True)
