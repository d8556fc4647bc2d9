"""Lineage: which credential per registry since which version, through the annotation and the status report."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from pullsecret.model import lineage

V3 = "projects/p/secrets/s/versions/3"
V4 = "projects/p/secrets/s/versions/4"
T3 = 1_700_000_000  # 2023-11-14T22:13:20Z
T4 = 1_700_086_400  # a day later


def test_version_id_is_the_last_segment() -> None:
    assert lineage.version_id(V4) == "4"
    assert lineage.version_id("7") == "7"
    assert lineage.version_id(None) == ""
    assert lineage.version_id("") == ""


@pytest.mark.parametrize("text", [None, "", "not json", "[1, 2]", '"a string"', "{"])
def test_decode_of_anything_but_an_object_is_empty(text: str | None) -> None:
    assert lineage.decode(text) == {}


def test_decode_reads_what_encode_wrote() -> None:
    recorded = lineage.advance({}, fingerprints={"quay.io": "aaa"}, version_name=V3, previous_version=None, now=T3)
    text = lineage.encode(recorded)
    assert text is not None
    assert lineage.decode(text) == recorded


def test_encode_is_compact_sorted_json() -> None:
    assert lineage.encode({"b": [1, "x"], "a": None}) == '{"a":null,"b":[1,"x"]}'


def test_encode_refuses_what_does_not_fit_the_annotation() -> None:
    filler = "x" * (lineage.MAX_ANNOTATION_CHARS - len('{"k":""}'))
    assert lineage.encode({"k": filler}) == '{"k":"' + filler + '"}'  # exactly the limit: kept
    assert lineage.encode({"k": filler + "x"}) is None


def test_first_write_adds_every_registry_since_this_version() -> None:
    recorded = lineage.advance(
        {}, fingerprints={"registry.redhat.io": "bbb", "quay.io": "aaa"}, version_name=V3, previous_version=None, now=T3
    )
    assert recorded == {
        "version": "3",
        "previous_version": None,
        "added": ["quay.io", "registry.redhat.io"],
        "changed": [],
        "removed": [],
        "registries": {"quay.io": ["aaa", "3", T3], "registry.redhat.io": ["bbb", "3", T3]},
    }
    assert list(recorded["registries"]) == ["quay.io", "registry.redhat.io"]  # sorted by registry


def test_a_change_keeps_the_unchanged_and_dates_the_changed() -> None:
    before = {
        "version": "3",
        "registries": {"quay.io": ["aaa", "2", T3], "registry.redhat.io": ["bbb", "3", T3], "gone.io": ["ccc", "1", 1]},
    }
    recorded = lineage.advance(
        before,
        fingerprints={"quay.io": "aaa", "registry.redhat.io": "BBB", "new.io": "ddd"},
        version_name=V4,
        previous_version=V3,
        now=T4,
    )
    assert recorded == {
        "version": "4",
        "previous_version": "3",
        "added": ["new.io"],
        "changed": ["registry.redhat.io"],
        "removed": ["gone.io"],
        "registries": {
            "new.io": ["ddd", "4", T4],
            "quay.io": ["aaa", "2", T3],  # unchanged: still since version 2
            "registry.redhat.io": ["BBB", "4", T4],
        },
    }


def test_advance_ignores_malformed_previous_entries() -> None:
    before: dict[str, Any] = {"registries": {"quay.io": ["aaa", "2"], "x.io": [], "y.io": "zzz"}}
    recorded = lineage.advance(before, fingerprints={"quay.io": "aaa"}, version_name=V4, previous_version="", now=T4)
    # A two-element entry is no record: the credential is dated anew, but it was known (a list): not "added".
    assert recorded["registries"] == {"quay.io": ["aaa", "4", T4]}
    assert recorded["previous_version"] is None
    assert recorded["added"] == []
    assert recorded["changed"] == []
    assert recorded["removed"] == []  # x.io's empty list and y.io's string carry no fingerprint
    not_a_dict = lineage.advance(
        {"registries": ["quay.io"]}, fingerprints={"quay.io": "aaa"}, version_name=V4, previous_version=None, now=T4
    )
    assert not_a_dict["added"] == ["quay.io"]


def test_report_lists_registries_as_values_with_times() -> None:
    recorded = {
        "version": "4",
        "previous_version": "3",
        "added": ["new.io"],
        "changed": ["quay.io"],
        "removed": ["gone.io"],
        "registries": {"quay.io": ["aaa", "2", T3], "new.io": ["ddd", "4", T4], "bad.io": ["x", "1"]},
    }
    assert lineage.report(recorded, sm_version=V4, kubernetes_resource_version="77") == {
        "sm_version": V4,
        "kubernetes_resource_version": "77",
        "previous_version": "3",
        "added": ["new.io"],
        "changed": ["quay.io"],
        "removed": ["gone.io"],
        "registries": [
            {"registry": "new.io", "fingerprint": "ddd", "since_version": "4", "since": "2023-11-15T22:13:20Z"},
            {"registry": "quay.io", "fingerprint": "aaa", "since_version": "2", "since": "2023-11-14T22:13:20Z"},
        ],
    }


def test_report_of_no_lineage_says_so() -> None:
    assert lineage.report({}, sm_version=V4, kubernetes_resource_version=None) == {
        "sm_version": V4,
        "kubernetes_resource_version": None,
        "recorded": False,
    }


def test_report_without_a_time_or_registries() -> None:
    reported = lineage.report(
        {"version": "4", "registries": {"quay.io": ["aaa", "4", None]}}, sm_version=V4, kubernetes_resource_version="1"
    )
    assert reported["registries"] == [
        {"registry": "quay.io", "fingerprint": "aaa", "since_version": "4", "since": None}
    ]
    assert reported["added"] == reported["changed"] == reported["removed"] == []
    assert reported["previous_version"] is None
    assert (
        lineage.report({"version": "4", "registries": "x"}, sm_version=V4, kubernetes_resource_version="1")[
            "registries"
        ]
        == []
    )


def test_from_report_reads_back_what_report_wrote() -> None:
    recorded = lineage.advance(
        {"registries": {"quay.io": ["aaa", "2", T3], "x.io": ["xxx", "2", T3], "gone.io": ["ggg", "1", T3]}},
        fingerprints={"quay.io": "aaa", "new.io": "ddd", "x.io": "XXX"},
        version_name=V4,
        previous_version=V3,
        now=T4,
    )
    reported = json.loads(json.dumps(lineage.report(recorded, sm_version=V4, kubernetes_resource_version="9")))
    assert lineage.from_report(reported) == recorded


def test_from_report_of_older_reports_with_registries_as_keys() -> None:
    reported = {
        "secret_version": V3,
        "registries": {
            "quay.io": {"fingerprint": "aaa", "since_version": "2", "since": "2023-11-14T22:13:20Z"},
            "bad.io": "not an object",
        },
    }
    assert lineage.from_report(reported) == {
        "version": "3",
        "previous_version": None,
        "added": [],
        "changed": [],
        "removed": [],
        "registries": {"quay.io": ["aaa", "2", T3]},
    }


@pytest.mark.parametrize(
    "reported",
    [None, "x", [], {"recorded": False, "registries": []}, {"sm_version": V3}, {"registries": "x"}],
)
def test_from_report_without_a_lineage_is_empty(reported: Any) -> None:
    assert lineage.from_report(reported) == {}


def test_from_report_skips_entries_it_cannot_read() -> None:
    reported = {
        "sm_version": V4,
        "recorded": True,
        "registries": [
            "x",
            {"fingerprint": "aaa", "since_version": "1"},  # no registry
            {"registry": 7, "fingerprint": "aaa", "since_version": "1"},
            {"registry": "a.io", "fingerprint": 1, "since_version": "1"},
            {"registry": "b.io", "fingerprint": "bbb", "since_version": 1},
            {"registry": "c.io", "fingerprint": "ccc", "since_version": "4", "since": "yesterday"},
            {"registry": "d.io", "fingerprint": "ddd", "since_version": "4", "since": 5},
        ],
    }
    assert lineage.from_report(reported)["registries"] == {"c.io": ["ccc", "4", None], "d.io": ["ddd", "4", None]}
    assert lineage.from_report({"registries": []})["version"] == ""


def test_times_are_utc_whatever_the_hosts_time_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Asia/Kolkata")  # UTC+05:30: a local-time slip shows
    time.tzset()
    try:
        reported = lineage.report(
            {"registries": {"quay.io": ["aaa", "3", T3]}}, sm_version=V3, kubernetes_resource_version=None
        )
        assert reported["registries"][0]["since"] == "2023-11-14T22:13:20Z"
        assert lineage.from_report(reported)["registries"] == {"quay.io": ["aaa", "3", T3]}
    finally:
        monkeypatch.undo()
        time.tzset()


def test_describes_only_the_fingerprints_computed_from_the_content() -> None:
    recorded = lineage.advance(
        {},
        fingerprints={"a.io": "111111111111", "b.io": "222222222222"},
        version_name=V4,
        previous_version=None,
        now=T4,
    )
    assert lineage.describes(recorded, fingerprints={"a.io": "111111111111", "b.io": "222222222222"})
    assert not lineage.describes(recorded, fingerprints={"a.io": "111111111111", "b.io": "333333333333"})
    assert not lineage.describes(recorded, fingerprints={"a.io": "111111111111"})  # a registry it should not name
    assert not lineage.describes(recorded, fingerprints={"a.io": "111111111111", "b.io": "222222222222", "c.io": "4"})
    assert not lineage.describes({}, fingerprints={"a.io": "111111111111"})
    assert lineage.describes({"registries": {}}, fingerprints={})
    assert not lineage.describes({"registries": {"a.io": []}}, fingerprints={"a.io": "111111111111"})
    assert not lineage.describes({"registries": {"a.io": "111111111111"}}, fingerprints={"a.io": "111111111111"})
    assert not lineage.describes({"registries": [["a.io", "111111111111"]]}, fingerprints={"a.io": "111111111111"})


def _since(stamp: str) -> int | None:
    """The epoch `from_report` reads from a registry's `since`."""
    reported = {
        "sm_version": V4,
        "registries": [{"registry": "q.io", "fingerprint": "a", "since_version": "4", "since": stamp}],
    }
    since: int | None = lineage.from_report(reported)["registries"]["q.io"][2]
    return since


@pytest.mark.parametrize(
    "stamp",
    [
        "2023-13-05T06:07:08Z",  # month 13
        "2023-02-30T05:06:07Z",  # 30 February
        "2023-11-14T24:00:00Z",  # hour 24
        "2023-11-14T22:60:00Z",  # minute 60
        "2023-11-14T22:13:60Z",  # second 60
    ],
)
def test_a_time_with_a_field_out_of_range_is_no_time(stamp: str) -> None:
    assert _since(stamp) is None  # not rolled over into the next month, day, hour or minute


def test_a_time_in_digits_other_than_ascii_is_no_time() -> None:
    # A status is written by anyone with the API's rights: the fast path reads only what strptime reads.
    fullwidth = "2023-11-14T22:13:20Z".translate({ord(d): ord(d) + 0xFF10 - ord("0") for d in "0123456789"})
    assert _since(fullwidth) is None
    assert _since("2023-11-14T22:13:20Z") == T3


def test_a_time_written_without_leading_zeros_is_read_as_utc(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _since("2023-11-14T22:13:20Z") == T3
    monkeypatch.setenv("TZ", "Asia/Kolkata")  # UTC+05:30: a local-time slip shows
    time.tzset()
    try:
        assert _since("2023-11-14T22:13:2Z") == T3 - 18
        assert _since("2023-1-2T3:4:5Z") == 1_672_628_645  # 2023-01-02T03:04:05Z
    finally:
        monkeypatch.undo()
        time.tzset()
