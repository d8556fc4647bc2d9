"""The import contracts fence every delivery mode and source (tests/unit/fence.py): a package added under
pullsecret/delivery/ or pullsecret/source/ and left out of any contract that keeps implementations apart fails here,
as docs/design.md's recipe says."""

from __future__ import annotations

from pathlib import Path

from tests.unit import fence

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_every_implementation_package_is_fenced_by_each_contract() -> None:
    packages = fence.implementation_packages()
    assert packages["delivery"] >= {"pullsecret.delivery.direct", "pullsecret.delivery.external_secrets"}
    assert packages["source"] >= {"pullsecret.source.platform", "pullsecret.source.service"}
    missing = fence.unfenced(PYPROJECT.read_text(encoding="utf-8"))
    assert not missing, f"implementation packages a contract in pyproject.toml does not name: {missing}"


def test_a_package_left_out_of_a_contract_is_found() -> None:
    text = PYPROJECT.read_text(encoding="utf-8")
    left_out = text.replace('  "pullsecret.source.service",\n]', "]", 1)
    assert left_out != text
    assert fence.unfenced(left_out) == {"modes-independent": {"pullsecret.source.service"}}
