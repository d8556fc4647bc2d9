"""The status `data` keys (pullsecret/model/status_data.py's invariant): every key a report carries is the common
record's (StatusData) or the chosen mode's or source's own (its registration's `declared.keys`), StatusData declares
no implementation's key, and none is one HyperFleet's condition mapping masks (contract.md §2)."""

from __future__ import annotations

import typing
from typing import Any

import pytest

from emulators.hyperfleet.rules import MASKED_KEY_PATTERNS
from pullsecret import declared
from pullsecret.delivery import modes
from pullsecret.model.status import Declared
from pullsecret.model.status_data import Retention, StatusData
from pullsecret.source import sources
from tests.fakes import conformance
from tests.fakes.hyperfleet import HyperFleet

COMMON = set(typing.get_type_hints(StatusData))


def own_keys(declared: Declared) -> set[str]:
    return set(typing.get_type_hints(declared.keys)) if declared.keys is not None else set()


@pytest.mark.parametrize("key", sorted(declared.status_keys() | set(typing.get_type_hints(Retention))))
def test_no_declared_key_is_masked(key: str) -> None:
    assert not [p for p in MASKED_KEY_PATTERNS if p in key.lower()]


@pytest.mark.parametrize("source", sorted(conformance.SOURCE_KITS))
@pytest.mark.parametrize("mode", sorted(conformance.DELIVERY_KITS))
def test_every_key_a_report_carries_is_declared(mode: str, source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each registered mode x source through the conformance story (provisioning, a change, a repair, a
    deletion): every report's `data` keys are StatusData's, the mode's own or the source's own."""
    sent: list[dict[str, Any]] = []
    report_status = HyperFleet.report_status

    def recorded(self: HyperFleet, cluster_id: str, body: dict[str, Any]) -> int:
        sent.append(body)
        return report_status(self, cluster_id, body)

    monkeypatch.setattr(HyperFleet, "report_status", recorded)
    conformance.story(conformance.DELIVERY_KITS[mode](), conformance.SOURCE_KITS[source]())
    assert len(sent) >= 4
    allowed = COMMON | own_keys(modes.registration(mode).declared) | own_keys(sources.registration(source).declared)
    undeclared = {key for body in sent for key in body["data"]} - allowed
    assert not undeclared, (
        f"reported but declared neither in StatusData nor by {mode} or {source}: {sorted(undeclared)}"
    )


def test_the_common_record_declares_no_implementations_key_and_a_mode_and_a_source_share_none() -> None:
    mode_keys = {key for registered in modes.MODES for key in own_keys(registered.declared)}
    source_keys = {key for registered in sources.SOURCES for key in own_keys(registered.declared)}
    assert not (mode_keys | source_keys) & COMMON
    assert not mode_keys & source_keys  # one report carries a mode's and a source's: a shared key would be overwritten
