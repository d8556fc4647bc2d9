"""The product's shape, measured: module and class sizes, cyclomatic complexity, the import graph, typed collaborators.

`python -m tests.infra.shape` prints every violation; tests/infra/test_shape.py holds each limit. The limits are
what a newcomer can hold in their head (docs/design.md, "Layout"); raise none of them, split instead.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from radon.complexity import cc_visit

ROOT = Path(__file__).resolve().parent.parent.parent
PRODUCT = ROOT / "pullsecret"
EMULATORS = ROOT / "emulators"
MAX_MODULE_LINES = 450
MAX_CLASS_LINES = 300
MAX_EMULATOR_CLASS_LINES = 400
MAX_COMPLEXITY = 15
# Parameters that hold a collaborator (a client, the application, a delivery): each must name its type.
COLLABORATORS = frozenset(
    {
        "adapter",
        "app",
        "application",
        "reconciler",
        "api",
        "client",
        "store",
        "hyperfleet",
        "delivery",
        "source",
        "clusters",
        "kube",
        "pool",
        "sm",
        "gke",
        "identity",
        "publisher",
        "secrets",
        "calls",
    }
)


def _modules(package: Path) -> list[Path]:
    return sorted(p for p in package.rglob("*.py") if "__pycache__" not in p.parts)


def _name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def long_modules(package: Path = PRODUCT, limit: int = MAX_MODULE_LINES) -> list[str]:
    """`path (lines)` of each module above `limit` lines."""
    found = []
    for path in _modules(package):
        lines = len(path.read_text().splitlines())
        if lines > limit:
            found.append(f"{path.relative_to(ROOT)} ({lines})")
    return found


def long_classes(package: Path = PRODUCT, limit: int = MAX_CLASS_LINES) -> list[str]:
    """`path:line Class (lines)` of each class above `limit` lines (decorators to last line)."""
    found = []
    for path in _modules(package):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > limit:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines})")
    return found


def too_complex(package: Path = PRODUCT, limit: int = MAX_COMPLEXITY) -> list[str]:
    """`path:line name (complexity)` of each function or method above `limit` (radon's cyclomatic complexity)."""
    found = []
    for path in _modules(package):
        for block in cc_visit(path.read_text()):
            if block.complexity > limit and block.letter in ("F", "M"):
                found.append(f"{path.relative_to(ROOT)}:{block.lineno} {block.fullname} ({block.complexity})")
    return found


def import_graph(package: Path = PRODUCT) -> dict[str, set[str]]:
    """module -> the package's modules it imports, anywhere in the file (TYPE_CHECKING and function bodies too)."""
    prefix = package.name
    names = {_name(p) for p in _modules(package)}
    graph: dict[str, set[str]] = {}
    for path in _modules(package):
        me = _name(path)
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for target in targets:
                if target.split(".")[0] == prefix and target in names and target != me:
                    edges.add(target)
        graph[me] = edges
    return graph


def cycles(package: Path = PRODUCT) -> list[str]:
    """Each import cycle among the package's modules, as `a -> b -> a` (one per strongly connected component)."""
    graph = import_graph(package)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[str] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(" <-> ".join(sorted(component)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def untyped_collaborators(package: Path = PRODUCT) -> list[str]:
    """`path:line function(param)` of each collaborator parameter annotated `Any` or not annotated."""
    found = []
    for path in _modules(package):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            args = node.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                if arg.arg not in COLLABORATORS:
                    continue
                annotation = arg.annotation
                if annotation is None or (isinstance(annotation, ast.Name) and annotation.id == "Any"):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}({arg.arg})")
    return found


def report() -> dict[str, list[str]]:
    return {
        f"pullsecret modules above {MAX_MODULE_LINES} lines": long_modules(),
        f"pullsecret classes above {MAX_CLASS_LINES} lines": long_classes(),
        f"pullsecret functions above complexity {MAX_COMPLEXITY}": too_complex(),
        "pullsecret import cycles (TYPE_CHECKING and local imports counted)": cycles(),
        "pullsecret collaborator parameters typed Any": untyped_collaborators(),
        f"emulators classes above {MAX_EMULATOR_CLASS_LINES} lines": long_classes(EMULATORS, MAX_EMULATOR_CLASS_LINES),
        "emulators import cycles": cycles(EMULATORS),
    }


if __name__ == "__main__":
    bad = 0
    for title, items in report().items():
        print(f"{title}: {len(items)}")
        for item in items:
            print(f"  {item}")
        bad += len(items)
    sys.exit(1 if bad else 0)
