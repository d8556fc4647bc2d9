"""Each test module is a leaf: no module under tests/ imports a test module (one named test_*.py or conftest.py, or
one that defines tests); what suites share lives in a support module that defines none (tests/support.py,
tests/fakes/, a suite's own helper module) or reaches a test through a conftest.py fixture. And a suite's own
helper module (tests/<suite>/x.py) serves that suite only: what two suites share lives at the top (tests/support.py)
or in tests/fakes/, so no suite imports another and back.

A test module imported by another runs its own tests' module-level code in the importer, ties two suites to each
other's edits, and (through `from x import fixture`) hides where a fixture comes from; pytest finds fixtures in
conftest.py without any import.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def defines_tests(tree: ast.Module) -> bool:
    """A top-level test function or Test class (what pytest collects)."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
            return True
        if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            return True
    return False


def imported(tree: ast.Module, importer: str, modules: set[str]) -> set[str]:
    """The modules under tests/ that `tree` imports, anywhere in it (a function's own import counts too)."""
    found: set[str] = set()
    package = importer.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in modules)
    return {name for name in found if name in modules}


def offences(root: Path = TESTS) -> list[str]:
    """`importer -> imported` for each import of a test module by another module under `root`."""
    paths = {module_name(p, root.parent): p for p in sorted(root.rglob("*.py"))}
    trees = {name: ast.parse(path.read_text(), str(path)) for name, path in paths.items()}
    test_modules = {
        name
        for name, tree in trees.items()
        if paths[name].name.startswith("test_") or paths[name].name == "conftest.py" or defines_tests(tree)
    }
    return [
        f"{importer} -> {target}"
        for importer, tree in trees.items()
        for target in sorted(imported(tree, importer, set(trees)))
        if target in test_modules and target != importer
    ]


def suite_of(name: str) -> str | None:
    """The suite a module belongs to (tests.<suite>.x), None for what is shared (tests.support, tests.fakes)."""
    parts = name.split(".")
    if len(parts) < 3 or parts[1] == "fakes":
        return None
    return parts[1]


def crossings(root: Path = TESTS) -> list[str]:
    """`importer -> imported` for each import of a suite's own module by a module outside that suite."""
    paths = {module_name(p, root.parent): p for p in sorted(root.rglob("*.py"))}
    trees = {name: ast.parse(path.read_text(), str(path)) for name, path in paths.items()}
    return [
        f"{importer} -> {target}"
        for importer, tree in trees.items()
        for target in sorted(imported(tree, importer, set(trees)))
        if suite_of(target) is not None and suite_of(target) != suite_of(importer) and target != importer
    ]


def test_no_suite_imports_another_suites_modules() -> None:
    found = crossings()
    assert not found, (
        f"{len(found)} imports of another suite's module (shared doubles and kits belong in tests/fakes/, shared "
        "helpers in tests/support.py):\n" + "\n".join(found)
    )


def test_no_test_module_imports_another() -> None:
    found = offences()
    assert not found, (
        f"{len(found)} imports of a test module (move what is shared to tests/fakes/, tests/support.py or a "
        "suite's support module, and reach fixtures through conftest.py):\n" + "\n".join(found)
    )


def test_an_import_of_a_test_module_is_caught(tmp_path: Path) -> None:
    """The rules see `from tests.x import name`, `import tests.x`, a relative import, an import inside a function,
    a module that defines tests without a test_ name, and a suite's helper imported from another suite."""
    suite = tmp_path / "tests" / "suite"
    suite.mkdir(parents=True)
    (tmp_path / "tests" / "__init__.py").write_text("")
    (suite / "__init__.py").write_text("")
    (suite / "test_a.py").write_text("SHARED = 1\ndef test_a():\n    pass\n")
    (suite / "kit.py").write_text("def test_hidden():\n    pass\n")
    (suite / "helper.py").write_text("HELP = 1\n")
    (suite / "test_b.py").write_text("from tests.suite.test_a import SHARED\nfrom tests.suite.helper import HELP\n")
    (suite / "test_c.py").write_text("import tests.suite.test_a\n")
    (suite / "test_d.py").write_text("from . import kit\n")
    (suite / "test_e.py").write_text("def test_e():\n    from tests.suite import test_a\n")
    (tmp_path / "tests" / "other").mkdir()
    (tmp_path / "tests" / "other" / "__init__.py").write_text("")
    (tmp_path / "tests" / "other" / "test_f.py").write_text("from tests.suite import helper\n")
    found = offences(tmp_path / "tests")
    assert crossings(tmp_path / "tests") == ["tests.other.test_f -> tests.suite.helper"]
    assert found == [
        "tests.suite.test_b -> tests.suite.test_a",
        "tests.suite.test_c -> tests.suite.test_a",
        "tests.suite.test_d -> tests.suite.kit",
        "tests.suite.test_e -> tests.suite.test_a",
    ]
