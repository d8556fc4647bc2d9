"""A cold start imports what its configured delivery mode uses, and none of the Kubernetes client it leaves aside.

Each case starts a fresh function process (`import main`, then its first event, as Cloud Run's first request)
and asserts on the modules that process holds afterwards, and on the event's outcome.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from emulators.world import TOKEN_ACCOUNT, TOKEN_CLUSTER, TOKEN_NAMESPACE
from tests.integration.external_secrets_mode import TEMPLATE
from tests.support import Admin, eventarc_attributes, pubsub_envelope, seed_ready_cluster, sentinel_event

ROOT = Path(__file__).resolve().parents[2]
CHILD = """
import json, sys
import main
attributes, envelope = json.loads(sys.stdin.read())
outcome = main.ADAPTER.handle(attributes, envelope)
print(json.dumps({"result": outcome.result, "modules": sorted(sys.modules)}))
"""
# What no mode needs: the kubernetes package's own __init__ (config, dynamic, watch, ...) and the model classes.
NEVER = ("kubernetes.config", "kubernetes.dynamic", "kubernetes.watch", "kubernetes.client.models.v1_secret")


def first_event(env: dict[str, str], cluster_id: str) -> tuple[str, set[str]]:
    message = json.dumps([eventarc_attributes(), pubsub_envelope(sentinel_event(cluster_id))])
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        check=False,
        input=message,
        env={**env, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    return answer["result"], set(answer["modules"])


def test_direct_mode_imports_only_the_kubernetes_client_it_calls(function_env: dict[str, str], admin: Admin) -> None:
    seed_ready_cluster(admin, "cls-cold-direct")
    result, modules = first_event(function_env, "cls-cold-direct")
    assert result == "applied"
    assert "kubernetes.client.rest" in modules
    # The REST layer alone: ApiClient would load pydantic and ApiResponse to deserialize what SecretsApi keeps raw.
    assert not {m for m in modules if m == "kubernetes.client.api_client" or m.split(".")[0] == "pydantic"}
    assert not modules & set(NEVER), sorted(modules & set(NEVER))
    assert "pullsecret.delivery.external_secrets.mode" not in modules
    # GetCluster goes over REST: the generated GKE package (proto-plus types, gRPC transport) stays out.
    assert not {m for m in modules if m.startswith("google.cloud.container")}, "google.cloud.container* imported"


def test_service_account_token_mode_mints_through_gke_rest_without_the_generated_client(
    function_env: dict[str, str], admin: Admin, world: Any
) -> None:
    env = {k: v for k, v in function_env.items() if k != "HYPERFLEET_API_TOKEN_FILE"}
    env["HYPERFLEET_API_AUTH"] = "service-account-token"
    env["HYPERFLEET_API_TOKEN_CLUSTER"] = TOKEN_CLUSTER
    env["HYPERFLEET_API_SERVICE_ACCOUNT"] = f"{TOKEN_NAMESPACE}/{TOKEN_ACCOUNT}"
    world.hyperfleet.set_gateway(world.gateway_config())  # the stack's reset takes it away again
    seed_ready_cluster(admin, "cls-cold-satoken")
    result, modules = first_event(env, "cls-cold-satoken")
    assert result == "applied"
    assert int(world.regional.service_accounts.minted) == 1  # the token cluster's GetCluster answered over REST
    # The token cluster's endpoint comes from the same REST GetCluster as a management cluster's (gke_endpoints).
    assert not {m for m in modules if m.startswith("google.cloud.container")}, "google.cloud.container* imported"


def test_external_secrets_mode_imports_no_kubernetes_or_gke_client(
    function_env: dict[str, str], admin: Admin, world: Any
) -> None:
    env = {**function_env, "KUBERNETES_DELIVERY": "external-secrets", "EXTERNAL_SECRETS_PRINCIPAL_TEMPLATE": TEMPLATE}
    world.apply_terraform_iam(kubernetes_delivery="external-secrets")
    try:
        seed_ready_cluster(admin, "cls-cold-eso")
        result, modules = first_event(env, "cls-cold-eso")
    finally:
        world.apply_terraform_iam()
    assert result == "applied"
    unused = {
        m
        for m in modules
        if m.startswith(("kubernetes.client.api_client", "kubernetes.client.rest", "google.cloud.container"))
        # No module of direct mode's machinery. Its package, registration, reports and settings modules (which import
        # only the seams' neutral types and pullsecret.errors) are read at cold start by design: the registry lists
        # every registration, and pullsecret.configured has every registered mode check its own variables,
        # so that direct's are refused under another mode.
        or (
            m.startswith("pullsecret.delivery.direct.")
            and m
            not in (
                "pullsecret.delivery.direct.registration",
                "pullsecret.delivery.direct.reports",
                "pullsecret.delivery.direct.settings",
            )
        )
    }
    assert not unused, sorted(unused)
    assert not modules & set(NEVER), sorted(modules & set(NEVER))


def test_the_kubernetes_package_stays_importable_in_full_after_the_light_client() -> None:
    """Code that wants more of the package (the emulators' tests, an operator) still imports it on request."""
    code = (
        "import pullsecret.delivery.direct.kubeapi\n"
        "from kubernetes import client, config\n"
        "from kubernetes.client.models import V1Secret\n"
        "assert client.models.V1Secret is V1Secret\n"
        "print(client.CoreV1Api.__name__, config.load_kube_config.__name__, V1Secret.__name__)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], check=False, cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["CoreV1Api", "load_kube_config", "V1Secret"]
