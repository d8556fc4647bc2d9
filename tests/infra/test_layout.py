"""The docs' module table is the tree's: a module added, moved or renamed shows in docs/design.md ("Layout")."""

from __future__ import annotations

import pytest

from tests.infra import layout


@pytest.mark.parametrize("doc", layout.DOCS, ids=lambda p: p.name)
def test_the_layout_table_matches_the_package_tree(doc: layout.Path) -> None:
    text = doc.read_text()
    assert layout.render(text) == text, f"{doc.name}: the layout table is stale; run `python -m tests.infra.layout`"


def test_every_module_says_its_job() -> None:
    missing = [p for p in layout.PACKAGE.rglob("*.py") if "__pycache__" not in p.parts and not layout.job(p)]
    missing = [p for p in missing if p.name != "__init__.py" or p.parent != layout.PACKAGE]
    assert not missing, f"modules without a one-line docstring: {missing}"


def test_a_stale_table_is_caught() -> None:
    stale = layout.block().replace("| `handler` |", "| `handler_old` |")
    assert layout.render(stale) != stale
