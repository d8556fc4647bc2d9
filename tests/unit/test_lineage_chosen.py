"""Which lineage a delivery records: our last status's, the live copy's, or one advanced to this version."""

from __future__ import annotations

from typing import Any

from pullsecret.model import lineage

V2 = "projects/p/secrets/s/versions/2"
V3 = "projects/p/secrets/s/versions/3"
V4 = "projects/p/secrets/s/versions/4"
T3 = 1_700_000_000
T4 = 1_700_086_400
CREATED = 1_700_090_000  # the creation time of version 4
FINGERPRINTS = {"quay.io": "aaa", "registry.redhat.io": "bbb"}


def _at(version: str, fingerprints: dict[str, str], now: int, previous_version: str | None = None) -> dict[str, Any]:
    return lineage.advance(
        {}, fingerprints=fingerprints, version_name=version, previous_version=previous_version, now=now
    )


def _chosen(previous: dict[str, Any], live: dict[str, Any]) -> dict[str, Any]:
    return lineage.chosen(
        previous=previous, live=live, fingerprints=FINGERPRINTS, version_name=V4, created=lambda: CREATED
    )


def test_our_status_naming_this_version_is_kept_before_the_live_copys() -> None:
    ours = _at(V4, FINGERPRINTS, T3, previous_version=V3)
    live = _at(V4, FINGERPRINTS, T4)
    assert _chosen(ours, live) == ours
    assert _chosen(ours, {}) == ours


def test_the_live_copys_record_is_kept_when_our_status_names_another_version() -> None:
    live = _at(V4, FINGERPRINTS, T4, previous_version=V2)
    assert _chosen({}, live) == live
    assert _chosen(_at(V3, {"quay.io": "old"}, T3), live) == live


def test_a_record_naming_this_version_with_other_fingerprints_is_dropped() -> None:
    forged = _at(V4, {"quay.io": "aaa", "registry.redhat.io": "fff"}, T3, previous_version=V3)
    live = _at(V4, FINGERPRINTS, T4)
    assert _chosen(forged, live) == live  # our status forged: the live copy's record
    assert _chosen(live, forged) == live
    extra = _at(V4, {**FINGERPRINTS, "evil.io": "eee"}, T3)
    # Both forged: recomputed from nothing, dated by the version's creation, not by either record.
    assert _chosen(forged, extra) == {
        "version": "4",
        "previous_version": None,
        "added": ["quay.io", "registry.redhat.io"],
        "changed": [],
        "removed": [],
        "registries": {"quay.io": ["aaa", "4", CREATED], "registry.redhat.io": ["bbb", "4", CREATED]},
    }


def test_a_new_version_advances_from_our_status() -> None:
    ours = _at(V3, {"quay.io": "aaa", "registry.redhat.io": "old", "gone.io": "ggg"}, T3)
    live = _at(V2, {"quay.io": "zzz"}, 1)
    expected = {
        "version": "4",
        "previous_version": "3",
        "added": [],
        "changed": ["registry.redhat.io"],
        "removed": ["gone.io"],
        "registries": {"quay.io": ["aaa", "3", T3], "registry.redhat.io": ["bbb", "4", CREATED]},
    }
    assert _chosen(ours, live) == expected
    assert _chosen(ours, {}) == expected


def test_without_our_status_a_new_version_advances_from_the_live_copys_record() -> None:
    live = _at(V3, {"quay.io": "aaa"}, T3)
    assert _chosen({}, live) == {
        "version": "4",
        "previous_version": "3",
        "added": ["registry.redhat.io"],
        "changed": [],
        "removed": [],
        "registries": {"quay.io": ["aaa", "3", T3], "registry.redhat.io": ["bbb", "4", CREATED]},
    }
