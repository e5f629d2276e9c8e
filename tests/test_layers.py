"""The import direction of the package (ARCHITECTURE.md §8), checked on the source itself.

The engine is a leaf: it must run unchanged under the deterministic simulator, so it reads no clock, draws no
randomness, opens no socket and knows no event loop or web framework; time comes from the injected clock.
Inside the package it may import only itself and `runtime` (the seams: Clock and friends).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "globaltables"

ENGINE_FORBIDDEN_MODULES = {"aiohttp", "asyncio", "socket", "time", "random", "uvloop", "threading", "http"}
ENGINE_ALLOWED_SIBLINGS = {"engine", "runtime"}


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in a module of the package, relative ones resolved."""
    # The package a module lives in: its folder (for `__init__.py` too, whose own name is the folder's).
    package_parts = list(path.relative_to(SRC).parent.parts)
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package_parts[: len(package_parts) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            # `from . import x` / `from .. import runtime` import submodules named in the alias list.
            found.extend((node.lineno, f"{module}.{alias.name}") for alias in node.names if not node.module)
    return found


def test_import_resolution_of_this_checker():
    engine_module = PACKAGE / "engine" / "engine.py"
    modules = {name for _, name in imports_of(engine_module)}
    assert "globaltables.runtime.clock" in modules and "globaltables.engine.errors" in modules


def test_engine_imports_no_io_time_or_randomness_and_no_higher_layer():
    violations = []
    for path in sorted((PACKAGE / "engine").rglob("*.py")):
        for line, module in imports_of(path):
            top = module.split(".")[0]
            where = f"{path.relative_to(SRC)}:{line} imports {module}"
            if top in ENGINE_FORBIDDEN_MODULES:
                violations.append(where)
            elif top == "globaltables":
                sibling = module.split(".")[1] if "." in module else ""
                if sibling not in ENGINE_ALLOWED_SIBLINGS:
                    violations.append(where)
    assert not violations, "\n".join(violations)


def test_importing_the_engine_loads_no_web_or_event_loop_modules():
    # The AST check misses imports done by third-party modules the engine uses; this one sees the real process.
    probe = (
        "import sys, pkgutil, importlib, globaltables.engine as e\n"
        "for m in pkgutil.walk_packages(e.__path__, 'globaltables.engine.'):\n"
        "    importlib.import_module(m.name)\n"
        "bad = sorted(n for n in ('aiohttp', 'asyncio', 'uvloop', 'globaltables.region', 'globaltables.cli')"
        " if n in sys.modules)\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(SRC)},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"importing the engine loaded: {result.stdout.strip()}"
