"""The Pull Secret Service emulator's rate limits (DDR §3.5): a token bucket per authenticated ServiceAccount for
each limit, and the 429 problem body and headers §3.5 shows; over real HTTP, and the buckets' arithmetic on a
clock the test turns."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests

from emulators.faults import FaultBook
from emulators.pullsecretservice import PullSecretServiceEmulator
from emulators.pullsecretservice.limits import Limiter, RateLimits

CLUSTER = "cls-abc123def456"
TOKEN, OTHER = "adapter-sa-token-0123456789", "operator-sa-token-0123456789"
BODY = {"cluster_id": CLUSTER, "cloud_provider": "gcp", "region": "us-central1", "registries": ["quay"]}


@pytest.fixture(scope="module")
def running() -> Iterator[PullSecretServiceEmulator]:
    pss = PullSecretServiceEmulator(
        FaultBook(),
        registry_hosts={"quay": "quay.example"},
        bearer_tokens={TOKEN: "system:serviceaccount:hf:adapter", OTHER: "system:serviceaccount:hf:operator"},
    )
    pss.start()
    try:
        yield pss
    finally:
        pss.stop()


@pytest.fixture
def pss(running: PullSecretServiceEmulator) -> PullSecretServiceEmulator:
    running.reset()
    return running


def call(pss: PullSecretServiceEmulator, method: str, suffix: str = "", token: str = TOKEN, **kw: Any) -> Any:
    url = f"{pss.url}/v1/clusters/{CLUSTER}/pull-secrets{suffix}"
    return requests.request(method, url, headers={"Authorization": f"Bearer {token}"}, timeout=5, **kw)


def limits(pss: PullSecretServiceEmulator, **body: Any) -> Any:
    answer = requests.post(f"{pss.url}/_emulator/limits", json=body, timeout=5)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_the_ddr_values_are_the_default() -> None:
    assert PullSecretServiceEmulator(FaultBook(), registry_hosts={}).limiter.limits == RateLimits(100, 20, 10)


def test_the_per_minute_bucket_answers_429_lmt_001_with_the_ddr_body_and_headers(
    pss: PullSecretServiceEmulator,
) -> None:
    limits(pss, per_minute=3)  # 1 token per 20 s
    admitted = [call(pss, "GET") for _ in range(3)]
    assert [a.status_code for a in admitted] == [404, 404, 404]  # admitted (nothing held yet), each counted
    assert [a.headers["X-RateLimit-Remaining"] for a in admitted] == ["2", "1", "0"]
    assert admitted[0].headers["X-RateLimit-Limit"] == "3"
    refused = call(pss, "GET")
    assert refused.status_code == 429
    assert refused.headers["Content-Type"] == "application/problem+json"
    assert refused.headers["X-RateLimit-Limit"] == "3" and refused.headers["X-RateLimit-Remaining"] == "0"
    assert 19 <= int(refused.headers["Retry-After"]) <= 20
    assert int(refused.headers["X-RateLimit-Reset"]) > 0
    body = refused.json()
    assert body["code"] == "HYPERFLEET-LMT-001" and body["status"] == 429
    assert body["type"] == "https://api.hyperfleet.io/errors/rate-limit-exceeded"
    assert body["title"] == "Rate Limit Exceeded"
    assert body["detail"] == "Rate limit exceeded: 3 requests per minute"
    assert body["limit"] == 3 and body["window"] == "1m"
    assert body["retry_after_seconds"] == int(refused.headers["Retry-After"])
    assert body["instance"] == f"/v1/clusters/{CLUSTER}/pull-secrets"
    # Per ServiceAccount: another identity has its own bucket.
    assert call(pss, "GET", token=OTHER).status_code == 404


def test_the_burst_bucket_refuses_more_than_its_quota_within_a_second(pss: PullSecretServiceEmulator) -> None:
    limits(pss, per_minute=1000, burst_per_second=5)
    codes = [call(pss, "GET").status_code for _ in range(12)]
    assert codes[:5] == [404] * 5
    assert 429 in codes[5:]
    refused = next(r for r in (call(pss, "GET") for _ in range(10)) if r.status_code == 429)
    assert refused.json()["window"] == "1s" and refused.headers["Retry-After"] == "1"


def test_the_rotations_bucket_counts_only_rotations(pss: PullSecretServiceEmulator) -> None:
    limits(pss, rotations_per_hour=1)
    assert call(pss, "POST", json=BODY).status_code == 200
    first = call(pss, "POST", "/rotations", json={"reason": "manual"})
    assert first.status_code == 201
    refused = call(pss, "POST", "/rotations", json={"reason": "manual"})
    assert refused.status_code == 429
    assert refused.json()["window"] == "1h" and refused.json()["limit"] == 1
    assert 3590 <= int(refused.headers["Retry-After"]) <= 3600
    assert call(pss, "GET", "/rotations").status_code == 429  # every request under /rotations
    assert call(pss, "GET").status_code == 200  # the other endpoints are not on the hourly bucket


def test_a_refused_token_spends_nothing_and_off_turns_limiting_off(pss: PullSecretServiceEmulator) -> None:
    limits(pss, per_minute=1)
    assert call(pss, "GET", token="not-a-token").status_code == 401
    assert call(pss, "GET").status_code == 404
    assert call(pss, "GET").status_code == 429
    assert limits(pss, off=True)["limits"] is None
    assert [call(pss, "GET").status_code for _ in range(30)] == [404] * 30


def test_each_bucket_refills_at_its_quota_per_window() -> None:
    now = [0.0]
    limiter = Limiter(RateLimits(per_minute=2, burst_per_second=10, rotations_per_hour=1), clock=lambda: now[0])
    assert limiter.admit("a", rotations=True) is not None
    verdicts = [limiter.admit("a", rotations=False) for _ in range(2)]
    assert [v.admitted for v in verdicts if v] == [True, False]
    refused = verdicts[1]
    assert refused is not None and refused.rule.name == "per_minute" and refused.retry_after_s == 30
    now[0] = 30.0  # one token back (2 per minute)
    again = limiter.admit("a", rotations=False)
    assert again is not None and again.admitted
    now[0] = 120.0
    hourly = limiter.admit("a", rotations=True)
    assert hourly is not None and not hourly.admitted and hourly.rule.name == "rotations"
    assert hourly.retry_after_s == 3600 - 120
    assert limiter.refused == {"per_minute": 1, "rotations": 1}
