"""Every gcloud command in terraform/scripts/, cloudbuild.yaml and the READMEs parses under the real Cloud SDK."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.infra import gcloud_commands, provider_schema, reality


@pytest.fixture(scope="module")
def gcloud() -> Path:
    binary = reality.gcloud()
    if binary is None:
        reality.missing("gcloud (the Google Cloud SDK) is not installed")
    assert binary is not None
    return binary


def problems(gcloud: Path, commands: list[gcloud_commands.Command]) -> list[str]:
    words = gcloud_commands.expand(commands)
    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(pool.map(lambda w: gcloud_commands.parse_problem(gcloud, w), words))
    return [
        f"{command.source}: gcloud {' '.join(w)[:300]}\n  -> {answer}"
        for command, w, answer in zip(commands, words, answers, strict=True)
        if answer is not None
    ]


def test_the_extraction_finds_the_commands_of_every_source() -> None:
    commands = gcloud_commands.repository_commands()
    sources = {command.source.split(" ")[0].split(":")[0] for command in commands}
    assert {
        "terraform/scripts/configure-trigger-dead-letter.sh",
        "terraform/scripts/configure-source-rotation-topic.sh",
        "cloudbuild.yaml",
        "README.md",
        "terraform/README.md",
    } <= sources
    texts = [" ".join(words[:3]) for words in gcloud_commands.expand(commands)]
    for expected in (
        "pubsub subscriptions add-iam-policy-binding",
        "pubsub subscriptions update",
        "secrets update platform-pull-secret",
        "functions call hyperfleet-pullsecret-adapter",
        "builds triggers create",
    ):
        assert any(text.startswith(expected) for text in texts), (expected, texts)


def test_every_gcloud_command_parses_under_the_installed_cloud_sdk(gcloud: Path) -> None:
    found = problems(gcloud, gcloud_commands.repository_commands())
    assert not found, "gcloud refused the arguments of:\n" + "\n".join(found)


def test_the_check_catches_a_flag_of_another_track(gcloud: Path) -> None:
    # Issue 10, defect 2: --condition exists on add-iam-policy-binding in the alpha track only.
    script = """
gcloud pubsub subscriptions add-iam-policy-binding "$subscription" \\
  --project="$PROJECT_ID" --member="$PUBSUB_SERVICE_AGENT" --role="roles/pubsub.subscriber" \\
  --condition=None --quiet >/dev/null
gcloud functions call "$(terraform output -raw function_name)" --gen2 --region="$(terraform output -raw region)" \\
  --data='{}'
"""
    commands = gcloud_commands.commands_in_shell(script, "scratch")
    assert len(commands) == 2
    found = problems(gcloud, commands)
    assert len(found) == 1 and "--condition" in found[0], found


def test_extraction_follows_quotes_continuations_and_substitutions() -> None:
    text = """
if gcloud secrets update "$secret" --project="$SECRET_PROJECT" \\
    --add-topics="$TOPIC" --quiet >/dev/null; then echo ok; fi
state="$(gcloud functions describe x --gen2 --format='value(state)')"  # a comment
command -v gcloud >/dev/null
echo "gcloud is required"
# gcloud in a comment is not a command
gcloud pubsub topics publish t --message="{
  \\"a\\": \\"$(printf %s 'b)c' | base64 -w0)\\"}"
"""
    commands = gcloud_commands.commands_in_shell(text, "scratch")
    words = gcloud_commands.expand(commands)
    assert [w[:2] for w in words] == [["secrets", "update"], ["functions", "describe"], ["pubsub", "topics"]]
    assert words[0][-2:] == ["--add-topics=" + gcloud_commands.SHELL_VALUES["TOPIC"], "--quiet"]
    assert words[1][-1] == "--format=value(state)"
    assert words[2][-1] == '--message={\n  "a": "Yilj"}'


def test_function_commands_name_the_deployed_function_and_send_fresh_events() -> None:
    # Issue 10, defect 8: the README called "hyperfleet-pullsecret" and terraform/README.md sent a fixed
    # publishTime (2026-01-01), which the function drops as older than MAX_EVENT_AGE.
    import json
    from datetime import UTC, datetime

    import hcl2

    with (gcloud_commands.REPOSITORY_ROOT / "terraform" / "variables.tf").open() as handle:
        parsed = hcl2.load(handle, serialization_options=provider_schema.OPTIONS)
    variables = {k: v for block in parsed["variable"] for k, v in block.items()}
    function_name = variables["function_name"]["default"]
    commands = gcloud_commands.repository_commands()
    calls = 0
    for command, words in zip(commands, gcloud_commands.expand(commands), strict=True):
        if words[:1] != ["functions"]:
            continue
        positional = [w for w in words[2:] if not w.startswith("-")]
        name = positional[1] if words[1] == "logs" else positional[0]
        assert name == function_name, f"{command.source}: gcloud {' '.join(words[:2])} names {name!r}"
        for word in words:
            if not word.startswith("--cloud-event="):
                continue
            calls += 1
            event = json.loads(word.removeprefix("--cloud-event="))
            published = event["data"]["message"].get("publishTime")
            if published is not None:
                age = datetime.now(UTC) - datetime.fromisoformat(published.replace("Z", "+00:00"))
                assert abs(age.total_seconds()) < 3600, f"{command.source}: publishTime {published} is not now"
    assert calls >= 2
