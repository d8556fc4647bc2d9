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


@pytest.mark.parametrize(
    "change",
    [
        {"version": None},  # only `previous_version` may be null
        {"previous_version": ""},  # only `version` may be empty (a status that named none)
        {"added": [7]},
        {"removed": "gone.example"},  # a string is no list of names, whatever its letters
        {"registries": ["quay.io"]},
        {"registries": {"has space": ["0123456789ab", "3", 0]}},
        {"registries": {"quay.io": [5, "3", 0]}},
        {"registries": {"quay.io": ["0123456789ab", "latest", 0]}},
        {"registries": {"quay.io": ["0123456789ab", 3, 0]}},
        {"registries": {"quay.io": ["0123456789ab", "3", True]}},
        {"registries": {"quay.io": ["0123456789ab", "3", -1]}},
        {"registries": {"quay.io": ["0123456789ab", "3", 2**40]}},
    ],
)
def test_each_field_off_the_schema_is_not_believed(change: dict[str, Any]) -> None:
    forged = {**GOOD, "added": [], "registries": {"quay.io": ["0123456789ab", "3", 0]}, **change}
    assert lineage.valid(forged) == {}


def test_an_entry_must_be_a_list_not_any_sequence_of_three() -> None:
    assert lineage.valid({**GOOD, "added": [], "registries": {"quay.io": ("0123456789ab", "3", 0)}}) == {}


@pytest.mark.parametrize("since", [None, 0, 2**40 - 1])
def test_since_bounds_are_inclusive_of_the_epoch_and_below_two_to_the_forty(since: int | None) -> None:
    kept = {**GOOD, "added": [], "registries": {"quay.io": ["0123456789ab", "3", since]}}
    assert lineage.valid(kept) == kept


def test_a_thousand_registries_are_believed_and_no_more() -> None:
    names = [f"r{i}.example" for i in range(1001)]
    entries = {name: ["0123456789ab", "3", None] for name in names}
    base = {**GOOD, "added": [], "changed": [], "removed": []}
    thousand = {**base, "registries": dict(list(entries.items())[:1000]), "added": names[:1000]}
    assert lineage.valid(thousand) == thousand
    assert lineage.valid({**base, "registries": entries}) == {}
    removed = {**base, "registries": {}, "removed": names[:1000]}
    assert lineage.valid(removed) == removed
    assert lineage.valid({**removed, "removed": names}) == {}


def test_decode_reads_an_annotation_of_exactly_the_limit() -> None:
    text = json.dumps(GOOD)
    padded = text + " " * (lineage.MAX_ANNOTATION_CHARS - len(text))
    assert lineage.decode(padded) == GOOD
    assert lineage.decode(padded + " ") == {}
