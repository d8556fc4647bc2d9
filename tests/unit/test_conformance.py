"""Every registered delivery mode x every registered source through the conformance stories
(tests/fakes/conformance.py), against in-memory services, each pair's kits from the `kits` fixture
(tests/conftest.py): provisioning, a change, a repair and a deletion; the dry run; inspect, strays and left-behind;
the doctor's checks; rekeying."""

from __future__ import annotations

from typing import Any

from pullsecret.delivery import modes
from pullsecret.source import sources
from tests.fakes import conformance


def test_every_registered_mode_and_source_has_a_kit() -> None:
    assert set(modes.names()) <= set(conformance.DELIVERY_KITS)
    assert {s.name for s in sources.SOURCES} <= set(conformance.SOURCE_KITS)


def test_provisioning_change_repair_and_deletion(kits: tuple[Any, Any]) -> None:
    conformance.story(*kits)


def test_the_dry_run_says_what_the_reconcile_would_write_and_writes_nothing(kits: tuple[Any, Any]) -> None:
    conformance.dry_run_story(*kits)


def test_inspect_strays_and_left_behind_see_a_provisioned_then_deleted_cluster(kits: tuple[Any, Any]) -> None:
    conformance.operator_story(*kits)


def test_the_doctors_checks_answer_and_write_nothing(kits: tuple[Any, Any]) -> None:
    conformance.doctor_story(*kits)


def test_a_rekey_rotates_at_the_source_and_the_next_reconcile_delivers_it(kits: tuple[Any, Any]) -> None:
    conformance.rekey_story(*kits)
