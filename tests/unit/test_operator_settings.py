"""Every variable the function reads is named in pullsecret.operator.settings, once, as result or as how.

The reads are found in the source, every file of the package however it is laid out: each `envvars.*(env, NAME)`,
each `env.get(NAME)` / `env[NAME]` of a mapping named env or environ, each `os.environ` / `os.getenv` read. A name
given as a variable is resolved to the string constants it can hold (a loop over a tuple, a module constant);
a read whose name cannot be resolved fails the test (it could be anything).

The scan reads the source as written. In mutmut's copy of the package (`make mutation`), each mutated function
keeps its name and its text, and beside it come generated copies (`x_get__mutmut_orig`, `x_get__mutmut_7`, one
per mutant, none called by name): the scan leaves those out, so envvars can be mutated while this test reads it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from pullsecret.operator import settings

PACKAGE = Path(__file__).resolve().parents[2] / "pullsecret"
_MAPPINGS = frozenset({"env", "environ", "environment"})  # parameter names a settings mapping goes by
_GENERATED = re.compile(r"^x.*__mutmut_(orig|[0-9]+)$")  # mutmut's copies of a function, beside the one as written


def _parse(path: Path) -> ast.Module:
    """The module as written: without the function copies mutmut generates next to each function it mutates."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef):
            node.body = [
                n
                for n in node.body
                if not (isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and _GENERATED.match(n.name))
            ]
    return tree


def _constants() -> dict[str, set[str]]:
    """Every `NAME = "TEXT"` of the package (a module constant a read may name)."""
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(_parse(path)):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                for target in node.targets:
                    if isinstance(target, ast.Name) and isinstance(node.value.value, str):
                        found.setdefault(target.id, set()).add(node.value.value)
    return found


def _loop_values(tree: ast.AST) -> dict[str, set[str]]:
    """`for name in ("A", "B")`: the constants each loop variable takes."""
    found: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.For)
            and isinstance(node.target, ast.Name)
            and isinstance(node.iter, ast.Tuple | ast.List | ast.Set)
        ):
            values = {e.value for e in node.iter.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
            found.setdefault(node.target.id, set()).update(values)
    return found


def _is_environ(node: ast.AST) -> bool:
    """`os.environ`, `environ`, or a mapping parameter named like one (`env`)."""
    if isinstance(node, ast.Attribute) and node.attr == "environ":
        return True
    return isinstance(node, ast.Name) and node.id in _MAPPINGS


def _read_argument(node: ast.AST) -> ast.AST | None:
    """The argument naming the variable of a direct read (the environment mapping itself), or None."""
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in ("get", "pop", "setdefault") and _is_environ(func.value):
            return node.args[0] if node.args else None
        if isinstance(func, ast.Attribute) and func.attr == "getenv":
            return node.args[0] if node.args else None
    if isinstance(node, ast.Subscript) and _is_environ(node.value) and isinstance(node.ctx, ast.Load):
        return node.slice
    if not isinstance(node, ast.Compare):
        return None
    if any(isinstance(op, ast.In | ast.NotIn) for op in node.ops) and any(_is_environ(c) for c in node.comparators):
        return node.left
    return None


def _readers(trees: dict[str, ast.Module]) -> dict[tuple[str, str], int]:
    """Helpers that read the variable their caller names: (module, function) -> the name's argument position
    (every function of envvars, `_shown` of operator/deployed...), found to a fixed point (a helper calling a
    helper with its parameter is one too). Their callers' arguments are the reads."""
    found: dict[tuple[str, str], int] = {}
    while True:
        before = dict(found)
        for module, tree in trees.items():
            for func in ast.walk(tree):
                if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                params = [a.arg for a in func.args.posonlyargs + func.args.args]
                for node in ast.walk(func):
                    argument = _name_argument(node, module, found)
                    if isinstance(argument, ast.Name) and argument.id in params:
                        found[(module, func.name)] = params.index(argument.id)
        if found == before:
            return found


def _name_argument(node: ast.AST, module: str, readers: dict[tuple[str, str], int]) -> ast.AST | None:
    """The argument naming the variable of a read (direct, or through a reader helper), or None."""
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name):
            key = (module, func.id)
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            key = (func.value.id, func.attr)
        else:
            key = ("", "")
        if key in readers:
            position = readers[key]
            return node.args[position] if len(node.args) > position else None
    return _read_argument(node)


def _listed_by_construction(tree: ast.AST) -> set[str]:
    """Loop variables over the lists of settings.py itself (`for n in RESULT_VARIABLES`): listed by definition."""
    found: set[str] = set()
    for node in ast.walk(tree):
        loops = [node] if isinstance(node, ast.For) else getattr(node, "generators", [])
        for loop in loops:
            target, source = loop.target, loop.iter
            if isinstance(target, ast.Name) and isinstance(source, ast.Name) and source.id.endswith("_VARIABLES"):
                found.add(target.id)
    return found


# Reads whose name no scan resolves, each checked by hand: (module, helper called).
BY_HAND = {
    ("deployed", "_shown"): "names drawn from RESULT_VARIABLES itself",
    ("sources", "get"): "each registered source's SELECTED_BY, its settings module's own read (listed through it)",
}


def _helper_parameters(tree: ast.AST) -> dict[int, set[str]]:
    """id(node) -> the parameters of the function holding it."""
    held: dict[int, set[str]] = {}
    for func in ast.walk(tree):
        if isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            names = {a.arg for a in func.args.posonlyargs + func.args.args}
            for node in ast.walk(func):
                held.setdefault(id(node), set()).update(names)
    return held


def reads() -> Iterator[tuple[str, str | None]]:
    """(where, name) of every read in the package; name None when it cannot be resolved. A read through a
    parameter of its function is a helper's: the helper's callers are the reads."""
    constants = _constants()
    paths = sorted(PACKAGE.rglob("*.py"))
    trees = {path: _parse(path) for path in paths}
    readers = _readers({path.stem: tree for path, tree in trees.items()})
    for path, tree in trees.items():
        loops = _loop_values(tree)
        listed = _listed_by_construction(tree)
        parameters = _helper_parameters(tree)
        for node in ast.walk(tree):
            argument = _name_argument(node, path.stem, readers)
            if argument is None:
                continue
            where = f"{path.relative_to(PACKAGE.parent)}:{getattr(node, 'lineno', 0)}"
            if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                yield where, argument.value
                continue
            key = argument.id if isinstance(argument, ast.Name) else getattr(argument, "attr", "")
            values = loops.get(key, set()) or constants.get(key, set())
            func = node.func if isinstance(node, ast.Call) else None
            called = getattr(func, "id", None) or getattr(func, "attr", None)
            if values:
                yield from ((where, value) for value in sorted(values))
            elif key in listed or key in parameters.get(id(node), set()) or (path.stem, called) in BY_HAND:
                continue
            else:
                yield where, None


def test_every_variable_read_anywhere_in_the_package_is_listed() -> None:
    found = list(reads())
    unresolved = [where for where, name in found if name is None]
    assert not unresolved, f"a variable read by a name this test cannot resolve: {unresolved}"
    names = {name for _, name in found if name is not None}
    assert len(names) > 60, names
    known = set(settings.FUNCTION_VARIABLES) | settings.AMBIENT_VARIABLES
    missing = sorted(f"{name} ({where})" for where, name in found if name not in known)
    assert not missing, f"read but not listed in pullsecret/operator/settings.py: {missing}"


def test_the_scan_sees_reads_in_every_form(tmp_path: Path) -> None:
    """The shapes a read takes, each found (so a new module's read cannot hide by its spelling)."""
    forms = [
        'envvars.get(env, "A1")',
        'env.get("A2")',
        'os.environ.get("A3")',
        'os.environ["A4"]',
        'os.getenv("A5")',
        '"A6" in os.environ',
        'env["A7"]',
        'envvars.number(env, "A0", 1)',
    ]
    helper = "def _value(env, name):\n    return env.get(name)\n"
    tree = ast.parse(helper + "\n".join(forms) + '\n_value(os.environ, "A8")')
    readers = _readers({"m": tree, "envvars": _parse(PACKAGE / "settings" / "envvars.py")})
    assert readers[("m", "_value")] == 1 and readers[("envvars", "number")] == 1
    names = [n for n in (_name_argument(node, "m", readers) for node in ast.walk(tree)) if n is not None]
    assert sorted(str(n.value) for n in names if isinstance(n, ast.Constant)) == [f"A{i}" for i in range(0, 9)]


def test_the_project_bound_is_a_result_variable() -> None:
    """ALLOWED_SECRET_PROJECTS decides where a secret may be written: a shell without it is another deployment."""
    assert "ALLOWED_SECRET_PROJECTS" in settings.RESULT_VARIABLES


def test_result_how_and_ambient_do_not_overlap() -> None:
    assert not settings.RESULT_VARIABLES & settings.HOW_VARIABLES
    assert not settings.AMBIENT_VARIABLES & (settings.RESULT_VARIABLES | settings.HOW_VARIABLES)
    assert set(settings.FUNCTION_VARIABLES) >= settings.SOURCE_VARIABLES
