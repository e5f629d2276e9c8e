"""sim, runtime and the chaos history/checkers sit below the region process: no web framework, no event loop.

The simulator hosts engines and replication nodes (it sits beside `region`, above `replication`), so sim/ may import
engine and replication; runtime and the history/checkers import neither, so they serve offline analysis of recorded
histories as well as the simulator.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "globaltables"
FORBIDDEN_TOP = {"aiohttp", "asyncio", "uvloop", "socket", "threading"}
ABOVE_SIM = {"region", "cli", "experiment"}
ABOVE_RUNTIME = ABOVE_SIM | {"engine", "replication", "sim"}
CHECKED = [
    *((path, ABOVE_SIM) for path in sorted((PACKAGE / "sim").rglob("*.py"))),
    *((path, ABOVE_RUNTIME) for path in (PACKAGE / "runtime" / "transport.py", PACKAGE / "runtime" / "rng.py",
                                         PACKAGE / "chaos" / "history.py")),
    *((path, ABOVE_RUNTIME) for path in sorted((PACKAGE / "chaos" / "checkers").rglob("*.py"))),
]


def absolute_imports(path: Path) -> list[tuple[int, str]]:
    package = list(path.relative_to(SRC).parent.parts)
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - (node.level - 1)] if node.level else []
            found.append((node.lineno, ".".join(base + ([node.module] if node.module else []))))
    return found


def test_simulator_runtime_and_history_modules_import_nothing_above_them():
    violations = []
    for path, forbidden_siblings in CHECKED:
        for line, module in absolute_imports(path):
            parts = module.split(".")
            if parts[0] in FORBIDDEN_TOP or (parts[0] == "globaltables" and len(parts) > 1 and
                                              parts[1] in forbidden_siblings):
                violations.append(f"{path.relative_to(SRC)}:{line} imports {module}")
    assert not violations, "\n".join(violations)


def test_importing_them_loads_no_web_or_event_loop_modules():
    probe = (
        "import sys, globaltables.sim.network, globaltables.sim.clock, globaltables.chaos.history\n"
        "import globaltables.chaos.checkers.lww, globaltables.chaos.checkers.convergence\n"
        "bad = [n for n in ('aiohttp', 'asyncio', 'globaltables.engine', 'globaltables.region') if n in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                            env={"PYTHONPATH": str(SRC)}, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""
