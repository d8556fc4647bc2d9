"""Hands on the Kubernetes Secrets: others edit, extend and delete them between events (issue 11 item 5, issue 12).

Each round gives every cluster one edit by someone else, then an event, then another event:
- a key of theirs added (`kubectl edit`): no write at all, ever;
- our data replaced (`kubectl edit`, an Update by the manager kubectl-edit): one write (taken back), then quiet;
- the Secret deleted: one write (recreated), then quiet;
- nothing: no write.
The runtime identity reads no Secret: every Kubernetes call it makes is a probe (dry run), a create, an apply or
a delete, and the convergence check of the campaign holds (no lost event, no regression).
"""

from __future__ import annotations

import base64
import random
from typing import Any

from tests.reliability import campaign, harness

EDITS = ("their_key", "our_data", "deleted", "none")
EXPECTED_WRITES = {"their_key": 0, "our_data": 1, "deleted": 1, "none": 0}


def _revision(world: Any) -> int:
    return int(world.kubernetes.handle_admin("GET", "/state", None)[1]["resourceVersion"])


def _edit(world: Any, cid: str, edit: str) -> None:
    ns, name = f"clusters-{cid}", f"{cid}-pull-secret"
    if edit == "deleted":
        world.kubernetes.delete_secret(ns, name)
        return
    live = world.kubernetes.get_secret(ns, name)
    assert live is not None
    if edit == "their_key":
        live["data"][f"note-{random.randrange(1000)}"] = base64.b64encode(b"added by hand").decode()
    elif edit == "our_data":
        live["data"][".dockerconfigjson"] = base64.b64encode(b'{"auths":{"hand.example":{"auth":"eDp5"}}}').decode()
    else:
        return
    for key in ("resourceVersion", "managedFields"):
        live["metadata"].pop(key, None)
    world.kubernetes.put_secret(live, manager="kubectl-edit")


def test_edits_by_others_cost_at_most_one_write_each_then_nothing(adapter_factory: Any, world: Any) -> None:
    adapter = adapter_factory()
    clusters = [f"cls-edit{i:02d}" for i in range(12 if harness.FULL else 4)]
    rounds = 6 if harness.FULL else 2
    rng = random.Random(12)
    for cid in clusters:
        campaign.seed_generation(world, cid, 1)
        assert campaign.deliver_until_acknowledged(adapter, *campaign.envelope(cid, 1)).result == "applied"
    for _ in range(rounds):
        for cid in clusters:
            edit = rng.choice(EDITS)
            _edit(world, cid, edit)
            before = _revision(world)
            first = campaign.deliver_until_acknowledged(adapter, *campaign.envelope(cid, 1))
            after_first = _revision(world)
            second = campaign.deliver_until_acknowledged(adapter, *campaign.envelope(cid, 1))
            harness.count("cases tried")
            assert after_first - before == EXPECTED_WRITES[edit], (cid, edit, first.result)
            assert _revision(world) == after_first, (cid, edit, "a write after the repair: not quiet")
            assert first.result == ("applied" if EXPECTED_WRITES[edit] else "unchanged"), (cid, edit)
            assert second.result == "unchanged", (cid, edit)
    verdict = campaign.verify(world, dict.fromkeys(clusters, 1))
    verdict.record()
    verdict.assert_clean()
    calls = world.book.calls().get("kubernetes", {})
    assert not {c for c in calls if c.startswith(("get.secrets", "list.secrets", "watch.secrets"))}, calls
