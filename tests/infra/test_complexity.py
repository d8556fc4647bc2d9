"""Readability kept measurable: no function of the product above radon's cyclomatic complexity 15.

A function past that has too many paths for one reader to hold; split it into named steps (see
`config.load` or `provisioning.provision`) rather than raising the limit.
"""

from __future__ import annotations

from pathlib import Path

from radon.complexity import cc_visit

ROOT = Path(__file__).resolve().parent.parent.parent
MAX_COMPLEXITY = 15


def too_complex(package: Path) -> list[str]:
    """`file:line name (complexity)` of each function or method above MAX_COMPLEXITY."""
    found = []
    for path in sorted(package.rglob("*.py")):
        for block in cc_visit(path.read_text()):
            if block.complexity > MAX_COMPLEXITY and block.letter in ("F", "M"):
                found.append(f"{path.relative_to(package.parent)}:{block.lineno} {block.fullname} ({block.complexity})")
    return found


def test_no_product_function_is_above_complexity_15() -> None:
    assert not too_complex(ROOT / "pullsecret")
