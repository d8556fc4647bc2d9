"""The preflight (`python -m pullsecret doctor`) against the emulator stack: green with Terraform's grants, and for
each grant taken away one at a time, red with the fix that names it."""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from typing import Any

from pullsecret import cli
from tests.support import SENSITIVE, Admin, seed_ready_cluster

CID = "cls-doctor1"


def doctor(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = cli.main(["doctor", *args])
    text = out.getvalue()
    for secret in SENSITIVE:
        assert secret not in text, "a credential reached the doctor's report"
    return code, text


def test_green_on_the_stack(function_env: dict[str, str], admin: Admin, world: Any) -> None:
    seed_ready_cluster(admin, CID)
    assert cli.main(["reconcile", CID, "--quiet"]) == 0
    code, text = doctor()
    print(text)
    assert code == 0, text
