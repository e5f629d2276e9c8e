"""The engine's tests run on both stores: SQLite (what a region keeps on disk, here in memory) and the in-memory
store the simulator uses. The fixture `make_store` gives a fresh, empty store of the test's kind; `regions` two
replicas of one global table on such stores (tests/global_engines.py), driven by hand."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from global_engines import global_engine
from globaltables.engine.storage.memory_store import MemoryStore
from globaltables.engine.storage.sqlite_store import SqliteStore

STORES: dict[str, Callable[[], object]] = {"sqlite": lambda: SqliteStore(None), "memory": MemoryStore}


@pytest.fixture(params=sorted(STORES))
def make_store(request: pytest.FixtureRequest) -> Callable[[], object]:
    return STORES[request.param]


@pytest.fixture
def regions(make_store):
    """(us-east-1, eu-west-1, us-east-1's clock, eu-west-1's clock): replicas of the global table `Orders`."""
    (a, clock_a), (b, clock_b) = (
        global_engine("us-east-1", store=make_store()),
        global_engine("eu-west-1", store=make_store()),
    )
    return a, b, clock_a, clock_b
