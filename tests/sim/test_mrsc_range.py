"""Strong Query and Scan in strong mode (MRSC) on the simulator: the range-sync (replication/mrsc/range_read.py),
checked per item by the linearizability checker under delays, loss and a crash."""

from __future__ import annotations

import pytest

from globaltables.chaos.checkers import linearizable
from globaltables.engine.storage.memory_store import MemoryStore
from globaltables.engine.storage.sqlite_store import SqliteStore
from globaltables.replication.mrsc import range_read
from globaltables.replication.mrsc.messages import MessageError, RangeSynced, SyncRange, decode, encode
from globaltables.replication.mrsc.range_read import RangeReader
from globaltables.replication.mrsc.store import StrongStore
from globaltables.runtime.rng import Rng
from globaltables.sim.mrsc_cluster import MrscCluster
from globaltables.sim.network import LinkSettings
from store_probes import drop_item_rows

TABLE = {
    "TableName": "Items",
    "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "S"}],
    "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
    "BillingMode": "PAY_PER_REQUEST",
}  # fmt: skip
C = {"pk": {"S": "c"}}
C_KEYS = [{"pk": {"S": "c"}, "sk": {"S": f"k{i}"}} for i in range(4)]
D_KEYS = [{"pk": {"S": "d"}, "sk": {"S": f"k{i}"}} for i in range(2)]


def run(seed: int, operations: int, loss: float = 0.03, crash: bool = True) -> MrscCluster:
    rng = Rng(seed).fork("range-workload")
    cluster = MrscCluster(seed=seed, link=LinkSettings(latency_ms=30, jitter_ms=8), table=TABLE)
    for a in cluster.member_names:
        for b in cluster.member_names:
            if a != b:
                cluster.network.update_link(a, b, loss=loss)
    replicas = cluster.replicas()
    state = {"issued": 0, "written": 0}

    def issue(process: str, region: str) -> None:
        if state["issued"] >= operations:
            return
        state["issued"] += 1
        roll = rng.random()
        if roll < 0.3:
            cluster.query(region, C, C_KEYS, process=process)
        elif roll < 0.4:
            cluster.query(region, None, C_KEYS + D_KEYS, process=process)  # a Scan
        else:
            state["written"] += 1
            key = rng.choice(C_KEYS + D_KEYS)
            value = {"S": f"w{state['written']}"}
            if roll < 0.75:
                cluster.write(region, "put", key, value, process=process)
            elif roll < 0.9:
                cluster.write(region, "update", key, value, process=process)
            else:
                cluster.write(region, "delete", key, process=process)

    def next_op(process: str, region: str) -> None:
        cluster.scheduler.call_later(rng.uniform(0.0, 0.05), issue, process, region)

    cluster.on_complete = next_op
    for region in replicas:
        for i in range(3):
            next_op(f"{region}/{i}", region)
    if crash:
        victim = rng.choice(list(cluster.member_names))
        crash_at = rng.uniform(0.5, 5.0)
        cluster.scheduler.call_at(crash_at, cluster.crash, victim)
        cluster.scheduler.call_at(crash_at + rng.uniform(0.2, 2.0), cluster.restart, victim)
    cluster.run_until_quiescent()
    cluster.network.heal()
    cluster.on_complete = None
    for region in replicas:
        cluster.query(region, None, C_KEYS + D_KEYS, process=f"final/{region}")
    cluster.run_until_quiescent()
    return cluster


def reads(cluster, type_=None):
    return [
        op for op in cluster.history if op.f == "get" and op.type != "invoke" and (type_ is None or op.type == type_)
    ]


def test_write_in_one_region_is_seen_by_the_next_query_and_scan_in_the_other():
    cluster = MrscCluster(seed=1, table=TABLE)
    a, b, _w = cluster.member_names
    cluster.write(a, "put", C_KEYS[0], {"S": "v1"}, process=1)
    cluster.write(a, "put", D_KEYS[0], {"S": "d1"}, process=2)
    cluster.run_until(1.0)
    drop_item_rows(cluster.members[b].store)  # b missed both Commits (lost): only a sync helps
    cluster.query(b, C, C_KEYS, process=3)
    cluster.run_until(2.0)
    got = {op.key["sk"]["S"]: op.value for op in reads(cluster)}
    assert got == {"k0": {"S": "v1"}, "k1": None, "k2": None, "k3": None}
    cluster.write(a, "delete", C_KEYS[0], process=4)
    cluster.run_until(3.0)
    cluster.query(b, None, [C_KEYS[0], D_KEYS[0]], process=5)
    cluster.run_until(4.0)
    assert [op.value for op in reads(cluster)[-2:]] == [None, {"S": "d1"}]
    assert linearizable.check(cluster.history).passed


def test_pages_cover_a_range_larger_than_one_page(monkeypatch):
    monkeypatch.setattr(range_read, "PAGE_KEYS", 3)
    monkeypatch.setattr(range_read, "PAGE_BYTES", 40)
    cluster = MrscCluster(seed=2, table=TABLE)
    a, b, _w = cluster.member_names
    keys = [{"pk": {"S": "c"}, "sk": {"S": f"k{i:02d}"}} for i in range(10)]
    for i, key in enumerate(keys):
        cluster.write(a, "put", key, {"S": f"v{i}" * 5}, process=i)
    cluster.run_until(1.0)
    drop_item_rows(cluster.members[b].store)
    for key in keys[:4]:  # b holds some at older versions, and lacks the rest
        cluster.members[b].strong.apply("Items", key, 0, "", None)
    cluster.query(b, C, keys, process="q")
    cluster.run_until(3.0)
    assert [op.value for op in reads(cluster)] == [{"S": f"v{i}" * 5} for i in range(10)]


def test_range_messages_round_trip_and_refuse_bad_shapes():
    ask = SyncRange(1, "Items", C, "", "", {"x": 3})
    assert decode(encode(ask)) == ask
    answer = RangeSynced(1, [[C_KEYS[0], 2, "a-1-1", None]], [C_KEYS[1]], "")
    assert decode(encode(answer)) == answer
    for bad in (b'["sync-range",1,"T",null,"","",{"x":"3"}]', b'["range-synced",1,[[{},"2","p",null]],[],""]',
                b'["range-synced",1,[],[3],""]'):  # fmt: skip
        with pytest.raises(MessageError):
            decode(bad)


@pytest.mark.parametrize("make_store", [SqliteStore, MemoryStore])
def test_witness_lists_the_images_of_one_collection_only(make_store):
    store = StrongStore(make_store(), None, "w")
    for key in C_KEYS[:2] + D_KEYS:
        store.apply("Items", key, 1, "a-1-1", {**key, "value": {"S": "x"}})
    assert [record[1] for record in store.range_records("Items", C)] == C_KEYS[:2]
    assert len(store.range_records("Items", None)) == 4


@pytest.mark.parametrize("seed", [21, 22])
def test_queries_and_scans_are_linearizable_per_item_under_loss_and_a_crash(seed):
    cluster = run(seed, operations=1200)
    result = linearizable.check(cluster.history)
    assert result.passed, str(result)
    assert len(reads(cluster, "ok")) > 1000  # query/scan item reads that returned
    first, second = cluster.local_items().values()
    assert first == second


def test_checker_catches_queries_that_skip_the_range_sync(monkeypatch):
    """Honest: with strong Queries that read locally at once, the same workload fails the checker."""

    def local_read(self, op_id, table, partition, now):
        self.node.complete(op_id, "ok", None)

    monkeypatch.setattr(RangeReader, "read", local_read)
    cluster = run(5, operations=1000, loss=0.0, crash=False)
    assert not linearizable.check(cluster.history).passed
