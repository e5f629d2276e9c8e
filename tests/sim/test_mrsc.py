"""Strong mode (MRSC) on the simulator: the commit protocol over the real engine, checked for linearizability."""

from __future__ import annotations

import pytest

from globaltables.chaos.checkers import linearizable
from globaltables.engine.storage.memory_store import MemoryStore
from globaltables.engine.storage.sqlite_store import SqliteStore
from globaltables.replication.mrsc import commit
from globaltables.replication.mrsc.messages import MessageError, Propose, Vote, decode, encode
from globaltables.replication.mrsc.store import StrongStore
from globaltables.replication.mrsc.strong_read import StrongReader
from globaltables.sim.mrsc_cluster import MrscCluster
from sim.mrsc_workload import run

K = {"pk": {"S": "k"}}


def ops(cluster, f=None, type_=None):
    return [op for op in cluster.history if op.type != "invoke" and (f is None or op.f == f)
            and (type_ is None or op.type == type_)]  # fmt: skip


def test_commit_decision_rules():
    assert commit.decide({"b": "accept"}) == commit.COMMIT
    assert commit.decide({"b": "conflict", "c": "accept-again"}) == commit.COMMIT
    assert commit.decide({"b": "outranked"}) is None  # the third member may still accept: it arrived there first
    assert commit.decide({"b": "outranked"}, waited=True) == commit.RWCE  # the higher-ranked racer goes ahead
    assert commit.decide({"b": "outranked", "c": "accept"}) == commit.COMMIT
    assert commit.decide({"b": "outranked", "c": "conflict"}) == commit.RWCE
    assert commit.decide({"b": "conflict"}) is None
    assert commit.decide({"b": "conflict", "c": "conflict"}) is None  # lower-ranked racers give way: wait
    assert commit.decide({"b": "stale", "c": "conflict"}) == commit.RETRY
    assert commit.decide({"b": "fenced", "c": "settled"}) == commit.RETRY
    assert commit.decide({"b": "stale", "c": "conflict"}, met=True) == commit.RWCE  # the racer it met committed
    assert commit.replaces("conflict", "accept-again") and commit.replaces("conflict", "stale")
    assert commit.replaces("conflict", "outranked")  # the member now holds a higher-ranked racer
    assert not commit.replaces("fenced", "accept") and not commit.replaces("outranked", "accept")


def test_messages_round_trip_and_refuse_bad_shapes():
    message = Propose("a-1-1", "Items", K, 3, {"pk": {"S": "k"}}, "a")
    assert decode(encode(message)) == message
    assert decode(encode(Vote("a-1-1", "accept", 2, "b-1-4", None))).answer == "accept"
    for bad in (b"[]", b"nope", b'["vote","p","maybe",1,"",null]', b'["propose","p","T",{},"3",null,"a"]'):
        with pytest.raises(MessageError):
            decode(bad)


def test_write_acked_after_one_round_trip_then_read_anywhere():
    cluster = MrscCluster(seed=3)
    a, b, _w = cluster.member_names
    cluster.write(a, "put", K, {"S": "v1"}, process=1)
    cluster.run_until(1.0)
    (done,) = ops(cluster, "put")
    invoke = cluster.history.ops[0]
    latency = done.mono - invoke.mono
    assert done.type == "ok" and 0.056 <= latency <= 0.080  # one round trip (30 ms +jitter each way), no less
    cluster.read(b, K, process=2)
    cluster.run_until(2.0)
    assert ops(cluster, "get")[0].value == {"S": "v1"}


def test_condition_fails_only_against_a_confirmed_latest_version():
    cluster = MrscCluster(seed=4)
    a, b, _w = cluster.member_names
    cluster.write(a, "put", K, {"S": "v1"}, process=1)
    cluster.run_until(1.0)
    cluster.write(b, "put", K, {"S": "v2"}, process=2, ConditionExpression="attribute_not_exists(pk)")
    cluster.write(a, "delete", K, process=1)
    cluster.run_until(2.0)
    assert [op.type for op in ops(cluster)] == ["ok", "fail", "ok"] or [op.type for op in ops(cluster)] == [
        "ok", "ok", "ok"
    ]  # fmt: skip
    assert linearizable.check(cluster.history).passed


@pytest.mark.parametrize("seed", [11, 12])
def test_seeded_workload_with_loss_and_a_crash_is_linearizable(seed):
    cluster = run(seed, operations=2500)
    result = linearizable.check(cluster.history)
    assert result.passed, str(result)
    acked = ops(cluster, type_="ok")
    assert len(acked) > 1000
    assert any(op.error == "ReplicatedWriteConflictException" for op in ops(cluster))
    # After the final strong reads both replicas hold the same items.
    items = cluster.local_items()
    first, second = items.values()
    assert first == second


def test_a_refused_write_stays_refused_when_links_reorder_messages():
    # Seed 39 with 30% of messages held back 200 ms: a retransmitted Propose overtook by its own Abort used to find
    # the voter without a vote, be accepted and self-committed, so a write answered RWCE appeared later. Both the
    # linearizability checker and the RWCE promise (nothing changed) hold now.
    cluster = run(39, operations=1500, reorder=0.3, reorder_ms=200)
    result = linearizable.check(cluster.history)
    assert result.passed, str(result)
    refused = {op.value["S"] for op in ops(cluster) if op.error == "ReplicatedWriteConflictException" and op.value}
    assert refused
    seen = {op.value["S"] for op in ops(cluster, "get", "ok") if op.value}
    assert not refused & seen, f"writes answered RWCE and read later: {sorted(refused & seen)}"


def test_checker_catches_strong_reads_that_skip_the_sync(monkeypatch):
    """The must-show is honest: with strong reads that read locally at once, the same workload fails."""

    def local_read(self, op_id, table, key, now):
        self.node.complete(op_id, "ok", None)

    monkeypatch.setattr(StrongReader, "read", local_read)
    cluster = run(5, operations=1500, loss=0.0)
    assert not linearizable.check(cluster.history).passed


def test_a_restarted_coordinator_resolves_its_proposal_by_status_only():
    # Votes lost, coordinator restarted while still cut off: every retransmission after the restart asks (Status),
    # none proposes again (docs/mrsc.md, "Recovery and resolution").
    cluster = MrscCluster(seed=3, journal=True)
    a, b, w = cluster.member_names
    cluster.write(a, "put", K, {"S": "v1"}, process=1)
    cluster.run_until(0.01)
    cluster.crash(a)
    cluster.network.partition(a, b)
    cluster.network.partition(a, w)
    cluster.run_until(0.5)
    cluster.restart(a)
    cluster.run_until(1.5)  # several retransmit periods, all of them cut off
    cluster.network.heal()
    cluster.run_until(3.0)
    after_restart = [line.split() for line in cluster.trace().splitlines() if int(line.split()[0]) >= 500_000]
    # (A send into a partition is journaled as its drop.)
    sent_by_a = [fields[4] for fields in after_restart if fields[1] in ("send", "drop-partition") and fields[2] == a]
    assert sent_by_a.count("status") >= 8 and "propose" not in sent_by_a
    # The Proposes were lost in the partition, so both others refuse (fenced) and the write is aborted everywhere.
    assert "abort" in sent_by_a and cluster.local_items() == {a: {}, b: {}}
    assert linearizable.check(cluster.history).passed


@pytest.mark.parametrize("make_store", [SqliteStore, MemoryStore])
def test_a_dropped_refusal_settles_its_coordinators_proposals_for_the_item_up_to_it(make_store):
    store = StrongStore(make_store(), None, "us-west-2")  # a witness: votes, no tables
    other = {"pk": {"S": "other"}}
    store.refuse("us-east-1-2-7", "T", K, "conflict")
    store.drop_vote("us-east-1-2-7")
    assert store.settled("us-east-1-2-7", "T", K) and store.settled("us-east-1-2-3", "T", K)
    assert store.settled("us-east-1-1-99", "T", K)  # an earlier epoch of the coordinator
    assert not store.settled("us-east-1-2-8", "T", K) and not store.settled("us-east-1-3-1", "T", K)
    assert not store.settled("us-east-2-2-7", "T", K) and not store.settled("us-east-1-2-7", "T", other)
    store.refuse("us-east-1-2-5", "T", K, "stale")
    store.drop_vote("us-east-1-2-5")  # an older refusal dropped later never lowers the mark
    assert store.settled("us-east-1-2-7", "T", K)


def test_members_run_on_memory_stores_and_a_crash_keeps_their_durable_state():
    """The simulator's members keep their strong-mode state in a `MemoryStore`; a crash is its snapshot, which holds
    the commit versions, the witness's image and a pending proposal (with its vote) a member accepted."""
    cluster = MrscCluster(seed=4)
    a, b, w = cluster.member_names
    assert all(type(member.store) is MemoryStore for member in cluster.members.values())
    cluster.write(a, "put", K, {"S": "v1"}, process=1)
    cluster.run_until(1.0)
    cluster.network.partition(b, a, one_way=True)  # answers to the next proposal are lost: a cannot commit it
    cluster.network.partition(w, a, one_way=True)
    cluster.write(a, "put", K, {"S": "v2"}, process=2)
    cluster.run_until(1.05)  # b and w accepted v2 and hold it pending; a waits
    held = {name: cluster.members[name].strong.pending("Items", K) for name in (b, w)}
    assert all(pending is not None and pending.image["value"] == {"S": "v2"} for pending in held.values())
    committed = {name: member.strong.committed("Items", K)[:2] for name, member in cluster.members.items()}
    assert set(committed.values()) == {committed[a]} and committed[a][0] == 1
    epochs = {name: member.strong.epoch for name, member in cluster.members.items()}
    for name in (b, w):
        cluster.crash(name)
        cluster.restart(name)
        member = cluster.members[name]
        assert member.strong.epoch == epochs[name] + 1
        assert member.strong.committed("Items", K)[:2] == committed[name]
        assert member.strong.vote(held[name].pid) == "accept"
        # Restarted, the member resolves what it held (with a, which still holds the proposal, or by itself).
    cluster.network.heal()
    cluster.run_until_quiescent()
    assert {member.strong.committed("Items", K)[0] for member in cluster.members.values()} == {2}
    assert linearizable.check(cluster.history).passed


@pytest.mark.parametrize("seed", [3, 4])
def test_a_seed_replays_the_same_run_on_either_store(seed):
    """The protocol's state behaves alike on SQLite (a region process's store) and in memory (the simulator's): a
    seeded workload with loss, reordering and a crash gives the same messages, history and items on both."""
    runs = [
        run(seed, operations=600, loss=0.05, reorder=0.05, reorder_ms=20.0, journal=True, make_store=make)
        for make in (SqliteStore, MemoryStore)
    ]
    on_sqlite, in_memory = runs
    assert {type(member.store) for member in on_sqlite.members.values()} == {SqliteStore}
    assert on_sqlite.trace() == in_memory.trace() and on_sqlite.trace()
    assert on_sqlite.history.dumps() == in_memory.history.dumps()
    assert on_sqlite.local_items() == in_memory.local_items()
    assert linearizable.check(in_memory.history).passed
