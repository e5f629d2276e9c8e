"""Both stores keep one contract (engine/storage/records.py): the same seeded sequence of writes, reads, change-log
and index operations gives identical answers from the SQLite store and the in-memory store, and a write whose
commit hook raises leaves either store exactly as it was."""

# ruff: noqa: B023 -- every lambda below is handed to `Pair.same`, which calls it at once, inside its loop iteration.

from __future__ import annotations

import random
import sqlite3

import orjson
import pytest

from globaltables.engine.storage.memory_store import MemoryStore
from globaltables.engine.storage.records import HASH_SPACE, ItemWrite, TokenRecord, partition_hash
from globaltables.engine.storage.sqlite_store import ROWS_PER_STATEMENT, SqliteStore

TABLES = ("alpha", "beta")
PKS = [b"", b"\x00", b"a", b"a\x00", b"ab", b"b", b"\xff", b"\xff\x00"]
SKS = [b"", b"\x00", b"k", b"k\x00", b"k1", b"l", b"\xfe", b"\xff"]


def fresh(kind: str):
    store = SqliteStore(None) if kind == "sqlite" else MemoryStore()
    for name in TABLES:
        store.save_table(name, {"TableName": name})
    return store


def random_bound(rng: random.Random) -> tuple[bytes, bool] | None:
    return None if rng.random() < 0.3 else (rng.choice(SKS), rng.random() < 0.5)


class Pair:
    """The two stores side by side, with their change-log and index parts; `same` asserts equal answers."""

    def __init__(self) -> None:
        self.stores = [fresh("sqlite"), fresh("memory")]
        self.logs = [store.change_log_store() for store in self.stores]
        self.indexes = [store.index_store() for store in self.stores]
        self.iids = [index.create_id("uuid-1", "byValue") for index in self.indexes]
        assert self.iids[0] == self.iids[1]
        self.seq = 0
        for store, log, index in zip(self.stores, self.logs, self.indexes, strict=True):
            store.commit_hooks.append(self._hook(log, index))

    def _hook(self, log, index):
        def hook(tx, writes):
            rows = []
            for w in writes:
                tid = 1 if w.table == "alpha" else 2
                seq = self.seq + 1 + len(rows)
                lane = partition_hash(w.pk) % 3
                new = None if w.item is None else orjson.dumps(w.item)
                rows.append(
                    (tid, seq, float(seq), None, new, 0, w.origin, w.version, lane, None if new is None else w.size)
                )
                key = (partition_hash(w.sk), w.sk, w.pk, w.pk, w.sk)
                if w.item is None:
                    index.delete(tx, self.iids[0], key)
                else:
                    index.put(tx, self.iids[0], key, w.item, w.size)
            log.append(tx, rows)
            if any(w.item is not None and "boom" in w.item for w in writes):
                raise RuntimeError("a hook refused the batch")

        return hook

    def same(self, call) -> object:
        answers = [
            call(store, log, index) for store, log, index in zip(self.stores, self.logs, self.indexes, strict=True)
        ]
        assert answers[0] == answers[1]
        return answers[0]


def materialise(rows) -> list:
    # Record fields, whether the record is a slotted dataclass or a named tuple (StoredItem).
    return [tuple(getattr(row, name) for name in getattr(row, "_fields", None) or row.__slots__) for row in rows]


@pytest.mark.parametrize("seed", range(6))
def test_both_stores_answer_alike(seed: int) -> None:
    rng = random.Random(seed)
    pair = Pair()
    for step in range(400):
        action = rng.random()
        if action < 0.45:
            writes_spec = []
            for _ in range(rng.randint(1, 4)):
                table, pk, sk = rng.choice(TABLES), rng.choice(PKS), rng.choice(SKS)
                delete = rng.random() < 0.25
                item = None if delete else {"v": {"N": str(rng.randint(0, 9))}, "s": {"S": "x" * rng.randint(0, 40)}}
                writes_spec.append((table, pk, sk, item, rng.random() < 0.5, f"v{step:05d}"))
            positions = [("applied", "eu-west-1", "alpha", rng.randint(0, 3), step)] if rng.random() < 0.3 else None
            token = TokenRecord(f"t{step % 7}", b"fp", float(step), float(step + 50)) if rng.random() < 0.2 else None

            def write(store, _log, _index):
                batch = [
                    ItemWrite(t, pk, sk, it, 0 if it is None else 10 + len(it["s"]["S"]), version=ver,
                              tombstone=it is None and tomb, had_tombstone=it is not None, deleted_at=1.0)
                    for t, pk, sk, it, tomb, ver in writes_spec
                ]  # fmt: skip
                store.write(batch, token, positions)

            pair.same(write)
            pair.seq += len(writes_spec)
        elif action < 0.55:
            # A batch whose hook raises changes nothing in either store.
            before = pair.same(lambda s, lg, ix: (materialise(s.scan("alpha")), s.table_stats("alpha")))

            def failing(store, _log, _index):
                with pytest.raises(RuntimeError):
                    store.write(
                        [
                            ItemWrite("alpha", rng_pk, b"k", None, 0, tombstone=True, version="z", deleted_at=2.0),
                            ItemWrite("alpha", b"new", b"", {"boom": {"S": "x"}}, 12, version="z"),
                        ],
                        TokenRecord("failed", b"fp", 0.0, 99.0),
                        [("acked", "x", "alpha", 0, 999)],
                    )

            rng_pk = rng.choice(PKS)
            pair.same(failing)
            after = pair.same(lambda s, lg, ix: (materialise(s.scan("alpha")), s.table_stats("alpha")))
            assert after == before
            pair.same(lambda s, lg, ix: (s.transaction_token("failed", 0.0), s.position("acked", "x", "alpha", 0)))
        else:
            table, pk = rng.choice(TABLES), rng.choice(PKS)
            lower, upper = random_bound(rng), random_bound(rng)
            forward = rng.random() < 0.5
            after = rng.choice(SKS) if rng.random() < 0.3 else None
            pair.same(lambda s, lg, ix: materialise(s.query(table, pk, lower, upper, forward, after)))
            lo = rng.randrange(HASH_SPACE)
            hi = rng.choice([HASH_SPACE, lo + rng.randrange(HASH_SPACE - lo + 1)])
            resume = None
            rows = pair.same(lambda s, lg, ix: materialise(s.scan(table)))
            if rows and rng.random() < 0.5:
                resume = rows[rng.randrange(len(rows))][:3]
            pair.same(lambda s, lg, ix: materialise(s.scan(table, (lo, hi), resume)))
            keys = [(rng.choice(PKS), rng.choice(SKS)) for _ in range(5)]
            pair.same(lambda s, lg, ix: s.get_records(table, keys))
            pair.same(lambda s, lg, ix: [s.get_record(table, *key) for key in keys])
            pair.same(lambda s, lg, ix: (s.table_stats(table), s.partition_bytes(table, pk)))
            pair.same(lambda s, lg, ix: sorted(s.table_tombstones(table)))
            pair.same(lambda s, lg, ix: sorted(s.table_records(table), key=lambda r: r[:2]))
            pair.same(lambda s, lg, ix: (sorted(s.table_tombstones(table, pk)),
                                         sorted(s.table_records(table, pk), key=lambda r: r[:2])))  # fmt: skip
            pair.same(lambda s, lg, ix: (s.highest_version(), s.transaction_token(f"t{step % 7}", float(step))))
            iid = pair.iids[0]
            ipk = rng.choice(SKS)
            istart = (rng.choice(PKS), rng.choice(PKS), rng.choice(SKS)) if rng.random() < 0.3 else None
            pair.same(
                lambda s, lg, ix: materialise(ix.query(iid, partition_hash(ipk), ipk, lower, upper, forward, istart))
            )
            pair.same(lambda s, lg, ix: (materialise(ix.scan(iid, (lo, hi))), ix.stats(iid)))
            pair.same(lambda s, lg, ix: ix.partition_stats(iid, partition_hash(ipk), ipk))
            tid, lane, start = rng.choice((1, 2)), rng.randrange(3), rng.randrange(pair.seq + 2)
            pair.same(
                lambda s, lg, ix: (
                    lg.last_seq(tid), lg.trimmed(tid), materialise(lg.read(tid, start, None, 7)),
                    lg.local_lane_records(tid, lane, start, 5), lg.local_lane_count(tid, lane, start),
                    lg.local_lane_end(tid, lane),
                )
            )  # fmt: skip
    # Retention: a bounded trim with a ceiling, then everything before a time.
    from globaltables.engine.storage.records import StreamRow

    for tid in (1, 2):
        stream = StreamRow(f"arn-{tid}", tid, TABLES[tid - 1], "label", "NEW_IMAGE", [], 0.0, 1, None, None)
        pair.same(lambda s, lg, ix: lg.add_stream(stream))
    pair.same(lambda s, lg, ix: lg.trim(pair.seq / 2, 25, {2: pair.seq // 3}))
    pair.same(lambda s, lg, ix: lg.trim(float(pair.seq + 1), 10_000))
    pair.same(
        lambda s, lg, ix: [
            (lg.trimmed(t), lg.last_seq(t), lg.local_lane_count(t, lane, 0), materialise(lg.read(t, 0, None, 100)))
            for t in (1, 2)
            for lane in range(3)
        ]
    )
    pair.same(lambda s, lg, ix: [(row.arn, row.end_seq) for row in lg.streams()])
    # Which tombstones a bounded purge takes is the store's choice; how many, and that all old ones go, is not.
    pair.same(lambda s, lg, ix: s.purge_tombstones(5.0, 3))
    pair.same(lambda s, lg, ix: s.purge_tombstones(5.0, 10_000))
    assert pair.same(lambda s, lg, ix: list(s.table_tombstones("alpha")) + list(s.table_tombstones("beta"))) == []


SPACES = ("p", "q")
SIDE_KEYS = ["", "a", "a\x00", "a\x00b", "a\x00c", "ab", "b", "é", "\U0001f600", "z\x00a"]


@pytest.mark.parametrize("seed", range(4))
def test_side_records_answer_alike_and_commit_with_the_items(seed: int) -> None:
    """Side records, written on their own or staged by a commit hook inside an item write, read back alike by key
    and prefix (in key order) from both stores; a batch whose hook raises keeps neither its items nor its side
    records."""
    rng = random.Random(seed)
    stores = [fresh("sqlite"), fresh("memory")]
    staged: list = []

    def hook(store):
        def stage(tx, writes):
            store.side_stage(tx, staged)
            if any(w.item is not None and "boom" in w.item for w in writes):
                raise RuntimeError("a hook refused the batch")

        return stage

    for store in stores:
        store.commit_hooks.append(hook(store))

    def same(call):
        answers = [call(store) for store in stores]
        assert answers[0] == answers[1]
        return answers[0]

    for step in range(300):
        changes = [
            (rng.choice(SPACES), rng.choice(SIDE_KEYS), None if rng.random() < 0.3 else f"{step}".encode())
            for _ in range(rng.randint(1, 4))
        ]
        action = rng.random()
        if action < 0.3:
            same(lambda s: s.side_write(changes))
        elif action < 0.6:
            staged[:] = changes
            same(lambda s: s.write([ItemWrite("alpha", b"a", b"", {"n": {"N": str(step)}}, 5, version="v")]))
        elif action < 0.7:
            before = same(lambda s: [s.side_scan(space) for space in SPACES])
            staged[:] = changes

            def failing(store):
                with pytest.raises(RuntimeError):
                    store.write([ItemWrite("alpha", b"b", b"", {"boom": {"S": "x"}}, 5, version="v")])

            same(failing)
            assert same(lambda s: [s.side_scan(space) for space in SPACES]) == before
            assert same(lambda s: s.get("alpha", b"b", b"")) is None
        else:
            space, prefix = rng.choice(SPACES), rng.choice(SIDE_KEYS)
            listed = same(lambda s: s.side_scan(space, prefix))
            assert [key for key, _value in listed] == sorted(key for key, _value in listed)
            assert all(key.startswith(prefix) for key, _value in listed)
            same(lambda s: [s.side_get(space, key) for key in SIDE_KEYS])
        staged.clear()
    assert same(lambda s: s.side_scan("p")) != []
    copies = [store.snapshot() for store in stores]
    assert [copy.side_scan("p") for copy in copies] == [store.side_scan("p") for store in stores]


def test_batched_reads_of_keys_without_a_sort_key_find_exactly_the_keys_asked_for() -> None:
    """The SQLite store reads keys without a sort key by partition hash: rows of the same hash that were not asked
    for (another sort key of the partition, another partition key of the same hash) stay out of the answer, an item
    shadows nothing and a tombstone is found, as in the memory store."""
    twin, other = b"c17571", b"c25014"
    assert partition_hash(twin) == partition_hash(other)  # two partition keys of one hash
    for tombstones in (False, True):
        answers = []
        for kind in ("sqlite", "memory"):
            store = fresh(kind)
            writes = [
                ItemWrite("alpha", twin, b"", {"v": {"S": "twin"}}, 9, version="v1"),
                ItemWrite("alpha", other, b"", {"v": {"S": "other"}}, 10, version="v2"),
                ItemWrite("alpha", b"a", b"k", {"v": {"S": "ranged"}}, 11, version="v3"),
                ItemWrite("alpha", b"a", b"", {"v": {"S": "plain"}}, 12, version="v4"),
                ItemWrite("beta", b"b", b"", {"v": {"S": "beta"}}, 13, version="v5"),
            ]
            if tombstones:
                writes.append(ItemWrite("alpha", b"gone", b"", None, 0, tombstone=True, version="v6", deleted_at=1.0))
            store.write(writes)
            answers.append(
                [store.get_records("alpha", keys) for keys in ([(twin, b""), (b"a", b""), (b"b", b""), (b"gone", b"")],
                                                               [(other, b""), (other, b"")], [(b"a", b"k")])]
            )  # fmt: skip
        sqlite_answers, memory_answers = answers
        assert sqlite_answers == memory_answers
        found = sqlite_answers[0]
        assert set(found) == {(b"a", b""), (twin, b"")} | ({(b"gone", b"")} if tombstones else set())
        assert found[(twin, b"")] == ({"v": {"S": "twin"}}, "v1", False, 9)
        assert found[(b"a", b"")] == ({"v": {"S": "plain"}}, "v4", False, 12)
        if tombstones:
            assert found[(b"gone", b"")] == (None, "v6", True, None)
        assert sqlite_answers[1] == {(other, b""): ({"v": {"S": "other"}}, "v2", False, 10)}
        assert sqlite_answers[2] == {(b"a", b"k"): ({"v": {"S": "ranged"}}, "v3", False, 11)}


@pytest.mark.parametrize("olds", [False, True])
@pytest.mark.parametrize("count", [2, ROWS_PER_STATEMENT - 1, ROWS_PER_STATEMENT, 2 * ROWS_PER_STATEMENT + 5])
def test_a_batch_of_records_is_logged_whole_and_in_order(count: int, olds: bool) -> None:
    """A replicated batch's records go into the SQLite log many rows to a statement: they read back as the memory
    store's do, every field in order; in SQLite, a batch whose last record repeats a sequence number (past the
    first statement) fails and writes no record at all. `olds`: some records carry an old image (else none does,
    as in a backlog of new items, whose statements write the NULL themselves)."""
    rng = random.Random(count)

    def row(seq: int) -> tuple:
        new = None if rng.random() < 0.2 else orjson.dumps({"pk": {"S": f"k{seq}"}, "n": {"N": str(seq)}})
        origin = None if rng.random() < 0.3 else "eu-west-1"
        return (1, seq, seq / 8, b'{"o":{"S":"x"}}' if olds and rng.random() < 0.5 else None, new, rng.randrange(2), origin,
                f"v{seq:05d}/{origin}", seq % 4, None if new is None else len(new))  # fmt: skip

    rows = [row(seq) for seq in range(1, count + 1)]
    stores = [fresh("sqlite"), fresh("memory")]
    answers = []
    for store in stores:
        log = store.change_log_store()
        store.commit_hooks.append(lambda tx, _writes, log=log: log.append(tx, rows))
        store.write([ItemWrite("alpha", b"a", b"", {"v": {"S": "1"}}, 5, version="v1")])
        answers.append(
            (materialise(log.read(1, 0, None, 10_000)), [log.local_lane_records(1, lane, 0, 10_000) for lane in range(4)],
             log.last_seq(1), [log.local_lane_count(1, lane, 0) for lane in range(4)])
        )  # fmt: skip
    assert answers[0] == answers[1]
    assert [record[0] for record in answers[0][0]] == list(range(1, count + 1))
    assert answers[0][2] == count
    # A repeated sequence number in the batch's last record: the write fails and leaves the log as it was.
    again = [row(seq) for seq in range(count + 1, 2 * count + 1)] + [row(count + 1)]
    store, before = stores[0], answers[0][0]
    log = store.change_log_store()
    store.commit_hooks = [lambda tx, _writes: log.append(tx, again)]
    with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
        store.write([ItemWrite("alpha", b"b", b"", {"v": {"S": "2"}}, 5, version="v2")])
    assert materialise(log.read(1, 0, None, 10_000)) == before
    assert store.get("alpha", b"b", b"") is None


@pytest.mark.parametrize("seed", range(3))
def test_a_replicated_batch_of_new_keys_is_written_as_the_memory_store_writes_it(seed: int) -> None:
    """A replicated batch's puts of keys that hold no row go into SQLite many rows to a statement, ahead of the
    run's other puts: with keys put twice, deleted and put again, with and without sort keys, in runs longer than
    a statement, both stores end alike (items, sizes, totals, tombstones, versions)."""
    rng = random.Random(seed)
    stores = [fresh("sqlite"), fresh("memory")]
    held: dict[tuple[bytes, bytes], int | None] = {}  # what each key's row holds, as a replicated batch reads it
    for step in range(4):
        batch = []
        for n in range(rng.randrange(100, 300)):
            pk = f"k{rng.randrange(400)}".encode()
            sk = b"" if seed != 1 else rng.choice([b"", b"s1", b"s2"])
            key = (pk, sk)
            old_size = held.get(key)
            version = f"v{step:02d}{n:04d}/eu-west-1"
            if rng.random() < 0.1:
                batch.append(ItemWrite("alpha", pk, sk, None, 0, version=version, origin="eu-west-1", tombstone=True,
                                       deleted_at=1.0, old_size=old_size))  # fmt: skip
                held[key] = None
                continue
            item = {"pk": {"S": pk.decode()}, "n": {"N": str(n)}, "pad": {"S": "x" * rng.randrange(60)}}
            size = 10 + len(item["pad"]["S"])
            batch.append(ItemWrite("alpha", pk, sk, item, size, version=version, origin="eu-west-1", old_size=old_size))
            held[key] = size
        for store in stores:
            store.write(batch, positions=[("applied", "eu-west-1", "alpha", 0, step)])
        answers = [
            (materialise(store.scan("alpha")), store.table_stats("alpha"), sorted(store.table_tombstones("alpha")),
             sorted(store.table_records("alpha"), key=lambda r: r[:2]))
            for store in stores
        ]  # fmt: skip
        assert answers[0] == answers[1]
        assert answers[0][1] == (sum(1 for s in held.values() if s is not None), sum(s for s in held.values() if s))
    # A put said to find no row where one is (never, for a batch that read it): the batch fails, and changes nothing.
    store = stores[0]
    before = (materialise(store.scan("alpha")), store.table_stats("alpha"))
    present = next(key for key, size in held.items() if size is not None)
    batch = [ItemWrite("alpha", f"new{n}".encode(), b"", {"v": {"S": "x"}}, 2, version="w", origin="eu-west-1",
                       old_size=None) for n in range(70)]  # fmt: skip
    batch.insert(30, ItemWrite("alpha", *present, {"v": {"S": "y"}}, 2, version="w", origin="eu-west-1", old_size=None))
    with pytest.raises(sqlite3.IntegrityError):
        store.write(batch)
    assert (materialise(store.scan("alpha")), store.table_stats("alpha")) == before


def test_a_snapshot_is_a_copy_of_committed_state() -> None:
    store = fresh("memory")
    store.write([ItemWrite("alpha", b"a", b"", {"v": {"S": "1"}}, 5, version="v1")])
    copy = store.snapshot()
    store.write([ItemWrite("alpha", b"a", b"", {"v": {"S": "2"}}, 5, version="v2")])
    assert copy.get("alpha", b"a", b"") == {"v": {"S": "1"}}
    assert copy.commit_hooks == [] and copy.table_id("alpha") == store.table_id("alpha")


def test_dropping_a_table_drops_its_tombstones_and_positions() -> None:
    for kind in ("sqlite", "memory"):
        store = fresh(kind)
        store.write([ItemWrite("alpha", b"a", b"", None, 0, tombstone=True, version="v1", deleted_at=1.0)],
                    positions=[("applied", "x", "alpha", 0, 7)])  # fmt: skip
        store.drop_table("alpha")
        store.save_table("alpha", {"TableName": "alpha"})  # a new table of the same name gets a new id
        assert list(store.table_tombstones("alpha")) == [] and store.position("applied", "x", "alpha", 0) == 0
        assert store.highest_version() is None, kind


def test_settings_are_kept_by_key() -> None:
    for kind in ("sqlite", "memory"):
        store = fresh(kind)
        assert store.setting("declared-table:alpha") is None
        store.save_setting("declared-table:alpha", '{"replicas": ["a", "b"]}')
        store.save_setting("declared-table:alpha", '{"replicas": ["a"]}')
        assert store.setting("declared-table:alpha") == '{"replicas": ["a"]}', kind
    assert fresh("memory").snapshot().setting("x") is None


def test_the_partition_hash_is_the_keys_4_byte_blake2b_digest() -> None:
    """Rows on disk are ordered by this hash (storage/sqlite_store.py rule 3), so it may never change: the 4-byte
    BLAKE2b digest of the encoded key, big-endian, for keys of every length and byte (seeded)."""
    import hashlib

    rng = random.Random(4)
    keys = [b"", b"\x00", b"\xff" * 1024] + [rng.randbytes(rng.randrange(1, 64)) for _ in range(2000)]
    for key in keys:
        assert partition_hash(key) == int.from_bytes(hashlib.blake2b(key, digest_size=4).digest(), "big")
    # Values of the stores written so far (a hash collision the batched-read test relies on among them).
    assert partition_hash(b"a") == 0xCA234C55
    assert partition_hash(b"c17571") == partition_hash(b"c25014") == 0x634FF5CD
