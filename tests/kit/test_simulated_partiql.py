"""PartiQL in the pytest kit's simulated topologies (virtual time, one process): a PartiQL write wakes replication
as its item-API form does (MREC), and takes the commit protocol on a strong table (MRSC), so a test written against
the simulation sees what the region processes do (tests/mrec/test_partiql_replication.py, tests/mrsc/)."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from globaltables.testing import simulate
from globaltables.testing.spec import ORDERS_TABLE

pytestmark = pytest.mark.timeout(120)

A, B, W = "us-east-1", "us-east-2", "us-west-2"
STRONG = {
    "name": "kit-strong-partiql",
    "mode": "mrsc",
    "regions": [{"name": A}, {"name": B}, {"name": W, "role": "witness"}],
    "links": {"default": {"latency_ms": 10, "jitter_ms": 4}},
    "tables": [ORDERS_TABLE],
}


def test_a_partiql_insert_replicates_in_the_simulated_default_topology():
    # Why: the simulated harness must ship a PartiQL write as it ships a PutItem, or a test would wait in vain.
    with simulate(seed=5) as harness:
        harness.client("us-east-1").execute_statement(
            Statement="INSERT INTO Orders VALUE {'customerId': 'c-1', 'sk': 'o-1', 'total': 42}"
        )
        states = harness.wait_converged()
        for region in ("eu-west-1", "ap-southeast-1"):
            got = harness.client(region).execute_statement(
                Statement="SELECT total FROM Orders WHERE customerId = 'c-1' AND sk = 'o-1'"
            )
            assert got["Items"] == [{"total": {"N": "42"}}], (region, states)


def test_partiql_and_item_writes_racing_on_a_strong_table_replay_from_the_seed():
    # Why: in strong mode a PartiQL UPDATE is an UpdateItem under the commit protocol: raced against a PutItem from
    # the other replica, outcomes are only success or ReplicatedWriteConflictException, and both replicas agree.
    def outcomes(seed: int) -> tuple[list[str], dict]:
        with simulate(STRONG, seed=seed) as harness:
            key = {"customerId": {"S": "c"}, "sk": {"S": "1"}}
            harness.client(A).put_item(TableName="Orders", Item={**key, "n": {"N": "0"}})
            seen = []
            for _ in range(8):
                results = harness.concurrently(
                    lambda: harness.client(A).execute_statement(
                        Statement="UPDATE Orders SET n = n + 1 WHERE customerId = 'c' AND sk = '1'"
                    ),
                    lambda: harness.client(B).update_item(
                        TableName="Orders", Key=key, UpdateExpression="ADD n :one",
                        ExpressionAttributeValues={":one": {"N": "1"}},
                    ),
                )  # fmt: skip
                seen += [r.response["Error"]["Code"] if isinstance(r, ClientError) else "ok" for r in results]
            items = [
                harness.client(r).get_item(TableName="Orders", Key=key, ConsistentRead=True)["Item"] for r in (A, B)
            ]
            assert items[0] == items[1] and items[0]["n"] == {"N": str(seen.count("ok"))}
            return seen, items[0]

    first = outcomes(1)
    assert set(first[0]) <= {"ok", "ReplicatedWriteConflictException"}
    assert "ReplicatedWriteConflictException" in first[0][0::2]  # the PartiQL side lost at least one race
    assert first == outcomes(1)
