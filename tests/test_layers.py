"""Imports run one way (recsql/layers.py): the import graph, read from the source with ``ast``,
has no circle, no import of a higher layer and no import of another module's private names; every
module is in exactly one layer and no module is longer than the table allows. The checker is
tested too, on small graphs made up for it."""
from __future__ import annotations

import ast
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "recsql"


class Import(NamedTuple):
    """One import of a recsql module: who imports, what, which name (None: the module itself), where."""

    importer: str
    module: str
    name: str | None
    line: int


def declared() -> tuple[tuple[tuple[str, str, tuple[str, ...]], ...], int]:
    """recsql/layers.py's LAYERS and MAX_LINES, read without importing recsql."""
    tree = ast.parse((PACKAGE / "layers.py").read_text(encoding="utf-8"))
    values = {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body
              if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)}
    return values["LAYERS"], values["MAX_LINES"]


def modules(root: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its own name)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _type_checking_only(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def imports_of(name: str, path: Path, known: set[str]) -> list[Import]:
    """The imports of recsql modules in one module (inside functions too; not those under
    ``if TYPE_CHECKING:``): ``from m import n`` is an import of module ``m.n`` when that is a module,
    else of name ``n`` of ``m``; ``m._n`` read from an imported module ``m`` is an import of ``_n``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found: list[Import] = []
    aliases: dict[str, str] = {}  # a local name -> the recsql module it names
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)) or _type_checking_only(node, parents):
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "recsql":
                    found.append(Import(name, alias.name, None, node.lineno))
                    if alias.asname:
                        aliases[alias.asname] = alias.name
            continue
        base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else [])) \
            if node.level else node.module
        if not base or base.split(".")[0] != "recsql":
            continue
        for alias in node.names:
            if f"{base}.{alias.name}" in known:
                found.append(Import(name, f"{base}.{alias.name}", None, node.lineno))
                aliases[alias.asname or alias.name] = f"{base}.{alias.name}"
            else:
                found.append(Import(name, base, alias.name, node.lineno))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            found.append(Import(name, aliases[node.value.id], node.attr, node.lineno))
    return found


def import_graph(root: Path = PACKAGE) -> list[Import]:
    """Every import of a recsql module by a recsql module."""
    known = modules(root)
    return [i for name, path in known.items() for i in imports_of(name, path, set(known))]


def _edges(imports: list[Import]) -> dict[str, set[str]]:
    """Importer -> the modules it depends on: each one it imports and, since importing ``a.b.c`` runs
    ``a/__init__.py`` and ``a/b/__init__.py`` first, the packages above it (but the importer's own)."""
    edges: dict[str, set[str]] = {}
    for i in imports:
        parts = i.module.split(".")
        for depth in range(1, len(parts) + 1):
            target = ".".join(parts[:depth])
            if target != i.importer and not i.importer.startswith(target + "."):
                edges.setdefault(i.importer, set()).add(target)
    return edges


def circles(imports: list[Import]) -> list[list[str]]:
    """The import circles: each strongly connected set of two or more modules (Tarjan's algorithm,
    without recursion)."""
    edges = _edges(imports)
    nodes = sorted(set(edges) | {t for targets in edges.values() for t in targets})
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
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
                        found.append(sorted(group))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(edges.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def problems(imports: list[Import], layers, known: set[str]) -> list[str]:
    """What breaks the rule, one line each: a circle, an import of a higher layer, an import of
    another module's private name, a module in no layer or in two, a layer naming no module."""
    level: dict[str, int] = {}
    said = []
    for number, (layer, _, members) in enumerate(layers):
        for module in members:
            if module in level:
                said.append(f"{module} is in two layers")
            if module not in known:
                said.append(f"layer {layer} names {module}, which is not a module")
            level[module] = number
    said += [f"{module} is in no layer (recsql/layers.py)" for module in sorted(known - set(level))]
    names = [layer for layer, _, _ in layers]
    for importer, targets in sorted(_edges(imports).items()):
        for target in sorted(targets):
            if importer in level and target in level and level[target] > level[importer]:
                said.append(f"{importer} ({names[level[importer]]}) imports {target}, a higher layer "
                            f"({names[level[target]]})")
    for i in imports:
        if i.name and i.name.startswith("_") and not i.name.startswith("__") and i.module != i.importer:
            said.append(f"{i.importer} line {i.line} reads {i.name}, a private name of {i.module}")
    said += [f"an import circle: {' <-> '.join(group)}" for group in circles(imports)]
    return said


# ---------------------------------------------------------------- the package


def test_imports_follow_the_layers():
    layers, _ = declared()
    assert problems(import_graph(), layers, set(modules())) == []


def test_no_module_is_longer_than_the_table_allows():
    _, most = declared()
    long = {name: n for name, path in modules().items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > most}
    assert long == {}


def test_the_graph_is_read_from_the_source():
    """The reading finds what the modules are known to import (so an empty graph cannot pass)."""
    graph = {(i.importer, i.module, i.name) for i in import_graph()}
    assert ("recsql.api", "recsql.request", "checked_request") in graph
    assert ("recsql.comparison", "recsql.api", "evaluate") in graph
    assert ("recsql.metrics", "recsql.specs", "registry") in graph
    assert ("recsql.cli", "recsql.api", None) in graph  # `from . import api`, inside a function
    assert not any(i.importer == "recsql.report.data" and i.module == "recsql.comparison_result" for i in import_graph())


# ---------------------------------------------------------------- the checker, on made-up graphs

LAYERS = (("low", "", ("p.a", "p.b")), ("high", "", ("p.c", "p.d", "p.d.e")))
KNOWN = {"p.a", "p.b", "p.c", "p.d", "p.d.e"}
DOWNWARD = [Import("p.c", "p.a", "f", 1), Import("p.b", "p.a", None, 2), Import("p.d", "p.d.e", "g", 3)]


def test_the_checker_passes_imports_that_go_down():
    assert problems(DOWNWARD, LAYERS, KNOWN) == []


def test_the_checker_fails_on_an_upward_import():
    assert problems([*DOWNWARD, Import("p.b", "p.c", "h", 7)], LAYERS, KNOWN) == \
        ["p.b (low) imports p.c, a higher layer (high)"]


def test_the_checker_counts_the_package_an_import_runs():
    # importing p.d.e runs p/d/__init__.py: an upward import of p.d, not only of p.d.e
    said = problems([*DOWNWARD, Import("p.b", "p.d.e", None, 4)], LAYERS, KNOWN)
    assert said == ["p.b (low) imports p.d, a higher layer (high)", "p.b (low) imports p.d.e, a higher layer (high)"]


def test_the_checker_fails_on_a_circle_within_a_layer():
    said = problems([*DOWNWARD, Import("p.a", "p.b", "k", 5)], LAYERS, KNOWN)
    assert said == ["an import circle: p.a <-> p.b"]


def test_the_checker_fails_on_a_private_name_and_on_modules_outside_the_table():
    said = problems([*DOWNWARD, Import("p.c", "p.d", "_helper", 9)], LAYERS, KNOWN | {"p.z"})
    assert said == ["p.z is in no layer (recsql/layers.py)", "p.c line 9 reads _helper, a private name of p.d"]


def test_the_reader_finds_imports_in_functions_and_private_attributes(tmp_path):
    package = tmp_path / "recsql"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "low.py").write_text("from . import high\n\ndef f():\n    return high._secret\n")
    (package / "high.py").write_text("def g():\n    from .low import f\n    return f\n")
    (package / "sub" / "__init__.py").write_text("from ..low import f as _f\n")
    (package / "sub" / "leaf.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                             "    from ..high import g\nfrom . import _x\n")
    graph = sorted(import_graph(package), key=lambda i: (i.importer, i.module, i.name or "", i.line))
    assert graph == [Import("recsql.high", "recsql.low", "f", 2),
                     Import("recsql.low", "recsql.high", None, 1),
                     Import("recsql.low", "recsql.high", "_secret", 4),
                     Import("recsql.sub", "recsql.low", "f", 1),
                     Import("recsql.sub.leaf", "recsql.sub", "_x", 4)]
    layers = (("one", "", ("recsql", "recsql.low", "recsql.high", "recsql.sub", "recsql.sub.leaf")),)
    assert problems(graph, layers, set(modules(package))) == [
        "recsql.low line 4 reads _secret, a private name of recsql.high",
        "recsql.sub.leaf line 4 reads _x, a private name of recsql.sub",
        "an import circle: recsql.high <-> recsql.low"]
