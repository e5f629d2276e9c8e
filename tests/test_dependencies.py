"""The package runs on what it declares: `pip install -e .` (README's first command) must bring every third-party
package a module imports when it is loaded.

Why: the test extra installs boto3, botocore and more for the suite, so a runtime module that imports one of them
at its top passes every other test and still fails on a machine that installed the package alone. The check reads
each module's top-level imports (those inside functions are lazy: the optional extras and the pytest kit's client
imports), finds the distribution that provides each, and requires it among `project.dependencies` in
pyproject.toml. The pytest kit (`globaltables.testing`) runs under pytest with a client SDK: it is left out.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "globaltables"
LOADED_UNDER_PYTEST = PACKAGE / "testing"


def declared() -> set[str]:
    """Normalised names of the distributions `project.dependencies` lists (markers and versions dropped)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {normalised(re.split(r"[\s;<>=!~\[]", requirement, maxsplit=1)[0]) for requirement in project["dependencies"]}


def normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def top_level_imports(path: Path) -> set[str]:
    """Top-level package names of the imports a module runs when it is loaded: at module level, or in a class body,
    an `if` or a `try` there; not inside functions, and not `if TYPE_CHECKING:` blocks."""
    names: set[str] = set()

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
            elif isinstance(node, ast.If):
                if not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)
            elif isinstance(node, ast.ClassDef):
                visit(node.body)

    visit(ast.parse(path.read_text(), filename=str(path)).body)
    return names


def test_every_module_loads_with_the_declared_dependencies_only():
    providers = importlib.metadata.packages_distributions()
    allowed = declared()
    stdlib = set(sys.stdlib_module_names) | {"__future__", "globaltables"}
    missing: dict[str, list[str]] = {}
    modules = [p for p in sorted(PACKAGE.rglob("*.py")) if LOADED_UNDER_PYTEST not in p.parents]
    assert len(modules) > 100  # the whole package was found
    for module in modules:
        for name in top_level_imports(module) - stdlib:
            distributions = providers.get(name)
            assert distributions, f"{module.relative_to(ROOT)} imports {name}, which no installed distribution provides"
            if not any(normalised(d) in allowed for d in distributions):
                missing.setdefault(f"{name} ({', '.join(distributions)})", []).append(str(module.relative_to(ROOT)))
    assert not missing, f"imported at load time but not in project.dependencies: {missing}"


def test_the_import_scan_sees_what_a_module_loads(tmp_path):
    # The scan itself: a top-level import counts, wherever `if`/`try`/class bodies nest it; a function's does not.
    source = (
        "import os\nfrom json import dumps\nif True:\n    import yaml\ntry:\n    import uvloop\nexcept ImportError:\n"
        "    import asyncio\nclass C:\n    import rich\ndef f():\n    import boto3\nif TYPE_CHECKING:\n    import numpy\n"
    )
    path = tmp_path / "probe.py"
    path.write_text(source)
    assert top_level_imports(path) == {"os", "json", "yaml", "uvloop", "asyncio", "rich"}
