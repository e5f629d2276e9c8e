"""A planted bug in the MRSC path is caught by the checkers (the pytest kit's process twin: tests/mrsc).

"ccf-without-confirmation" (replication/mrsc/node.py PLANTED_BUGS) answers a ConditionalCheckFailed from the local
copy without the Sync that confirms it is the latest version. With the links of one replica to the other replica
cut, a write committed by the other replica and the witness has not reached it: its local copy is stale. The
checker models the refusal as a read that found the condition false, so the planted region's refusal is a
violation; the unmodified protocol confirms with the witness, adopts the newer version and commits.
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
