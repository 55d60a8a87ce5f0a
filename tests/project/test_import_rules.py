"""The import rules of docs/contracts.md, checked over the source tree's real imports
(every ``import`` statement, at module top or inside a function): each package imports
only the packages below it, and no two packages or modules import each other, directly or
round a longer circle."""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# package -> the project packages it may import (docs/contracts.md, "Floors")
MAY_IMPORT = {
    "dataset_spec": set(),
    "ptx_tools": {"dataset_spec"},
    "builders": {"dataset_spec", "ptx_tools"},
    "verify": {"dataset_spec", "ptx_tools"},
    "ptxds": {"builders", "verify", "dataset_spec", "ptx_tools"},
}
# leaf modules: import no module of the project at all
LEAVES = ("dataset_spec.errors", "dataset_spec.store.group_stats")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, modules: set) -> set:
    """Project modules ``path`` imports (``from pkg import name`` counts ``pkg.name`` when
    that is a module, else ``pkg``)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            targets = [(base, [alias.name for alias in node.names])]
        else:
            continue
        for base, names in targets:
            if base.split(".")[0] not in MAY_IMPORT:
                continue
            subs = [f"{base}.{n}" for n in names if f"{base}.{n}" in modules]
            found.update(subs or [base])
    found.discard(name)
    return found


def import_graph() -> dict:
    files = [p for pkg in MAY_IMPORT for p in (ROOT / pkg).rglob("*.py")]
    modules = {module_name(p) for p in files}
    return {module_name(p): imported_modules(p, modules) for p in files}


def cycles(graph: dict) -> list:
    """Strongly connected components with more than one node (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


@pytest.fixture(scope="module")
def graph():
    return import_graph()


def test_each_package_imports_only_the_floors_below_it(graph):
    broken = sorted(f"{mod} -> {dep}" for mod, deps in graph.items() for dep in deps
                    if dep.split(".")[0] != mod.split(".")[0]
                    and dep.split(".")[0] not in MAY_IMPORT[mod.split(".")[0]])
    assert broken == []


def test_no_circle_between_packages(graph):
    packages = defaultdict(set)
    for mod, deps in graph.items():
        packages[mod.split(".")[0]].update(d.split(".")[0] for d in deps if d.split(".")[0] != mod.split(".")[0])
    assert cycles(packages) == []


def test_no_circle_between_modules(graph):
    # a package's __init__ re-exporting its own modules is not a circle: leave those edges out
    plain = {mod: {d for d in deps if not (d.startswith(mod + ".") or mod.startswith(d + ".") and
                                            (ROOT / Path(*d.split("."))).is_dir())}
             for mod, deps in graph.items()}
    assert cycles(plain) == []


def test_leaf_modules_import_no_project_module(graph):
    assert {leaf: sorted(graph[leaf]) for leaf in LEAVES} == {leaf: [] for leaf in LEAVES}


def test_the_checker_sees_a_back_arrow(tmp_path):
    """The rule test itself can fail: a builder importing ptxds is reported."""
    bad = {"builders.x": {"ptxds.finalize"}, "ptxds.finalize": set()}
    assert [f"{m} -> {d}" for m, ds in bad.items() for d in ds
            if d.split(".")[0] not in MAY_IMPORT[m.split(".")[0]]] == ["builders.x -> ptxds.finalize"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
