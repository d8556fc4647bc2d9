"""README.md's Deployment section is a numbered path from an empty project to a green doctor (issue 32, item 7):
the bootstrap APIs come before every command that needs them, the deployer account gets exactly the roles
cloudbuild.yaml lists for the function project, the state bucket and the tfvars it creates and uploads are the ones
the build trigger names, and the doctor comes last. The commands' arguments are checked by the real gcloud in
test_gcloud_commands.py; here, what they add up to."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.infra import gcloud_commands

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


def _group(command: list[str]) -> list[str]:
    """The command without its release track (`beta services ...` is a `services` command)."""
    return command[1:] if command and command[0] in ("alpha", "beta") else command


def _project_of(command: list[str]) -> str:
    """The project a command acts on: --project, the project of `projects ...`, else the function's project."""
    for word in command:
        if word.startswith("--project="):
            return word.split("=", 1)[1]
    words = _group(command)
    if words[0] == "projects" and len(words) > 2:
        return words[2]
    return gcloud_commands.SHELL_VALUES["PROJECT_ID"]


def enabled_before(path: list[tuple[int, str, list[list[str]]]]) -> list[tuple[int, list[str], set[str]]]:
    """Each command after the first `services enable` with the APIs enabled, by then, in the project it acts on."""
    enabled: dict[str, set[str]] = {}
    out = []
    for number, _text, words in path:
        for command in words:
            if _group(command)[:2] == ["services", "enable"]:
                apis = {w for w in _group(command)[2:] if not w.startswith("--")}
                enabled.setdefault(_project_of(command), set()).update(apis)
                continue
            out.append((number, command, set(enabled.get(_project_of(command), set()))))
    return out


def bootstrap_problems(path: list[tuple[int, str, list[list[str]]]]) -> list[str]:
    problems = []
    for number, command, apis in enabled_before(path):
        api = API_OF_GROUP.get(_group(command)[0])
        if api is None:
            problems.append(f"step {number}: gcloud {command[0]} is not mapped to its API here")
        elif api not in apis:
            problems.append(f"step {number}: gcloud {' '.join(command[:3])} needs {api} in {_project_of(command)}")
    return problems


def test_the_bootstrap_apis_come_first_and_cover_every_command_in_its_project(
    path: list[tuple[int, str, list[list[str]]]],
) -> None:
    # Issue 42, item 2: step 1 enabled the APIs in the function's project only, and step 4 created secrets in the
    # secret project (SERVICE_DISABLED there on a new project).
    first_words = path[0][2]
    assert first_words and first_words[0][:2] == ["services", "enable"], "step 1 must enable the bootstrap APIs"
    enabled = {w for w in first_words[0][2:] if not w.startswith("--")}
    assert {"serviceusage.googleapis.com", "cloudresourcemanager.googleapis.com"} <= enabled
    assert bootstrap_problems(path) == []
    before_bootstrap = deployment_section().split("gcloud services enable", 1)[0]
    assert not re.search(r"^\s*(gcloud|terraform) ", before_bootstrap, re.M), "a command before the bootstrap APIs"


def test_the_bootstrap_check_catches_a_secret_project_left_without_secret_manager(
    path: list[tuple[int, str, list[list[str]]]],
) -> None:
    secret_project = gcloud_commands.SHELL_VALUES["SECRET_PROJECT"]
    # A secret-project command after step 1 (the bootstrap's own are checked by test_bootstrap.py).
    uses = ["secrets", "describe", "platform-pull-secret", f"--project={secret_project}"]
    narrowed = [
        (
            n,
            t,
            [c for c in words if not (c[:2] == ["services", "enable"] and _project_of(c) == secret_project)]
            + ([uses] if n == 2 else []),
        )
        for n, t, words in path
    ]
    assert any("secretmanager.googleapis.com in hyperfleet-secrets-prod" in p for p in bootstrap_problems(narrowed))


def test_the_path_runs_the_roots_own_bootstrap_before_the_first_build(
    path: list[tuple[int, str, list[list[str]]]],
) -> None:
    # Issue 51, item 1: step 4 hard-coded production's secrets (`hyperfleet-api-token`; the platform pull secret's
    # `create` answered ALREADY_EXISTS for a second root), and a second region needed "no bootstrap". The path runs
    # the bootstrap rendered from $ROOT's values (tests/infra/test_bootstrap.py holds it to them, to cloudbuild.yaml
    # and to the real gcloud), and names no secret of its own.
    section = deployment_section()
    assert 'terraform/scripts/bootstrap.sh "terraform/environments/$ROOT"' in section
    assert 'DATA_DIR=first-values bash "bootstrap-$ROOT.sh"' in section
    assert section.index("bootstrap.sh") < section.index("gcloud builds triggers run")
    assert not re.search(r"gcloud secrets create", section), "a secret hard-coded in the path"
    second = section.split("### Adding the second environment", 1)[1]
    assert "no bootstrap" not in second and "Run step 2 with `ROOT=production-us`" in second


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


def test_the_trigger_names_a_repository_connected_before_it(path: list[tuple[int, str, list[list[str]]]]) -> None:
    # Issue 42, item 1: `triggers create github` without a connection fails ("repository mapping does not exist").
    commands = [_group(c) for _n, _t, words in path for c in words]
    index = {" ".join(c[:3]): i for i, c in reversed(list(enumerate(commands)))}
    triggers = [c for c in commands if c[:3] == ["builds", "triggers", "create"]]
    assert triggers
    for trigger in triggers:
        flags = dict(w.split("=", 1) for w in trigger if w.startswith("--") and "=" in w)
        assert "--repo-owner" not in flags and "--repo-name" not in flags, "a 1st-gen GitHub App mapping is never made"
    (connection,) = [c for c in commands if c[:3] == ["builds", "connections", "create"]]
    (repository,) = [c for c in commands if c[:3] == ["builds", "repositories", "create"]]
    repo_flags = dict(w.split("=", 1) for w in repository if w.startswith("--") and "=" in w)
    assert repo_flags["--connection"] == connection[4]
    project = gcloud_commands.SHELL_VALUES["PROJECT_ID"]
    for trigger in triggers:
        flags = dict(w.split("=", 1) for w in trigger if w.startswith("--") and "=" in w)
        assert flags["--repository"] == (
            f"projects/{project}/locations/{flags['--region']}/connections/{connection[4]}/repositories/{repository[3]}"
        )
    assert index["builds connections create"] < index["builds repositories create"] < index["builds triggers create"]
    agent = [c for c in commands if c[:2] == ["projects", "add-iam-policy-binding"] and "gcp-sa-cloudbuild" in str(c)]
    assert agent and "--role=roles/secretmanager.admin" in agent[0], "the connection stores its token as this agent"


_TERRAFORM = re.compile(r"(?<![\w/.-])terraform (?:-chdir=(\S+) )?(\w+)")


def terraform_order_problems(section: str) -> list[str]:
    """A workstation command reading the state before `terraform init` ran in its directory (apply is the build's)."""
    initialised: set[str] = set()
    problems = []
    for match in _TERRAFORM.finditer(section):
        directory, command = match.group(1) or ".", match.group(2)
        if command == "init":
            initialised.add(directory)
        elif command in ("output", "state", "show") and directory not in initialised:
            problems.append(f"terraform {command} in {directory} before its init")
    return problems


def test_terraform_is_initialised_before_its_outputs_are_read() -> None:
    # Issue 42, item 4: step 7 ran `terraform output` before step 9's `terraform init`.
    assert terraform_order_problems(deployment_section()) == []
    assert terraform_order_problems("terraform -chdir=x output -raw a\nterraform -chdir=x init\n") != []


def test_every_kubectl_apply_of_the_docs_is_server_side() -> None:
    # Issue 42, item 4: the README applied the manifests client-side, unlike terraform/README (field ownership).
    for doc in (ROOT / "README.md", ROOT / "terraform" / "README.md", ROOT / "terraform" / "kubernetes" / "README.md"):
        for line in re.findall(r"kubectl apply[^\n]*", doc.read_text()):
            if " -f" in line:
                assert "--server-side" in line, f"{doc.name}: {line}"
