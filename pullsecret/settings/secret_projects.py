"""Which GCP projects a cluster's spec may name for its secret: ALLOWED_SECRET_PROJECTS, parsed and matched.

With SECRET_PROJECT_ID unset, `spec.platform.gcp.projectID` names the project the function writes, bills and
(with external-secrets) edits IAM in; this list, set by Terraform from the projects it grants, bounds it
(docs/trust.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from pullsecret.errors import ConfigError
from pullsecret.model.names import PROJECT_ID_RE
from pullsecret.settings import envvars

__all__ = ["allowed", "named", "project_allowed"]

# An ALLOWED_SECRET_PROJECTS entry: a project id in which `*` may stand for any part.
_PATTERN = re.compile(r"^[a-z*][a-z0-9*-]{0,29}$")


def project_allowed(project: str, allowed: tuple[str, ...]) -> bool:
    """`project` matches one ALLOWED_SECRET_PROJECTS entry, whole: `*` any text of a project id (letters, digits,
    hyphens) within it, every other character itself."""
    return any(re.fullmatch(re.escape(pattern).replace(r"\*", "[a-z0-9-]*"), project) for pattern in allowed)


def named(allowed: tuple[str, ...]) -> tuple[str, ...]:
    """The ALLOWED_SECRET_PROJECTS entries that name one project exactly (no `*`): a pattern names no project, it
    only admits the ones a spec names."""
    return tuple(entry for entry in allowed if "*" not in entry)


def allowed(env: Mapping[str, str]) -> tuple[str, ...]:
    """ALLOWED_SECRET_PROJECTS: GCP project ids (`*` within an id); SECRET_PROJECT_ID must be among them."""
    entries = envvars.items(env, "ALLOWED_SECRET_PROJECTS", ())
    for name in entries:
        if not _PATTERN.fullmatch(name) or ("*" not in name and not PROJECT_ID_RE.fullmatch(name)):
            raise ConfigError(
                f"ALLOWED_SECRET_PROJECTS must list GCP project ids (`*` within an id for any text), got {name!r}"
            )
    pinned = envvars.get(env, "SECRET_PROJECT_ID")
    if pinned is not None and entries and not project_allowed(pinned, entries):
        raise ConfigError(f"SECRET_PROJECT_ID {pinned!r} is not among ALLOWED_SECRET_PROJECTS")
    return entries
