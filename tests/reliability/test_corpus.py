"""The bad-input corpus (`tests/corpus/**/*.json`), one test per case, through the production handler.

Each case seeds the emulator world through the admin API, delivers one event with `Adapter.handle` and
asserts: the classified outcome (returns normally, or raises TransientError); nothing written to Secret
Manager or Kubernetes unless the case expects `applied`; the reported status names the problem; no
credential in any log line, exception text or status body.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from pullsecret.declared import WORDS
from pullsecret.errors import TransientError
from tests.reliability import harness
from tests.support import (
    PLATFORM_SOURCE_SECRET,
    Admin,
    eventarc_attributes,
    gcp_cluster,
    pubsub_envelope,
    sentinel_event,
)

CASES = harness.load_corpus()
DEFAULT_ID = "cls-corpus"
_WRITES = {
    "secretmanager": {
        "CreateSecret",
        "AddSecretVersion",
        "UpdateSecret",
        "DestroySecretVersion",
        "DeleteSecret",
        "DisableSecretVersion",
    },
    "kubernetes": {"create.secrets", "update.secrets", "patch.secrets", "delete.secrets"},
}
CATEGORIES = ("envelope", "cluster", "pull_secret", "placement")


def test_the_corpus_is_large_and_well_formed() -> None:
    names = [case["name"] for case in CASES]
    assert len(CASES) >= 150, len(CASES)
    assert len(set(names)) == len(names), "case names must be unique"
    for case in CASES:
        assert case["category"] in CATEGORIES, case["name"]
        assert case["expect"]["outcome"] in {
            "ignored",
            "terminal",
            "transient",
            "skipped",
            "applied",
            "gone",
            "expired",
            "finalized",
            "unchanged",
        }, case["name"]
    per_category = {c: sum(1 for case in CASES if case["category"] == c) for c in CATEGORIES}
    assert min(per_category.values()) >= 15, per_category


def _event(case: dict[str, Any], cluster_id: str, generation: int) -> tuple[dict[str, Any], Any]:
    """The (attributes, data) handed to `Adapter.handle`."""
    raw = case.get("event")
    if raw is not None:
        raw = harness.expand(raw)
        attributes = raw.get("attributes", "eventarc")
        if attributes == "eventarc":
            attributes = eventarc_attributes()
        data = raw.get("data")
        if "data_text" in raw:
            data = raw["data_text"].encode("utf-8")
        if "data_bytes_b64" in raw:
            data = base64.b64decode(raw["data_bytes_b64"])
        return attributes, data
    event = sentinel_event(cluster_id, generation)
    if "event_data" in case:
        event["data"] = harness.expand(case["event_data"])
    return eventarc_attributes(), pubsub_envelope(event)


def _seed(case: dict[str, Any], admin: Admin, world: Any, cluster_id: str) -> int:
    """Seed the world for the case; returns the generation the event names.

    Seeding and inspection call the emulators' admin handlers in process (the same code the admin HTTP API
    runs): some 250 cases times a dozen admin round trips would otherwise dominate the suite's time.
    """
    if "platform_secret" in case:
        value = harness.expand(case["platform_secret"])
        raw = value if isinstance(value, str) else json.dumps(value)
        admin.call(
            "PUT",
            f"/secretmanager/projects/hf-demo-project/secrets/{PLATFORM_SOURCE_SECRET}",
            {"labels": {"owner": "platform"}, "versions": [base64.b64encode(raw.encode()).decode()]},
        )
    if case.get("seed") == "none":
        return 1
    if "cluster_raw" in case:
        world.hyperfleet.seed_cluster(cluster_id, {"_raw": harness.expand(case["cluster_raw"])})
        return 1
    body = harness.expand(case["cluster"]) if "cluster" in case else gcp_cluster(cluster_id)
    if "pull_secret" in case:
        spec = body.setdefault("spec", {})
        spec["pullSecret"] = {"data": harness.expand(case["pull_secret"])}
    if "pull_secret_field" in case:
        body.setdefault("spec", {})["pullSecret"] = harness.expand(case["pull_secret_field"])
    world.hyperfleet.seed_cluster(cluster_id, body)
    generation = body.get("generation", 1)
    observed = generation if isinstance(generation, int) and not isinstance(generation, bool) and generation >= 1 else 1
    statuses = case.get("statuses")
    if statuses is None:
        statuses = {
            "validation": {"observed_generation": observed},
            "dns": {"observed_generation": observed},
            "placement": {"observed_generation": observed, "data": harness.expand(case.get("placement", {}))},
        }
    for adapter_name, status in statuses.items():
        world.hyperfleet.seed_status(cluster_id, adapter_name, harness.expand(status))
    namespace = case.get("namespace", f"clusters-{cluster_id.lower()}")
    if namespace:
        world.kubernetes.add_namespace(namespace)
    return observed


def _admin(emulator: Any, method: str, path: str, body: Any = None) -> Any:
    code, answer = emulator.handle_admin(method, path, body)
    assert code < 300, (method, path, code, answer)
    return answer


def _world_state(world: Any) -> tuple[Any, Any]:
    return _admin(world.secretmanager, "GET", "/secrets"), _admin(world.kubernetes, "GET", "/state").get("secrets")


def _param(case: dict[str, Any]) -> Any:
    marks = [pytest.mark.xfail(strict=True, reason=case["xfail"])] if case.get("xfail") else []
    return pytest.param(case, id=f"{case['category']}:{case['name']}", marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_corpus_case(
    case: dict[str, Any],
    adapter_factory: Any,
    admin: Admin,
    world: Any,
    capfd: pytest.CaptureFixture[str],
) -> None:
    harness.count("cases tried")
    expect = case["expect"]
    cluster_id = case.get("cluster_id", DEFAULT_ID)
    env = {"RETRY_DEADLINE": "1.5", "HYPERFLEET_TIMEOUT": "2"}
    env.update(case.get("env", {}))
    adapter = adapter_factory(**env)
    generation = _seed(case, admin, world, cluster_id)
    attributes, data = _event(case, cluster_id, generation)
    before = _world_state(world)
    world.book.reset_counters()
    _admin(world.hyperfleet, "DELETE", "/reports")

    texts: list[str] = []
    outcome = "transient"
    try:
        result = adapter.handle(attributes, data)
        outcome = result.result
        texts.append(repr(result))
    except TransientError as exc:
        texts += [str(exc), repr(exc)]
    harness.count("deliveries")
    calls = world.book.calls()
    if case.get("api_out_of_spec"):
        # The case seeds an answer the real API's schema forbids; only those response violations are expected.
        violations = world.hyperfleet.violations.list()
        assert violations and all(v["kind"] == "response" for v in violations), violations
        world.hyperfleet.violations.clear()
    all_reports = _admin(world.hyperfleet, "GET", "/reports")
    reports = [r for r in all_reports if r.get("cluster_id") == cluster_id]
    out, err = capfd.readouterr()
    texts += [out, err, *(json.dumps(r) for r in all_reports)]
    forms = set()
    for key in ("pull_secret", "platform_secret", "pull_secret_field"):
        if key in case:
            value = harness.expand(case[key])
            forms |= harness.credential_forms(
                value.get("data") if key == "pull_secret_field" and isinstance(value, dict) else value
            )
    leaks = harness.scan(f"corpus case {case['name']}", texts, forms)
    assert leaks == [], leaks

    assert outcome == expect["outcome"], (
        f"{case['name']}: outcome {outcome!r}, expected {expect['outcome']!r}\n{out[-3000:]}"
    )

    if expect["outcome"] not in ("applied", "transient") and not expect.get("writes_allowed"):
        after = _world_state(world)
        assert after == before, f"{case['name']}: Secret Manager or Kubernetes state changed"
        for service, methods in _WRITES.items():
            written = set(calls.get(service, {})) & methods
            assert not written, f"{case['name']}: wrote {service} {sorted(written)}"
    if expect["outcome"] == "ignored":
        touched = {s for s in calls if s in ("hyperfleet", "secretmanager", "kubernetes", "gke")}
        assert touched == set(), f"{case['name']}: an ignored event called {sorted(touched)}"

    reporting = ("terminal", "skipped", "applied", "unchanged", "finalized")
    wants_report = expect.get("report", expect["outcome"] in reporting)
    if wants_report:
        assert reports, f"{case['name']}: no status was reported"
        body = reports[-1]["body"]
        conds = {c["type"]: c for c in body["conditions"]}
        available = conds["Available"]
        if "available" in expect:
            assert available["status"] == expect["available"], available
        elif expect["outcome"] in ("applied", "unchanged"):
            assert available["status"] == "True", available
        else:
            assert available["status"] == "False", available
        if "reason" in expect:
            assert available["reason"] == expect["reason"], f"{case['name']}: {available}"
        if "message_contains" in expect:
            # The owner's Available message shows the detail only where the owner can act (docs/contract.md);
            # Applied always carries it.
            shown = available if WORDS.shows_detail(available["reason"]) else conds["Applied"]
            assert expect["message_contains"] in shown["message"], f"{case['name']}: {shown['message']!r}"
    else:
        assert reports == [], f"{case['name']}: unexpected status report {reports}"
        if "message_contains" in expect:
            assert expect["message_contains"] in out, f"{case['name']}: logs do not name the problem\n{out[-2000:]}"
