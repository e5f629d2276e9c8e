"""An engine holding one replica of a global table, for tests that drive replication by hand (no network)."""

from __future__ import annotations

from engine_calls import pk_table
from globaltables.engine.engine import Engine
from globaltables.engine.storage.sqlite_store import SqliteStore
from globaltables.replication.hlc import HybridLogicalClock
from globaltables.replication.versions import HlcVersionSource
from globaltables.runtime.clock import ManualClock

TABLE = "Orders"
REGIONS = ["eu-west-1", "us-east-1"]


def global_engine(name: str, *, offset_s: float = 0.0, mode: str = "hlc", store=None) -> tuple[Engine, ManualClock]:
    """Region `name`'s engine (its store: in-memory SQLite unless given) with table `Orders` (hash key `pk`, a
    string) made global over REGIONS, and the manual clock it runs on."""
    clock = ManualClock(wall_time=1_700_000_000.0 + offset_s)
    hlc = HybridLogicalClock(clock, max_offset_ms=500, mode=mode)
    store = store if store is not None else SqliteStore(None)
    engine = Engine(store, clock, region=name, versions=HlcVersionSource(hlc, name))
    engine.handle("CreateTable", pk_table(TABLE))
    engine.replica.make_global(TABLE, REGIONS)
    return engine, clock
