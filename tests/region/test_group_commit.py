"""Group commit (region/group_commit.py): writes of one loop turn commit together, each acknowledged only after
the commit that holds it, reads never see a write before it is durable, and a failed commit fails exactly its
writes."""

from __future__ import annotations

import asyncio
import sqlite3

import orjson
import pytest

from engine_calls import pk_table, pk_table_with_gsi
from globaltables.engine.commit import GroupCommitFailed
from globaltables.engine.engine import Engine
from globaltables.engine.errors import ValidationException
from globaltables.engine.storage.memory_store import MemoryStore
from globaltables.engine.storage.sqlite_store import SqliteStore
from globaltables.region.group_commit import GroupCommit
from globaltables.region.main import RegionConfig, open_store
from globaltables.runtime.clock import ManualClock

TABLE = "grouped"


class Failing:
    """The store's connection, failing the next statement that starts with `statement` (by `execute` or
    `executemany`) as SQLite does on an I/O error, when armed. By default the COMMIT: a group's commit fails."""

    def __init__(self, db: sqlite3.Connection, statement: str = "COMMIT") -> None:
        self._db = db
        self._statement = statement
        self.armed = False

    def _check(self, sql: str) -> None:
        if self.armed and sql.startswith(self._statement):
            self.armed = False
            raise sqlite3.OperationalError("disk I/O error")

    def execute(self, sql, *args):
        self._check(sql)
        return self._db.execute(sql, *args)

    def executemany(self, sql, rows):
        self._check(sql)
        return self._db.executemany(sql, rows)

    def __getattr__(self, name):
        return getattr(self._db, name)


INDEXED = "indexed"  # a table with a global secondary index on "g", a string: the index refuses a number there


def engine_with_table(store) -> Engine:
    engine = Engine(store, ManualClock())
    engine.handle("CreateTable", pk_table(TABLE))
    engine.handle("CreateTable", pk_table_with_gsi(INDEXED, "by-g", "g"))
    return engine


@pytest.fixture
def engine(tmp_path):
    store = SqliteStore(tmp_path / "region.db")
    yield engine_with_table(store)
    store.close()


def durable(engine: Engine, key: str) -> bool:
    """Whether the item is committed: read through a connection of its own (sees only committed data)."""
    reader = sqlite3.connect(engine.store.path)
    try:
        items = [orjson.loads(blob) for (blob,) in reader.execute("SELECT item FROM items")]
    finally:
        reader.close()
    return any(item["pk"] == {"S": key} for item in items)


def stored(engine: Engine, key: str, table: str = TABLE) -> bool:
    return "Item" in engine.handle("GetItem", {"TableName": table, "Key": {"pk": {"S": key}}})


def put_indexed(engine: Engine, key: str, g: dict) -> dict:
    return engine.handle("PutItem", {"TableName": INDEXED, "Item": {"pk": {"S": key}, "g": g}})


class Recorded:
    """A work item recording what happened to it in a shared event list; with `batch`, the committer may run it
    with the like items after it, through `run_many`, recorded as one event naming them all."""

    whole = False

    def __init__(
        self, events: list, engine: Engine, name: str, operation: str, request: dict, grouped: bool,
        batch: str | None = None,
    ):  # fmt: skip
        self.events, self.engine, self.name = events, engine, name
        self.operation, self.request, self.grouped, self.batch = operation, request, grouped, batch
        self.outcome: object = None

    def run(self):
        self.events.append(("run", self.name))
        try:
            return self.engine.handle(self.operation, self.request)
        except Exception as error:  # noqa: BLE001 - the answer of a failing request
            return error

    def run_many(self, works: list) -> list:
        self.events.append(("run_many", tuple(work.name for work in works)))
        return [response for response, _version in self.engine.execute_many(self.operation, [w.request for w in works])]

    def deliver(self, result) -> None:
        self.events.append(("deliver", self.name))
        self.outcome = result

    def fail(self) -> None:
        self.events.append(("fail", self.name))
        self.outcome = "failed"


def put(events, engine, name: str, **extra) -> Recorded:
    request = {"TableName": TABLE, "Item": {"pk": {"S": name}}, **extra}
    return Recorded(events, engine, name, "PutItem", request, grouped=True)


def get(events, engine, name: str, key: str) -> Recorded:
    request = {"TableName": TABLE, "Key": {"pk": {"S": key}}}
    return Recorded(events, engine, name, "GetItem", request, grouped=False)


def batched_put(events, engine, name: str, **extra) -> Recorded:
    request = {"TableName": TABLE, "Item": {"pk": {"S": name}}, **extra}
    return Recorded(events, engine, name, "PutItem", request, grouped=True, batch="PutItem")


def batched_get(events, engine, name: str, key: str) -> Recorded:
    request = {"TableName": TABLE, "Key": {"pk": {"S": key}}}
    return Recorded(events, engine, name, "GetItem", request, grouped=False, batch="GetItem")


def run_turn(committer: GroupCommit, *works) -> None:
    """Submit `works` in one loop turn, in order, and wait until the committer has drained them."""

    async def main() -> None:
        for work in works:
            committer.submit(work)
        await drained(committer)

    asyncio.run(main())


async def drained(committer: GroupCommit) -> None:
    for _ in range(100):  # bounded: the drain runs at the loop's next turn
        await asyncio.sleep(0)
        if not committer.busy:
            return
    raise AssertionError("the committer never drained")


def test_writes_of_one_turn_commit_together_and_are_answered_after(engine):
    events: list = []
    committer = GroupCommit(engine)
    engine.add_commit_listener(lambda result: events.append(("committed", result.writes[0].item["pk"]["S"])))
    seen_durable: list[bool] = []

    class Checking(Recorded):
        def run(self):
            seen_durable.append(durable(engine, "w0"))  # the earlier write of the group: applied, not committed
            return super().run()

    async def main() -> None:
        committer.submit(put(events, engine, "w0"))
        for i in range(1, 5):
            committer.submit(Checking(events, engine, f"w{i}", "PutItem",
                                      {"TableName": TABLE, "Item": {"pk": {"S": f"w{i}"}}}, True))
        await drained(committer)

    asyncio.run(main())
    names = [f"w{i}" for i in range(5)]
    assert events == (
        [("run", n) for n in names] + [("committed", n) for n in names] + [("deliver", n) for n in names]
    )
    assert seen_durable == [False] * 4  # nothing of the group was committed while it ran
    assert committer.groups == 1 and committer.largest_group == 5
    assert all(durable(engine, n) for n in names)


def test_a_read_commits_the_writes_before_it_first(engine):
    events: list = []
    committer = GroupCommit(engine)
    read = get(events, engine, "r", "a")

    run_turn(committer, put(events, engine, "a"), read, put(events, engine, "b"))
    assert events == [("run", "a"), ("deliver", "a"), ("run", "r"), ("deliver", "r"), ("run", "b"), ("deliver", "b")]
    assert read.outcome["Item"] == {"pk": {"S": "a"}}
    assert committer.groups == 2


def test_a_failed_commit_fails_exactly_its_writes(engine):
    events: list = []
    committer = GroupCommit(engine)
    failing = Failing(engine.store.db)
    engine.store.db = failing
    told: list[str] = []
    engine.add_commit_listener(lambda result: told.extend(w.item["pk"]["S"] for w in result.writes))

    async def main() -> None:
        committer.submit(put(events, engine, "before"))
        await drained(committer)
        failing.armed = True
        for name in ("f1", "f2", "f3"):
            committer.submit(put(events, engine, name))
        await drained(committer)
        for name in ("after1", "after2"):
            committer.submit(put(events, engine, name))
        await drained(committer)

    asyncio.run(main())
    failed = [name for kind, name in events if kind == "fail"]
    delivered = [name for kind, name in events if kind == "deliver"]
    assert failed == ["f1", "f2", "f3"]
    assert delivered == ["before", "after1", "after2"]
    assert committer.failed_groups == 1 and committer.groups == 2
    assert told == ["before", "after1", "after2"]  # replication never hears of the failed group
    for name in ("f1", "f2", "f3"):
        assert not stored(engine, name) and not durable(engine, name)
    for name in ("before", "after1", "after2"):
        assert stored(engine, name) and durable(engine, name)


def test_a_write_refused_inside_a_group_fails_alone(engine):
    events: list = []
    committer = GroupCommit(engine)
    refused = put(events, engine, "a", ConditionExpression="attribute_exists(pk)")

    run_turn(committer, put(events, engine, "x"), refused, put(events, engine, "y"))
    assert type(refused.outcome).__name__ == "ConditionalCheckFailedException"
    assert committer.groups == 1 and committer.largest_group == 3
    assert durable(engine, "x") and durable(engine, "y") and not stored(engine, "a")


def test_a_write_failing_inside_the_store_rolls_back_alone(engine):
    # An index refusing a write raises inside the store transaction, after the item row: the write rolls back its
    # own savepoint, and the group's other writes commit, on either table.
    engine.begin_group()
    engine.handle("PutItem", {"TableName": TABLE, "Item": {"pk": {"S": "one"}}})
    put_indexed(engine, "i1", {"S": "x"})
    with pytest.raises(ValidationException, match="Type mismatch for Index Key"):
        put_indexed(engine, "bad", {"N": "1"})
    engine.handle("PutItem", {"TableName": TABLE, "Item": {"pk": {"S": "two"}}})
    assert not durable(engine, "one")  # nothing is committed before the group is
    engine.commit_group()
    assert durable(engine, "one") and durable(engine, "two") and durable(engine, "i1")
    assert not stored(engine, "bad", INDEXED) and not durable(engine, "bad")
    assert engine.handle("Query", {"TableName": INDEXED, "IndexName": "by-g", "KeyConditionExpression": "g = :g",
                                   "ExpressionAttributeValues": {":g": {"S": "x"}}})["Count"] == 1  # fmt: skip


def test_a_write_no_index_can_refuse_takes_no_savepoint_and_fails_its_group_if_the_database_does(engine):
    # Writes to a table without an index cannot be refused inside the store (storage/sqlite_store.py rule 5):
    # they run on the group's transaction itself. A failure of the database there (an I/O error) takes the
    # whole group with it, as a failed commit would; the next group is unaffected.
    savepoints: list[str] = []
    engine.store.db.set_trace_callback(lambda sql: savepoints.append(sql) if "SAVEPOINT" in sql else None)
    engine.begin_group()
    engine.handle("PutItem", {"TableName": TABLE, "Item": {"pk": {"S": "plain"}}})
    assert savepoints == []
    put_indexed(engine, "i1", {"S": "x"})
    assert savepoints == ["SAVEPOINT write"]
    engine.commit_group()
    engine.store.db.set_trace_callback(None)
    assert durable(engine, "plain") and durable(engine, "i1")

    failing = Failing(engine.store.db, "INSERT OR REPLACE INTO items ")  # an item row's insert
    engine.store.db = failing
    engine.begin_group()
    engine.handle("PutItem", {"TableName": TABLE, "Item": {"pk": {"S": "first"}}})
    failing.armed = True
    with pytest.raises(sqlite3.OperationalError):
        engine.handle("PutItem", {"TableName": TABLE, "Item": {"pk": {"S": "broken"}}})
    with pytest.raises(GroupCommitFailed):
        engine.commit_group()
    for key in ("first", "broken"):
        assert not stored(engine, key) and not durable(engine, key)
    engine.begin_group()
    engine.handle("PutItem", {"TableName": TABLE, "Item": {"pk": {"S": "next"}}})
    engine.commit_group()
    assert durable(engine, "next") and durable(engine, "plain")


def test_after_commit_waits_for_the_group_and_is_dropped_with_it(engine):
    told: list[str] = []
    engine.after_commit(lambda: told.append("alone"))  # no group: at once
    assert told == ["alone"]
    failing = Failing(engine.store.db)
    engine.store.db = failing
    engine.begin_group()
    engine.after_commit(lambda: told.append("committed group"))
    assert told == ["alone"]
    engine.commit_group()
    assert told == ["alone", "committed group"]
    engine.begin_group()
    engine.after_commit(lambda: told.append("failed group"))
    failing.armed = True
    with pytest.raises(GroupCommitFailed):
        engine.commit_group()
    assert told == ["alone", "committed group"]


def test_an_in_memory_region_commits_in_groups_too():
    # An in-memory region (region/main.py `open_store`) runs the same committer over the in-memory store, whose
    # group is a bracket (memory_store.py rule 6): writes of one turn are answered after the group, in order, a
    # refused write fails alone, a read sees the writes before it, and the group's after-commit calls run.
    engine = engine_with_table(MemoryStore())
    events: list = []
    committer = GroupCommit(engine)
    refused = put(events, engine, "a", ConditionExpression="attribute_exists(pk)")
    read = get(events, engine, "read", "x")

    run_turn(committer, put(events, engine, "x"), refused, read, put(events, engine, "y"))
    assert events == [
        ("run", "x"), ("run", "a"), ("deliver", "x"), ("deliver", "a"), ("run", "read"), ("deliver", "read"),
        ("run", "y"), ("deliver", "y"),
    ]  # fmt: skip
    assert type(refused.outcome).__name__ == "ConditionalCheckFailedException"
    assert read.outcome == {"Item": {"pk": {"S": "x"}}}
    assert committer.groups == 2 and committer.largest_group == 2 and committer.failed_groups == 0
    assert stored(engine, "x") and stored(engine, "y") and not stored(engine, "a")
    told: list[str] = []
    engine.begin_group()
    engine.after_commit(lambda: told.append("group"))
    assert told == [] and engine.store.grouped
    engine.commit_group()
    assert told == ["group"] and not engine.store.grouped


def test_a_region_without_a_data_dir_keeps_its_tables_in_the_memory_store(tmp_path):
    assert isinstance(open_store(RegionConfig("us-east-1")), MemoryStore)
    on_disk = open_store(RegionConfig("us-east-1", data_dir=tmp_path))
    try:
        assert isinstance(on_disk, SqliteStore) and on_disk.path == str(tmp_path / "region.db")
    finally:
        on_disk.close()


class Whole(Recorded):
    """Whole grouped work (the replication inbox's kind): several commits that stand or fall together. Like the
    inbox, it catches a failing commit itself and returns; the committer learns of it from the group's commit."""

    whole = True

    def __init__(self, events: list, engine: Engine, name: str, keys: list[str], observe=None):
        super().__init__(events, engine, name, "PutItem", {}, grouped=True)
        self.keys, self.observe = keys, observe

    def run(self):
        self.events.append(("run", self.name))
        if self.observe is not None:
            self.observe()
        try:
            for key in self.keys:
                self.engine.handle("PutItem", {"TableName": TABLE, "Item": {"pk": {"S": key}}})
        except Exception as error:  # noqa: BLE001 - as the inbox does: logged, answered with nothing
            return error
        return "applied"


def refuse_key(engine: Engine, key: str) -> None:
    """A commit step that raises inside the store transaction for writes of `key` (after the item rows)."""

    def refuse(_tx, writes) -> None:
        if any(write.item is not None and write.item["pk"]["S"] == key for write in writes):
            raise ValueError("refused by a commit step")

    engine.store.commit_hooks.append(refuse)


def test_whole_work_runs_in_a_group_of_its_own(engine):
    events: list = []
    committer = GroupCommit(engine)
    seen: list[bool] = []
    whole = Whole(events, engine, "inbox", ["i1", "i2"], observe=lambda: seen.append(durable(engine, "a")))

    run_turn(committer, put(events, engine, "a"), whole, put(events, engine, "b"), put(events, engine, "c"))
    assert events == [
        ("run", "a"), ("deliver", "a"), ("run", "inbox"), ("deliver", "inbox"),
        ("run", "b"), ("run", "c"), ("deliver", "b"), ("deliver", "c"),
    ]  # fmt: skip
    assert seen == [True]  # the group before it committed first
    assert whole.outcome == "applied"
    assert committer.groups == 3 and committer.failed_groups == 0
    assert all(durable(engine, key) for key in ("a", "i1", "i2", "b", "c"))


def test_whole_work_whose_write_fails_takes_no_effect_at_all(engine):
    # Its writes are no savepoints: the one that failed cannot roll back alone, so the whole group does, the
    # commit that succeeded before it included; the work fails, and the groups around it are untouched.
    events: list = []
    committer = GroupCommit(engine)
    refuse_key(engine, "bad")
    told: list[str] = []
    engine.add_commit_listener(lambda result: told.extend(w.item["pk"]["S"] for w in result.writes))
    whole = Whole(events, engine, "inbox", ["i1", "bad", "i3"])

    run_turn(committer, put(events, engine, "before"), whole, put(events, engine, "after"))
    assert events == [
        ("run", "before"), ("deliver", "before"), ("run", "inbox"), ("fail", "inbox"), ("run", "after"),
        ("deliver", "after"),
    ]  # fmt: skip
    assert committer.failed_groups == 1 and committer.groups == 2
    assert told == ["before", "after"]  # nothing of the failed work reached the listeners
    for key in ("i1", "bad", "i3"):
        assert not stored(engine, key) and not durable(engine, key)
    assert durable(engine, "before") and durable(engine, "after")


def test_a_group_without_savepoints_commits_whole_or_not_at_all(engine):
    refuse_key(engine, "bad")
    engine.begin_group(savepoints=False)
    engine.handle("PutItem", {"TableName": TABLE, "Item": {"pk": {"S": "one"}}})
    engine.handle("PutItem", {"TableName": TABLE, "Item": {"pk": {"S": "two"}}})
    engine.commit_group()
    assert durable(engine, "one") and durable(engine, "two")
    engine.begin_group(savepoints=False)
    engine.handle("PutItem", {"TableName": TABLE, "Item": {"pk": {"S": "three"}}})
    with pytest.raises(ValueError):
        engine.handle("PutItem", {"TableName": TABLE, "Item": {"pk": {"S": "bad"}}})
    with pytest.raises(GroupCommitFailed):
        engine.commit_group()
    assert not stored(engine, "three") and not durable(engine, "three") and not stored(engine, "bad")
    engine.begin_group()  # the next group is an ordinary one again: a refused write rolls back alone
    engine.handle("PutItem", {"TableName": TABLE, "Item": {"pk": {"S": "four"}}})
    with pytest.raises(ValidationException):
        put_indexed(engine, "bad", {"N": "1"})
    engine.commit_group()
    assert durable(engine, "four") and durable(engine, "one")


# ---------------------------------------------------------------------------------------- batches (rule 6)


def test_like_requests_that_follow_one_another_run_as_one_batch(engine):
    """A run of batched work of one operation runs through one `run_many`; other work, or work of another batch,
    ends the run. Writes of a batch are held until their group commits, reads answered once their batch ran (after
    the writes before them are durable), every answer in its place."""
    events: list = []
    committer = GroupCommit(engine)
    engine.add_commit_listener(lambda result: events.append(("committed", len(result.writes))))
    works = [
        batched_put(events, engine, "a"), batched_put(events, engine, "b"), batched_put(events, engine, "c"),
        batched_get(events, engine, "read-a", "a"), batched_get(events, engine, "read-z", "z"),
        get(events, engine, "plain-read", "b"),
        batched_get(events, engine, "read-b", "b"),
        batched_put(events, engine, "d"), put(events, engine, "e"), batched_put(events, engine, "f"),
    ]  # fmt: skip
    run_turn(committer, *works)
    runs = [event for event in events if event[0] in ("run", "run_many")]
    assert runs == [
        ("run_many", ("a", "b", "c")), ("run_many", ("read-a", "read-z")), ("run", "plain-read"), ("run", "read-b"),
        ("run", "d"), ("run", "e"), ("run", "f"),
    ]  # fmt: skip
    # The first three writes are durable before the reads after them run, and answered only then.
    first_reads = events.index(("run_many", ("read-a", "read-z")))
    assert ("deliver", "a") in events[:first_reads] and ("committed", 1) in events[:first_reads]
    assert works[3].outcome["Item"]["pk"] == {"S": "a"} and "Item" not in works[4].outcome
    assert works[5].outcome["Item"]["pk"] == {"S": "b"} and works[6].outcome["Item"]["pk"] == {"S": "b"}
    assert all(stored(engine, key) for key in "abcdef")
    assert all(work.outcome == {} for work in works if work.operation == "PutItem")


def test_a_batch_whose_group_cannot_commit_fails_whole(engine):
    """The writes of a batch are grouped work like any other: a failed commit fails each of them (rule 3), and
    nothing of them is stored."""
    events: list = []
    committer = GroupCommit(engine)
    failing = Failing(engine.store.db)
    engine.store.db = failing
    works = [batched_put(events, engine, name) for name in ("a", "b", "c")]
    failing.armed = True
    run_turn(committer, *works)
    failing.armed = False
    assert ("run_many", ("a", "b", "c")) in events
    assert [work.outcome for work in works] == ["failed"] * 3
    assert committer.failed_groups == 1
    assert not any(stored(engine, key) for key in "abc")
