"""Planted bugs in the MRSC path are caught by the checkers (the pytest kit's process twin: tests/mrsc).

"ccf-without-confirmation" (replication/mrsc/node.py PLANTED_BUGS) answers a ConditionalCheckFailed from the local
copy without the Sync that confirms it is the latest version. With the links of one replica to the other replica
cut, a write committed by the other replica and the witness has not reached it: its local copy is stale. The
checker models the refusal as a read that found the condition false, so the planted region's refusal is a
violation; the unmodified protocol confirms with the witness, adopts the newer version and commits.

"accept-after-conflict" (node.py SIMULATION_PLANTED_BUGS, planted only from Python) makes a voter accept a proposal
it has just refused as `conflict`, although it still holds the racing one: two racing writes both commit.
"""

from __future__ import annotations

import pytest

from globaltables.chaos.checkers import linearizable
from globaltables.sim.mrsc_cluster import MrscCluster

K = {"pk": {"S": "k"}}


def run(planted: bool) -> MrscCluster:
    cluster = MrscCluster(seed=21)
    a, b, _w = cluster.member_names
    if planted:
        cluster.members[a].node.planted = frozenset({"ccf-without-confirmation"})
    cluster.network.partition(a, b)
    cluster.write(b, "put", K, {"S": "v1"}, process="b")  # committed by b and the witness; a never hears of it
    cluster.run_until(1.0)
    cluster.write(a, "update", K, {"S": "v2"}, process="a", ConditionExpression="attribute_exists(pk)")
    cluster.run_until(3.0)
    cluster.network.heal()
    cluster.read(a, K, process="final")
    cluster.run_until_quiescent()
    return cluster


@pytest.mark.parametrize("planted", [False, True])
def test_a_refusal_without_confirmation_is_caught_as_a_violation(planted):
    cluster = run(planted)
    outcomes = [(op.process, op.type, op.error) for op in cluster.history.ops if op.type != "invoke"]
    result = linearizable.check(cluster.history)
    if not planted:
        assert ("a", "ok", None) in outcomes, outcomes
        assert result.verdict == "valid", result
        return
    assert ("a", "fail", "ConditionalCheckFailedException") in outcomes, outcomes
    assert result.verdict == "invalid", result
    (finding,) = result.offending
    assert "refused with ConditionalCheckFailed" in finding.detail and "'v1'" in finding.detail, finding.detail
    # The proof is the committed put and the refusal that could not have seen it (and nothing else).
    assert sorted({op.process for op in finding.operations}) == ["a", "b"], finding


MEMBERS = ("us-east-1", "us-east-2", "us-west-2")


def race(planted: bool) -> MrscCluster:
    """Two replicas write one item at once; the third member votes. With "accept-after-conflict" planted in it, the
    voter that accepted the first proposal to arrive refuses the higher-ranked second one as `conflict` and then
    accepts it all the same: each writer has a majority (itself and the voter), so both commit at one version."""
    a, b, voter = MEMBERS

    def plant(name, node):
        if planted and name == voter:
            node.planted = frozenset({"accept-after-conflict"})

    cluster = MrscCluster(MEMBERS, witness=None, seed=2, on_node=plant)
    cluster.write(a, "put", K, {"S": "from-a"}, process="a")
    cluster.write(b, "put", K, {"S": "from-b"}, process="b")
    cluster.run_until(1.0)
    for n, region in enumerate((a, b, a, b)):  # strong reads, one after another, alternating between the writers
        cluster.read(region, K, process=f"read-{n}")
        cluster.run_until(cluster.now() + 0.5)
    cluster.run_until_quiescent()
    return cluster


@pytest.mark.parametrize("planted", [False, True])
def test_a_voter_accepting_after_refusing_lets_two_racing_writes_commit(planted):
    cluster = race(planted)
    writes = sorted((op.process, op.type, op.error) for op in cluster.history.ops if op.type != "invoke" and op.f == "put")
    reads = [op.value for op in cluster.history.ops if op.type == "ok" and op.f == "get"]
    images = {name: cluster.members[name].strong.committed(cluster.table_name, K)[2] for name in MEMBERS[:2]}
    result = linearizable.check(cluster.history)
    if not planted:  # the voter holds one proposal at a time: one write commits, the other is refused
        assert sorted(type_ for _p, type_, _e in writes) == ["fail", "ok"], writes
        assert "ReplicatedWriteConflictException" in {error for _p, _t, error in writes}, writes
        assert len({value["S"] for value in reads}) == 1 and images["us-east-1"] == images["us-east-2"]
        assert result.verdict == "valid", result
        return
    assert writes == [("a", "ok", None), ("b", "ok", None)], writes  # both acknowledged
    assert images["us-east-1"] != images["us-east-2"], images  # each writer holds its own image at that version
    assert [value["S"] for value in reads] == ["from-a", "from-b", "from-a", "from-b"], reads
    assert result.verdict == "invalid", result


def test_the_voter_bug_is_not_one_a_control_request_can_plant():
    from globaltables.region.control import BadRequest, checked, fault_spec

    spec = fault_spec(["us-east-2", "us-west-2"])
    assert checked({"planted": ["ccf-without-confirmation"]}, spec)["planted"] == ["ccf-without-confirmation"]
    with pytest.raises(BadRequest, match="ccf-without-confirmation"):
        checked({"planted": ["accept-after-conflict"]}, spec)
