"""Every registered delivery mode x every registered source through the conformance story (tests/unit/conformance.py):
provisioning, a change, a repair and a deletion, against in-memory services."""

from __future__ import annotations

import itertools

import pytest

from pullsecret.delivery import modes
from pullsecret.source import sources
from tests.unit import conformance

PAIRS = list(itertools.product(sorted(modes.names()), sorted(s.name for s in sources.SOURCES)))


def test_every_registered_mode_and_source_has_a_kit() -> None:
    assert set(modes.names()) <= set(conformance.DELIVERY_KITS)
    assert {s.name for s in sources.SOURCES} <= set(conformance.SOURCE_KITS)


@pytest.mark.parametrize(("mode", "source"), PAIRS, ids=[f"{m}-{s}" for m, s in PAIRS])
def test_provisioning_change_repair_and_deletion(mode: str, source: str) -> None:
    conformance.story(conformance.DELIVERY_KITS[mode](), conformance.SOURCE_KITS[source]())
