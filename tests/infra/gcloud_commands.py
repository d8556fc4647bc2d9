"""Find every gcloud command line in the repository's scripts and docs, and let the real Cloud SDK parse it.

Extraction: the shell text of each source (scripts whole; cloudbuild.yaml's step scripts and comments;
the fenced code blocks of the READMEs, and their inline `gcloud ... --flag` spans) is scanned for `gcloud`
in command position; each command runs up to its unquoted end (newline without a backslash, ;, |, &, or the
`)` closing the `$(...)` it sits in). bash itself then expands the words, with plausible values for the
variables and stand-ins for `terraform output` and `date`, and a `gcloud` function that records the words.
Check: each recorded command runs under the installed Cloud SDK with an empty configuration (no account, no
project, no metadata-server probe), so it stops before any network call; the answer must be about the missing
credentials or project, never about the arguments ("unrecognized arguments", "Invalid choice", ...).
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]

# Values for the shell variables the commands use (set -u turns any other into an error naming it).
SHELL_VALUES = {
    "PROJECT_ID": "hyperfleet-adapters-prod",
    "REGION": "europe-west1",
    "TRIGGER": "projects/hyperfleet-adapters-prod/locations/europe-west1/triggers/hyperfleet-pullsecret-adapter-123",
    "trigger": "hyperfleet-pullsecret-adapter-123",
    "subscription": "projects/hyperfleet-adapters-prod/subscriptions/eventarc-europe-west1-hyperfleet-sub-123",
    "DEAD_LETTER_TOPIC": "projects/hyperfleet-adapters-prod/topics/hyperfleet-pullsecret-adapter-dead-letter",
    "MAX_DELIVERY_ATTEMPTS": "10",
    "ACK_DEADLINE_SECONDS": "600",
    "PUBSUB_SERVICE_AGENT": "serviceAccount:service-123@gcp-sa-pubsub.iam.gserviceaccount.com",
    "SECRET_PROJECT": "hyperfleet-secrets-prod",
    "MANAGEMENT_PROJECT": "hyperfleet-mgmt-prod",
    "PROJECT_NUMBER": "123456789012",
    "CONNECTION": "hyperfleet-github",
    "ROOT": "production",
    "OWNER": "openshift-hyperfleet",
    "REPO": "hyperfleet-pullsecret-adapter",
    "SECRET": "platform-pull-secret",
    "secret": "platform-pull-secret",
    "TOPIC": "projects/hyperfleet-adapters-prod/topics/hyperfleet-pullsecret-adapter-source-rotation",
    "EVENT": '{"specversion":"1.0","type":"com.redhat.hyperfleet.cluster.reconcile","source":"manual","id":"m-1"}',
    "SUB": "projects/hyperfleet-adapters-prod/subscriptions/hyperfleet-pullsecret-adapter-dead-letter",
    "ack": "RkVfb3BhcXVlX2Fja19pZA",
    "CLUSTER": "2abc9def",
    "CLUSTER_ID": "2abc9def",
    # README.md, Deployment: the variables its path sets first, and the deployer's roles loop.
    "STATE_BUCKET": "hyperfleet-adapters-prod-tf-state",
    "DEPLOYER": "hf-pullsecret-deployer@hyperfleet-adapters-prod.iam.gserviceaccount.com",
    "role": "roles/iam.serviceAccountAdmin",
    "_ROOT": "production",
    "root": "terraform/environments/production",  # cloudbuild.yaml's deploy step
    "_TF_STATE_BUCKET": "hyperfleet-tf-state",
    "_TFVARS_URI": "gs://hyperfleet-tf-state/pullsecret.tfvars",
    "LOCATION": "europe-west1",  # Cloud Build's own substitutions in cloudbuild.yaml
    "COMMIT_SHA": "5eec32f0" * 5,
    # A root's bootstrap (terraform/bootstrap/commands.tf, tests/infra/test_bootstrap.py): what its script sets.
    "DATA_DIR": "/tmp/first-values",
    "number": "123456789012",
    "agent": "service-123456789012@gcp-sa-secretmanager.iam.gserviceaccount.com",
    "label": "",
    "TESTER": "hf-pullsecret-tester@hyperfleet-adapters-prod.iam.gserviceaccount.com",
}
# `terraform output -raw NAME` in the docs: what a real apply of example.tfvars would print.
TERRAFORM_OUTPUTS = {
    "function_name": "hyperfleet-pullsecret-adapter",
    "region": "europe-west1",
    "project_id": "hyperfleet-adapters-prod",
    "cluster_events_topic": "projects/hyperfleet-adapters-prod/topics/hyperfleet-cluster-events",
    "dead_letter_subscription": (
        "projects/hyperfleet-adapters-prod/subscriptions/hyperfleet-pullsecret-adapter-dead-letter"
    ),
    "source_rotation_topic": "projects/hyperfleet-adapters-prod/topics/hyperfleet-pullsecret-adapter-source-rotation",
    "runtime_service_account_email": "hf-pullsecret-run@hyperfleet-adapters-prod.iam.gserviceaccount.com",
}
# Placeholders the docs write in capitals, as a whole word or a flag's whole value (gcloud checks project ids
# before credentials, so `--project P` would fail for the placeholder, not for the command).
PLACEHOLDERS = {
    "P": "hyperfleet-secrets-prod",
    "PROJECT": "hyperfleet-adapters-prod",
    "PROJECT_ID": "hyperfleet-adapters-prod",
    "SECRET_PROJECT": "hyperfleet-secrets-prod",
    "REGION": "europe-west1",
}
# What gcloud says when it stops for lack of credentials or project, i.e. after parsing the arguments.
NOT_ARGUMENT_ERRORS = (
    "You do not currently have an active account selected",
    "The required property [project] is not currently set",
    "Your current active account",
    "could not find default credentials",
)
ARGUMENT_ERRORS = (
    "unrecognized arguments",
    "Invalid choice",
    "argument ",
    "Invalid value for",
    "is not a valid",
    "must be specified",
    "Bad value",
    "Exactly one of",
    "At most one of",
)


@dataclass(frozen=True)
class Command:
    source: str  # file (and block) the command came from
    text: str  # the command as written


KEYWORDS = {"if", "then", "else", "elif", "do", "while", "until", "!", "time"}


def _in_command_position(text: str, index: int) -> bool:
    before = text[:index].rstrip(" \t")
    if not before or before.endswith(("\n", "$(", ";", "&&", "||", "|", "(", "{", "`")):
        return True
    last_word = re.split(r"[\s;]", before)[-1]
    return last_word in KEYWORDS


def _command_end(text: str, start: int) -> int:
    """Index just past the command starting at START (quotes, $( ) nesting and \\-newlines respected)."""
    depth = 0
    quote = ""
    i = start
    while i < len(text):
        char = text[i]
        if quote == "'":
            if char == "'":
                quote = ""
        elif char == "\\":
            i += 2
            continue
        elif quote == '"':
            if char == '"':
                quote = ""
            elif text.startswith("$(", i):
                depth += 1
                i += 2
                continue
            elif char == ")" and depth:
                depth -= 1
        elif char in "'\"":
            quote = char
        elif text.startswith("$(", i):
            depth += 1
            i += 2
            continue
        elif char == ")":
            if depth == 0:
                return i
            depth -= 1
        elif depth == 0 and (char in "\n;|&" or (char == "#" and text[i - 1] in " \t")):
            return i
        i += 1
    return i


def commands_in_shell(text: str, source: str) -> list[Command]:
    found = []
    for match in re.finditer(r"(?<![\w./-])gcloud(?=[ \t]+[a-z])", text):
        if not _in_command_position(text, match.start()):
            continue
        line_start = text.rfind("\n", 0, match.start()) + 1
        if text[line_start : match.start()].lstrip().startswith("#"):
            continue  # inside a shell comment
        found.append(Command(source, text[match.start() : _command_end(text, match.start())].rstrip()))
    return found


def _markdown_shell(path: Path) -> list[tuple[str, str]]:
    text = path.read_text()
    name = path.relative_to(REPOSITORY_ROOT).as_posix()
    chunks = []
    for match in re.finditer(r"^```[^\n]*\n(.*?)^```", text, re.DOTALL | re.MULTILINE):
        line = text[: match.start()].count("\n") + 1
        chunks.append((f"{name}:{line} (code block)", match.group(1)))
    prose = re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)
    for match in re.finditer(r"`(gcloud [^`]*--[^`]*)`", prose):
        chunks.append((f"{name} (inline: {match.group(1)[:40]}...)", match.group(1)))
    return chunks


# The deploy build and, beside it, the test build (issue 51, item 9: apart, under two accounts).
CLOUDBUILD_FILES = ("cloudbuild.yaml", "cloudbuild-test.yaml")


def _cloudbuild_shell(path: Path) -> list[tuple[str, str]]:
    """The shell of PATH's build and of every other build file beside it (CLOUDBUILD_FILES): comments and steps."""
    chunks = []
    for build in [path, *(path.parent / name for name in CLOUDBUILD_FILES if name != path.name)]:
        if not build.is_file():
            continue
        text = build.read_text()
        comments = "\n".join(
            re.sub(r"^\s*#\s?", "", line) for line in text.splitlines() if line.lstrip().startswith("#")
        )
        chunks.append((f"{build.name} (comments)", comments))
        for step in yaml.safe_load(text)["steps"]:
            words = [str(step.get("entrypoint", "")), *map(str, step.get("args", [])), str(step.get("script", ""))]
            # $$ is Cloud Build's escape for a shell $; ${_X} and $PROJECT_ID are its substitutions (bash variables).
            chunks.append((f"{build.name} (step {step.get('id')})", "\n".join(words).replace("$$", "$")))
    return chunks


def repository_commands(root: Path = REPOSITORY_ROOT) -> list[Command]:
    chunks: list[tuple[str, str]] = []
    for script in sorted((root / "terraform" / "scripts").glob("*.sh")):
        chunks.append((script.relative_to(root).as_posix(), script.read_text()))
    chunks.extend(_cloudbuild_shell(root / "cloudbuild.yaml"))
    # The READMEs, and the documents the README's details moved to (issue 52).
    moved = ("design.md", "configuration.md", "registry-verification.md", "leak-runbook.md")
    docs = [root / "README.md", root / "terraform" / "README.md", root / "emulators" / "README.md"]
    for doc in [*docs, *(root / "docs" / name for name in moved)]:
        chunks.extend(_markdown_shell(doc))
    return [command for source, text in chunks for command in commands_in_shell(text, source)]


def _stand_ins() -> str:
    outputs = "\n".join(f"    {name}) printf %s {value!r} ;;" for name, value in TERRAFORM_OUTPUTS.items())
    return f"""
terraform() {{
  [[ "$1 $2" == "output -raw" ]] || {{ echo "stand-in terraform: only 'output -raw NAME'" >&2; return 1; }}
  case "$3" in
{outputs}
    *) echo "stand-in terraform: no output $3" >&2; return 1 ;;
  esac
}}
date() {{ if [[ "${{1:-}}" == "+%s" ]]; then echo 1790000000; else command date -u "$@"; fi; }}
gcloud() {{ printf '%s\\0' "$@" >&3; printf '\\036' >&3; }}
"""


def _fill(word: str) -> str:
    if word in PLACEHOLDERS:
        return PLACEHOLDERS[word]
    flag, equals, value = word.partition("=")
    if equals and flag.startswith("--") and value in PLACEHOLDERS:
        return f"{flag}={PLACEHOLDERS[value]}"
    return word


def expand(commands: list[Command]) -> list[list[str]]:
    """The words bash passes to gcloud for each command (one bash process for all)."""
    lines = ["set -euo pipefail", *(f"{k}={v!r}" for k, v in SHELL_VALUES.items()), _stand_ins()]
    for command in commands:
        lines.append(command.text)
    with tempfile.TemporaryDirectory() as work:
        script = Path(work) / "expand.sh"
        script.write_text("\n".join(lines) + "\n")
        out = Path(work) / "words"
        completed = subprocess.run(
            ["bash", "-c", f'exec 3>"{out}"; source "{script}"'],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={"PATH": os.environ["PATH"], "HOME": work, "LC_ALL": "C"},
        )
        if completed.returncode != 0:
            raise AssertionError(f"bash could not expand the gcloud commands: {completed.stderr}")
        records = out.read_bytes().split(b"\x1e")[:-1]
    words = [[_fill(w.decode()) for w in record.split(b"\0")[:-1]] for record in records]
    assert len(words) == len(commands), "each command must call gcloud exactly once"
    return words


def gcloud_environment(config_dir: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("CLOUDSDK_", "GOOGLE_", "GCE_"))
        or key in ("CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE", "CLOUDSDK_PYTHON")
    }
    env.update(
        CLOUDSDK_CONFIG=config_dir,
        CLOUDSDK_CORE_DISABLE_PROMPTS="1",
        CLOUDSDK_CORE_CHECK_GCE_METADATA="false",  # never probe the metadata server
        CLOUDSDK_CORE_DISABLE_USAGE_REPORTING="true",
        CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK="true",
    )
    return env


def parse_problem(gcloud: Path, words: list[str]) -> str | None:
    """None when the Cloud SDK accepted the arguments (it stopped at credentials); else what it said."""
    with tempfile.TemporaryDirectory() as config_dir:
        completed = subprocess.run(
            [str(gcloud), *words],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env=gcloud_environment(config_dir),
            stdin=subprocess.DEVNULL,
        )
    said = (completed.stderr + completed.stdout).strip()
    if completed.returncode == 0:
        return None
    if any(marker in said for marker in NOT_ARGUMENT_ERRORS) and not any(m in said for m in ARGUMENT_ERRORS):
        return None
    return said[:1500] or f"exit status {completed.returncode}"
