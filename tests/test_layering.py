"""The import graph: no cycles, and every import points down the layer order.

Layers (low to high): dtype, errors < layout < plan < pool < ir < cuda, sim < lang, kernels,
examples, verify, cli. The package root re-exports the plan-only API, so it sits with
pool. Imports under ``if TYPE_CHECKING:`` are annotations, not dependencies; imports
inside functions count like any other (a lazy import hides a cycle, it does not break it),
except the on-demand entry points of LAZY_ALLOWED, which may reach up the layers.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "tilemem"

LAYERS = {
    "dtype": 0,
    "errors": 0,
    "validate": 0,
    "version": 0,
    "intmath": 0,
    "text": 0,
    "scopes": 0,
    "layout": 1,
    "plan": 2,
    "pool": 3,
    "ir": 4,
    "cuda": 5,
    "sim": 5,
    "interop": 5,
    "lang": 6,
    "kernels": 6,
    "gemm": 6,
    "examples": 6,
    "planfile": 6,
    "verify": 6,
    "sim_examples": 6,
    "cli": 6,
    "__main__": 6,
}
ROOT_LAYER = LAYERS["pool"]

# Modules allowed to import tilemem modules inside a function, and why.
LAZY_ALLOWED = {
    "tilemem": "`tilemem.T` loads the kernel language on demand; plan-only use never does",
    "tilemem.cli": "each subcommand loads what it needs; `tilemem plan` stays plan-only",
    "tilemem.plan.model": "`to_cpp_header(cute=True)` loads the CuTe type writer on request",
}


def module_sources(src: Path = SRC) -> dict[str, str]:
    """{dotted module name: source} for every module of the package."""
    out = {}
    for path in sorted((src / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        out[".".join(parts) + (".__init__" if is_package else "")] = path.read_text()
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, type_checking: bool = False):
    """(node, inside a function) for each import, skipping ``if TYPE_CHECKING:`` blocks
    unless ``type_checking``."""

    def walk(node: ast.AST, in_function: bool):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test) and not type_checking:
                for other in child.orelse:
                    yield from walk(other, in_function)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, in_function
            yield from walk(
                child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            )

    yield from walk(tree, False)


def import_graph(
    sources: dict[str, str], type_checking: bool = False
) -> dict[str, set[tuple[str, bool]]]:
    """{module: {(imported tilemem module, lazily)}}; packages are named without ``__init__``.
    With ``type_checking``, imports for annotations count too."""
    names = {m.removesuffix(".__init__") for m in sources}
    graph: dict[str, set[tuple[str, bool]]] = {}
    for module, text in sources.items():
        is_package = module.endswith(".__init__")
        name = module.removesuffix(".__init__")
        package = name if is_package else name.rpartition(".")[0]
        edges: set[tuple[str, bool]] = set()
        for node, lazy in _imports(ast.parse(text), type_checking):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    stem = ".".join(base + ([node.module] if node.module else []))
                else:
                    stem = node.module or ""
                # `from pkg import submodule` depends on the submodule itself
                targets = [
                    f"{stem}.{a.name}" if f"{stem}.{a.name}" in names else stem for a in node.names
                ]
            edges |= {(t, lazy) for t in targets if t in names and t != name}
        graph[name] = edges
    return graph


def layer(module: str) -> int:
    parts = module.split(".")
    return ROOT_LAYER if len(parts) == 1 else LAYERS[parts[1]]


def upward_imports(graph) -> list[str]:
    return sorted(
        f"{m} (layer {layer(m)}) imports {t} (layer {layer(t)})"
        for m, edges in graph.items()
        for t, lazy in edges
        if layer(t) > layer(m) and not (lazy and m in LAZY_ALLOWED)
    )


def cycles(graph) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w, _ in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def folder_cycles(graph) -> list[list[str]]:
    """Cycles among the modules of one folder, counting imports made only for annotations:
    inside a folder the listing reads bottom-up (data first, the modules that read it after),
    so no module may name one that names it back."""
    found = []
    for folder in sorted({m.rpartition(".")[0] for m in graph}):
        inside = {
            m: {(t, lazy) for t, lazy in edges if t.rpartition(".")[0] == folder}
            for m, edges in graph.items()
            if m.rpartition(".")[0] == folder
        }
        found += cycles(inside)
    return found


def lazy_imports(graph) -> list[str]:
    return sorted(
        f"{m} imports {t} inside a function"
        for m, edges in graph.items()
        for t, lazy in edges
        if lazy and m not in LAZY_ALLOWED
    )


@pytest.fixture(scope="module")
def graph():
    return import_graph(module_sources())


def test_the_import_graph_has_no_cycles(graph):
    assert cycles(graph) == []


def test_no_folder_has_an_import_circle_even_for_annotations():
    assert folder_cycles(import_graph(module_sources(), type_checking=True)) == []


def test_imports_point_down_the_layer_order(graph):
    assert upward_imports(graph) == []


def test_no_lazy_imports_of_tilemem_modules(graph):
    assert lazy_imports(graph) == []


def test_every_module_has_a_layer(graph):
    assert {m.split(".")[1] for m in graph if "." in m} <= set(LAYERS)


# The checker itself, on small made-up packages.


def test_checker_finds_a_cycle_hidden_by_a_lazy_import():
    sources = {
        "tilemem.__init__": "",
        "tilemem.plan.__init__": "",
        "tilemem.plan.a": "from .b import x\n",
        "tilemem.plan.b": "def f():\n    from .a import y\n",
    }
    g = import_graph(sources)
    assert cycles(g) == [["tilemem.plan.a", "tilemem.plan.b"]]
    assert lazy_imports(g) == ["tilemem.plan.b imports tilemem.plan.a inside a function"]


def test_checker_finds_an_upward_import_and_ignores_type_checking_blocks():
    sources = {
        "tilemem.__init__": "",
        "tilemem.cuda.__init__": "",
        "tilemem.cuda.tma": "",
        "tilemem.plan.__init__": "",
        "tilemem.plan.model": "from ..cuda import tma\n",
        "tilemem.plan.format": "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from ..cuda.tma import X\n",
    }
    g = import_graph(sources)
    assert upward_imports(g) == ["tilemem.plan.model (layer 2) imports tilemem.cuda.tma (layer 5)"]
    assert g["tilemem.plan.format"] == set()


def test_checker_finds_a_folder_circle_made_by_annotations():
    # the shape plan/model.py and its exporters had: the model imports the exporter, the
    # exporter names the model back for its annotations only
    sources = {
        "tilemem.__init__": "",
        "tilemem.plan.__init__": "",
        "tilemem.plan.model": "from .svg import plan_svg\n",
        "tilemem.plan.svg": "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from .model import MemoryPlan\n",
        "tilemem.pool.__init__": "",
        "tilemem.pool.smem": "from ..plan.model import MemoryPlan\n",
    }
    assert cycles(import_graph(sources)) == []
    assert folder_cycles(import_graph(sources, type_checking=True)) == [
        ["tilemem.plan.model", "tilemem.plan.svg"]
    ]
