"""The limits that keep the product a newcomer can hold in their head (tests/infra/shape.py measures each)."""

from __future__ import annotations

import pytest

from tests.infra import shape


@pytest.mark.parametrize("title", list(shape.report()))
def test_the_tree_keeps_its_limits(title: str) -> None:
    assert shape.report()[title] == [], f"{title}: split by job rather than raise the limit"


def test_a_cycle_through_a_type_checking_import_is_found(tmp_path: shape.Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg.b import B\n")
    (package / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import A\n")
    original = shape.ROOT
    try:
        shape.ROOT = tmp_path
        assert shape.cycles(package) == ["pkg.a <-> pkg.b"]
    finally:
        shape.ROOT = original


def test_an_untyped_collaborator_is_found(tmp_path: shape.Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "m.py").write_text("from typing import Any\ndef run(adapter: Any, n: Any) -> None: ...\n")
    original = shape.ROOT
    try:
        shape.ROOT = tmp_path
        assert shape.untyped_collaborators(package) == ["pkg/m.py:2 run(adapter)"]
    finally:
        shape.ROOT = original
