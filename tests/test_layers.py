"""The import direction of the package (ARCHITECTURE.md §8), checked on the source itself (tests/import_graph.py
reads every module's imports with `ast`, wherever they stand).

The engine is a leaf: it must run unchanged under the deterministic simulator, so it reads no clock, draws no
randomness, opens no socket and knows no event loop or web framework; time comes from the injected clock.
Inside the package it may import only itself, `runtime` (the seams: Clock and friends) and `topology` (plain data).
The layer table below says so for the engine as for every layer, and CORE_FORBIDDEN names the modules the cores must
not reach for.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "globaltables"


def test_import_resolution_of_the_checker():
    from import_graph import imports_of

    modules = {imp.target for imp in imports_of(PACKAGE / "engine" / "engine.py", SRC)}
    assert "globaltables.runtime.clock" in modules and "globaltables.engine.errors" in modules


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


# ------------------------------------------------------------------------------------ the whole package's graph

# Which layers each layer may import (a layer always imports itself). The README's "Layout" names the order:
# runtime <- topology <- engine <- replication <- sim, region <- chaos <- experiment <- testing, cli.
LAYERS = {
    "runtime": set(),
    "topology": {"runtime"},
    "engine": {"topology", "runtime"},
    "replication": {"engine", "topology", "runtime"},
    "sim": {"replication", "engine", "topology", "runtime"},
    "region": {"replication", "engine", "topology", "runtime"},
    "chaos": {"sim", "region", "replication", "engine", "topology", "runtime"},
    "experiment": {"chaos", "sim", "region", "replication", "engine", "topology", "runtime"},
    "testing": {"experiment", "chaos", "sim", "region", "replication", "engine", "topology", "runtime"},
    "cli": {"experiment", "chaos", "sim", "region", "replication", "engine", "topology", "runtime"},
}
# Edges that climb a layer today, each with where it is and why it is not gone yet; the test fails when one of them
# disappears (so the table shrinks with the code) as well as when a new one appears.
KNOWN_UPWARD = {
    ("sim", "chaos"): "sim/cluster.py and sim/mrsc_cluster.py record operations into chaos.history's History "
    "(and register conditions with chaos.conditions): the history of operations belongs below the hosts",
}
# The cores take clock, randomness and identifiers from their hosts (runtime's seams), never from the library.
CORES = {"engine", "replication"}
CORE_FORBIDDEN = {"uuid", "time", "random", "secrets", "asyncio", "aiohttp", "socket", "threading", "uvloop", "http"}


def _graph(root: Path = SRC, package: str = "globaltables"):
    from import_graph import all_modules, package_imports

    return package_imports(root, package), all_modules(root, package)


def _layer_problems(root: Path, package: str, layers, known_upward) -> list[str]:
    from import_graph import forbidden_edges

    imports, _ = _graph(root, package)
    allowed = {layer: set(targets) | {t for (s, t) in known_upward if s == layer} for layer, targets in layers.items()}
    problems = forbidden_edges(imports, package, allowed)
    seen = {
        pair for pair in known_upward
        if any(imp.source.split(".")[1:2] == [pair[0]] and imp.target.split(".")[1:2] == [pair[1]] for imp in imports)
    }  # fmt: skip
    problems += [f"the known upward edge {a} -> {b} is gone: remove it from KNOWN_UPWARD" for a, b in
                 sorted(set(known_upward) - seen)]  # fmt: skip
    return problems


def test_every_import_follows_the_layer_table():
    assert set(LAYERS) == {path.name for path in PACKAGE.iterdir() if (path / "__init__.py").exists()}
    problems = _layer_problems(SRC, "globaltables", LAYERS, KNOWN_UPWARD)
    assert not problems, "\n".join(problems)


def test_no_module_imports_itself_back_at_load_time():
    from import_graph import cycles

    imports, modules = _graph()
    found = cycles(imports, modules)
    assert not found, "\n".join(" <-> ".join(cycle) for cycle in found)


def test_the_cores_read_no_clock_randomness_or_ids_of_their_own():
    from import_graph import forbidden_modules

    imports, _ = _graph()
    problems = forbidden_modules(imports, "globaltables", CORES, CORE_FORBIDDEN)
    assert not problems, "\n".join(problems)


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_checkers_catch_planted_violations_in_a_synthetic_tree(tmp_path: Path):
    # A small package with one of each defect: the checks above must see every one, wherever the import stands.
    from import_graph import cycles, forbidden_modules

    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/low/__init__.py": "",
        "pkg/low/a.py": "from . import b\n",  # a <-> b: a cycle at load time
        "pkg/low/b.py": "from .a import thing\n",
        "pkg/low/c.py": "def f():\n    from ..high import h\n",  # an upward import hidden in a function
        "pkg/low/d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.high.h import H\n",
        "pkg/low/e.py": "import uuid\n",  # randomness reached for in a core
        "pkg/high/__init__.py": "",
        "pkg/high/h.py": "from ..low import a\n",  # allowed: down a layer
    })  # fmt: skip
    layers = {"low": set(), "high": {"low"}}
    problems = _layer_problems(tmp_path, "pkg", layers, {})
    assert problems == [
        "pkg.low.c:2 imports pkg.high: low may not import high",
        "pkg.low.d:3 imports pkg.high.h: low may not import high",
    ]
    imports, modules = _graph(tmp_path, "pkg")
    assert cycles(imports, modules) == [["pkg.low.a", "pkg.low.b"]]
    assert forbidden_modules(imports, "pkg", {"low"}, {"uuid"}) == ["pkg.low.e:1 imports uuid"]
    # A known upward edge is allowed while it exists, and reported once it is gone.
    assert _layer_problems(tmp_path, "pkg", layers, {("low", "high"): "planted"}) == []
    (tmp_path / "pkg/low/c.py").write_text("")
    (tmp_path / "pkg/low/d.py").write_text("")
    assert _layer_problems(tmp_path, "pkg", layers, {("low", "high"): "planted"}) == [
        "the known upward edge low -> high is gone: remove it from KNOWN_UPWARD"
    ]


def test_the_real_tables_refuse_what_the_engine_must_not_import(tmp_path: Path):
    # The engine's rules, planted in a tree laid out as the package: each defect is reported by the checks the real
    # source passes, with the real LAYERS and CORE_FORBIDDEN (and the package's own __init__ may import no layer, so
    # importing the bare package reaches nothing above the engine).
    from import_graph import forbidden_modules

    _write(tmp_path, {
        "globaltables/__init__.py": "from .cli import main\n",
        "globaltables/cli/__init__.py": "",
        "globaltables/region/__init__.py": "",
        "globaltables/engine/__init__.py": "",
        "globaltables/engine/ok.py": "from ..runtime.clock import Clock\nfrom . import errors\n",
        "globaltables/engine/up.py": "def f():\n    from ..region import app\n",
        "globaltables/engine/io.py": "import http.client\nimport time\nimport asyncio\n",
    })  # fmt: skip
    assert sorted(_layer_problems(tmp_path, "globaltables", LAYERS, {})) == [
        "globaltables.engine.up:2 imports globaltables.region: engine may not import region",
        "globaltables:1: layer '' is not in the layer table",
    ]
    imports, _ = _graph(tmp_path, "globaltables")
    assert forbidden_modules(imports, "globaltables", CORES, CORE_FORBIDDEN) == [
        "globaltables.engine.io:1 imports http.client",
        "globaltables.engine.io:2 imports time",
        "globaltables.engine.io:3 imports asyncio",
    ]
