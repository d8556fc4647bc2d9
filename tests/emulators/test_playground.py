"""The playground's pieces on their own: the one-call ready cluster, the trigger without a playground, the event."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import requests

from tests.support import ROOT, Admin, clean_env


def test_one_admin_call_seeds_a_cluster_whose_preconditions_are_met(stack: Any, admin: Admin) -> None:
    stack.reset()
    seeded = admin.call("PUT", "/ready_clusters/cls-ready1", {"generation": 3})
    assert seeded["cluster"]["generation"] == 3 and seeded["schema_errors"] == []
    cluster = stack.hyperfleet.handle_admin("GET", "/clusters/cls-ready1", None)[1]
    assert cluster["spec"]["platform"] == {
        "type": "gcp",
        "gcp": {"projectID": "hf-demo-project", "region": "us-central1"},
    }
    from pullsecret import configured
    from pullsecret.model import preconditions

    statuses = stack.hyperfleet.state()["statuses"]["cls-ready1"]
    settings = configured.load(
        {"HYPERFLEET_API_URL": "http://hf.invalid", "PULL_SECRET_SOURCE": seeded["platform_pull_secret"]}
    )
    decision = preconditions.evaluate(cluster, list(statuses.values()), settings, cluster_id="cls-ready1")
    assert isinstance(decision, preconditions.Act), decision
    assert decision.placement.namespace == "clusters-cls-ready1"
    assert "clusters-cls-ready1" in stack.kubernetes.state()["namespaces"]
    assert stack.secretmanager.secret("hf-demo-project", "platform-pull-secret") is not None
    assert seeded["platform_pull_secret_created"] is True
    again = admin.call("PUT", "/ready_clusters/cls-ready2")
    assert again["platform_pull_secret_created"] is False  # an existing platform secret is left as it is


def test_ready_cluster_refuses_unknown_options_and_bad_generations(stack: Any, admin: Admin) -> None:
    for body in ({"generaton": 2}, {"generation": 0}, {"generation": "2"}, [1]):
        answer = requests.put(f"{admin.url}/ready_clusters/cls-bad", json=body, timeout=10)
        assert answer.status_code == 400, (body, answer.text)


def test_trigger_without_a_playground_says_how_to_start_one(tmp_path: Path) -> None:
    env = {k: v for k, v in clean_env().items() if k not in ("FUNCTION_URL", "EMULATORS_ADMIN")}
    done = subprocess.run(
        [sys.executable, "-m", "emulators", "trigger", "cls-demo01", "--state-dir", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 2 and "make up" in done.stdout, done.stdout + done.stderr


def test_the_event_subcommand_prints_a_sentinel_event_for_gcloud() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "emulators", "event", "cls-demo01", "--generation", "4"],
        cwd=ROOT,
        env=clean_env(),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    event = json.loads(done.stdout)
    assert event["type"] == "com.redhat.hyperfleet.cluster.reconcile" and "time" not in event
    assert event["data"] == {
        "id": "cls-demo01",
        "kind": "Cluster",
        "href": "/api/hyperfleet/v1/clusters/cls-demo01",
        "generation": 4,
    }


def test_the_cli_from_a_shell_left_from_a_stopped_playground_says_so_in_one_line(tmp_path: Path) -> None:
    stale = clean_env(
        HYPERFLEET_API_URL="http://127.0.0.1:9/",
        HYPERFLEET_API_TOKEN_FILE=str(tmp_path / "stack-tmp" / "hyperfleet-token"),
        PULL_SECRET_SOURCE="projects/hf-demo-project/secrets/platform-pull-secret/versions/latest",
    )
    # With the playground's token file the shell is one left from a stopped playground; without it, a dead local
    # URL is not called a playground's (a `kubectl port-forward` that stopped): both one line, exit 5 (configuration).
    for env, says in (
        (stale, "nothing listens at"),  # a token path alone is no playground (test_cli_one_line.py: the full env is)
        ({k: v for k, v in stale.items() if k != "HYPERFLEET_API_TOKEN_FILE"}, "nothing listens at"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "pullsecret", "reconcile", "cls-demo01"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert done.returncode == 5 and done.stdout == "", done.stdout + done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and says in lines[0], lines
        assert "make up" in lines[0] or "source .playground/env" in lines[0], lines
