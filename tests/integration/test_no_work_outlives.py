"""No call of an invocation outlives it: Cloud Run gives an instance no CPU once the response is sent.

The statuses read runs beside the cluster read; when the cluster read ends the reconcile early (an error,
or the cluster is gone), the statuses read already under way must finish before the function returns.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from pullsecret.errors import TransientError
from pullsecret.handler import Adapter
from tests.support import Admin, eventarc_attributes, pubsub_envelope, seed_ready_cluster, sentinel_event

CID = "cls-outlive"
# Slower than the cluster read's whole answer: a 400 at once, a 503 after the client's own retries (~3 s).
SLOW_MS = {"rejected": 1500, "gone": 1500, "unavailable": 5000}


@pytest.mark.parametrize("ending", ["rejected", "unavailable", "gone"])
def test_a_running_statuses_read_finishes_before_the_function_returns(
    function_env: dict[str, str], world: Any, admin: Admin, ending: str
) -> None:
    adapter = Adapter.from_environment()
    if ending != "gone":
        seed_ready_cluster(admin, CID)
    admin.fault(service="hyperfleet", method="getClusterStatuses", latency_ms=SLOW_MS[ending])
    if ending == "rejected":  # a terminal answer: the event is acknowledged at once
        admin.fault(service="hyperfleet", method="getClusterById", code="400", count=1)
    elif ending == "unavailable":  # a transient one, once the client's own retries are spent
        admin.fault(service="hyperfleet", method="getClusterById", code="503", count=5)
    event = (eventarc_attributes(), pubsub_envelope(sentinel_event(CID, 1)))
    started = time.monotonic()
    if ending == "unavailable":
        with pytest.raises(TransientError):
            adapter.handle(*event)
    else:
        assert adapter.handle(*event).result == ("terminal" if ending == "rejected" else "gone")
    returned = time.monotonic()
    assert world.hyperfleet.in_flight() == 0, "a HyperFleet call is still running after the function returned"
    statuses = [s for s in world.hyperfleet.served() if s[0] == "getClusterStatuses" and s[1] >= started]
    assert statuses, "the statuses read never reached the API"
    assert all(end <= returned for _, _, end in statuses), "a HyperFleet call completed after the function returned"
