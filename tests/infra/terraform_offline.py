"""Terraform read and run offline, for the infra tests: HCL parsed (`load`), values written as HCL literals, a
`<<-EOT` heredoc's text, and `terraform test` (no provider) of a module made of given files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import hcl2
from hcl2 import SerializationOptions

from tests.infra import reality

OPTIONS = SerializationOptions(with_comments=False, explicit_blocks=False, strip_string_quotes=True)
MINIMUM_TERRAFORM = (1, 9)
NUMBER = "123456789012"  # the project number the rendered modules are given


def hcl_literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value).replace("${", "$${").replace("%{", "%%{")
    if isinstance(value, list):
        return "[" + ", ".join(hcl_literal(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {hcl_literal(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no HCL literal for {value!r}")


def load(path: Path) -> dict[str, Any]:
    with path.open() as handle:
        parsed: dict[str, Any] = hcl2.load(handle, serialization_options=OPTIONS)
    parsed.pop("__comments__", None)
    return parsed


def heredoc(raw: str) -> str:
    """The text of a `<<-EOT` heredoc as Terraform gives it (markers removed, common indentation stripped)."""
    lines = raw.splitlines()
    assert lines[0].strip() == "<<-EOT" and lines[-1].strip() == "EOT", raw[:80]
    return textwrap.dedent("\n".join(lines[1:-1]))


def terraform_test(files: list[Path], tests: dict[str, str], work: Path) -> dict[str, dict[str, Any]]:
    """`terraform test` (offline, no provider) of a module made of `files`, one test file per entry of `tests`
    (name: its HCL); {name: {"status": ..., "errors": [summary: detail, ...]}}, every test run or an assertion."""
    binary, why = reality.terraform(MINIMUM_TERRAFORM)
    if binary is None:
        reality.missing(why)
    assert binary is not None
    module = work / "module"
    (module / "tests").mkdir(parents=True)
    for path in files:
        shutil.copy(path, module / path.name)
    for name, text in tests.items():
        (module / "tests" / f"{name}.tftest.hcl").write_text(text)
    cli_config = work / "terraformrc"
    cli_config.write_text("")
    env = {
        **os.environ,
        "TF_CLI_CONFIG_FILE": str(cli_config),
        "TF_IN_AUTOMATION": "1",
        "CHECKPOINT_DISABLE": "1",
        "TF_DATA_DIR": str(work / "data"),
    }
    init = subprocess.run(
        [str(binary), "init", "-input=false", "-no-color"],
        cwd=module,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert init.returncode == 0, f"terraform init (no providers, offline) failed:\n{init.stdout}\n{init.stderr}"
    completed = subprocess.run(
        [str(binary), "test", "-json", "-no-color"],
        cwd=module,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    results: dict[str, dict[str, Any]] = {name: {"status": None, "errors": []} for name in tests}
    for line in completed.stdout.splitlines():
        message = json.loads(line)
        test_file = message.get("@testfile", "")
        name = Path(test_file).name.removesuffix(".tftest.hcl")
        if name not in results:
            continue
        if message.get("type") == "test_run" and message["test_run"].get("progress") == "complete":
            results[name]["status"] = message["test_run"]["status"]
        if message.get("type") == "diagnostic" and message["diagnostic"]["severity"] == "error":
            diagnostic = message["diagnostic"]
            results[name]["errors"].append(f"{diagnostic['summary']}: {diagnostic.get('detail', '')}")
    unrun = [name for name, result in results.items() if result["status"] is None]
    assert not unrun, f"terraform test did not run {unrun}:\n{completed.stdout[-3000:]}\n{completed.stderr[-3000:]}"
    return results
