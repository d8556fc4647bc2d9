"""The doctor (`python -m pullsecret doctor`) run in this process against the emulator stack, its report read back,
and Terraform's grants to the runtime identity with one permission taken away."""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from typing import Any

from emulators.world import RUNTIME_SA
from pullsecret.operator import cli
from tests.support import SENSITIVE

MANAGED = 'google_project_iam_member.runtime_secret_manager_managed["hf-demo-project"]'


def doctor(*args: str) -> tuple[int, str]:
    """The doctor's exit code and report, run in this process (no credential may reach the report)."""
    out = io.StringIO()
    with redirect_stdout(out):
        code = cli.main(["doctor", *args])
    text = out.getvalue()
    for secret in SENSITIVE:
        assert secret not in text, "a credential reached the doctor's report"
    return code, text


def rebind_without(world: Any, address: str, permission: str) -> None:
    """Terraform's grants to the runtime identity again, without `permission` in the grant at `address`."""
    for emulator in (world.secretmanager, world.gke):
        emulator.iam.revoke(RUNTIME_SA)
        for grant in world.grants:
            kept = grant.permissions - {permission} if grant.address == address else grant.permissions
            emulator.bind(
                RUNTIME_SA,
                grant.role,
                grant.resource,
                permissions=frozenset(kept),
                condition=grant.condition,
                title=grant.condition_title,
            )


def failed_checks(text: str) -> dict[str, str]:
    """{check: its line and fix} of every failed check in a report."""
    lines = text.splitlines()
    return {line.split()[1]: line + "\n" + lines[i + 1] for i, line in enumerate(lines) if line.startswith("FAIL")}
