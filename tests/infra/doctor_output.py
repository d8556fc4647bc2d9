"""The `doctor_command` output of terraform/outputs.tf rendered offline (no provider) from the real variables.tf,
example.tfvars and the locals it reads, for given overrides: shared by the doctor command and CA bundle tests."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from tests.infra import reality

ROOT = Path(__file__).resolve().parent.parent.parent
TERRAFORM = ROOT / "terraform"
# What the output refers to outside its own locals, replaced by values (the output block is rendered offline,
# without providers, from the real variables.tf and the real locals it reads).
STUBS = {
    "google_cloudfunctions2_function.adapter.name": "local.stub_function",
    "google_service_account.runtime.email": "local.stub_runtime",
}
RUNTIME = "hf-pullsecret-run@hyperfleet-adapters-prod.iam.gserviceaccount.com"
STUB_LOCALS = f"""
locals {{
  stub_function                       = "hyperfleet-pullsecret-adapter"
  stub_runtime                        = "{RUNTIME}"
  allowed_management_clusters         = ["projects/hyperfleet-mgmt-prod/locations/*/clusters/*"]
  external_secrets_principal_template = ""
  cluster_events_topic_id             = "projects/hyperfleet-adapters-prod/topics/hyperfleet-cluster-events"
  fan_out_topic_id                    = "projects/hyperfleet-adapters-prod/topics/hyperfleet-pullsecret-adapter-fan-out"
}}
"""
# The locals the output and function_environment read, taken as written in terraform/*.tf.
REAL_LOCALS = (
    "function_environment",
    "token_file_variables",
    "token_file_secrets",
    "id_token_services",
    "pull_secret_service",
    "pull_secret_service_token_file",
    "pull_secret_service_token_mount",
    "pull_secret_service_token_name",
    "hyperfleet_token_mount_path",
    "hyperfleet_token_file_name",
    "secret_project_ids",
    "hyperfleet_service_account_token",
    "pull_secret_service_account_token",
    "ca_bundle_settings",
    "ca_bundle_secrets",
    "ca_bundle_secret_names",
    "ca_bundle_file_name",
    "ca_bundle_volumes",
    "ca_bundle_environment",
    "doctor_file_secrets",
    "admission_policy_name",
    "name_suffix",
)


def _real_local(name: str) -> str:
    """The line(s) `  NAME = ...` of the locals block that defines NAME in terraform/*.tf."""
    for path in sorted(TERRAFORM.glob("*.tf")):
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            if re.match(rf"^  {name}\s+=", line):
                if not line.rstrip().endswith(("{", "[", "(")):
                    return line
                end = next(j for j in range(i + 1, len(lines)) if re.match(r"^  [}\])]", lines[j]))
                return "\n".join(lines[i : end + 1])
    raise AssertionError(f"no local {name} in terraform/*.tf")


def _output_block() -> str:
    text = (TERRAFORM / "outputs.tf").read_text()
    match = re.search(r'^output "doctor_command" \{\n.*?^\}\n', text, re.S | re.M)
    assert match, "terraform/outputs.tf has no doctor_command output"
    block = match.group(0)
    for reference, stub in STUBS.items():
        block = block.replace(reference, stub)
    return block


def render(folder: Path, overrides: dict[str, object]) -> str:
    """doctor_command as terraform renders it for example.tfvars with OVERRIDES."""
    binary, why = reality.terraform((1, 9))
    if binary is None:
        reality.missing(why)
    assert binary is not None
    shutil.copy(TERRAFORM / "variables.tf", folder / "variables.tf")
    shutil.copy(TERRAFORM / "example.tfvars", folder / "terraform.tfvars")
    (folder / "mode.auto.tfvars.json").write_text(json.dumps(overrides))
    real = "locals {\n" + "\n".join(_real_local(name) for name in REAL_LOCALS) + "\n}\n"
    (folder / "main.tf").write_text(STUB_LOCALS + real + _output_block())
    return str(reality.terraform_outputs(binary, folder)["doctor_command"])
