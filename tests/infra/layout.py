"""The package tree as the docs show it: one row per folder and module of `pullsecret/`, its job from its docstring.

docs/design.md ("Layout") holds the table between `<!-- layout:begin -->` and `<!-- layout:end -->` (the README
links to it); `python -m tests.infra.layout` rewrites it from the tree, and tests/infra/test_layout.py fails when it
differs.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
PACKAGE = ROOT / "pullsecret"
DOCS = (ROOT / "docs" / "design.md",)
BEGIN, END = "<!-- layout:begin -->", "<!-- layout:end -->"
_BLOCK = re.compile(re.escape(BEGIN) + r"\n.*?" + re.escape(END), re.S)


def job(path: Path) -> str:
    """The first paragraph of a module's docstring (its one job) on one line, `|` escaped for a Markdown table."""
    doc = (ast.get_docstring(ast.parse(path.read_text())) or "").strip()
    paragraph = " ".join(doc.split("\n\n", 1)[0].split())
    return paragraph.replace("|", "\\|")


def table() -> str:
    """The Markdown table: each folder's own row (its __init__ docstring), then its modules, in tree order."""
    rows = ["| where | job |", "|---|---|"]
    folders = [PACKAGE, *sorted(p.parent for p in PACKAGE.rglob("*/__init__.py"))]
    for folder in folders:
        prefix = "" if folder == PACKAGE else f"{folder.relative_to(PACKAGE).as_posix()}/"
        if prefix:
            rows.append(f"| **`{prefix}`** | {job(folder / '__init__.py')} |")
        for module in sorted(folder.glob("*.py")):
            if module.name == "__init__.py":
                continue
            rows.append(f"| `{prefix}{module.stem}` | {job(module)} |")
    return "\n".join(rows)


def block() -> str:
    return f"{BEGIN}\n{table()}\n{END}"


def render(text: str) -> str:
    """`text` with its layout block replaced by the tree's."""
    if not _BLOCK.search(text):
        raise ValueError(f"no {BEGIN} ... {END} block")
    return _BLOCK.sub(lambda _: block(), text)


if __name__ == "__main__":
    for doc in DOCS:
        doc.write_text(render(doc.read_text()))
        print(f"rewrote the layout of {doc.relative_to(ROOT)}")
    sys.exit(0)
