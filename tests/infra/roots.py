"""The thin roots' shared files, made from the module: `python -m tests.infra.roots` rewrites them.

Every root under terraform/environments/ declares every variable of the module (its variables.tf is the module's,
byte for byte) and passes each one through (main.tf), so a setting written in a root's tfvars (or the build's
_TFVARS_URI) is typed and validated as the module declares it and never dropped (issue 51, item 10).
tests/infra/test_roots.py fails when a root's files differ from what this writes.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

MODULE = Path(__file__).resolve().parents[2] / "terraform"
ROOTS = sorted(p for p in (MODULE / "environments").iterdir() if (p / "backend.tf").is_file())

HEADER = """\
# A thin root: this environment's backend (backend.tf), providers and values (terraform.tfvars) around the
# module at the top of terraform/ (terraform/README.md, Layout). Every root under environments/ has this same
# main.tf, variables.tf and outputs.tf (tests/infra/test_roots.py); only backend.tf and terraform.tfvars differ.
# variables.tf is the module's own (a copy, held equal by the tests): every setting of the module is a setting of the
# root, typed and validated as the module declares it, and passed through below; nothing set in a tfvars file is
# dropped (issue 51, item 10), and the build refuses a key no variable declares (scripts/preflight.sh).
# Written by `python -m tests.infra.roots`.

provider "google" {
  project = var.project_id
  region  = var.region
}

provider "google-beta" {
  project = var.project_id
  region  = var.region
}
"""

# Grants an earlier release made in every root's state that are the project's now (issue 51, item 7).
FORGOTTEN = (
    "google_kms_crypto_key_iam_member.pubsub_cmek",
    "google_kms_crypto_key_iam_member.secret_cmek",
    "google_project_service_identity.secret_projects_secretmanager",
)


# The longest ids the validations allow (project_id: 30 characters; name_suffix: 7), for a fourth root added by the
# README alone: a new environment in a new region.
LONGEST_PROJECT = "hyperfleet-adapters-sandbox-eu"
LONGEST_SECRETS = "hyperfleet-secrets-sandbox-eu1"
FOURTH_ROOT = {
    "project_id": LONGEST_PROJECT,
    "region": "europe-west4",
    "environment": "sandbox",
    "name_suffix": "sbxeu4a",
    "pinned_secret_project_id": LONGEST_SECRETS,
    "secret_id_template": "hyperfleet-{cluster_id}-pull-secret-sbx",
    "pull_secret_source_secret": f"projects/{LONGEST_SECRETS}/secrets/platform-pull-secret",
    "hyperfleet_api_url": "https://hyperfleet.sandbox.example.com",
    "hyperfleet_api_token_secret": f"projects/{LONGEST_PROJECT}/secrets/hyperfleet-api-token-sbx",
    "management_cluster": "projects/hyperfleet-mgmt-sandbox-euro-4/locations/europe-west4/clusters/mc-sbx-1",
}


def tfvars_text(values: dict[str, Any]) -> str:
    return "".join(f"{k} = {json.dumps(v)}\n" for k, v in values.items())


def module_variables() -> list[str]:
    """The module's variables, in the order variables.tf declares them."""
    return re.findall(r'^variable "([a-z0-9_]+)"', (MODULE / "variables.tf").read_text(), re.M)


def main_tf() -> str:
    names = module_variables()
    width = max(map(len, names))
    arguments = "\n".join(f"  {name.ljust(width)} = var.{name}" for name in names)
    removed = "\n".join(
        f"removed {{\n  from = module.adapter.{address}\n\n  lifecycle {{\n    destroy = false\n  }}\n}}\n"
        for address in FORGOTTEN
    )
    return (
        f'{HEADER}\nmodule "adapter" {{\n  source = "../.."\n\n{arguments}\n}}\n\n'
        "# The CMEK grants of the Pub/Sub and Secret Manager service agents (and that agent's identity) were made in\n"
        "# every root sharing a key, the same binding in each state; the bootstrap makes them once per project now\n"
        "# (scripts/bootstrap.sh; issue 51, item 7). Forgotten here, never deleted.\n" + removed
    )


def expected() -> dict[Path, str]:
    """Each root's generated file -> its text."""
    variables = (MODULE / "variables.tf").read_text()
    found = {}
    for root in ROOTS:
        found[root / "main.tf"] = main_tf()
        found[root / "variables.tf"] = variables
    return found


def write() -> None:
    for path, text in expected().items():
        path.write_text(text)


if __name__ == "__main__":
    write()
    sys.exit(0)
