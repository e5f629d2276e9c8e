"""The engine's tests run on both stores: SQLite (what a region keeps on disk, here in memory) and the in-memory
store the simulator uses. The fixture `make_store` gives a fresh, empty store of the test's kind."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from globaltables.engine.storage.memory_store import MemoryStore
from globaltables.engine.storage.sqlite_store import SqliteStore

STORES: dict[str, Callable[[], object]] = {"sqlite": lambda: SqliteStore(None), "memory": MemoryStore}


@pytest.fixture(params=sorted(STORES))
def make_store(request: pytest.FixtureRequest) -> Callable[[], object]:
    return STORES[request.param]
