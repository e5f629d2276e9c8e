"""The pytest plugin (entry point `pytest11: globaltables`): fixtures for conflict-resolution regression tests.

Fixtures
  topology       a running topology (a `Harness`): simulated by default, or real processes. Choose the topology and
                 modes with the marker `@pytest.mark.globaltables(topology=..., modes=("sim", "process"))`, where
                 topology is a YAML path (relative to the test file), an inline dict in the topology schema, or
                 absent (testing.spec.DEFAULT_TOPOLOGY); or override the `globaltables_topology` fixture. Each mode
                 listed runs the test once (ids `[sim]`, `[process]`). A `mode: mrsc` topology runs in process
                 mode only (the simulated harness refuses it by name).
  global_table   `topology.table()`: the topology's first table, with plain-Python items and keys.
Options
  --globaltables-seed N   the seed of every simulated test (default: drawn at random per session and shown in the
                          header). A failing simulated test prints its seed; rerunning with it replays the same
                          event order.
Simulated topologies are fresh per test. Process topologies cost seconds to start, so one is shared per module and
topology; each test gets a fresh history and starts with every fault healed, and tests keep apart by their keys.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

MODES = ("sim", "process")
MARKER = "globaltables"
SEED_KEY = pytest.StashKey[int]()
ITEM_SEED_KEY = pytest.StashKey[int]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("globaltables", "globaltables conflict-resolution kit")
    group.addoption(
        "--globaltables-seed",
        type=int,
        default=None,
        help="seed for simulated global-table tests (default: random per session, printed in the header)",
    )
    group.addoption(
        "--globaltables-attach",
        action="store_true",
        default=False,
        help="process mode: use regions already running where the topology places them (other hosts, "
        "`up --only`, Kubernetes) instead of starting them",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(topology=None, modes=('sim',)): the topology (YAML path, inline dict) and the modes "
        "(sim, process) for the `topology` / `global_table` fixtures",
    )
    seed = config.getoption("--globaltables-seed", default=None)
    config.stash[SEED_KEY] = seed if seed is not None else secrets.randbelow(2**31)


def pytest_report_header(config: pytest.Config) -> str:
    seed = config.stash[SEED_KEY]
    return f"globaltables: simulated seed {seed} (replay with --globaltables-seed {seed})"


def _marker_options(node: Any) -> dict[str, Any]:
    marker = node.get_closest_marker(MARKER)
    return dict(marker.kwargs) if marker is not None else {}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "globaltables_mode" not in metafunc.fixturenames:
        return
    modes = tuple(_marker_options(metafunc.definition).get("modes", ("sim",)))
    unknown = [mode for mode in modes if mode not in MODES]
    if unknown or not modes:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: globaltables modes must be among {MODES}, not {modes}")
    metafunc.parametrize("globaltables_mode", modes, ids=list(modes), scope="function")


@pytest.fixture
def globaltables_mode(request: pytest.FixtureRequest) -> str:
    return getattr(request, "param", "sim")


@pytest.fixture
def globaltables_topology(request: pytest.FixtureRequest) -> Any:
    """The topology to run: the marker's `topology` (a path relative to the test file, or a dict), else None (the
    kit's default). Override this fixture to pick one for a whole module or folder."""
    topology = _marker_options(request.node).get("topology")
    if isinstance(topology, (str, Path)):
        path = Path(topology)
        if not path.is_absolute():
            beside = Path(request.node.fspath).parent / path
            path = beside if beside.exists() else path
        return path
    return topology


@pytest.fixture
def globaltables_seed(request: pytest.FixtureRequest) -> int:
    return request.config.stash[SEED_KEY]


@pytest.fixture(scope="module")
def _globaltables_processes() -> Iterator[dict[Any, Any]]:
    pool: dict[Any, Any] = {}
    try:
        yield pool
    finally:
        for harness in pool.values():
            harness.close()


@pytest.fixture
def topology(
    request: pytest.FixtureRequest, globaltables_mode: str, globaltables_topology: Any, globaltables_seed: int
) -> Iterator[Any]:
    """A running topology: `client(region)`, `table()`, `concurrently`, faults, `advance`, `wait_converged`,
    `assert_eventually` (testing/harness.py)."""
    from .spec import load_spec

    spec = load_spec(globaltables_topology)
    if globaltables_mode == "sim":
        from .simulated import simulated_harness

        harness = simulated_harness(spec, globaltables_seed)
        request.node.stash[ITEM_SEED_KEY] = globaltables_seed
        try:
            yield harness
        finally:
            harness.close()
        return
    from .processes import ProcessHarness
    from .spec import topology_yaml

    pool = request.getfixturevalue("_globaltables_processes")
    identity = topology_yaml(spec)
    harness = pool.get(identity)
    if harness is None:
        harness = pool[identity] = ProcessHarness(spec, attach=request.config.getoption("--globaltables-attach"))
    else:
        harness.reset()
    yield harness


@pytest.fixture
def global_table(topology: Any) -> Any:
    """The topology's first table (a TableHandle: plain-Python items and keys)."""
    return topology.table()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    seed = item.stash.get(ITEM_SEED_KEY, None)
    if seed is not None and report.failed:
        report.sections.append(
            ("globaltables", f"simulated with seed {seed}; replay this exact run with --globaltables-seed {seed}")
        )
