"""The SQLite store's running totals (engine/storage/running_totals.py) always equal a count of the rows: after
puts, replaces and deletes in batches, a write rolled back, a dropped table and index, and for a database made
before the totals existed, which gets them counted when it is opened."""

from __future__ import annotations

import random
import sqlite3

import pytest

from globaltables.engine.storage.records import ItemWrite
from globaltables.engine.storage.sqlite_store import SqliteStore


def counted(db: sqlite3.Connection, rows: str, key: str, value: int) -> tuple[int, int]:
    return db.execute(f"SELECT COUNT(*), COALESCE(SUM(size), 0) FROM {rows} WHERE {key} = ?", (value,)).fetchone()


def random_batch(rng: random.Random, table: str) -> list[ItemWrite]:
    batch = []
    for _ in range(rng.randrange(1, 6)):
        pk = f"p{rng.randrange(12)}".encode()
        if rng.random() < 0.3:
            batch.append(ItemWrite(table, pk, b"", None, 0, None))
        else:
            size = rng.randrange(1, 500)
            batch.append(ItemWrite(table, pk, b"", {"v": {"S": "x" * size}}, size, None))
    return batch


@pytest.mark.parametrize("seed", range(5))
def test_item_totals_follow_every_write(seed: int) -> None:
    rng = random.Random(seed)
    store = SqliteStore(None)
    for name in ("alpha", "beta"):
        store.save_table(name, {"TableName": name})
    for _ in range(200):
        table = rng.choice(("alpha", "beta"))
        store.write(random_batch(rng, table))
        tid = store.table_id(table)
        assert store.table_stats(table) == counted(store.db, "items", "tid", tid)
    # A write that fails inside its transaction changes no total.
    before = store.table_stats("alpha")

    def failing_hook(tx, writes):
        raise RuntimeError("hook failed")

    store.commit_hooks.append(failing_hook)
    with pytest.raises(RuntimeError):
        store.write([ItemWrite("alpha", b"new", b"", {"v": {"S": "y"}}, 7, None)])
    store.commit_hooks.remove(failing_hook)
    assert store.table_stats("alpha") == before
    assert before[0] > 0
    dropped = store.table_id("beta")
    store.drop_table("beta")
    assert store.db.execute("SELECT COUNT(*) FROM item_totals WHERE key = ?", (dropped,)).fetchone() == (0,)


def test_a_database_without_totals_is_counted_when_opened(tmp_path) -> None:
    path = tmp_path / "region.db"
    store = SqliteStore(path)
    store.save_table("alpha", {"TableName": "alpha"})
    store.write([ItemWrite("alpha", f"p{i}".encode(), b"", {"v": {"S": "x"}}, 10 + i, None) for i in range(30)])
    expected = store.table_stats("alpha")
    # Make it a database from before the totals: no triggers, no totals table; then a write they do not see.
    store.db.execute("DROP TRIGGER item_totals_add")
    store.db.execute("DROP TRIGGER item_totals_remove")
    store.db.execute("DROP TABLE item_totals")
    store.write([ItemWrite("alpha", b"p0", b"", None, 0, None)])
    store.db.close()
    reopened = SqliteStore(path)
    assert reopened.table_stats("alpha") == counted(reopened.db, "items", "tid", reopened.table_id("alpha"))
    assert reopened.table_stats("alpha") == (expected[0] - 1, expected[1] - 10)
    # Reopening again keeps the totals it has (nothing counted twice).
    reopened.db.close()
    again = SqliteStore(path)
    assert again.table_stats("alpha") == (expected[0] - 1, expected[1] - 10)


def test_index_totals_follow_entries_and_purge() -> None:
    store = SqliteStore(None)
    index = store.index_store()
    iid = index.create_id("uuid-1", "byValue")
    rng = random.Random(3)
    for _ in range(100):
        key = (7, b"k%d" % rng.randrange(5), b"s", b"b%d" % rng.randrange(5), b"")  # few keys: many replaced
        store.db.execute("BEGIN")
        if rng.random() < 0.3:
            index.delete(store.db, iid, key)
        else:
            index.put(store.db, iid, key, {}, rng.randrange(1, 300))
        store.db.execute("COMMIT")
        assert index.stats(iid) == counted(store.db, "index_items", "iid", iid)
    assert index.stats(iid)[0] > 0
    index.drop_id(iid)
    while index.purge(iid, 7) == 7:
        pass
    assert index.stats(iid) == (0, 0)
    assert store.db.execute("SELECT COUNT(*) FROM index_totals WHERE key = ?", (iid,)).fetchone() == (0,)
