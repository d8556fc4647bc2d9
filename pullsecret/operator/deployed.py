"""The deployed function's configuration (`gcloud functions describe`) against this shell's, before the CLI writes.

The CLI on a workstation runs the function's code with the workstation's environment. When the two differ in a
setting that changes what a reconcile writes or reports (pullsecret.operator.settings.RESULT_VARIABLES), a write
from the workstation and the next event's would disagree and undo each other. `--deployed
projects/P/locations/L/functions/F` (or PULLSECRET_DEPLOYED_FUNCTION) asks gcloud for the deployed environment
(2nd gen: serviceConfig.environmentVariables; 1st gen: environmentVariables) and the CLI refuses to write when
the effective settings differ, naming each variable and both values. Settings are compared as the function reads
them (configured.load: trimmed, case-folded, defaults applied), so `REGISTRY_VERIFICATION=report` and unset agree.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import socket
import subprocess
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from pullsecret import configured
from pullsecret.errors import ConfigError
from pullsecret.logs import answer_text
from pullsecret.operator.settings import RESULT_VARIABLES

FUNCTION_RE = re.compile(r"^projects/([^/]+)/locations/([^/]+)/functions/([^/]+)$")
ENV_NAME = "PULLSECRET_DEPLOYED_FUNCTION"
GCLOUD_TIMEOUT_S = 60.0
REACH_TIMEOUT_S = 5.0
ENDPOINT_OVERRIDE = "CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDFUNCTIONS"
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "CLOUDSDK_PROXY_ADDRESS")

Runner = Callable[[list[str]], "subprocess.CompletedProcess[str]"]


class DeployedUnknown(Exception):
    """The deployed function's configuration could not be read; the message says why and what to do."""


def describe_command(function: str) -> list[str]:
    """`gcloud functions describe` of a full function name, as JSON; raises DeployedUnknown on a bad name."""
    match = FUNCTION_RE.match(function.strip())
    if match is None:
        raise DeployedUnknown(f"--deployed must be projects/P/locations/L/functions/F, got {function[:120]!r}")
    project, region, name = match.groups()
    return ["gcloud", "functions", "describe", name, "--region", region, "--project", project, "--format", "json"]


def _endpoint(env: Mapping[str, str]) -> tuple[str, int]:
    """The host and port gcloud's Cloud Functions calls go to (its endpoint override, else Google's)."""
    override = urlsplit((env.get(ENDPOINT_OVERRIDE) or "").strip())
    if override.hostname:
        return override.hostname, override.port or (80 if override.scheme == "http" else 443)
    return "cloudfunctions.googleapis.com", 443


def _reachable(env: Mapping[str, str]) -> None:
    """Raise DeployedUnknown at once when the Cloud Functions API accepts no connection: gcloud itself retries for
    half a minute offline and then says little."""
    if any((env.get(name) or "").strip() for name in PROXY_VARIABLES):
        return  # gcloud goes through a proxy: a direct connection says nothing
    host, port = _endpoint(env)
    try:
        with socket.create_connection((host, port), timeout=REACH_TIMEOUT_S):
            return
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
    raise DeployedUnknown(f"cannot reach {host}:{port} ({why}): offline? cannot read the deployed function's settings")


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    _reachable(os.environ)
    return subprocess.run(command, capture_output=True, text=True, check=False, timeout=GCLOUD_TIMEOUT_S)


def said(stderr: str) -> str:
    """gcloud's own error line (`ERROR: (gcloud....) ...`), else its last line."""
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR:")]
    return (errors or lines[-1:] or ["(no message)"])[0]


def environment_of(described: Any) -> dict[str, str]:
    """The environment variables of a `describe` answer (2nd gen, else 1st gen); raises DeployedUnknown."""
    if not isinstance(described, dict):
        raise DeployedUnknown("gcloud functions describe printed no JSON object")
    service = described.get("serviceConfig")
    variables = service.get("environmentVariables") if isinstance(service, dict) else None
    if variables is None:
        variables = described.get("environmentVariables")
    if variables is None:
        variables = {}
    if not isinstance(variables, dict):
        raise DeployedUnknown("gcloud functions describe: environmentVariables is not a map")
    return {str(k): str(v) for k, v in variables.items()}


def read(function: str, *, run: Runner = _run) -> dict[str, str]:
    """The deployed function's environment; raises DeployedUnknown with gcloud's own error line when it fails."""
    command = describe_command(function)
    try:
        done = run(command)
    except FileNotFoundError:
        raise DeployedUnknown("gcloud is not installed: cannot compare with the deployed function") from None
    except subprocess.TimeoutExpired:
        raise DeployedUnknown(f"gcloud functions describe took longer than {GCLOUD_TIMEOUT_S:.0f} s") from None
    if done.returncode != 0:
        raise DeployedUnknown(f"gcloud functions describe {function} failed: {answer_text(said(done.stderr), 300)}")
    try:
        return environment_of(json.loads(done.stdout))
    except ValueError:
        raise DeployedUnknown("gcloud functions describe printed no JSON") from None


def _effective(env: Mapping[str, str]) -> dict[str, Any] | None:
    """The settings the result depends on, as the function reads them; None when they do not load."""
    chosen = {k: v for k, v in env.items() if k in RESULT_VARIABLES}
    try:
        settings = configured.load(chosen)
    except ConfigError:
        return None
    fields = dataclasses.asdict(settings)
    pattern = fields.get("management_namespace_pattern")
    if isinstance(pattern, re.Pattern):
        fields["management_namespace_pattern"] = pattern.pattern
    return fields


def _shown(env: Mapping[str, str], name: str) -> str:
    value = env.get(name)
    return "unset" if value is None or not value.strip() else repr(value.strip())


def differences(local: Mapping[str, str], deployed: Mapping[str, str], *, there: str = "deployed") -> list[str]:
    """Each setting that changes the result and differs, as `NAME: here X, deployed Y` (`there` names the other side;
    values, never secrets: the function's environment holds names and paths; its credentials are Secret Manager
    references)."""
    mine, theirs = _effective(local), _effective(deployed)
    if mine is None or theirs is None:  # one side does not even load: compare what is written
        names = sorted(n for n in RESULT_VARIABLES if _shown(local, n) != _shown(deployed, n))
    else:
        names = sorted(_differing(mine, theirs, local, deployed))
    return [f"{name}: here {_shown(local, name)}, {there} {_shown(deployed, name)}" for name in names]


def _differing(
    mine: dict[str, Any], theirs: dict[str, Any], local: Mapping[str, str], deployed: Mapping[str, str]
) -> set[str]:
    """The variables behind the effective settings that differ."""
    common = [f for f in mine if f not in IMPLEMENTATIONS and mine[f] != theirs[f]]
    names = {f.upper() for f in common if f.upper() in RESULT_VARIABLES}
    names |= {n for f in common if f.upper() not in RESULT_VARIABLES for n in _named(f)}
    if any(mine[f] != theirs[f] for f in IMPLEMENTATIONS):
        names |= _implementations_written(mine, local, deployed)
    return names


def _implementations_written(mine: dict[str, Any], local: Mapping[str, str], deployed: Mapping[str, str]) -> set[str]:
    """A mode's or a source's own settings differ (its record, Settings.own): each of its variables, as no common
    field accounts for it, when written differently."""
    accounted = {n for f in mine if f not in IMPLEMENTATIONS for n in (f.upper(), *_named(f))}
    return {n for n in RESULT_VARIABLES - accounted if _shown(local, n) != _shown(deployed, n)}


# The Settings fields that hold the implementations' own settings (each a record whose fields are no variable's name).
IMPLEMENTATIONS = ("own", "source")


def _named(field: str) -> set[str]:
    """The variables a derived setting comes from (e.g. hyperfleet_api_audience's default follows the auth)."""
    prefix = field.upper().rsplit("_", 1)[0]
    return {n for n in RESULT_VARIABLES if n.startswith(prefix)} or {field.upper()}


def refusal(local: Mapping[str, str], function: str, *, run: Runner = _run) -> str | None:
    """Why the CLI must not write (a person's text), or None when the configurations agree on the result."""
    try:
        deployed = read(function, run=run)
    except DeployedUnknown as exc:
        return f"cannot compare with the deployed function: {exc}; nothing was written"
    found = differences(local, deployed)
    if not found:
        return None
    return (
        f"refusing to write: this shell's configuration differs from the deployed function {function} in what "
        "changes the result:\n  " + "\n  ".join(found) + "\nset these as the function has them (or run with "
        "--dry-run to see what this configuration would write); nothing was written"
    )
