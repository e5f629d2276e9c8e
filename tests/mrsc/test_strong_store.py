"""A member's durable strong-mode state (replication/mrsc/store.py) on either store: the same calls give the same
answers on `SqliteStore` and `MemoryStore`, what a crash leaves (a snapshot: the simulator's crash) is every pending
proposal, vote, settled mark, aborted record and commit version, and a region process on disk that is killed with
SIGKILL keeps them too."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from globaltables.engine.engine import Engine
from globaltables.engine.storage.memory_store import MemoryStore
from globaltables.engine.storage.sqlite_store import SqliteStore
from globaltables.engine.strong import make_strong
from globaltables.replication.mrsc.records import Pending, decode_version
from globaltables.replication.mrsc.store import StrongStore
from globaltables.runtime.clock import ManualClock

ME, OTHER, WITNESS = "us-east-1", "us-east-2", "us-west-2"
TABLE = {
    "TableName": "Items",
    "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "S"}],
    "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
    "BillingMode": "PAY_PER_REQUEST",
}  # fmt: skip
A = {"pk": {"S": "a"}, "sk": {"S": "1"}}
A2 = {"pk": {"S": "a"}, "sk": {"S": "2"}}
B = {"pk": {"S": "b"}, "sk": {"S": "1"}}
STORES = {"sqlite": lambda: SqliteStore(None), "memory": MemoryStore}


def replica(store) -> StrongStore:
    engine = Engine(store, ManualClock(), region=ME)
    if "Items" not in engine.tables:
        engine.handle("CreateTable", dict(TABLE))
        make_strong(engine, "Items", [ME, OTHER], WITNESS)
    return StrongStore(store, engine, ME)


def image(key: dict, value: str) -> dict:
    return {**key, "v": {"S": value}}


def fill(strong: StrongStore) -> None:
    """Every kind of record: a commit, a deletion's tombstone, a pending proposal with its vote, a dropped refusal
    (settled mark), a refusal still recorded, and an own aborted proposal."""
    assert strong.apply("Items", A, 1, f"{OTHER}-1-1", image(A, "one"))
    assert strong.apply("Items", A2, 1, f"{OTHER}-1-2", image(A2, "x"))
    assert strong.apply("Items", A2, 2, f"{OTHER}-1-3", None)  # deleted: its version stays on the tombstone
    strong.accept(Pending(f"{OTHER}-1-4", "Items", A, 2, OTHER, image(A, "two")))
    strong.refuse(f"{OTHER}-1-7", "Items", B, "conflict")
    strong.drop_vote(f"{OTHER}-1-7")
    strong.refuse(f"{OTHER}-1-8", "Items", B, "fenced")
    own = strong.new_pid()
    strong.accept(Pending(own, "Items", B, 1, ME, image(B, "mine")))
    strong.abort(own, "Items", B, 1)


def state(strong: StrongStore) -> dict:
    return {
        "committed": [strong.committed("Items", key) for key in (A, A2, B)],
        "pending": strong.all_pending(),
        "votes": strong.all_votes(),
        "settled": [strong.settled(f"{OTHER}-1-{n}", "Items", B) for n in (6, 7, 8)],
        "aborted": (strong.aborted_items(), strong.aborted(f"{ME}-1-1")),  # fill ran in epoch 1
        "range": strong.range_records("Items", {"pk": {"S": "a"}}),
        "range_pending": strong.range_pending("Items", None),
    }


EXPECTED = {
    "committed": [(1, f"{OTHER}-1-1", image(A, "one")), (2, f"{OTHER}-1-3", None), (0, "", None)],
    "pending": [Pending(f"{OTHER}-1-4", "Items", A, 2, OTHER, image(A, "two"))],
    "votes": [(f"{OTHER}-1-4", "Items", A, "accept"), (f"{OTHER}-1-8", "Items", B, "fenced")],
    "settled": [True, True, False],
    "aborted": ([("Items", B)], True),
    "range": [
        ('{"pk":{"S":"a"},"sk":{"S":"1"}}', A, 1, f"{OTHER}-1-1", image(A, "one")),
        ('{"pk":{"S":"a"},"sk":{"S":"2"}}', A2, 2, f"{OTHER}-1-3", None),
    ],
    "range_pending": {'{"pk":{"S":"a"},"sk":{"S":"1"}}': A},
}


@pytest.mark.parametrize("kind", sorted(STORES))
def test_a_crash_keeps_every_record_and_a_restart_starts_a_new_epoch(kind):
    store = STORES[kind]()
    strong = replica(store)
    fill(strong)
    assert state(strong) == EXPECTED
    restarted = replica(store.snapshot())  # what a restarted member finds
    assert restarted.epoch == strong.epoch + 1
    assert state(restarted) == EXPECTED


@pytest.mark.parametrize("kind", sorted(STORES))
def test_apply_moves_forward_only_and_clears_what_it_supersedes(kind):
    strong = replica(STORES[kind]())
    fill(strong)
    assert not strong.apply("Items", A, 1, f"{OTHER}-1-9", image(A, "old"))  # not newer: nothing written
    assert strong.committed("Items", A)[2] == image(A, "one") and strong.pending("Items", A) is not None
    assert strong.apply("Items", A, 2, f"{OTHER}-1-4", image(A, "two"))  # the pending proposal commits
    assert strong.pending("Items", A) is None and strong.vote(f"{OTHER}-1-4") is None
    assert decode_version(strong.store.get_record("Items", *strong.engine.tables["Items"].key.encode(A))[1]) == (
        2, f"{OTHER}-1-4"
    )  # fmt: skip
    assert not strong.forget_aborted("Items", B, 1) and strong.aborted_items() == []


@pytest.mark.parametrize("kind", sorted(STORES))
def test_the_witness_keeps_versions_and_trims_images(kind):
    strong = StrongStore(STORES[kind](), None, WITNESS)
    assert strong.apply("Items", A, 1, f"{ME}-1-1", image(A, "one"))
    assert strong.apply("Items", B, 1, f"{ME}-1-2", None)
    assert strong.untrimmed() == [("Items", A, 1), ("Items", B, 1)]
    strong.trim("Items", A, 0)  # a replica lacks version 1: kept
    strong.trim("Items", A, 1)
    assert strong.untrimmed() == [("Items", B, 1)]
    assert strong.committed("Items", A) == (1, f"{ME}-1-1", None)  # the version stays, the image went
    assert not strong.apply("Items", A, 1, f"{ME}-1-1", image(A, "one"))
    crashed = StrongStore(strong.store.snapshot(), None, WITNESS)
    assert crashed.untrimmed() == [("Items", B, 1)] and crashed.committed("Items", B) == (1, f"{ME}-1-2", None)


CHILD = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, sys.argv[2])
    from test_strong_store import fill, replica
    from globaltables.engine.storage.sqlite_store import SqliteStore

    fill(replica(SqliteStore(sys.argv[1])))
    print("ready", flush=True)
    time.sleep(60)  # bounded: the test kills it long before
    """
)


def test_a_region_store_on_disk_killed_with_sigkill_keeps_every_record(tmp_path):
    path = tmp_path / "region.sqlite"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), os.path.dirname(__file__)], stdout=subprocess.PIPE, text=True,
        env=env,
    )  # fmt: skip
    try:
        assert child.stdout.readline().strip() == "ready"
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=30)
    restarted = replica(SqliteStore(path))
    assert restarted.epoch == 2
    assert state(restarted) == EXPECTED
