"""The package's import graph, read from the source with `ast` (nothing is imported): which layer each module may
import, and whether any modules import each other in a cycle.

An import counts wherever it stands: at module level, inside a function (a deferred import is still a dependency)
or under `if TYPE_CHECKING:` (a type the module names is a concept it depends on). The cycle check looks only at
imports that run when the module loads (module level, not under TYPE_CHECKING): those are the ones that make a
module unloadable on its own.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import networkx as nx


@dataclass(frozen=True)
class Import:
    source: str  # the importing module, e.g. globaltables.engine.engine
    target: str  # the imported module (or module.name for `from x import name`), absolute
    line: int
    at_load: bool  # module level and not under TYPE_CHECKING


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(path: Path, root: Path) -> list[Import]:
    """Every import in `path` (a module under `root`, the folder holding the top package), relative ones resolved."""
    source = module_name(path, root)
    package = source.split(".") if path.name == "__init__.py" else source.split(".")[:-1]
    found: list[Import] = []

    def visit(node: ast.AST, at_load: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(child, False)
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for statement in child.body:
                    visit(ast.Module(body=[statement], type_ignores=[]), False)
                for statement in child.orelse:
                    visit(ast.Module(body=[statement], type_ignores=[]), at_load)
            elif isinstance(child, ast.Import):
                found.extend(Import(source, alias.name, child.lineno, at_load) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package[: len(package) - (child.level - 1)]
                    module = ".".join(base + ([child.module] if child.module else []))
                else:
                    module = child.module or ""
                if child.module:
                    found.append(Import(source, module, child.lineno, at_load))
                # `from . import x`, `from .pkg import mod`: the names may be submodules; each is its own edge.
                found.extend(Import(source, f"{module}.{alias.name}", child.lineno, at_load) for alias in child.names)
            else:
                visit(child, at_load)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), True)
    return found


def package_imports(root: Path, package: str) -> list[Import]:
    return [imp for path in sorted((root / package).rglob("*.py")) for imp in imports_of(path, root)]


def layer_of(module: str, package: str) -> str | None:
    """The layer (first sub-package) of a module of `package`; '' for the package itself; None outside it."""
    parts = module.split(".")
    if parts[0] != package:
        return None
    return parts[1] if len(parts) > 1 else ""


def forbidden_edges(imports: Iterable[Import], package: str, allowed: Mapping[str, set[str]]) -> list[str]:
    """Imports from one layer of `package` into a layer its entry in `allowed` does not list, one line per import
    statement and layer ("module:line imports target: A may not import B")."""
    problems: dict[tuple[str, int, str], str] = {}
    for imp in imports:
        source_layer, target_layer = layer_of(imp.source, package), layer_of(imp.target, package)
        if target_layer is None or target_layer == source_layer or target_layer == "":
            continue
        where = (imp.source, imp.line, target_layer)
        if source_layer not in allowed:
            problems.setdefault(where, f"{imp.source}:{imp.line}: layer {source_layer!r} is not in the layer table")
        elif target_layer not in allowed[source_layer]:
            problems.setdefault(where, f"{imp.source}:{imp.line} imports {imp.target}: {source_layer} may not "
                                       f"import {target_layer}")  # fmt: skip
    return list(problems.values())


def forbidden_modules(imports: Iterable[Import], package: str, layers: set[str], modules: set[str]) -> list[str]:
    """Imports of standard modules (time, random, uuid, ...) from the layers that must have them injected."""
    return [
        f"{imp.source}:{imp.line} imports {imp.target}"
        for imp in imports
        if layer_of(imp.source, package) in layers and imp.target.split(".")[0] in modules
    ]


def cycles(imports: Iterable[Import], modules: set[str]) -> list[list[str]]:
    """Module-level import cycles among `modules` (each cycle as the modules on it, sorted within)."""
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for imp in imports:
        if not imp.at_load:
            continue
        target = imp.target
        while target and target not in modules:  # `from pkg.mod import name` names pkg.mod
            target = target.rpartition(".")[0]
        if target and target != imp.source:
            graph.add_edge(imp.source, target)
    found = [sorted(component) for component in nx.strongly_connected_components(graph) if len(component) > 1]
    return sorted(found)


def all_modules(root: Path, package: str) -> set[str]:
    return {module_name(path, root) for path in (root / package).rglob("*.py")}
