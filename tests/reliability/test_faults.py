"""Fault campaigns: every dependency failing transiently (and slowly) while events are duplicated, reordered
and redelivered; then convergence is checked cluster by cluster. One campaign runs through the Cloud SDK's
Pub/Sub emulator pushing to a real functions-framework process."""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import requests

from emulators.pubsub import PubSubEmulator
from pullsecret.errors import TransientError
from tests.reliability import campaign, harness

ROOT = Path(__file__).resolve().parents[2]
GRPC_SERVICES = ("secretmanager", "gke")
HTTP_SERVICES = ("hyperfleet", "kubernetes", "metadata")

# (name, gRPC code, HTTP code): one campaign per transient failure kind.
KINDS = [
    ("unavailable-503", "UNAVAILABLE", "503"),
    ("exhausted-429", "RESOURCE_EXHAUSTED", "429"),
    ("reset", "reset", "reset"),
]
if harness.FULL:
    KINDS += [
        ("deadline-500", "DEADLINE_EXCEEDED", "500"),
        ("internal-504", "INTERNAL", "504"),
        ("timeout", "timeout", "timeout"),
    ]


def _faults(admin: Any, grpc_code: str, http_code: str, rate: float, seed: int) -> None:
    for i, service in enumerate(GRPC_SERVICES + HTTP_SERVICES):
        code = grpc_code if service in GRPC_SERVICES else http_code
        # The metadata server stays reliable enough for google-auth's own retries; the others fail at `rate`.
        service_rate = min(rate, 0.3) if service == "metadata" else rate
        admin.fault(service=service, method="*", code=code, rate=service_rate, seed=seed + i)
        admin.fault(service=service, method="*", latency_ms=5 + 5 * i)  # slow responses as well


def _injected(world: Any) -> int:
    return sum(sum(methods.values()) for methods in world.book.faults_injected().values())


def _run_campaign(
    adapter: Any, world: Any, clusters: list[str], rng: random.Random
) -> tuple[list[campaign.Delivery], list[str]]:
    """Phase 1: every cluster at generation 1, its event delivered twice. Phase 2: generation 2 with new
    content; events for 2, a stale 1 and a duplicate 2, shuffled across clusters and delivered concurrently."""
    deliveries: list[campaign.Delivery] = []
    texts: list[str] = []

    def run(events: list[tuple[str, int]]) -> None:
        with ThreadPoolExecutor(max_workers=min(16, len(events))) as pool:
            done = list(
                pool.map(lambda e: campaign.deliver_until_acknowledged(adapter, *campaign.envelope(*e)), events)
            )
        deliveries.extend(done)
        for delivery in done:
            texts.extend(delivery.errors)

    for cid in clusters:
        campaign.seed_generation(world, cid, 1)
    first = [(cid, 1) for cid in clusters] * 2
    rng.shuffle(first)
    run(first)
    for cid in clusters:
        campaign.seed_generation(world, cid, 2)
    second = [(cid, g) for cid in clusters for g in (2, 1, 2)]
    rng.shuffle(second)
    run(second)
    return deliveries, texts


@pytest.mark.parametrize(("kind", "grpc_code", "http_code"), KINDS, ids=[k[0] for k in KINDS])
def test_faults_on_every_dependency_converge(
    adapter_factory: Any,
    world: Any,
    admin: Any,
    capfd: pytest.CaptureFixture[str],
    kind: str,
    grpc_code: str,
    http_code: str,
) -> None:
    clusters = [f"cls-fault-{kind}-{i}" for i in range(12 if harness.FULL else 3)]
    rate = 0.5 if harness.FULL else 0.3
    if kind == "timeout":  # each injected hang lasts up to 30 s: a few of them suffice
        clusters, rate = clusters[:4], 0.03
    # A short retry deadline, so that faults also end invocations and the events go back for redelivery.
    adapter = adapter_factory(RETRY_DEADLINE="2", HYPERFLEET_TIMEOUT="1")
    _faults(admin, grpc_code, http_code, rate, seed=sum(map(ord, kind)))
    deliveries, texts = _run_campaign(adapter, world, clusters, random.Random(kind))
    injected = _injected(world)
    admin.call("DELETE", "/faults")
    harness.count("faults injected", injected)
    harness.count("cases tried")
    unacknowledged = [d for d in deliveries if d.result is None]
    verdict = campaign.verify(world, dict.fromkeys(clusters, 2))
    verdict.record()
    out, err = capfd.readouterr()
    reports = world.hyperfleet.handle_admin("GET", "/reports", None)[1]
    leaks = harness.scan(
        f"fault campaign {kind}",
        [out, err, *texts, *(json.dumps(r) for r in reports)],
        campaign.credential_forms(clusters, [1, 2]),
    )
    assert leaks == [], leaks
    assert injected > 0, "the campaign injected no fault"
    assert unacknowledged == [], f"{len(unacknowledged)} events never acknowledged"
    verdict.assert_clean()
    # Per faulted service, the function's calls really were hit.
    hit = {service for service, methods in world.book.faults_injected().items() if sum(methods.values())}
    assert hit >= {"secretmanager", "hyperfleet", "kubernetes"}, hit


# --- through the real Pub/Sub emulator and a functions-framework process ------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def pubsub(world: Any) -> Iterator[PubSubEmulator]:
    available, reason = PubSubEmulator.available()
    if not available:
        pytest.skip(reason)
    emulator = PubSubEmulator(world.book, project=campaign.PROJECT)
    emulator.start()
    yield emulator
    emulator.stop()


@pytest.fixture
def function_process(function_env: dict[str, str], tmp_path: Path) -> Iterator[tuple[str, Path]]:
    port = _free_port()
    env = {**os.environ, **function_env, "RETRY_DEADLINE": "2", "HYPERFLEET_TIMEOUT": "1", "PYTHONUNBUFFERED": "1"}
    log = tmp_path / "function.log"
    binary = Path(sys.executable).parent / "functions-framework"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [str(binary), "--target", "handle_cluster_event", "--source", "main.py",
             "--signature-type", "cloudevent", "--port", str(port), "--host", "127.0.0.1"],
            cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    requests.get(f"http://127.0.0.1:{port}/", timeout=1)
                    break
                except requests.ConnectionError:
                    time.sleep(0.1)
            yield f"http://127.0.0.1:{port}/", log
        finally:
            process.terminate()
            process.wait(timeout=10)


@pytest.mark.pubsub
def test_pubsub_redelivery_campaign_converges(
    world: Any, admin: Any, pubsub: PubSubEmulator, function_process: tuple[str, Path]
) -> None:
    url, log = function_process
    clusters = [f"cls-pubsub-{i}" for i in range(10 if harness.FULL else 4)]
    for cid in clusters:
        campaign.seed_generation(world, cid, 1)
    pubsub.create_topic("hyperfleet-cluster-events")
    pubsub.create_push_subscription("hyperfleet-cluster-events", "pullsecret-push", url, ack_deadline=10)
    rate = 0.5 if harness.FULL else 0.3
    _faults(admin, "UNAVAILABLE", "503", rate, seed=11)
    from tests.support import sentinel_event

    published = 0
    for cid in clusters:
        for _ in range(2):  # a duplicate publish of the same generation
            pubsub.publish_sentinel_event("hyperfleet-cluster-events", sentinel_event(cid, 1))
            published += 1
    deadline = time.monotonic() + (120 if harness.FULL else 60)
    verdict = campaign.verify(world, dict.fromkeys(clusters, 1))
    while verdict.lost and time.monotonic() < deadline:
        time.sleep(0.5)
        verdict = campaign.verify(world, dict.fromkeys(clusters, 1))
    injected = _injected(world)
    admin.call("DELETE", "/faults")
    pushes = world.book.calls().get("pubsub", {})
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    deliveries = sum(1 for line in lines if '"operation": "reconcile"' in line and '"result"' in line)
    harness.count("deliveries", deliveries)
    harness.count("faults injected", injected)
    harness.count("cases tried")
    verdict.record()
    reports = world.hyperfleet.handle_admin("GET", "/reports", None)[1]
    leaks = harness.scan(
        "pubsub campaign",
        [*lines, *(json.dumps(r) for r in reports)],
        campaign.credential_forms(clusters, [1]),
    )
    assert leaks == []
    assert injected > 0 and published == 2 * len(clusters)
    verdict.assert_clean()
    assert deliveries >= published, (deliveries, pushes)


def test_failure_after_a_version_is_added_does_not_duplicate_it(adapter_factory: Any, world: Any, admin: Any) -> None:
    adapter = adapter_factory(RETRY_DEADLINE="1")
    cid = "cls-dupwindow"
    campaign.seed_generation(world, cid, 1)
    # Everything after AddSecretVersion fails (the Kubernetes apply), so the event goes back for redelivery
    # with the version already written: the redelivery must find that content, not add it again.
    admin.fault(service="kubernetes", method="create.secrets", code="503", rate=1.0)
    with pytest.raises(TransientError):
        adapter.handle(*campaign.envelope(cid, 1))
    admin.call("DELETE", "/faults")
    assert adapter.handle(*campaign.envelope(cid, 1)).result in ("applied", "unchanged")
    versions = world.secretmanager.versions(campaign.PROJECT, f"hyperfleet-{cid}-pull-secret")
    assert len(versions) == 1, f"{len(versions)} versions of one content"
