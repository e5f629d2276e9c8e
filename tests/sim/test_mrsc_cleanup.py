"""Strong mode (MRSC) clean-up on the simulator (docs/mrsc.md, "Clean-up"): the witness keeps an image only until
both replicas hold it, and votes whose Commit/Abort was lost are dropped once the coordinator has decided."""

from __future__ import annotations

import orjson
import pytest

from globaltables.chaos.checkers import linearizable
from globaltables.replication.mrsc.messages import Abort, Commit
from globaltables.replication.mrsc.node import MrscNode
from globaltables.replication.mrsc.records import decode_version
from globaltables.replication.mrsc.store import ABORTED, WITNESS
from globaltables.sim.mrsc_cluster import MrscCluster
from sim.mrsc_workload import run

K = {"pk": {"S": "k"}}


def witness_of(cluster):
    (name,) = [n for n, m in cluster.members.items() if m.witness]
    return cluster.members[name].strong


def replica_cv(cluster, name, table, key):
    """A replica's durable commit version of the item, read from its disk even while it is down."""
    member = cluster.members[name]
    if member.up:
        return member.strong.committed(table, key)[0]
    pk, sk = member.engine.tables[table].key.encode(key)
    return decode_version(member.store.get_record(table, pk, sk)[1])[0]


def assert_witness_keeps_what_a_replica_lacks(cluster):
    """Every item version some replica lacks still has its image at the witness (nothing a catch-up needs is gone),
    and every image the witness kept is of a version some replica lacks (nothing both hold is kept)."""
    witness = witness_of(cluster)
    kept = {(t, str(k)) for t, k, _cv in witness.untrimmed()}
    rows = witness.store.side_scan(WITNESS)  # every item's version, image kept or not
    assert rows
    for name, record in rows:
        table, _, item = name.partition("\x00")
        key, cv = orjson.loads(item), orjson.loads(record)[0]
        lowest = min(replica_cv(cluster, name, table, key) for name in cluster.replicas())
        assert ((table, str(key)) in kept) == (lowest < cv), (table, key, cv, lowest)


@pytest.mark.parametrize("seed", [21, 22])
def test_after_a_quiet_period_the_witness_keeps_no_image_both_replicas_hold(seed):
    cluster = run(seed, operations=1200)
    result = linearizable.check(cluster.history)
    assert result.passed, str(result)
    assert witness_of(cluster).untrimmed() == []
    assert_witness_keeps_what_a_replica_lacks(cluster)


def test_witness_keeps_the_image_a_downed_replica_lacks_and_serves_its_catch_up():
    cluster = MrscCluster(seed=7)
    a, b, _w = cluster.member_names
    cluster.members[b].crash()
    for n in range(3):
        cluster.write(a, "put", K, {"S": f"v{n}"}, process=1)
        cluster.run_until(1.0 + n)
    cluster.run_until(60.0)  # long after every resolver and sweep round
    assert [op.type for op in cluster.history.ops if op.type != "invoke"] == ["ok"] * 3
    assert [cv for _t, _k, cv in witness_of(cluster).untrimmed()] == [3]
    assert_witness_keeps_what_a_replica_lacks(cluster)
    # b comes back while a is cut off: its strong read catches up from the witness alone.
    cluster.restart(b)
    cluster.network.partition(a, b)
    cluster.network.partition(a, _w)
    cluster.read(b, K, process=2)
    cluster.run_until(65.0)
    assert [op.value for op in cluster.history.ops if op.f == "get" and op.type == "ok"] == [{"S": "v2"}]
    cluster.network.heal()
    cluster.run_until_quiescent()
    assert witness_of(cluster).untrimmed() == []


def test_votes_whose_commit_or_abort_was_lost_are_cleared(monkeypatch):
    send = MrscNode.send

    def lossy_send(self, dest, message):
        if type(message) not in (Commit, Abort):
            send(self, dest, message)

    monkeypatch.setattr(MrscNode, "send", lossy_send)
    cluster = run(33, operations=500)
    result = linearizable.check(cluster.history)
    assert result.passed, str(result)
    assert any(op.error == "ReplicatedWriteConflictException" for op in cluster.history.ops)  # aborts happened
    for name, member in cluster.members.items():
        assert member.strong.all_votes() == [], name
        assert member.strong.all_pending() == [], name


def test_aborted_records_go_once_both_other_members_hold_a_newer_version():
    cluster = run(31, operations=1500)
    assert linearizable.check(cluster.history).passed
    refused = sum(1 for op in cluster.history.ops if op.error == "ReplicatedWriteConflictException")
    assert refused > 20  # many aborts happened, each leaving a record for a while
    for name, member in cluster.members.items():
        kept = [(pid, orjson.loads(record)[1]) for pid, record in member.store.side_scan(ABORTED)]
        # What stays is only newer than what both others were seen holding: at most a couple per item (6 items).
        assert len(kept) <= 12, (name, kept)
        assert all(pid.startswith(f"{name}-") for pid, _item in kept), kept
