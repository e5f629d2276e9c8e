"""Strong mode (MRSC) keeps serving the majority side of a partition (docs/mrsc.md, "The split vote, resolved").

Three replicas; one is cut off from the other two. Writers in the two others race on one item: each race ends with
one write acknowledged and the other refused with ReplicatedWriteConflictException (409) — never a 500 while the
partition lasts — and a later write to the item goes through. Both modes: on the simulated network the racers start
at the same virtual instant; between real processes they are in flight together (a write costs one 20 ms round
trip). The kit's checker finds the whole history linearizable.
"""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from globaltables.testing.spec import ORDERS_TABLE

A, B, C = "us-east-1", "us-east-2", "us-west-2"
RWCE = "ReplicatedWriteConflictException"
THREE_REPLICAS = {
    "name": "kit-strong-three",
    "mode": "mrsc",
    "regions": [{"name": A}, {"name": B}, {"name": C}],
    "links": {"default": {"latency_ms": 10, "jitter_ms": 1}},
    "tables": [ORDERS_TABLE],
}

pytestmark = [
    pytest.mark.globaltables(topology=THREE_REPLICAS, modes=("sim", "process")),
    pytest.mark.timeout(180),
]


def outcome(result: object) -> str:
    if isinstance(result, ClientError):
        return result.response["Error"]["Code"]
    if isinstance(result, Exception):
        raise result
    return "ok"


def test_racing_writes_on_the_majority_side_of_a_partition_end_with_one_commit_and_rwce(
    topology, global_table, customer
):
    key = {"customerId": customer, "sk": "hot"}
    global_table.put(A, {**key, "n": 0})
    topology.wait_converged()
    topology.partition(C)  # C hears nobody and nobody hears C
    met = 0
    try:
        for round_ in range(5):
            results = topology.concurrently(
                lambda: global_table.put(A, {**key, "n": round_, "by": A}),
                lambda: global_table.put(B, {**key, "n": round_, "by": B}),
            )
            outcomes = sorted(outcome(result) for result in results)
            # Either the two proposals met (one wins, the other gets RWCE) or one committed before the other
            # started (both acknowledged, one after the other); never a 500.
            assert outcomes in (sorted(["ok", RWCE]), ["ok", "ok"]), (round_, outcomes)
            met += RWCE in outcomes
            assert global_table.get(A, key)["n"] == round_
        assert met, "the racing writes never met"
        global_table.update(B, key, {"n": 99})  # a later write to the item goes through during the partition
        assert global_table.get(A, key)["n"] == 99
    finally:
        topology.heal()
    topology.wait_converged()
    topology.assert_linearizable()
