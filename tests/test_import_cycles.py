"""No import cycles among the product's modules.

The graph is read from the source (nothing is imported), with every import statement counted
wherever it stands: an import inside a function still runs, so moving one into a function hides
a cycle without breaking it. Importing ``a.b.c`` also runs ``a/b/__init__.py``, so a module depends
on every package above what it imports, except its own packages (they are already importing).

Imports under ``if TYPE_CHECKING:`` are left out: they never run (every module defers its
annotations), so they only tell the type checker what a name means.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"mast_otel.instrumentation": "instrumentation", "mast_otel.processors": "processors",
            "mast_otel.demo": "demo"}


def _modules() -> dict[str, tuple[Path, bool]]:
    """Each product module's dotted name -> (its file, whether it is a package's ``__init__``)."""
    found: dict[str, tuple[Path, bool]] = {}
    for package, folder in PACKAGES.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if any(p.startswith(".") for p in parts):
                continue
            is_package = parts[-1] == "__init__"
            found[".".join([package, *(parts[:-1] if is_package else parts)])] = (path, is_package)
    return found


def _type_checking_only(tree: ast.AST) -> set[int]:
    """The ids of the nodes under an ``if TYPE_CHECKING:`` block."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            skipped.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return skipped


def _imported(name: str, path: Path, is_package: bool, modules: dict) -> set[str]:
    """The product modules ``name`` runs when it is imported or any of its functions is called."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    skipped = _type_checking_only(tree)
    here = name if is_package else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            targets.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")[: len(here.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:  # ``from pkg import sub`` imports the submodule
                targets.add(f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source)
    own = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
    edges: set[str] = set()
    for target in targets:
        parts = target.split(".")
        for i in range(1, len(parts) + 1):  # the packages above it run first
            step = ".".join(parts[:i])
            if step in modules and step not in own and step != name:
                edges.add(step)
    return edges


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imported(name, path, is_package, modules) for name, (path, is_package) in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def test_the_product_modules_import_each_other_without_a_cycle() -> None:
    graph = import_graph()
    assert len(graph) > 100 and graph["mast_otel.processors.team"], "the graph must see the product's modules"
    found = cycles(graph)
    report = "\n".join(
        " <-> ".join(group) + "\n" + "\n".join(f"    {m} imports {sorted(graph[m] & set(group))}" for m in group)
        for group in found)
    assert not found, f"import cycles:\n{report}"


def test_the_graph_counts_imports_inside_functions_and_packages_above(tmp_path: Path) -> None:
    """The cycle finder sees a cycle closed only by an import in a function, through a package."""
    modules = {"p": (None, True), "p.a": (None, False), "q": (None, True), "q.b": (None, False)}
    graph = {"p": {"p.a"}, "p.a": {"q", "q.b"}, "q": set(), "q.b": {"p"}}
    assert cycles(graph) == [["p", "p.a", "q.b"]]
    path = tmp_path / "b.py"
    path.write_text("def f():\n    from p.a import x\n", encoding="utf-8")
    assert _imported("q.b", path, False, modules) == {"p", "p.a"}
    path.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from p.a import x\n", encoding="utf-8")
    assert _imported("q.b", path, False, modules) == set()


# Modules kept only so users' old imports work; the product imports what they point at.
ALIASES = {"mast_otel.instrumentation.attributes": "mast_otel.wire.attributes",
           "mast_otel.instrumentation.claims": "mast_otel.wire.claims",
           "mast_otel.instrumentation.hashing": "mast_otel.wire.hashing"}


def test_the_product_imports_no_alias_kept_for_users() -> None:
    graph = import_graph()
    assert set(ALIASES) <= set(graph), "an alias module is gone: update ALIASES"
    users = {f"{name} imports {alias} (use {real})" for name, edges in graph.items() if name not in ALIASES
             for alias, real in ALIASES.items() if alias in edges}
    assert not users, "\n".join(sorted(users))


SERVICE = "mast_otel.processors.service"


def service_parts(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The processor service's parts (its sub-packages and top modules), each with the other parts
    its modules import."""
    def part(module: str) -> str | None:
        return module[len(SERVICE) + 1:].split(".")[0] if module.startswith(SERVICE + ".") else None

    parts: dict[str, set[str]] = {}
    for name, edges in graph.items():
        here = part(name)
        if here is not None:
            parts.setdefault(here, set()).update(p for p in map(part, edges) if p is not None and p != here)
    return parts


def test_the_service_parts_import_each_other_without_a_cycle() -> None:
    """Modules can import each other without a cycle while their packages do not (``store``
    importing ``outputs.base`` while ``outputs.store`` imports ``store``): the service's parts
    stand in layers, so each can be read knowing only the parts it imports."""
    parts = service_parts(import_graph())
    assert {"api", "receivers", "pipeline", "outputs", "store", "auth"} <= set(parts), "the parts must be seen"
    found = cycles(parts)
    assert not found, "cycles between the service's parts:\n" + "\n".join(" <-> ".join(group) for group in found)


def test_the_parts_are_read_from_the_modules_they_hold() -> None:
    graph = {f"{SERVICE}.a.x": {f"{SERVICE}.b.y", "mast_otel.processors.model"}, f"{SERVICE}.b.y": {f"{SERVICE}.a"},
             f"{SERVICE}.a": set(), f"{SERVICE}.server": {f"{SERVICE}.a.x"}}
    assert service_parts(graph) == {"a": {"b"}, "b": {"a"}, "server": {"a"}}
    assert cycles(service_parts(graph)) == [["a", "b"]]


# The service's parts in the order its docstring and docs/processor.md list them: each imports
# only the component protocol and the parts after it.
LAYERS = ["api", "receivers", "pipeline", "outputs", "wal", "store", "auth", "memory", "telemetry"]


def test_each_service_part_imports_only_the_parts_listed_after_it() -> None:
    parts = service_parts(import_graph())
    packages = {p for p in parts if (ROOT / "processors" / "service" / p).is_dir()}
    assert packages == set(LAYERS), "a part was added or removed: list it in LAYERS, the docstring and the docs"
    upward = {f"{part} imports {sorted(parts[part] - set(LAYERS[i + 1:]) - {'component'})}"
              for i, part in enumerate(LAYERS) if parts[part] - set(LAYERS[i + 1:]) - {"component"}}
    assert not upward, "\n".join(sorted(upward))
