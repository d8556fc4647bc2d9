"""`make demo`: the function end to end on the local emulators, then the same event again.

Starts the emulator stack (with the Cloud SDK's Pub/Sub emulator when present), runs the function under
functions-framework, seeds a cluster, publishes a Sentinel event as HyperFleet's broker does, and shows
what happened: the Secret Manager secret and versions (no payload), the Kubernetes Secret's metadata,
the status reported. Exit 0 on success, 1 with the reason otherwise.
"""

from __future__ import annotations

import base64
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import requests

from emulators import logview, registry_checks
from emulators import seed as seeding
from emulators.functionproc import FunctionProcess
from emulators.playground_env import managed_variables
from emulators.pubsub import PubSubEmulator, push_envelope
from emulators.registry import DEFAULT_PASSWORD, DEFAULT_USER
from emulators.signals import interruptible, signals_ignored
from emulators.stack import Stack
from emulators.world import MANAGEMENT_CLUSTER, PROJECT_ID

CLUSTER_ID = "cls-demo01"
TOPIC = "hyperfleet-cluster-events"
SUBSCRIPTION = "pullsecret-push"
TOPIC_PATH = f"projects/{PROJECT_ID}/topics/{TOPIC}"


def trigger_endpoint(function_url: str, topic: str = TOPIC_PATH) -> str:
    """The push endpoint that stands for an Eventarc trigger on `topic`: Eventarc sets the CloudEvent's `source`
    to `//pubsub.googleapis.com/<topic>`; functions-framework gives a raw push the same source when the path names
    the topic (functions_framework.event_conversion `_parse_pubsub_topic`). The function honours rekey's attribute
    only from ADAPTER_TOPIC's source (pullsecret.publishing.asks_rekeyed_read)."""
    return f"{function_url.rstrip('/')}/{topic}"


DEMO_PASSWORD = seeding.DEMO_PASSWORD  # made up: the demo never prints it, and checks the function's logs do not


def demo_pull_secret(registries: dict[str, str]) -> dict[str, Any]:
    """The registry emulator's hosts, which the function verifies (REGISTRY_VERIFICATION=report): a token
    registry with its token service on a second host, a Basic one, an anonymous one, a credential the Basic
    registry refuses (Health turns False, the pull secret is applied all the same), and a key that is no
    image registry (skipped)."""
    good = base64.b64encode(f"{DEFAULT_USER}:{DEFAULT_PASSWORD}".encode()).decode()
    wrong = base64.b64encode(f"demo-robot:{DEMO_PASSWORD}".encode()).decode()
    return {
        "auths": {
            registries["token"]: {"auth": good},
            registries["basic"]: {"auth": good},
            registries["anonymous"]: {"auth": good},
            f"{registries['basic']}/demo": {"auth": wrong},
            "cloud.openshift.com": {"auth": wrong},
        }
    }


class DemoFailure(Exception):
    pass


def say(text: str = "") -> None:
    print(text, flush=True)


# What the emulated world fixes (emulators.world): its one management cluster (the only one the GKE emulator knows
# at start), the project that holds the secrets.
SERVICE_TTL = "2"
WORLD_SETTINGS = {
    "MANAGEMENT_CLUSTER": MANAGEMENT_CLUSTER,
    "ALLOWED_MANAGEMENT_CLUSTERS": MANAGEMENT_CLUSTER,
    "ALLOWED_SECRET_PROJECTS": PROJECT_ID,
    "GOOGLE_CLOUD_PROJECT": PROJECT_ID,
}


def function_env(stack: Stack, workdir: Path, source: str = "platform") -> dict[str, str]:
    """The function process's environment on this stack: the stack's seams plus the function's settings.

    `source`: "platform" (PULL_SECRET_SOURCE, one Secret Manager secret shared by every cluster) or "service" (the
    Pull Secret Service emulator mints the cluster's own credentials; the runtime identity's ID token, its default).
    """
    sourcing = (
        # The service's answer kept 2 s, not 6 h (PULL_SECRET_SERVICE_TTL), so that a rotation at the service reaches
        # the next event here, as PULL_SECRET_SOURCE_TTL=2 does for the platform pull secret on the playground.
        # One topic here stands for Sentinel's and the adapter's own (ADAPTER_TOPIC, where `rekey` publishes).
        {
            "PULL_SECRET_SERVICE_URL": stack.pullsecretservice.url,
            "PULL_SECRET_SERVICE_TTL": SERVICE_TTL,
            "ADAPTER_TOPIC": TOPIC_PATH,
        }
        if source == "service"
        else {"PULL_SECRET_SOURCE": seeding.SOURCE_VERSION}
    )
    return {**stack.env(), **sourcing, **WORLD_SETTINGS, "CLOUDSDK_CONFIG": str(workdir / "gcloud")}


def seed(stack: Stack, source: str = "platform") -> None:
    """A ready cluster (emulators.seed, as `make up` and the tests seed it) whose platform pull secret names the
    registry emulator's hosts (none in service mode: the service mints the cluster's own)."""
    seeding.ready_cluster(stack, CLUSTER_ID, platform_secret=False)
    if source == "platform":
        seeding.platform_pull_secret(stack, demo_pull_secret(stack.registry.hosts()))


def reports(stack: Stack) -> list[dict[str, Any]]:
    body = requests.get(stack.hyperfleet.url + "/_emulator/reports", timeout=10).json()
    return list(body["reports"] if isinstance(body, dict) else body)


def wait_for_report(stack: Stack, count: int, timeout: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [r for r in reports(stack) if r.get("cluster_id") == CLUSTER_ID]
        if len(found) >= count:
            return found[count - 1]
        time.sleep(0.1)
    raise DemoFailure(f"no status report #{count} arrived within {timeout:.0f} s")


def deliver(stack: Stack, function: FunctionProcess, event: dict[str, Any]) -> str:
    if stack.pubsub is not None:
        stack.pubsub.publish_sentinel_event(TOPIC, event)
        return "published to the Pub/Sub emulator, pushed to the function"
    response = requests.post(function.url, json=push_envelope(event), timeout=60)
    if response.status_code != 200:
        raise DemoFailure(f"the function answered {response.status_code}: {response.text[:300]}")
    return "pushed directly to the function (Pub/Sub emulator absent)"


def show(stack: Stack, function: FunctionProcess, report: dict[str, Any], count: int) -> list[dict[str, Any]]:
    summary(function, report, count)
    secret_id = f"hyperfleet-{CLUSTER_ID}-pull-secret"
    secret = stack.secretmanager.secret(PROJECT_ID, secret_id)
    if secret is None:
        raise DemoFailure(f"Secret Manager has no secret {secret_id}")
    versions = list(secret["versions"])
    say(f"  Secret Manager  {secret['name']}")
    say(f"    labels        {json.dumps(secret['labels'], sort_keys=True)}")
    for version in versions:
        say(
            f"    version {version['version']}     state={version['state']} created_by={version['created_by']}"
            f" crc32c={version['crc32c']}"
        )
    kube = stack.kubernetes.get_secret(f"clusters-{CLUSTER_ID}", f"{CLUSTER_ID}-pull-secret")
    if kube is None:
        raise DemoFailure("the Kubernetes Secret does not exist")
    meta = kube["metadata"]
    say(
        f"  Kubernetes      {meta['namespace']}/{meta['name']}  type={kube['type']}"
        f"  resourceVersion={meta['resourceVersion']}  keys={sorted(kube.get('data', {}))}"
    )
    for key, value in sorted(meta.get("annotations", {}).items()):
        say(f"    {key} = {value}")
    body = report["body"]
    say(f"  Status          {report['method']} -> {report['code']}  observed_generation={body['observed_generation']}")
    for condition in body["conditions"]:
        say(f"    {condition['type']:<10} {condition['status']:<6} {condition['reason']}: {condition['message']}")
    data = body.get("data", {})
    checks = data.get("registry_checks") or []
    if checks:
        say(f"    data.registry_checks (REGISTRY_VERIFICATION={data.get('registry_verification')}):")
        for line in registry_checks.lines(checks):
            say(f"      {line}")
    shown = {k: v for k, v in data.items() if k not in ("registry_checks", "registry_verification")}
    say(f"    data          {_abridged(shown)}")
    return versions


def _abridged(data: dict[str, Any], width: int = 300) -> str:
    """`data` as JSON, cut at `width` characters (the whole of it: make up, then the statuses call make trigger
    prints)."""
    text = json.dumps(data, sort_keys=True)
    return text if len(text) <= width else text[:width] + f" ... ({len(text)} characters)"


def summary(function: FunctionProcess, report: dict[str, Any], count: int) -> None:
    """The first thing to read about reconcile #`count`: what the function did, each condition in a word."""
    finals = [r for r in map(logview.parse, function.output().splitlines()) if r and r.get("operation") == "reconcile"]
    did = finals[count - 1]["message"] if len(finals) >= count else "(no final log line yet)"
    conditions = report["body"]["conditions"]
    words = ", ".join(f"{c['type']} {c['status']}" for c in conditions)
    say(f"  In short        {did}; {words}")
    health = next((c for c in conditions if c["type"] == "Health"), None)
    applied = next((c for c in conditions if c["type"] == "Applied"), None)
    applied_anyway = applied is not None and applied["status"] == "True"
    if health is not None and health["reason"] == "ExecutionFailed:registry" and applied_anyway:
        say(
            f"                  Health {health['status']} on purpose: the demo pull secret holds one credential the "
            "registry refuses (see data.registry_checks); the rest applied all the same."
        )


def check_available(report: dict[str, Any]) -> None:
    conditions = {c["type"]: c for c in report["body"]["conditions"]}
    if report["code"] != 201 or conditions["Available"]["status"] != "True":
        raise DemoFailure(f"the status is not Available=True: {json.dumps(report['body']['conditions'])}")


def run(workdir: Path, source: str = "platform") -> None:
    want_pubsub, why = PubSubEmulator.available()
    say("Starting the emulators" + ("" if want_pubsub else f" (no Pub/Sub emulator: {why})") + " ...")
    stack = Stack(pubsub=want_pubsub).start()
    function: FunctionProcess | None = None
    try:
        seed(stack, source)
        settings = function_env(stack, workdir, source)
        # Exactly these settings, nothing of this shell's: one that sourced a playground's env file holds that
        # playground's endpoints and operator kubeconfig, which the demo must neither use nor touch.
        function = FunctionProcess(settings, workdir / "function.log", drop=managed_variables(settings))
        ready = function.start()
        say(f"Function serving at {function.url} (functions-framework, ready in {ready:.2f} s)")
        if stack.pubsub is not None:
            stack.pubsub.create_topic(TOPIC)
            stack.pubsub.create_push_subscription(TOPIC, SUBSCRIPTION, trigger_endpoint(function.url))

        delivered = deliver(stack, function, seeding.sentinel_event(CLUSTER_ID, 1))
        say(f"\n1. A Sentinel reconcile event for cluster {CLUSTER_ID}: " + delivered)
        first = wait_for_report(stack, 1)
        versions = show(stack, function, first, 1)
        check_available(first)
        if len(versions) != 1:
            raise DemoFailure(f"expected one version after the first event, found {len(versions)}")
        if source == "service":
            say("   -> the cluster's own credentials, minted for it by the Pull Secret Service (data.minted).")

        resource_version = stack.kubernetes.get_secret(f"clusters-{CLUSTER_ID}", f"{CLUSTER_ID}-pull-secret")
        registry_calls = sum(stack.book.calls().get("registry", {}).values())
        say("\n2. The same event delivered again: " + deliver(stack, function, seeding.sentinel_event(CLUSTER_ID, 1)))
        second = wait_for_report(stack, 2)
        versions_after = show(stack, function, second, 2)
        check_available(second)
        if len(versions_after) != 1:
            raise DemoFailure(f"the repeat wrote a new version ({len(versions_after)} now)")
        kube_after = stack.kubernetes.get_secret(f"clusters-{CLUSTER_ID}", f"{CLUSTER_ID}-pull-secret")
        if (
            resource_version is None
            or kube_after is None
            or (kube_after["metadata"]["resourceVersion"] != resource_version["metadata"]["resourceVersion"])
        ):
            raise DemoFailure("the repeat rewrote the Kubernetes Secret")
        repeat_calls = sum(stack.book.calls().get("registry", {}).values()) - registry_calls
        if repeat_calls:
            raise DemoFailure(f"the repeat called the registries {repeat_calls} times (each credential was known)")
        say("   -> no new Secret Manager version, Kubernetes Secret not rewritten, no registry called.")
        if source == "service":
            service_steps(stack, function)

        log = function.output()
        if DEMO_PASSWORD in log or DEFAULT_PASSWORD in log:
            raise DemoFailure("the credential appeared in the function's logs")
        outcomes = [json.loads(line) for line in log.splitlines() if line.startswith("{") and '"reconcile"' in line]
        say("\nThe function's reconcile log lines:")
        for line in outcomes:
            if line.get("operation") == "reconcile":
                say(f"  {line['severity']:<7} {line['message']}  ({line.get('duration_ms')} ms)")
        say("\nDemo succeeded.")
    finally:
        with signals_ignored():
            if function is not None:
                function.stop()
            stack.stop()


def _stored(stack: Stack) -> dict[str, Any]:
    payload = stack.secretmanager.payload(PROJECT_ID, f"hyperfleet-{CLUSTER_ID}-pull-secret")
    if payload is None:
        raise DemoFailure("Secret Manager holds no version")
    document: dict[str, Any] = json.loads(payload)
    return document


def _registry_accepts(stack: Stack, document: dict[str, Any]) -> bool:
    """The registry emulator's quay stand-in (its `basic` host) accepts the document's credential there."""
    host = stack.registry.hosts()["basic"]
    auth = document["auths"][host]["auth"]
    answer = requests.get(
        f"https://{host}/v2/", headers={"Authorization": f"Basic {auth}"}, verify=stack.registry_ca_file, timeout=10
    )
    return answer.status_code == 200


def service_steps(stack: Stack, function: FunctionProcess) -> None:
    """Service mode's own steps: a rotation at the service, then the cluster's deletion revoking its credentials."""
    old = _stored(stack)
    stack.pullsecretservice.handle_admin("POST", f"/clusters/{CLUSTER_ID}/rotation", {"reason": "scheduled"})
    time.sleep(float(SERVICE_TTL))  # what the function knows of the service's answer runs out (PULL_SECRET_SERVICE_TTL)
    say("\n3. The Pull Secret Service rotates the cluster's credentials (both sets valid until it completes); the next")
    say("   Sentinel event: " + deliver(stack, function, seeding.sentinel_event(CLUSTER_ID, 1)))
    third = wait_for_report(stack, 3)
    versions = show(stack, function, third, 3)
    check_available(third)
    if len(versions) != 2 or _stored(stack) == old:
        raise DemoFailure(f"the rotation did not write exactly one new version ({len(versions)} versions)")
    stack.pullsecretservice.handle_admin("POST", f"/clusters/{CLUSTER_ID}/rotation/complete", None)
    if _registry_accepts(stack, old) or not _registry_accepts(stack, _stored(stack)):
        raise DemoFailure("after the rotation completed, the registry should refuse the old credential only")
    say("   -> one new version, the Kubernetes Secret rewritten once; the rotation completed: the registry now")
    say("      refuses the old credential and accepts the new one.")

    revoked = _stored(stack)
    stack.hyperfleet.store.patch_cluster(CLUSTER_ID, {"generation": 2, "deleted_time": "2026-01-01T00:00:00Z"})
    say("\n4. The cluster is deleted: " + deliver(stack, function, seeding.sentinel_event(CLUSTER_ID, 2)))
    fourth = wait_for_report(stack, 4)
    summary(function, fourth, 4)
    for condition in fourth["body"]["conditions"]:
        say(f"    {condition['type']:<10} {condition['status']:<6} {condition['reason']}: {condition['message']}")
    finalized = {c["type"]: c["status"] for c in fourth["body"]["conditions"]}.get("Finalized")
    if finalized != "True" or stack.secretmanager.secret(PROJECT_ID, f"hyperfleet-{CLUSTER_ID}-pull-secret"):
        raise DemoFailure("the deletion did not finalize")
    if _registry_accepts(stack, revoked):
        raise DemoFailure("the registry still accepts the revoked credential")
    say("   -> Kubernetes Secret and Secret Manager secret deleted, then the credentials revoked at the service:")
    say("      the registry refuses them.")


def main(source: str = "platform") -> int:
    try:
        with interruptible(), tempfile.TemporaryDirectory(prefix="pullsecret-demo-") as workdir:
            try:
                run(Path(workdir), source)
            except (DemoFailure, RuntimeError, requests.RequestException) as exc:
                say(f"\nDemo FAILED: {exc}")
                return 1
    except KeyboardInterrupt:
        say("\nDemo interrupted: the function and every emulator stopped, temporary folders removed.")
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
