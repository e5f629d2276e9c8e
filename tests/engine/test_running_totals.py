"""The SQLite store's running totals (engine/storage/running_totals.py) always equal a count of the rows: after
puts, replaces and deletes in batches, a write rolled back, a dropped table and index, and for a database made
before the totals existed, which gets them counted when it is opened."""

from __future__ import annotations

import random
import sqlite3

import pytest

from global_engines import TABLE, global_engine
from globaltables.engine.storage import running_totals
from globaltables.engine.storage.records import ItemWrite
from globaltables.engine.storage.sqlite_store import SqliteStore
from globaltables.replication.messages import Ship, decode, encode


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
    # Make it a database from before the totals: no totals table; then a write they do not see (an earlier
    # release's).
    store.db.execute("DROP TABLE item_totals")
    store.db.execute("DELETE FROM items WHERE pk = ?", (b"p0",))
    store.db.close()
    reopened = SqliteStore(path)
    assert reopened.table_stats("alpha") == counted(reopened.db, "items", "tid", reopened.table_id("alpha"))
    assert reopened.table_stats("alpha") == (expected[0] - 1, expected[1] - 10)
    # Reopening again keeps the totals it has (nothing counted twice).
    reopened.db.close()
    again = SqliteStore(path)
    assert again.table_stats("alpha") == (expected[0] - 1, expected[1] - 10)


def test_a_database_whose_item_totals_triggers_kept_them_is_kept_without_them(tmp_path) -> None:
    # An earlier release kept the item totals with triggers (as the index entries' still are): its database keeps
    # its totals and loses the triggers, and the store's own counting carries on from them.
    path = tmp_path / "region.db"
    store = SqliteStore(path)
    store.save_table("alpha", {"TableName": "alpha"})
    store.write([ItemWrite("alpha", f"p{i}".encode(), b"", {"v": {"S": "x"}}, 10 + i, None) for i in range(30)])
    store.db.execute("DROP TABLE item_totals")
    running_totals.install(store.db, "items", "tid", "item_totals")  # what the earlier release did when opened
    store.db.execute("DELETE FROM items WHERE pk = ?", (b"p1",))  # a write of that release: its trigger counts it
    store.db.close()
    reopened = SqliteStore(path)
    triggers = reopened.db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'item_%'")
    assert triggers.fetchall() == []
    tid = reopened.table_id("alpha")
    assert reopened.table_stats("alpha") == counted(reopened.db, "items", "tid", tid) == (29, 30 * 10 + 435 - 11)
    reopened.write([ItemWrite("alpha", b"p2", b"", {"v": {"S": "y"}}, 99, None), ItemWrite("alpha", b"q", b"", None, 0)])
    assert reopened.table_stats("alpha") == counted(reopened.db, "items", "tid", tid)


def test_item_totals_of_a_batch_writing_a_key_several_times(tmp_path) -> None:
    store = SqliteStore(tmp_path / "region.db")
    store.save_table("alpha", {"TableName": "alpha"})
    store.save_table("beta", {"TableName": "beta"})
    store.write([ItemWrite("alpha", b"k", b"", {"v": {"S": "x"}}, 5, None)])
    batch = [
        ItemWrite("alpha", b"k", b"", {"v": {"S": "y"}}, 7, None),  # replaces 5
        ItemWrite("beta", b"k", b"", {"v": {"S": "y"}}, 3, None),  # another table, same key
        ItemWrite("alpha", b"k", b"", None, 0, None),  # deletes it
        ItemWrite("alpha", b"k", b"", None, 0, None),  # deletes nothing
        ItemWrite("alpha", b"k", b"", {"v": {"S": "z"}}, 11, None),  # puts it back
        *[ItemWrite("alpha", b"n%d" % i, b"s", {"v": {"S": "z"}}, i, None) for i in range(300)],  # chunks of 256
    ]
    store.write(batch)
    for table in ("alpha", "beta"):
        assert store.table_stats(table) == counted(store.db, "items", "tid", store.table_id(table))
    assert store.table_stats("alpha") == (301, 11 + sum(range(300)))


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


@pytest.mark.parametrize("seed", range(3))
def test_item_totals_follow_replicated_batches(seed: int) -> None:
    # A replicated batch gives the store the sizes of the rows it replaces (read with the stored versions): keys
    # put, replaced and deleted several times in one batch, over items the receiver wrote itself.
    rng = random.Random(seed)
    a, _clock_a = global_engine("us-east-1")
    b, _clock_b = global_engine("eu-west-1")

    def write(engine, key: str) -> None:
        if rng.random() < 0.3:
            engine.handle("DeleteItem", {"TableName": TABLE, "Key": {"pk": {"S": key}}})
        else:
            item = {"pk": {"S": key}, "v": {"S": "x" * rng.randrange(1, 300)}}
            engine.handle("PutItem", {"TableName": TABLE, "Item": item})

    for round_ in range(4):
        for _ in range(60):
            write(a, f"k{rng.randrange(15)}")
        for _ in range(10):
            write(b, f"k{rng.randrange(15)}")
        for lane in range(a.replica.lanes(TABLE)):
            after = b.replica.applied_position("us-east-1", TABLE, lane)
            records = a.replica.local_records(TABLE, lane, after, 10_000)
            if records:
                shipped = decode(encode(Ship(TABLE, lane, 0, after, tuple(records)))).records
                b.replica.apply_replicated("us-east-1", TABLE, lane, list(shipped))
        tid = b.store.table_id(TABLE)
        assert b.store.table_stats(TABLE) == counted(b.store.db, "items", "tid", tid), round_
    assert b.store.table_stats(TABLE)[0] > 0
