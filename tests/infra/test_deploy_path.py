"""README.md's Deployment section is a numbered path from an empty project to a green doctor (issue 32, item 7):
the bootstrap APIs come before every command that needs them, the deployer account gets exactly the roles
cloudbuild.yaml lists for the function project, the state bucket and the tfvars it creates and uploads are the ones
the build trigger names, and the doctor comes last. The commands' arguments are checked by the real gcloud in
test_gcloud_commands.py; here, what they add up to."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.infra import deployer_permissions, gcloud_commands

ROOT = Path(__file__).resolve().parents[2]
# The API each command group of the path calls (the group is gcloud's first word).
API_OF_GROUP = {
    "services": "serviceusage.googleapis.com",
    "iam": "iam.googleapis.com",
    "projects": "cloudresourcemanager.googleapis.com",
    "storage": "storage.googleapis.com",
    "secrets": "secretmanager.googleapis.com",
    "builds": "cloudbuild.googleapis.com",
}


def deployment_section() -> str:
    readme = (ROOT / "README.md").read_text()
    return readme.split("\n## Deployment\n", 1)[1].split("\n## ", 1)[0]


def steps(section: str) -> list[tuple[int, str]]:
    """(number, text) of each numbered step, in the order written."""
    found = list(re.finditer(r"^(\d+)\. \*\*", section, re.M))
    return [
        (int(m.group(1)), section[m.start() : found[i + 1].start() if i + 1 < len(found) else len(section)])
        for i, m in enumerate(found)
    ]


@pytest.fixture(scope="module")
def path() -> list[tuple[int, str, list[list[str]]]]:
    """Each step with the gcloud words of its commands, as bash expands them."""
    result = []
    for number, text in steps(deployment_section()):
        code = "\n".join(re.findall(r"^ *```sh\n(.*?)^ *```", text, re.S | re.M))
        commands = gcloud_commands.commands_in_shell(code, f"step {number}")
        result.append((number, text, gcloud_commands.expand(commands) if commands else []))
    return result


def test_the_steps_are_numbered_in_order_and_end_with_the_doctor(path: list[tuple[int, str, list[list[str]]]]) -> None:
    numbers = [number for number, _text, _words in path]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 7, numbers
    assert "doctor_command" in path[-1][1]


def test_the_bootstrap_apis_come_first_and_cover_every_command_before_terraform(
    path: list[tuple[int, str, list[list[str]]]],
) -> None:
    first_words = path[0][2]
    assert first_words and first_words[0][:2] == ["services", "enable"], "step 1 must enable the bootstrap APIs"
    enabled = {w for w in first_words[0][2:] if not w.startswith("--")}
    assert {"serviceusage.googleapis.com", "cloudresourcemanager.googleapis.com"} <= enabled
    for number, _text, words in path[1:]:
        for command in words:
            api = API_OF_GROUP.get(command[0])
            assert api is not None, f"step {number}: gcloud {command[0]} is not mapped to its API here"
            assert api in enabled, f"step {number}: gcloud {' '.join(command[:3])} needs {api}, not bootstrapped"
    before_bootstrap = deployment_section().split("gcloud services enable", 1)[0]
    assert not re.search(r"^\s*(gcloud|terraform) ", before_bootstrap, re.M), "a command before the bootstrap APIs"


def test_the_deployer_gets_the_roles_cloudbuild_yaml_lists(path: list[tuple[int, str, list[list[str]]]]) -> None:
    (text,) = [t for _n, t, _w in path if "gcloud iam service-accounts create" in t]
    loop = re.search(r"for role in \\\n(.*?); do", text, re.S)
    assert loop, "the deployer's roles are granted in one loop"
    written = set(re.findall(r"roles/[\w.]+", loop.group(1)))
    grants = deployer_permissions.deployer_grants((ROOT / "cloudbuild.yaml").read_text())
    assert written == grants[deployer_permissions.FUNCTION_PROJECT][0]


def test_the_bucket_and_tfvars_it_creates_are_the_ones_the_trigger_names(
    path: list[tuple[int, str, list[list[str]]]],
) -> None:
    commands = [command for _n, _t, words in path for command in words]
    (created,) = [c[3] for c in commands if c[:3] == ["storage", "buckets", "create"]]
    assert ["storage", "buckets", "update", created, "--versioning"] in commands
    (upload,) = [c for c in commands if c[:2] == ["storage", "cp"]]
    (trigger,) = [c for c in commands if c[:3] == ["builds", "triggers", "create"]]
    flags = dict(w.split("=", 1) for w in trigger if w.startswith("--") and "=" in w)
    substitutions = dict(pair.split("=", 1) for pair in flags["--substitutions"].split(","))
    assert substitutions["_TF_STATE_BUCKET"] == created.removeprefix("gs://")
    assert substitutions["_TFVARS_URI"] == upload[-1]
    declared = yaml.safe_load((ROOT / "cloudbuild.yaml").read_text())["substitutions"]
    assert set(substitutions) <= set(declared)
    (account,) = [c[3] for c in commands if c[:3] == ["iam", "service-accounts", "create"]]
    assert flags["--service-account"].endswith(
        f"/serviceAccounts/{account}@{gcloud_commands.SHELL_VALUES['PROJECT_ID']}.iam.gserviceaccount.com"
    )
    bindings = [c for c in commands if c[:2] == ["projects", "add-iam-policy-binding"]]
    assert bindings and all(
        f"--member=serviceAccount:{gcloud_commands.SHELL_VALUES['DEPLOYER']}" in c for c in bindings
    )


def test_terraform_readme_has_no_stray_sentence_fragments() -> None:
    # Issue 32, item 7: "project." stood alone at the start of a line in "Turning it off".
    text = (ROOT / "terraform" / "README.md").read_text()
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    stray = [line for line in prose.splitlines() if re.match(r"^[a-z]+\. [A-Z]", line)]
    assert not stray, stray


def test_terraform_readme_says_the_provider_undeletes_a_custom_role() -> None:
    # Issue 42, item 10: it said re-creating a custom role after a destroy fails (undelete by hand); within 7 days
    # the provider undeletes and updates it itself; only days 7-37 refuse the id.
    text = " ".join((ROOT / "terraform" / "README.md").read_text().split())
    assert "gcloud iam roles undelete" not in text
    assert "the provider undeletes it" in text
    assert "From day 7" in text and "day 37" in text
