"""The emulator stack in its own process, the function's environment, and world seeding.

The stack runs as `python -m emulators up` so that its CPU time and GIL stay out of every figure
measured in the benchmark process and in the function processes it starts.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tests.support import PLATFORM_PULL_SECRET, PLATFORM_SOURCE_SECRET, Admin, seed_ready_cluster

ROOT = Path(__file__).resolve().parent.parent
PROJECT = "hf-demo-project"
MANAGEMENT_CLUSTER = f"projects/{PROJECT}/locations/us-central1/clusters/mgmt-1"
ROTATED_SOURCE_SECRET = "platform-pull-secret-rotated"
SEED_KUBE_TOKEN_VALUE = "bench-seed-design-token"  # a static Kubernetes token the emulator maps to the seed identity


def source_version(secret: str = PLATFORM_SOURCE_SECRET) -> str:
    return f"projects/{PROJECT}/secrets/{secret}/versions/latest"


class Emulators:
    """`python -m emulators up --no-pubsub` as a child process; `admin` talks to its admin API."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "emulators", "up", "--no-pubsub", "--no-validate"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the emulator stack did not start")
        self.endpoints: dict[str, Any] = json.loads(line)
        self.admin = Admin(self.endpoints["admin"], self.endpoints["hyperfleet"])
        self.gcloud_dir = tempfile.mkdtemp(prefix="bench-gcloud-")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()

    def function_env(self, source: str = PLATFORM_SOURCE_SECRET) -> dict[str, str]:
        """The function's environment (as tests/conftest.py function_env) pointing at this stack."""
        return {
            **self.endpoints["env"],
            "PULL_SECRET_SOURCE": source_version(source),
            "MANAGEMENT_CLUSTER": MANAGEMENT_CLUSTER,
            "RETRY_DEADLINE": "8",
            "LOG_LEVEL": "INFO",
            "CLOUDSDK_CONFIG": self.gcloud_dir,
            "GOOGLE_CLOUD_PROJECT": PROJECT,
            # The seeded pull secrets name real registries; bench/registry.py measures verification.
            "REGISTRY_VERIFICATION": "off",
        }

    # -- world ---------------------------------------------------------------------------------
    def reset(self) -> None:
        """A clean stack: no state, faults, counters or quota; the platform sources seeded."""
        self.admin.call("POST", "/reset")
        self.seed_source(PLATFORM_SOURCE_SECRET, PLATFORM_PULL_SECRET)
        rotated = {"auths": {**PLATFORM_PULL_SECRET["auths"], "registry.example.com": {"auth": "dTpw"}}}
        self.seed_source(ROTATED_SOURCE_SECRET, rotated)

    def seed_source(self, secret: str, content: dict[str, Any]) -> None:
        payload = base64.b64encode(json.dumps(content).encode()).decode()
        self.admin.call(
            "PUT",
            f"/secretmanager/projects/{PROJECT}/secrets/{secret}",
            {"labels": {"owner": "platform"}, "versions": [payload]},
        )
        # The emulators enforce terraform/'s grants, which give the runtime identity secretAccessor on the one
        # configured source secret; the bench switches sources, so each one it seeds gets that grant.
        self.admin.call(
            "POST",
            "/secretmanager/iam",
            {
                "identity": self.endpoints["runtime_service_account"],
                "resource": f"projects/{PROJECT}/secrets/{secret}",
                "role": "roles/secretmanager.secretAccessor",
            },
        )

    def seed_clusters(self, cluster_ids: list[str], workers: int = 16) -> None:
        """Ready clusters (preconditions met, namespace present), seeded concurrently."""

        def seed(cluster_id: str) -> None:
            seed_ready_cluster(Admin(self.admin.url, self.endpoints["hyperfleet"]), cluster_id)

        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(seed, cluster_ids))

    def seed_with_pull_secret(self, cluster_ids: list[str], auths: dict[str, Any]) -> None:
        """Ready clusters whose own pull secret is `auths` (e.g. the worst-shaped one of bench/hostile.py)."""
        spec = {
            "platform": {"type": "gcp", "gcp": {"projectID": PROJECT, "region": "us-central1"}},
            "pullSecret": {"data": {"auths": auths}},
        }
        for cluster_id in cluster_ids:
            seed_ready_cluster(Admin(self.admin.url, self.endpoints["hyperfleet"]), cluster_id, spec=spec)

    def change_clusters(self, cluster_ids: list[str], generation: int = 2, workers: int = 16) -> None:
        """The clusters at a new generation whose own pull secret adds a registry: each needs one new version."""
        spec = {
            "platform": {"type": "gcp", "gcp": {"projectID": PROJECT, "region": "us-central1"}},
            "pullSecret": {"data": {"auths": {"changed.registry.example": {"auth": "dXNlcjpjaGFuZ2Vk"}}}},
        }

        def change(cluster_id: str) -> None:
            admin = Admin(self.admin.url, self.endpoints["hyperfleet"])
            seed_ready_cluster(admin, cluster_id, generation=generation, spec=spec)

        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(change, cluster_ids))

    def latency(self, ms: float) -> None:
        """Every call of every service takes `ms` longer (token fetches are hourly); 0 clears."""
        self.admin.call("DELETE", "/faults")
        if ms:
            self.admin.call("POST", "/faults", {"service": "*", "method": "*", "latency_ms": ms})

    def calls(self) -> dict[str, dict[str, int]]:
        return self.admin.calls()

    def zero_calls(self) -> None:
        self.admin.call("DELETE", "/calls")

    def grant_seed_design_rights(self) -> str:
        """A Kubernetes identity for the replayed seed design, which read and wrote Secrets without the
        adapter's labels: the adapter's own identity has no read and is held to the admission policy.

        Returns the bearer token (`SEED_KUBE_TOKEN`, read by bench/seedflow.py). `reset` drops it.
        """
        identity = "seed-design@bench.local"
        self.admin.call("PUT", "/kubernetes/tokens", {"token": SEED_KUBE_TOKEN_VALUE, "identity": identity})
        self.admin.call(
            "PUT",
            "/kubernetes/rbac",
            {
                "identity": identity,
                "namespace": "*",
                "verbs": ["get", "list", "create", "update", "patch", "delete"],
                "resources": ["secrets"],
            },
        )
        return SEED_KUBE_TOKEN_VALUE

    def quota(self, writes: int | None, window_s: float) -> None:
        self.admin.call("PUT", "/secretmanager/quota", {"writes_per_minute": writes, "window_s": window_s})

    def quota_state(self) -> dict[str, Any]:
        return dict(self.admin.get("/secretmanager/quota"))


def apply_environment(env: dict[str, str]) -> None:
    """Point this process at the stack; must run before google-auth reads the metadata host.

    google.auth.compute_engine._metadata reads GCE_METADATA_HOST / GCE_METADATA_IP when imported; the rest of
    google-auth may already be loaded (tests.support's emulator imports load it).
    """
    assert "google.auth.compute_engine._metadata" not in sys.modules, (
        "google-auth read the metadata host before the stack was known"
    )
    os.environ.pop("GOOGLE_APPLICATION_CREDENTIALS", None)
    os.environ.update(env)
