"""`rekey`'s plan: the limits a run spends (Secret Manager's write quota, each identity's DDR §3.5 budget, the
hourly /rotations limit), the one that binds, and the time it makes (pullsecret/operator/rekey.py `Plan`,
pullsecret/source/service/rekey.py `budgets`)."""

from __future__ import annotations

from typing import Any

import pytest

from pullsecret.operator import rekey
from pullsecret.source.base import Budget, RateLimits
from pullsecret.source.service.rekey import ServiceRekeying

QUOTA = Budget("Secret Manager writes", "the project", 1, 9.5)  # 95 % of 600 writes a minute
CLUSTERS = 2000


def service(ttl_s: float = 21_600.0) -> ServiceRekeying:
    client: Any = None  # budgets() makes no call
    return ServiceRekeying(client, ttl_s=ttl_s)


def plan(*, compromise: bool, own_identity: bool, ttl_s: float = 21_600.0) -> rekey.Plan:
    budgets = service(ttl_s).budgets(
        compromise=compromise, clusters=CLUSTERS, own_identity=own_identity, limits=RateLimits()
    )
    return rekey.Plan((QUOTA, *budgets), CLUSTERS)


def test_a_compromise_under_its_own_identity_is_bound_by_the_functions_budget() -> None:
    found = plan(compromise=True, own_identity=True)
    assert "function" in found.binding.whose and found.binding.per_cluster == 1
    # 98 % of 100/min less the steady state's 2,000 reads per 6 h: about 1.54 clusters/s, 2,000 in about 22 min.
    seconds = CLUSTERS / found.rate
    assert 1290 < seconds < 1310
    assert seconds / (CLUSTERS / (100 / 60)) < 1.1  # within 1.1x of one request per cluster per identity
    assert found.lines()[-1].startswith("  binding: 100 requests/min per ServiceAccount (DDR §3.5)")
    assert found.lines()[-1].endswith("2000 cluster(s) take about 22 min")


def test_a_shared_identity_spends_two_requests_per_cluster_and_takes_twice_as_long() -> None:
    shared, own = plan(compromise=True, own_identity=False), plan(compromise=True, own_identity=True)
    assert shared.binding.per_cluster == 2
    assert shared.rate == pytest.approx(own.rate / 2, rel=0.01)


def test_a_routine_rekey_is_a_campaign_bound_by_rotations() -> None:
    found = plan(compromise=False, own_identity=True)
    assert found.binding.limit == "10 requests/h on /rotations (DDR §3.5)"
    assert CLUSTERS / found.rate == pytest.approx(200 * 3600)
    assert found.lines()[-1].endswith("take about 8.3 days")


def test_every_event_asking_leaves_the_function_almost_no_budget_at_3000_clusters() -> None:
    # TTL 0: each ready cluster's Sentinel event (every 30 min) reads, 3,000 clusters spend 100 a minute.
    budgets = service(0.0).budgets(compromise=True, clusters=3000, own_identity=True, limits=RateLimits())
    function = next(b for b in budgets if "function" in b.whose)
    assert function.clusters_per_second < 0.01
