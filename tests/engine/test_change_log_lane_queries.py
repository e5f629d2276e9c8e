"""The change log's queries of a region's own records stay cheap however many replicated records it holds: they walk
the local-lanes index, never every record after a position (storage/change_log_store.py)."""

from __future__ import annotations

from globaltables.engine.storage.change_log_store import ChangeLogStore
from globaltables.engine.storage.sqlite_store import SqliteStore

REPLICATED = 20_000


def steps(store: SqliteStore, call) -> tuple[object, int]:
    """`call()`'s result and how many SQLite virtual-machine instructions (in thousands) it ran."""
    counted = [0]

    def tick() -> int:
        counted[0] += 1
        return 0

    store.db.set_progress_handler(tick, 1000)
    try:
        result = call()
    finally:
        store.db.set_progress_handler(None, 0)
    return result, counted[0]


def test_counting_and_ending_a_lane_do_not_walk_the_replicated_records() -> None:
    store = SqliteStore(None)
    log = ChangeLogStore(store)
    rows = [(1, seq, 0.0, None, b"{}", 0, None if seq % 1000 == 0 else "eu-west-1", "v", seq % 4, 2)
            for seq in range(1, REPLICATED + 1)]  # fmt: skip
    store.db.execute("BEGIN")
    log.append(store.db, rows)
    store.db.execute("COMMIT")
    local = [seq for seq in range(1, REPLICATED + 1) if seq % 1000 == 0 and seq % 4 == 0]

    count, counted = steps(store, lambda: log.local_lane_count(1, 0, 0))
    assert count == len(local)
    # Walking every record after position 0 (the primary key's range) runs some 90 thousand; the index holds five.
    assert counted < 10, counted
    end, counted = steps(store, lambda: log.local_lane_end(1, 0))
    assert end == local[-1]
    assert counted < 10, counted
    assert steps(store, lambda: log.local_lane_count(1, 1, 0))[0] == 0
    assert steps(store, lambda: log.local_lane_end(1, 1))[0] == 0
