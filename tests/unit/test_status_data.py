"""The status `data` record (pullsecret/model/status_data.py) is the keys the adapter reports: every key a report
carries is declared there, and none is one HyperFleet's condition mapping masks (contract.md §2)."""

from __future__ import annotations

import typing
from typing import Any

import pytest

from emulators.hyperfleet.rules import MASKED_KEY_PATTERNS
from pullsecret.model.status_data import Retention, StatusData
from tests.fakes import conformance
from tests.fakes.hyperfleet import HyperFleet

DECLARED = set(typing.get_type_hints(StatusData))


@pytest.mark.parametrize("key", sorted(DECLARED | set(typing.get_type_hints(Retention))))
def test_no_declared_key_is_masked(key: str) -> None:
    assert not [p for p in MASKED_KEY_PATTERNS if p in key.lower()]


def test_every_key_a_report_carries_is_declared(kits: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """Each registered mode x source through the conformance story (provisioning, a change, a repair, a
    deletion): every report's `data` keys are StatusData's."""
    sent: list[dict[str, Any]] = []
    report_status = HyperFleet.report_status

    def recorded(self: HyperFleet, cluster_id: str, body: dict[str, Any]) -> int:
        sent.append(body)
        return report_status(self, cluster_id, body)

    monkeypatch.setattr(HyperFleet, "report_status", recorded)
    conformance.story(*kits)
    assert len(sent) >= 4
    undeclared = {key for body in sent for key in body["data"]} - DECLARED
    assert not undeclared, f"reported but not declared in StatusData: {sorted(undeclared)}"
