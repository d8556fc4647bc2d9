"""Campaign helpers: clusters whose pull secret changes per generation, redelivery as Pub/Sub does it,
and the convergence check that feeds the report's figures.

Seeding goes through the emulators' admin handlers in process (never through the fault-injected API paths),
so faults only ever hit the function's own calls.
"""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pullsecret.errors import TransientError
from pullsecret.handler import Adapter
from tests.reliability import harness
from tests.support import eventarc_attributes, gcp_cluster, pubsub_envelope, sentinel_event

PROJECT = "hf-demo-project"


def own_secret(cluster_id: str, generation: int) -> dict[str, Any]:
    """The cluster's own pull secret at a generation: one registry named after both, one credential."""
    auth = base64.b64encode(f"robot-{cluster_id}:Gen{generation}-Secret-{cluster_id}-pw".encode()).decode()
    return {"auths": {f"gen{generation}.{cluster_id}.registry.example": {"auth": auth}}}


def registry(cluster_id: str, generation: int) -> str:
    return f"gen{generation}.{cluster_id}.registry.example"


def seed_generation(world: Any, cluster_id: str, generation: int, *, namespace: bool = True) -> None:
    """The cluster at `generation` (with that generation's own pull secret), its adapters Available."""
    body = gcp_cluster(cluster_id, generation=generation)
    body["spec"]["pullSecret"] = {"data": own_secret(cluster_id, generation)}
    world.hyperfleet.seed_cluster(cluster_id, body)
    for adapter in ("validation", "dns", "placement"):
        world.hyperfleet.seed_status(cluster_id, adapter, {"observed_generation": generation, "data": {}})
    if namespace:
        world.kubernetes.add_namespace(f"clusters-{cluster_id}")


def envelope(cluster_id: str, generation: int) -> tuple[dict[str, Any], dict[str, Any]]:
    return eventarc_attributes(), pubsub_envelope(sentinel_event(cluster_id, generation))


@dataclass
class Delivery:
    """One event delivered until acknowledged, as Pub/Sub redelivers after an error."""

    result: str | None = None
    attempts: int = 0
    errors: list[str] = field(default_factory=list)


def deliver_until_acknowledged(
    adapter: Adapter, attributes: dict[str, Any], data: Any, *, max_attempts: int = 40
) -> Delivery:
    outcome = Delivery()
    while outcome.attempts < max_attempts:
        outcome.attempts += 1
        harness.count("deliveries")
        try:
            outcome.result = adapter.handle(attributes, data).result
            return outcome
        except TransientError as exc:
            outcome.errors.append(f"{exc!s} {exc!r}")
    return outcome


def credential_forms(cluster_ids: Iterable[str], generations: Iterable[int]) -> set[str]:
    forms: set[str] = set()
    gens = list(generations)
    for cid in cluster_ids:
        for generation in gens:
            forms |= harness.credential_forms(own_secret(cid, generation))
    return forms


@dataclass
class Verdict:
    converged: list[str] = field(default_factory=list)
    lost: dict[str, str] = field(default_factory=dict)
    duplicate_versions: int = 0
    regressions: dict[str, str] = field(default_factory=dict)

    def record(self) -> None:
        harness.count("events converged", len(self.converged))
        harness.count("events lost", len(self.lost))
        harness.count("duplicate versions", self.duplicate_versions)
        harness.count("regressions", len(self.regressions))

    def assert_clean(self) -> None:
        assert self.lost == {}, f"events lost: {self.lost}"
        assert self.duplicate_versions == 0, "duplicate Secret Manager versions"
        assert self.regressions == {}, f"regressions: {self.regressions}"


def verify(world: Any, newest: dict[str, int]) -> Verdict:
    """Per cluster: the API holds Available=True at the newest generation, one Secret Manager version per
    distinct content, and the Kubernetes Secret holds the newest generation's content."""
    verdict = Verdict()
    statuses = world.hyperfleet.state()["statuses"]
    for cid, generation in newest.items():
        problems: list[str] = []
        mine = statuses.get(cid, {}).get("pullsecret")
        if mine is None:
            problems.append("no status stored")
        else:
            available = {c["type"]: c for c in mine["conditions"]}.get("Available", {})
            if mine["observed_generation"] != generation or available.get("status") != "True":
                problems.append(
                    f"status at generation {mine['observed_generation']} Available={available.get('status')}"
                    f" ({available.get('reason')})"
                )
        versions = world.secretmanager.versions(PROJECT, f"hyperfleet-{cid}-pull-secret")
        # Q2 of pullsecret/secretstore/versions.py: concurrent writers of one content leave one version, so two
        # neighbouring live versions never hold the same bytes. (A generation race may leave the newer content
        # twice, apart, until retention: the redelivery of the older writer puts it back on top.)
        payloads = [v.get("payload_b64") for v in versions if v.get("payload_b64")]
        verdict.duplicate_versions += sum(1 for a, b in itertools.pairwise(payloads) if a == b)
        secret = world.kubernetes.get_secret(f"clusters-{cid}", f"{cid}-pull-secret")
        if secret is None:
            problems.append("no Kubernetes Secret")
        else:
            content = json.loads(base64.b64decode(secret["data"][".dockerconfigjson"]))
            recorded = int(secret["metadata"].get("annotations", {}).get("hyperfleet.io/generation", "0"))
            if recorded < generation or registry(cid, generation) not in content["auths"]:
                older = [g for g in range(1, generation) if registry(cid, g) in content["auths"]]
                if older or recorded < generation:
                    verdict.regressions[cid] = f"Kubernetes Secret at generation {recorded} (content of {older})"
                problems.append(f"Kubernetes Secret not at generation {generation}")
            newest_payload = world.secretmanager.payload(PROJECT, f"hyperfleet-{cid}-pull-secret")
            if newest_payload is None or json.loads(newest_payload) != content:
                problems.append("Kubernetes Secret differs from the newest Secret Manager version")
        if problems:
            verdict.lost[cid] = "; ".join(problems)
        else:
            verdict.converged.append(cid)
    return verdict
