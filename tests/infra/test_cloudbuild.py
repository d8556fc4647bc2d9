"""cloudbuild.yaml (plan and apply, as the deployer) and cloudbuild-test.yaml (make test, as the test account):
they parse, the tests run apart from the deploy, the deploy applies only a tested commit that descends from what is
deployed, production only the reviewed plan; substitutions are declared, images pinned by digest."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.infra import reality

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
CLOUDBUILD = REPOSITORY_ROOT / "cloudbuild.yaml"
CLOUDBUILD_TEST = REPOSITORY_ROOT / "cloudbuild-test.yaml"
SCRIPTS = REPOSITORY_ROOT / "terraform" / "scripts"
# Substitutions Cloud Build provides itself (https://cloud.google.com/build/docs/configuring-builds/substitute-variable-values).
BUILT_INS = {
    "PROJECT_ID",
    "PROJECT_NUMBER",
    "BUILD_ID",
    "LOCATION",
    "TRIGGER_NAME",
    "COMMIT_SHA",
    "SHORT_SHA",
    "REVISION_ID",
    "REPO_NAME",
    "REPO_FULL_NAME",
    "BRANCH_NAME",
    "TAG_NAME",
    "REF_NAME",
    "TRIGGER_BUILD_CONFIG_PATH",
    "SERVICE_ACCOUNT_EMAIL",
    "SERVICE_ACCOUNT",
}
# $$ escapes a dollar for the shell; anything else starting with $ is a substitution.
SUBSTITUTION = re.compile(r"(?<!\$)\$(?:\{(\w+)\}|(\w+))")


@pytest.fixture(scope="module")
def build() -> dict[str, Any]:
    loaded = yaml.safe_load(CLOUDBUILD.read_text())
    assert isinstance(loaded, dict)
    return loaded


@pytest.fixture(scope="module")
def test_build() -> dict[str, Any]:
    loaded = yaml.safe_load(CLOUDBUILD_TEST.read_text())
    assert isinstance(loaded, dict)
    return loaded


def script_of(build: dict[str, Any], step_id: str) -> str:
    (step,) = [s for s in build["steps"] if s.get("id") == step_id]
    return "\n".join(map(str, step.get("args", [])))


def step_command(step: dict[str, Any]) -> str:
    return " ".join([str(step.get("entrypoint", "")), *map(str, step.get("args", [])), str(step.get("script", ""))])


def strip_escaped(text: str) -> str:
    return text.replace("$$", "")


def test_the_test_step_runs_make_test_with_everything_the_reality_checks_need(test_build: dict[str, Any]) -> None:
    test = next(s for s in test_build["steps"] if s.get("id") == "test")
    command = step_command(test)
    assert re.search(r"\bmake test\b", command), command
    makefile = (REPOSITORY_ROOT / "Makefile").read_text()
    assert re.search(r"^test:", makefile, re.MULTILINE)
    # Issue 10, defect 7: without the Cloud SDK's Pub/Sub emulator and Java the delivery tests skip; CI=true
    # turns such a skip into a failure (tests/conftest.py), and the real terraform serves the validations.
    assert "CI=true" in test.get("env", [])
    for needed in ("google-cloud-cli-pubsub-emulator", "google-cloud-cli", "default-jre-headless", "make"):
        assert re.search(rf"apt-get install .*\b{re.escape(needed)}\b", command), needed
    assert "terraform-binary" in test.get("waitFor", [])
    assert "/workspace/.tools:$$PATH" in command
    assert command.index("apt-get install") < command.index("make test")
    assert re.fullmatch(r"python:3\.1[1-9]-bookworm@sha256:[0-9a-f]{64}", test["name"]), test["name"]


def test_deploy_applies_after_the_plan_and_only_a_tested_commit(build: dict[str, Any]) -> None:
    steps = build["steps"]
    ids = [s.get("id") for s in steps]
    assert ids.index("plan") < ids.index("apply") and "plan" in steps[ids.index("apply")]["waitFor"]
    apply = script_of(build, "apply")
    # This commit's own test build (cloudbuild-test.yaml, by its tag) must have succeeded before anything applies.
    tag = yaml.safe_load(CLOUDBUILD_TEST.read_text())["tags"][0]
    wait = apply.index("gcloud builds list")
    assert f"tags={tag}" in apply and "substitutions.COMMIT_SHA=$COMMIT_SHA" in apply
    assert wait < apply.index("terraform apply") and "SUCCESS) break" in apply
    assert apply.index('if [ "${_APPLY}" != true ]') < wait


def test_substitutions_are_declared_and_region_style(build: dict[str, Any], test_build: dict[str, Any]) -> None:
    for config in (build, test_build):
        declared = set(config.get("substitutions", {}))
        assert all(re.fullmatch(r"_[A-Z][A-Z0-9_]*", name) for name in declared), declared
        used = set()
        for step in config["steps"]:
            for braced, bare in SUBSTITUTION.findall(strip_escaped(yaml.safe_dump(step))):
                used.add(braced or bare)
        unknown = used - declared - BUILT_INS
        assert not unknown, f"undeclared substitutions (escape shell variables as $$VAR): {unknown}"
        assert not declared - used, f"declared and never used: {declared - used}"
    assert {"_ROOT", "_TF_STATE_BUCKET", "_TFVARS_URI", "_APPLY", "_REVIEWED_PLAN"} <= set(build["substitutions"])


def test_the_build_deploys_the_root_its_substitution_names(build: dict[str, Any]) -> None:
    # Issue 42: one module, a root per environment and region; a trigger chooses the root (_ROOT).
    script = script_of(build, "plan")
    assert 'root="terraform/environments/${_ROOT}"' in script and 'cd "$$root"' in script
    root = REPOSITORY_ROOT / "terraform" / "environments" / str(build["substitutions"]["_ROOT"])
    assert (root / "backend.tf").is_file(), "the default _ROOT is not a root"
    # The root's project is checked against the build's before the state is touched (issue 51, item 3: `terraform
    # console` in the root took the state lock with no timeout, and a second build died on the first one's lock).
    check = script.index('project="$$(terraform/scripts/preflight.sh "$$root")"')
    assert check < script.index("terraform init") < script.index("terraform plan")
    assert script.index('test "$$project" = "$PROJECT_ID"') < script.index("terraform init")
    scripts = "\n".join(script_of(build, s["id"]) for s in build["steps"] if s.get("args"))
    assert "terraform console" not in scripts


def test_substitution_scanner_flags_an_unescaped_shell_variable() -> None:
    used = {a or b for a, b in SUBSTITUTION.findall(strip_escaped("echo $PATH $$HOME ${_REGION}"))}
    assert used == {"PATH", "_REGION"}


def test_build_identity_roles_are_documented() -> None:
    text = CLOUDBUILD.read_text()
    assert build_logging_is_user_sa_compatible(yaml.safe_load(CLOUDBUILD_TEST.read_text()))
    for role in ("roles/cloudfunctions.developer", "roles/iam.serviceAccountUser", "roles/pubsub.admin"):
        assert role in text, role
    assert build_logging_is_user_sa_compatible(yaml.safe_load(text))


def build_logging_is_user_sa_compatible(build: dict[str, Any]) -> bool:
    # A build that runs as a user-specified service account must choose where its logs go.
    return build.get("options", {}).get("logging") in {"CLOUD_LOGGING_ONLY", "GCS_ONLY", "NONE"}


_LOCKING = re.compile(r"\bterraform\s+(apply|plan|destroy|import|refresh)\b")
_DURATION = re.compile(r"^(\d+)([smh])$")


def lock_timeout_problems(text: str, substitutions: dict[str, Any]) -> list[str]:
    """Each terraform command that takes the state lock waits for it (issue 42, item 9): two quick pushes run two
    builds, and without -lock-timeout the second fails at once on the first's lock instead of queueing."""
    problems = []
    joined = text.replace("\\\n", " ")
    for line in joined.splitlines():
        if not _LOCKING.search(line):
            continue
        match = re.search(r"-lock-timeout=(\S+)", line)
        if not match:
            problems.append(f"no -lock-timeout: {line.strip()}")
            continue
        value = match.group(1)
        named = SUBSTITUTION.fullmatch(value)
        if named:
            value = str(substitutions.get(named.group(1) or named.group(2), ""))
        duration = _DURATION.match(value)
        seconds = int(duration.group(1)) * {"s": 1, "m": 60, "h": 3600}[duration.group(2)] if duration else 0
        if seconds < 300:
            problems.append(f"-lock-timeout {value!r} is shorter than a build's apply (5 minutes): {line.strip()}")
    return problems


def test_terraform_waits_for_the_state_lock(build: dict[str, Any]) -> None:
    scripts = "\n".join(str(arg) for step in build["steps"] for arg in step.get("args", []))
    assert _LOCKING.search(scripts), "cloudbuild.yaml runs no terraform apply"
    assert lock_timeout_problems(scripts, build["substitutions"]) == []
    assert lock_timeout_problems("terraform apply -input=false -auto-approve", {}) != []


# -- issue 51, items 3, 9 and 10 ----------------------------------------------------------------------------------


def _run(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)


def _terraform() -> Path:
    binary, why = reality.terraform((1, 9))
    if binary is None:
        reality.missing(why)
    assert binary is not None
    return binary


ROOTS = sorted(p for p in (REPOSITORY_ROOT / "terraform" / "environments").iterdir() if (p / "backend.tf").is_file())


def test_the_preflight_reads_each_roots_project_without_the_state(tmp_path: Path) -> None:
    # Issue 51, item 3: the project check ran `terraform console` in the initialised root, which takes the state
    # lock (no -lock-timeout), so a second build failed on the first's lock. The preflight reads no state at all:
    # here there is none to read (no backend credentials, no network), and it still answers for every root.
    env = {**os.environ, "TERRAFORM": str(_terraform())}
    for root in ROOTS:
        done = _run([str(SCRIPTS / "preflight.sh"), str(root)], REPOSITORY_ROOT, env)
        assert done.returncode == 0, (root.name, done.stderr[-2000:])
        expected = re.search(r'^project_id\s*=\s*"([^"]+)"', (root / "terraform.tfvars").read_text(), re.M)
        assert expected and done.stdout.strip() == expected.group(1), (root.name, done.stdout)
    assert not list(ROOTS[0].glob(".terraform*/terraform.tfstate")), "the preflight initialised the root itself"


def test_a_key_no_variable_declares_is_refused_before_the_plan(tmp_path: Path) -> None:
    # Issue 51, item 10: a key in _TFVARS_URI that the root did not declare was a warning, and the setting was
    # silently not applied (service mode, the gateway identity or VPC egress deployed as the defaults).
    env = {**os.environ, "TERRAFORM": str(_terraform())}
    root = tmp_path / "staging"
    shutil.copytree(REPOSITORY_ROOT / "terraform" / "environments" / "staging", root)
    # A setting every root now declares (it was not passed through before): accepted.
    (root / "zz-deploy.auto.tfvars").write_text('vpc_egress = "ALL_TRAFFIC"\n')
    done = _run([str(SCRIPTS / "preflight.sh"), str(root)], tmp_path, env)
    assert done.returncode == 0, done.stderr
    # A typo: refused, and named.
    (root / "zz-deploy.auto.tfvars").write_text('vpc_egres = "ALL_TRAFFIC"\n')
    done = _run([str(SCRIPTS / "preflight.sh"), str(root)], tmp_path, env)
    assert done.returncode == 1 and "vpc_egres" in done.stderr, done.stderr
    # A value the module's validation refuses: refused here too, before any state.
    (root / "zz-deploy.auto.tfvars").write_text('name_suffix = "Stg-2"\n')
    done = _run([str(SCRIPTS / "preflight.sh"), str(root)], tmp_path, env)
    assert done.returncode == 1 and "name_suffix" in done.stderr, done.stderr


def _git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_an_older_commit_is_never_applied_over_a_newer_deploy(tmp_path: Path) -> None:
    # Issue 51, item 3: with the lock timeout, an older commit's build waited for the lock and then applied over a
    # newer deploy. release-order.sh compares the commit being applied with the one the state was last applied from.
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    commits = []
    for n in range(3):
        (repo / "f").write_text(str(n))
        _git(repo, "add", "f")
        _git(repo, "commit", "-q", "-m", f"c{n}")
        commits.append(_git(repo, "rev-parse", "HEAD"))
    _git(repo, "checkout", "-q", "-b", "side", commits[0])
    (repo / "g").write_text("x")
    _git(repo, "add", "g")
    _git(repo, "commit", "-q", "-m", "side")
    side = _git(repo, "rev-parse", "HEAD")
    order = str(SCRIPTS / "release-order.sh")
    cases = {
        ("", commits[0]): 0,  # nothing recorded yet: a first apply
        (commits[1], commits[1]): 0,  # a re-run of the deployed commit
        (commits[0], commits[2]): 0,  # a newer commit
        (commits[2], commits[1]): 1,  # the older build that waited for the lock
        (commits[1], side): 1,  # a history that diverged
        ("0" * 40, commits[2]): 2,  # this checkout lacks the deployed commit: it cannot tell, so it stops
    }
    for (deployed, candidate), code in cases.items():
        assert _run([order, deployed, candidate], repo).returncode == code, (deployed[:7], candidate[:7])
    plan = script_of(yaml.safe_load(CLOUDBUILD.read_text()), "plan")
    assert '-var="source_commit=$COMMIT_SHA" -out=/workspace/tfplan' in plan
    assert plan.index("plan_guard.py deployed /workspace/tfplan.json") < plan.index("release-order.sh")


def _release_block() -> str:
    text = (REPOSITORY_ROOT / "terraform" / "main.tf").read_text()
    match = re.search(r'^resource "terraform_data" "release" \{.*?^\}', text, re.S | re.M)
    assert match, "terraform/main.tf has no terraform_data.release"
    return match.group(0)


def test_the_plan_guard_reads_a_real_plan(tmp_path: Path) -> None:
    # What the build reads from its saved plan: the commit of the prior state (terraform_data.release, as the module
    # writes it), and whether two plans make the same changes (the reviewed one and the one applied).
    terraform = str(_terraform())
    env = reality.terraform_env(tmp_path)
    module = tmp_path / "module"
    module.mkdir()
    (module / "main.tf").write_text(
        'variable "source_commit" {\n  type = string\n}\nvariable "size" {\n  type = number\n}\n'
        'resource "terraform_data" "workload" {\n  input = var.size\n}\n'
        'module "adapter" {\n  source = "./adapter"\n  source_commit = var.source_commit\n}\n'
    )
    (module / "adapter").mkdir()
    (module / "adapter" / "main.tf").write_text('variable "source_commit" {\n  type = string\n}\n' + _release_block())
    first, second = "a" * 40, "b" * 40
    for command in (
        ["init", "-input=false"],
        ["apply", "-auto-approve", "-input=false", f"-var=source_commit={first}", "-var=size=1"],
    ):
        assert _run([terraform, *command, "-no-color"], module, env).returncode == 0, command
    plans = {}
    for name, size in (("reviewed", 2), ("same", 2), ("other", 3)):
        planned = _run(
            [terraform, "plan", "-input=false", f"-var=source_commit={second}", f"-var=size={size}", f"-out={name}"],
            module,
            env,
        )
        assert planned.returncode == 0, planned.stderr
        shown = _run([terraform, "show", "-json", name], module, env)
        (tmp_path / f"{name}.json").write_text(shown.stdout)
        plans[name] = str(tmp_path / f"{name}.json")
    guard = ["python3", str(SCRIPTS / "plan_guard.py")]
    deployed = _run([*guard, "deployed", plans["reviewed"]], tmp_path)
    assert deployed.returncode == 0 and deployed.stdout.strip() == first
    assert _run([*guard, "same", plans["reviewed"], plans["same"]], tmp_path).returncode == 0
    differs = _run([*guard, "same", plans["reviewed"], plans["other"]], tmp_path)
    assert differs.returncode == 1 and "terraform_data.workload" in differs.stderr


def test_production_applies_only_the_reviewed_saved_plan(build: dict[str, Any]) -> None:
    # Issue 51, item 9: no plan/apply separation, no approval before production.
    assert build["substitutions"]["_APPLY"] == "false"  # a trigger that does not say so only plans
    assert build["substitutions"]["_REVIEWED_PLAN"] == "true"
    plan, apply = script_of(build, "plan"), script_of(build, "apply")
    assert re.search(r"terraform plan [^\n]*-out=/workspace/tfplan", plan)
    assert "gs://${_TF_STATE_BUCKET}/plans/${_ROOT}/$COMMIT_SHA.json" in plan  # kept for the approver
    guard = apply.index("plan_guard.py same /workspace/reviewed.json /workspace/tfplan.json")
    assert apply.index('if [ "${_REVIEWED_PLAN}" = true ]') < guard < apply.index("terraform apply")
    (applied,) = re.findall(r"terraform apply [^\n]*", apply)
    assert applied.endswith(" /workspace/tfplan") and "-auto-approve" not in applied  # the saved plan, only
    header = CLOUDBUILD.read_text().split("\nsteps:", 1)[0]
    assert "--require-approval" in header


# Images that may be pulled by tag, each with the reason; empty: every image is pinned. An entry here is a gap, and
# this list is where it shows.
UNPINNED_ALLOWED: dict[str, str] = {}
_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def image_references(path: Path) -> list[str]:
    """Every image a Cloud Build config pulls: each step's builder and each image it pushes (`images:`)."""
    config = yaml.safe_load(path.read_text())
    return [str(step["name"]) for step in config["steps"]] + [str(i) for i in config.get("images", [])]


@pytest.mark.parametrize("path", [CLOUDBUILD, CLOUDBUILD_TEST], ids=lambda p: p.name)
def test_every_image_is_pinned_by_digest_and_says_where_its_digest_came_from(path: Path) -> None:
    # Issue 51, item 9: images pulled by tag (a tag can be moved under a build that holds projectIamAdmin). A digest
    # nobody can trace is no better than a tag: each is listed, with its source, in the file's comments (none could be
    # resolved against its registry where it was pinned, which the list says too).
    comments = "\n".join(line for line in path.read_text().splitlines() if line.lstrip().startswith("#"))
    assert "none was\n# resolved against its registry" in comments
    for image in image_references(path):
        if image in UNPINNED_ALLOWED:
            continue
        assert _DIGEST.search(image), f"{path.name}: {image} is pulled by tag (pin it, or allow it with a reason)"
        listed = re.search(rf"^#\s+{re.escape(image)}\n#\s+\S", comments, re.M)
        assert listed, f"{path.name}: where the digest of {image} came from is not said"


def test_the_deploy_runs_the_gcloud_release_the_tests_read(build: dict[str, Any], test_build: dict[str, Any]) -> None:
    # Issue 51, item 9: the deploy's Cloud SDK was a moving tag (cloud-sdk:slim), whatever gcloud it held; the
    # gcloud checks (tests/infra/gcloud_commands.py) read one release's --help, the one the test build installs.
    release = str(test_build["substitutions"]["_GCLOUD_VERSION"]).split("-", maxsplit=1)[0]
    for step in build["steps"]:
        if "gcloud" in " ".join(map(str, step.get("args", []))):
            tag = step["name"].split("@", 1)[0]
            expected = rf"gcr\.io/google\.com/cloudsdktool/google-cloud-cli:{re.escape(release)}-\w+"
            assert re.fullmatch(expected, tag), tag


def test_the_cloud_sdk_the_tests_install_is_the_one_the_checks_read(test_build: dict[str, Any]) -> None:
    script = script_of(test_build, "test")
    for package in ("google-cloud-cli", "google-cloud-cli-pubsub-emulator"):
        assert re.search(rf"\b{re.escape(package)}=\$\{{_GCLOUD_VERSION\}}", script), package
    pinned = str(test_build["substitutions"]["_GCLOUD_VERSION"])
    assert re.fullmatch(r"\d+\.\d+\.\d+-\d+", pinned), pinned
    gcloud = reality.gcloud()
    if gcloud is None:
        reality.missing("no gcloud on PATH")
    assert gcloud is not None
    version = _run([str(gcloud), "version", "--format=value(core)"], REPOSITORY_ROOT)
    installed = _run([str(gcloud), "version"], REPOSITORY_ROOT).stdout.splitlines()[0].split()[-1]
    assert pinned.split("-", maxsplit=1)[0] == installed, (pinned, installed, version.stdout)


def test_the_tests_never_run_with_the_deployers_token(build: dict[str, Any], test_build: dict[str, Any]) -> None:
    # Issue 51, item 9: unhashed test dependencies ran in the same build as the deployer (projectIamAdmin). The
    # tests are a build of their own, as the test account; the deploy build runs no test and installs nothing.
    deploy = "\n".join(script_of(build, s["id"]) for s in build["steps"] if s.get("args"))
    for forbidden in ("make test", "pip install", "pytest", "apt-get install"):
        assert forbidden not in deploy, forbidden
    tests = "\n".join(script_of(test_build, s["id"]) for s in test_build["steps"] if s.get("args"))
    assert "make test" in tests and not re.search(r"\bterraform (plan|apply|init)\b", tests)
    assert "hf-pullsecret-tester" in CLOUDBUILD_TEST.read_text().split("\nsteps:", 1)[0]
