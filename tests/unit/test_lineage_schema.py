"""The lineage schema: what the live Secret's annotation or a status may carry before any of it is believed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pullsecret.model import lineage

GOOD: dict[str, Any] = {
    "version": "3",
    "previous_version": "2",
    "added": ["quay.io"],
    "changed": [],
    "removed": ["gone.example"],
    "registries": {"quay.io": ["0123456789ab", "3", 1700000000], "docker.io": ["ba9876543210", "1", None]},
}


def test_an_advanced_lineage_round_trips() -> None:
    built = lineage.advance(
        {}, fingerprints={"quay.io": "0123456789ab"}, version_name="p/versions/4", previous_version=None, now=5
    )
    assert lineage.decode(lineage.encode(built)) == built
    assert lineage.decode(json.dumps(GOOD)) == GOOD


@pytest.mark.parametrize(
    "change",
    [
        {"version": "latest"},
        {"version": 3},
        {"previous_version": {"nested": True}},
        {"added": ["not registered"]},
        {"added": ["quay.io", "docker.io", "other.example"]},
        {"removed": ["quay.io"]},
        {"changed": "quay.io"},
        {"registries": {"quay.io": ["not-a-fingerprint", "3", 0]}},
        {"registries": {"quay.io": ["0123456789ab", "3"]}},
        {"registries": {"quay.io": ["0123456789ab", "3", "yesterday"]}},
        {"registries": {"has space": ["0123456789ab", "3", 0]}},
        {"note": "x"},
    ],
)
def test_anything_off_the_schema_is_not_believed(change: dict[str, Any]) -> None:
    forged = {**GOOD, **change}
    assert lineage.decode(json.dumps(forged)) == {}
    assert lineage.valid(forged) == {}


def test_decode_never_raises() -> None:
    for text in (None, "", "[]", "{", "[" * 100_000, json.dumps(GOOD) + " " * 9000):
        assert lineage.decode(text) == {}
