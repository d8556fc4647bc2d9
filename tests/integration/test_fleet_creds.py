"""`fleet`'s CREDS column under the Pull Secret Service's rate limits (DDR §3.5), against the emulators.

Outcomes asserted: every cluster's CREDS as the table prints it, the emulator's own count of the 429s it answered,
and the pace line the command prints first.
"""

from __future__ import annotations

from typing import Any

from pullsecret.handler import Adapter
from pullsecret.operator import fleet
from pullsecret.source.base import RateLimits
from tests.integration.service_mode import service_env
from tests.support import Admin, eventarc_attributes, pubsub_envelope, seed_ready_cluster, sentinel_event

CLUSTERS = [f"cls-fc{n:02d}" for n in range(8)]


def creds_of(lines: list[str]) -> dict[str, str]:
    """CLUSTER -> CREDS from the table (the sixth column after GEN, STATUS, SECRET MANAGER, HOLDS)."""
    header = next(line for line in lines if "CREDS" in line and "CLUSTER" in line)
    at = header.index("CREDS")
    return {line.split()[0]: line[at : at + 7].strip() for line in lines if line.strip().startswith("cls-fc")}


def test_fleet_waits_out_the_services_429s_and_every_cluster_shows_its_credentials(
    make_adapter: Any, world: Any, admin: Admin
) -> None:
    adapter: Adapter = make_adapter({**service_env(world, "google-id-token", ttl=None), "SECRET_PROJECT_ID": None})
    for cid in CLUSTERS:
        seed_ready_cluster(admin, cid)
        outcome = adapter.handle(eventarc_attributes(), pubsub_envelope(sentinel_event(cid, 1)))
        assert outcome.result == "applied", outcome
    # The service allows 6 requests a minute (a token every 10 s, the bucket full): eight clusters' reads spend the
    # bucket and two meet a 429 asking for about 10 s, longer than the client's own retries wait (1 s).
    admin.call("POST", "/pullsecretservice/limits", {"per_minute": 6})
    lines: list[str] = []
    try:
        assert fleet.main(adapter, fix=False, out=lines.append, limits=RateLimits(per_minute=24)) == 0
    finally:
        refused = admin.get("/pullsecretservice/limits")["refused"]
        admin.call("POST", "/pullsecretservice/limits", {})
    assert creds_of(lines) == dict.fromkeys(CLUSTERS, "current"), "\n".join(lines)
    assert sum(refused.values()) >= 2  # the 429s happened, and each was waited out
    assert lines[0].startswith("CREDS asks the Pull Secret Service once per cluster: the first 12 at once, then 12 a")
