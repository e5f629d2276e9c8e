"""`MrscCluster.from_topology` and `MrscCluster.host`: what the pytest kit's simulated strong-mode harness builds on
(a topology's members, links, clocks and tables; a region host's node operations with the process's guard and
crash semantics)."""

from __future__ import annotations

from globaltables.experiment.topology import parse_topology
from globaltables.sim.mrsc_cluster import MrscCluster

TOPOLOGY = """
name: t
mode: mrsc
regions:
  - {name: us-east-1}
  - {name: us-east-2, clock_offset_ms: -250}
  - {name: us-west-2, role: witness}
links:
  default: {latency_ms: 20, jitter_ms: 0}
  overrides:
    - {from: us-east-1, to: us-west-2, latency_ms: 5, jitter_ms: 0, bidirectional: true}
tables:
  - TableName: Orders
    AttributeDefinitions: [{AttributeName: id, AttributeType: S}]
    KeySchema: [{AttributeName: id, KeyType: HASH}]
  - TableName: Carts
    AttributeDefinitions: [{AttributeName: id, AttributeType: S}]
    KeySchema: [{AttributeName: id, KeyType: HASH}]
"""
KEY = {"id": {"S": "k"}}


def cluster(seed: int = 1) -> MrscCluster:
    return MrscCluster.from_topology(parse_topology(TOPOLOGY, "<test>"), seed)


def write(cluster: MrscCluster, region: str, table: str, value: str):
    member = cluster.members[region]

    def submit(op_id, now):
        return member.node.submit_write(op_id, table, KEY, lambda old: {**KEY, "v": {"S": value}}, now)

    return submit


def test_a_topology_gives_its_members_links_clocks_and_strong_tables():
    c = cluster()
    assert c.member_names == ("us-east-1", "us-east-2", "us-west-2") and c.witness == "us-west-2"
    assert c.replicas() == ["us-east-1", "us-east-2"]
    assert c.network.link_settings("us-west-2", "us-east-1").latency_ms == 5
    assert c.network.link_settings("us-east-2", "us-east-1").latency_ms == 20
    assert c.others("us-east-1") == ["us-west-2", "us-east-2"]  # nearest first
    assert c.members["us-east-2"].clock.wall_time() == c.members["us-east-1"].clock.wall_time() - 0.25
    for name in c.replicas():
        engine = c.members[name].engine
        assert sorted(engine.tables) == ["Carts", "Orders"]
        assert engine.tables["Carts"].strong == {"replicas": ["us-east-1", "us-east-2"], "witness": "us-west-2"}
    assert c.members["us-west-2"].engine is None and c.members["us-west-2"].api.tables == {}
    assert c.trace() == "" and c.quiescent()


def test_a_hosted_write_completes_after_a_round_trip_to_the_nearest_member_on_any_table():
    c = cluster()
    done = []
    c.host("us-east-1", write(c, "us-east-1", "Carts", "x"), lambda *outcome: done.append((c.now(), outcome)))
    assert c.hosted() == 1 and not c.quiescent()
    c.run_until(1.0)
    ((when, (outcome, (old, new))),) = done
    assert outcome == "ok" and old is None and new["v"] == {"S": "x"}
    assert when == 0.010  # 5 ms to the witness and back
    assert c.hosted() == 0 and c.items("us-east-2", "Carts") == {'{"id":{"S":"k"}}': {**KEY, "v": {"S": "x"}}}
    assert c.items("us-east-2", "Orders") == {}


def test_a_hosted_operation_is_answered_in_doubt_after_its_guard_and_crashed_when_its_member_dies():
    c = cluster()
    done = []
    c.network.partition("us-east-1", "us-east-2")
    c.network.partition("us-east-1", "us-west-2")
    c.host("us-east-1", write(c, "us-east-1", "Orders", "a"), lambda *o: done.append(("a", c.now(), o)), guard_s=3.0)
    c.host("us-east-1", lambda op_id, now: [], lambda *o: done.append(("b", c.now(), o)), guard_s=0.5)
    c.run_until(0.6)
    assert done == [("b", 0.5, ("in-doubt", None))]  # a node that never answers: the guard answers
    c.run_until(2.5)
    assert [entry[0] for entry in done] == ["b", "a"] and done[1][2] == ("in-doubt", None)  # the node's own bound
    c.host("us-east-1", write(c, "us-east-1", "Orders", "c"), lambda *o: done.append(("c", c.now(), o)), guard_s=3.0)
    c.crash("us-east-1")
    assert done[-1] == ("c", 2.5, ("crashed", None)) and c.hosted() == 0
    c.run_until(10.0)
    assert len(done) == 3  # nothing more: the guards of finished operations never fire
