"""A run's progress record (the fan-out's and `rekey`'s, one shape: pullsecret/secretstore/progress.py) is checked
when read and never trusted as it stands; `rekey`'s cutoff is part of its key (every incident re-keys), and its
listing stops when the cursor does not move (pullsecret/operator/rekey.py `selected`)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from pullsecret.errors import TransientError
from pullsecret.operator import rekey
from pullsecret.operator.rekey import LEASE_S
from pullsecret.secretstore.progress import A_REKEY, A_ROTATION, RunRecord, UntrustedRecord

NOW = 1_800_000_000.0
GOOD = RunRecord(
    key="k", cutoff=NOW - 100, started=NOW - 100, after="cls-a1", rotated=3, holder="ab12", lease_until=NOW + 10
)


def stored(**changed: Any) -> dict[str, str]:
    value = json.loads(GOOD.encode(A_REKEY)[A_REKEY])
    value.update(changed)
    return {A_REKEY: json.dumps(value)}


def decode(annotations: dict[str, str], annotation: str = A_REKEY) -> RunRecord | None:
    return RunRecord.decode(annotations, annotation, now=NOW, max_lease_s=LEASE_S)


def test_a_good_record_reads_back() -> None:
    assert decode(GOOD.encode(A_REKEY)) == GOOD
    assert decode({}) is None


def test_the_fan_outs_record_has_the_same_shape_and_reads_back_as_written_before() -> None:
    # A fan-out's record as pullsecret/source/platform/progress.py wrote it before the two were one.
    written = {
        "source": "projects/1/secrets/src",
        "version": 7,
        "after": "cls-a1",
        "done": False,
        "holder": "ab12",
        "lease_until": NOW + 100,
        "nonce": "Xy_-9",
    }
    found = decode({A_ROTATION: json.dumps(written)}, A_ROTATION)
    assert found == RunRecord(
        source="projects/1/secrets/src", version=7, after="cls-a1", holder="ab12", lease_until=NOW + 100, nonce="Xy_-9"
    )


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [
        ("after", "cls-zzzz' or id != '", "after"),  # it would go into the listing's search string
        ("after", "cls/../x", "after"),
        ("done", "true", "unreadable"),  # not a boolean
        ("lease_until", 1e18, "lease_until"),  # a lease nobody can outlive
        ("lease_until", -1.0, "lease_until"),
        ("cutoff", float("nan"), "cutoff"),
        ("cutoff", NOW + 86400, "cutoff"),  # in the future
        ("started", float("inf"), "started"),
        ("rotated", -1, "rotated"),
        ("failed", -5, "failed"),
        ("holder", "x" * 100, "holder"),
        ("nonce", "a b", "nonce"),
        ("version", -1, "version"),
        ("key", None, "unreadable"),  # a key is text
        ("cutoff", "soon", "unreadable"),
    ],
)
def test_each_forged_field_is_set_aside_with_why(field: str, value: Any, why: str) -> None:
    annotations = stored(**{field: value})
    with pytest.raises(UntrustedRecord) as raised:
        decode(annotations)
    assert why in raised.value.why


def test_the_lease_may_lie_a_lease_ahead_not_more() -> None:
    assert decode(stored(lease_until=NOW + LEASE_S)) is not None


def test_the_cutoff_is_part_of_the_key_and_defaults_to_the_start_rounded_up() -> None:
    asked = rekey.Request(compromise=True)
    assert asked.cutoff(NOW + 0.2) == NOW + 1
    assert asked.key("service", NOW) != asked.key("service", NOW + 1)  # a new incident, a record of its own
    assert rekey.Request(compromise=True, created_before=NOW).cutoff(NOW + 50) == NOW
    assert asked.resume_command(NOW).endswith("--compromise --created-before 2027-01-15T08:00:00Z")


class _Listing:
    """A HyperFleet listing that ignores `search`: the same full page whatever is asked."""

    def __init__(self) -> None:
        self.calls = 0

    def list_clusters(self, **_: Any) -> tuple[list[dict[str, Any]], int]:
        self.calls += 1
        return [{"id": "cls-a1"}, {"id": "cls-a2"}], 4


def test_the_paging_stops_when_the_cursor_does_not_move() -> None:
    listing = _Listing()
    app: Any = SimpleNamespace(hyperfleet=listing)
    seen = []
    with pytest.raises(TransientError, match="did not move past cls-a2") as raised:
        for cluster in rekey.selected(app, rekey.Request(page_size=2), ""):
            seen.append(cluster["id"])
    assert raised.value.reason == "PagingStuck"
    assert seen == ["cls-a1", "cls-a2"] and listing.calls == 2  # not a third time
