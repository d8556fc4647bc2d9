"""Test helpers: the admin API client, event builders and world seeding shared by the suites."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import requests

from emulators import seed
from emulators.pubsub import push_envelope

PLATFORM_SOURCE_SECRET = "platform-pull-secret"
PLATFORM_USER = "platform-robot"
PLATFORM_PASSWORD = "Pl4tform-S3cret-Passw0rd"  # a fake credential whose leaks the tests look for
PLATFORM_AUTH = base64.b64encode(f"{PLATFORM_USER}:{PLATFORM_PASSWORD}".encode()).decode()
PLATFORM_PULL_SECRET = {
    "auths": {
        "registry.redhat.io": {"auth": PLATFORM_AUTH, "email": "ops@example.com"},
        "quay.io": {"auth": PLATFORM_AUTH},
    }
}
CLUSTER_PASSWORD = "Clu5ter-0wn-Passw0rd"
CLUSTER_AUTH = base64.b64encode(f"cluster-robot:{CLUSTER_PASSWORD}".encode()).decode()
SENSITIVE = (
    PLATFORM_PASSWORD,
    PLATFORM_AUTH,
    f"{PLATFORM_USER}:{PLATFORM_PASSWORD}",
    CLUSTER_PASSWORD,
    CLUSTER_AUTH,
    PLATFORM_AUTH.rstrip("="),
)


class Admin:
    """The emulator stack's admin API, over HTTP, as another process would use it."""

    def __init__(self, url: str, hyperfleet_url: str) -> None:
        self.url = url.rstrip("/")
        self.hf = hyperfleet_url.rstrip("/") + "/_emulator"
        self.session = requests.Session()

    def _ok(self, response: requests.Response) -> Any:
        assert response.status_code < 300, (
            f"{response.request.method} {response.url}: {response.status_code} {response.text}"
        )
        return response.json() if response.content else None

    def get(self, path: str) -> Any:
        return self._ok(self.session.get(self.url + path, timeout=10))

    def call(self, method: str, path: str, body: Any = None) -> Any:
        return self._ok(self.session.request(method, self.url + path, json=body, timeout=10))

    # HyperFleet, through its own /_emulator routes
    def seed_cluster(self, cluster_id: str, body: dict[str, Any]) -> Any:
        return self._ok(self.session.put(f"{self.hf}/clusters/{cluster_id}", json=body, timeout=10))

    def patch_cluster(self, cluster_id: str, body: dict[str, Any]) -> Any:
        return self._ok(self.session.patch(f"{self.hf}/clusters/{cluster_id}", json=body, timeout=10))

    def delete_cluster(self, cluster_id: str) -> Any:
        return self._ok(self.session.delete(f"{self.hf}/clusters/{cluster_id}", timeout=10))

    def seed_status(self, cluster_id: str, adapter: str, body: dict[str, Any]) -> Any:
        return self._ok(self.session.put(f"{self.hf}/clusters/{cluster_id}/statuses/{adapter}", json=body, timeout=10))

    def reports(self) -> list[dict[str, Any]]:
        body = self._ok(self.session.get(f"{self.hf}/reports", timeout=10))
        return list(body["reports"] if isinstance(body, dict) else body)

    def violations(self) -> list[dict[str, Any]]:
        body = self._ok(self.session.get(f"{self.hf}/violations", timeout=10))
        return list(body["violations"] if isinstance(body, dict) else body)

    def calls(self) -> dict[str, dict[str, int]]:
        return dict(self.get("/calls")["calls"])

    def fault(self, **spec: Any) -> Any:
        return self.call("POST", "/faults", spec)


def sentinel_event(cluster_id: str, generation: int = 1, *, event_id: str | None = None) -> dict[str, Any]:
    return seed.sentinel_event(cluster_id, generation, event_id=event_id)


def pubsub_envelope(
    event: dict[str, Any], *, message_id: str | None = None, publish_time: str = "2099-01-01T00:00:00Z"
) -> dict[str, Any]:
    """A push envelope as Pub/Sub sends it; the far-future default publish time keeps MAX_EVENT_AGE out of tests."""
    return push_envelope(event, message_id=message_id, publish_time=publish_time)


def eventarc_attributes(
    message_id: str = "m-1", topic: str = "projects/hf-demo-project/topics/hyperfleet-cluster-events"
) -> dict[str, Any]:
    """The CloudEvent attributes Eventarc sets for a message published on `topic` (Sentinel's by default)."""
    return {
        "specversion": "1.0",
        "id": message_id,
        "type": "google.cloud.pubsub.topic.v1.messagePublished",
        "source": f"//pubsub.googleapis.com/{topic}",
    }


def gcp_cluster(
    cluster_id: str, *, generation: int = 1, project: str = "hf-demo-project", **extra: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": cluster_id,
        "generation": generation,
        "spec": {"platform": {"type": "gcp", "gcp": {"projectID": project, "region": "us-central1"}}},
    }
    body.update(extra)
    return body


def seed_ready_cluster(
    admin: Admin,
    cluster_id: str,
    *,
    generation: int = 1,
    namespace: bool = True,
    placement_data: dict[str, Any] | None = None,
    project: str = "hf-demo-project",
    **extra: Any,
) -> None:
    """A gcp cluster whose validation, dns and placement adapters are Available at its generation.

    One admin call (`PUT /ready_clusters/{id}`, emulators.seed). Placement `data` defaults to `{}`, so the
    function's own MANAGEMENT_CLUSTER and namespace template apply; the platform pull secret is the `world`
    fixture's business.
    """
    admin.call(
        "PUT",
        f"/ready_clusters/{cluster_id}",
        {
            "generation": generation,
            "project": project,
            "namespace": namespace,
            "placement_data": placement_data or {},
            "cluster": extra,
            "platform_secret": False,
        },
    )


ROOT = Path(__file__).resolve().parent.parent


def bare_copy(dest: Path, *, venv: bool = False) -> Path:
    """The repository's tracked files (`git ls-files`), copied to `dest`; `venv` links this checkout's .venv in."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in (n for n in listed.decode().split("\0") if n):
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    if venv:
        (dest / ".venv").symlink_to(ROOT / ".venv", target_is_directory=True)
    return dest


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without what would leak into a nested command (Python paths, ADC, make)."""
    dropped = ("PYTHON", "GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_", "MAKE", "MFLAGS")
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    env.update(extra)
    return env


def shell_blocks(markdown: str, heading: str) -> list[str]:
    """The ```sh blocks of the section under `heading` (up to the next heading of the same or a higher level)."""
    level = len(heading) - len(heading.lstrip("#"))
    lines = markdown.splitlines()
    start = lines.index(heading)
    end, fenced = len(lines), False
    for index in range(start + 1, len(lines)):
        if lines[index].startswith("```"):
            fenced = not fenced  # a "# comment" inside a code block is no heading
        elif not fenced and re.match(rf"^#{{1,{level}}} ", lines[index]):
            end = index
            break
    section = "\n".join(lines[start:end])
    return [block.strip() for block in re.findall(r"^```sh\n(.*?)^```$", section, flags=re.S | re.M)]


QUIET_PLATFORM_HOST = "cloud.openshift.com"  # in REGISTRY_SKIP_HOSTS by default: never contacted, `skipped`


def quiet_platform_source(world: Any, host: str = QUIET_PLATFORM_HOST) -> None:
    """The platform pull secret reduced to one entry registry verification skips, so that a suite about a cluster's
    own registries sees only theirs contacted (a source is always configured: PULL_SECRET_SOURCE or the service)."""

    auth = base64.b64encode(b"platform-robot:Qu1et-Platform-Passw0rd").decode()
    payload = base64.b64encode(json.dumps({"auths": {host: {"auth": auth}}}).encode()).decode()
    Admin(world.admin.url, world.hyperfleet.url).call(
        "PUT",
        f"/secretmanager/projects/hf-demo-project/secrets/{PLATFORM_SOURCE_SECRET}",
        {"labels": {"owner": "platform"}, "versions": [payload]},
    )
