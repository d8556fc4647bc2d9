"""The function under the Pull Secret Service's rate limit (DDR §3.5), against the emulators: after one 429, the
other events of the process wait its Retry-After instead of spending more refusals (pullsecret.source.service.hold).

Outcomes asserted: each event's outcome, and the emulator's own count of the 429s it answered.
"""

from __future__ import annotations

from typing import Any

from tests.integration.service_mode import CID, deliver, service_env
from tests.support import Admin, seed_ready_cluster


def test_after_a_429_the_process_holds_its_calls_for_the_retry_after(
    make_adapter: Any, admin: Admin, world: Any
) -> None:
    seed_ready_cluster(admin, CID)
    adapter = make_adapter(service_env(world, "google-id-token", ttl="0"))  # every event asks the service
    assert deliver(adapter) == "applied"
    admin.call("POST", "/pullsecretservice/limits", {"per_minute": 1})  # one token a minute, the bucket full
    try:
        assert deliver(adapter) == "unchanged"  # spends the token
        assert deliver(adapter) == "transient"  # a 429 asking for about 60 s: redelivered by Pub/Sub
        assert deliver(adapter) == "transient"  # held: not sent
        assert deliver(adapter) == "transient"
        refused = admin.get("/pullsecretservice/limits")["refused"]
    finally:
        admin.call("POST", "/pullsecretservice/limits", {})
    assert sum(refused.values()) == 1, refused
