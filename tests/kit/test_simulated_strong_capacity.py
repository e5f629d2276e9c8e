"""Capacity in the simulated strong-mode harness (testing/simulated_mrsc.py, `capacity="modelled"`): the request path
of a region process (region/mrsc_requests.py) over members whose engines model capacity on the virtual clock, so a
hot key's strong writes throttle at the coordinator exactly as in tests/mrsc/test_strong_capacity.py, the other
member charges the commits it applies, and the same seed replays the same throttles at the same virtual instants
(docs/capacity.md, decision 21)."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from globaltables.testing import simulate

pytestmark = pytest.mark.timeout(120)

A, B, W = "us-east-1", "us-east-2", "us-west-2"
TABLE = "Items"
STRONG = {
    "name": "kit-strong-capacity",
    "mode": "mrsc",
    "regions": [{"name": A}, {"name": B}, {"name": W, "role": "witness"}],
    "links": {"default": {"latency_ms": 10, "jitter_ms": 4}},
    "tables": [
        {
            "TableName": TABLE,
            "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST",
        }
    ],
}
SIZE = 350 * 1024  # 350 write units: three writes within a second ask more than a partition's 1,000


def big_item(n: int) -> dict:
    blob = "x" * (SIZE - len("id") - len("hot") - len("n") - 2 - len("b"))
    return {"id": {"S": "hot"}, "n": {"S": f"{n:02d}"}, "b": {"S": blob}}


def consumed(harness, region: str) -> float:
    return harness.cluster.members[region].api.throughput.tables[TABLE].resources[None].consumed["write"]


def hot_writes(seed: int) -> tuple[list[tuple], dict]:
    """Twelve back-to-back strong writes of one key at A: each outcome with its virtual time, and what each
    replica counted and holds once the others caught up."""
    with simulate(STRONG, seed=seed, capacity="modelled") as harness:
        client = harness.client(A)
        outcomes: list[tuple] = []
        for n in range(12):
            try:
                answer = client.put_item(TableName=TABLE, Item=big_item(n), ReturnConsumedCapacity="TOTAL")
                outcomes.append(("ok", n, answer["ConsumedCapacity"]["CapacityUnits"], round(harness.now(), 6)))
            except ClientError as error:
                reasons = error.response.get("throttlingReasons") or error.response.get("ThrottlingReasons")
                outcomes.append((error.response["Error"]["Code"], n, reasons, round(harness.now(), 6)))
        harness.wait_converged()
        found = {
            region: (consumed(harness, region), harness.read(region, TABLE, {"id": {"S": "hot"}})["n"])
            for region in (A, B)
        }
        return outcomes, found


def test_a_hot_key_throttles_simulated_strong_writes_at_the_coordinator_and_replays_from_the_seed():
    outcomes, found = hot_writes(seed=5)
    assert hot_writes(seed=5) == (outcomes, found)  # same seed, same throttles at the same virtual instants
    served = [units for code, _n, units, _at in outcomes if code == "ok"]
    refused = [(code, reasons) for code, _n, reasons, _at in outcomes if code != "ok"]
    assert [code for code, *_ in outcomes[:3]] == ["ok", "ok", "ThrottlingException"]  # 350 + 350 of 1,000, then 350
    assert refused and all(
        (code, reasons)
        == (
            "ThrottlingException",
            [
                {
                    "reason": "TableWriteKeyRangeThroughputExceeded",
                    "resource": f"arn:aws:dynamodb:{A}:000000000000:table/{TABLE}",
                }
            ],
        )
        for code, reasons in refused
    )
    assert all(units == 350.0 for units in served)
    # The coordinator drew what its clients were told; the other member charged each commit it applied, never
    # refusing one; a refused write was never proposed, so both hold the last write served.
    last = max(n for code, n, *_ in outcomes if code == "ok")
    assert found[A] == (sum(served), {"S": f"{last:02d}"})
    assert found[B] == (sum(served), {"S": f"{last:02d}"})


def keys_in_one_partition(harness, count: int) -> list[str]:
    """Partition-key strings that share partition 0 of the table's four (by the engine's encoding and placement)."""
    from globaltables.engine import partitions
    from globaltables.engine.storage.records import partition_hash

    table = harness.cluster.members[A].api.tables[TABLE]
    found: list[str] = []
    n = 0
    while len(found) < count:
        key = f"k{n}"
        n += 1
        if partitions.partition_of(partition_hash(table.key.encode_partition({"S": key})), 4) == 0:
            found.append(key)
    return found


def test_a_strong_batch_leaves_its_throttled_writes_unprocessed_and_fails_only_when_none_was_admitted():
    with simulate(STRONG, seed=2, capacity="modelled") as harness:
        client = harness.client(A)
        first, second, third, fourth = keys_in_one_partition(harness, 4)
        put = lambda key: {"PutRequest": {"Item": {**big_item(0), "id": {"S": key}}}}
        answer = client.batch_write_item(
            RequestItems={TABLE: [put(first), put(second), put(third)]}, ReturnConsumedCapacity="TOTAL"
        )
        # 350 + 350 units fit the partition's second, the third is left for the client to retry.
        assert answer["UnprocessedItems"] == {TABLE: [put(third)]}
        assert answer["ConsumedCapacity"] == [{"TableName": TABLE, "CapacityUnits": 700.0}]
        with pytest.raises(ClientError) as refused:
            client.batch_write_item(RequestItems={TABLE: [put(fourth)]})
        assert refused.value.response["Error"]["Code"] == "ThrottlingException"
        harness.wait_converged()
        for region in (A, B):
            held = {key for key in (first, second, third, fourth) if harness.read(region, TABLE, {"id": {"S": key}})}
            assert held == {first, second}, region
