"""What other regions see, and when: transactions, secondary indexes, TTL deletions.

- A transaction is atomic in the region that ran it only. Other regions receive its items as independent replicated
  writes (on independent lanes, each item by its partition key), so they see them appear one by one.
- A global secondary index in another region is maintained by the replicated write: it lags the write in the
  origin region by the replication delay, and is never ahead of that region's base table.
- A TTL deletion is a write by the service, replicated like any other; an update that extends the item's TTL
  wins over a TTL deletion racing it, whatever their versions, because the deletion is re-checked where it lands.
"""

from __future__ import annotations

import pytest

from globaltables.testing import absent, has

A, B, C = "us-east-1", "eu-west-1", "ap-southeast-1"

INDEXED = {
    "name": "orders-with-index",
    "regions": [{"name": A}, {"name": B}, {"name": C}],
    "links": {"default": {"latency_ms": 40, "jitter_ms": 2}},
    "tables": [
        {
            "TableName": "Orders",
            "AttributeDefinitions": [
                {"AttributeName": "customerId", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
                {"AttributeName": "status", "AttributeType": "S"},
            ],
            "KeySchema": [
                {"AttributeName": "customerId", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            "GlobalSecondaryIndexes": [
                {
                    "IndexName": "by-status",
                    "KeySchema": [{"AttributeName": "status", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "ALL"},
                }
            ],
        }
    ],
}


def test_transaction_items_become_visible_one_by_one_elsewhere(topology, global_table, customer):
    keys = [{"customerId": f"{customer}-{n}", "sk": "order"} for n in range(8)]
    topology.client(A).transact_write_items(
        TransactItems=[
            {"Put": {"TableName": "Orders", "Item": {"customerId": {"S": k["customerId"]}, "sk": {"S": "order"},
                                                      "status": {"S": "PAID"}}}}
            for k in keys
        ]
    )  # fmt: skip
    # In A, all eight at once.
    assert all(global_table.read(A, k) is not None for k in keys)
    seen_counts: list[int] = []

    def visible_in_b() -> bool:
        count = sum(global_table.read(B, k) is not None for k in keys)
        seen_counts.append(count)
        return count == len(keys)

    assert topology.wait_for(visible_in_b, 2.0), seen_counts
    partial = [count for count in seen_counts if 0 < count < len(keys)]
    assert partial, f"B went from {seen_counts[0]} straight to {seen_counts[-1]} items: {seen_counts}"


@pytest.mark.globaltables(topology=INDEXED, modes=("sim", "process"))
def test_a_gsi_in_another_region_lags_until_the_write_is_replicated(topology, global_table, customer):
    key = {"customerId": customer, "sk": "order#1"}

    def paid_in_index(region: str) -> list[str]:
        answer = topology.client(region).query(
            TableName="Orders", IndexName="by-status", KeyConditionExpression="#s = :paid",
            ExpressionAttributeNames={"#s": "status"}, ExpressionAttributeValues={":paid": {"S": "PAID"}},
        )  # fmt: skip
        return [item["customerId"]["S"] for item in answer["Items"]]

    topology.partition(A, B)  # makes "not yet replicated" certain, in any mode
    global_table.put(A, {**key, "status": "PAID"})
    assert customer in paid_in_index(A)  # the origin's index is updated with the write
    assert customer not in paid_in_index(B)  # B's index has nothing until B has the item
    topology.heal()
    assert topology.wait_for(lambda: customer in paid_in_index(B), 5.0), "B's index never showed the order"
    assert global_table.read(B, key) is not None


def test_an_update_extending_the_ttl_wins_over_a_racing_ttl_deletion(topology, global_table, customer):
    key = {"customerId": customer, "sk": "cart"}
    topology.enable_ttl("Orders", "expiresAt")
    topology.skew(B, -3.0)  # B's clock is behind: in B the item has not expired yet when A deletes it
    expires = int(topology.cluster.clock(A).wall_time()) + 5
    global_table.put(A, {**key, "expiresAt": expires})
    topology.wait_converged()
    topology.partition(A, B)
    topology.advance(6.5)  # A's (and C's) TTL sweep deletes the expired item
    assert global_table.read(A, key) is None
    global_table.update(B, key, {"expiresAt": expires + 3600})  # the customer came back: keep the cart
    topology.heal()
    topology.wait_converged()
    for region in topology.regions:
        global_table.assert_eventually(region, key, has(expiresAt=expires + 3600), within=0)


def test_an_update_not_extending_the_ttl_is_lost_to_the_ttl_deletion(topology, global_table, customer):
    key = {"customerId": customer, "sk": "cart"}
    topology.enable_ttl("Orders", "expiresAt")
    expires = int(topology.cluster.clock(A).wall_time()) + 5
    global_table.put(A, {**key, "expiresAt": expires})
    written = topology.now()
    topology.wait_converged()
    topology.advance(written + 4.5 - topology.now())
    global_table.update(B, key, {"note": "gift wrap"})  # just before expiry; leaves the TTL as it was
    topology.advance(3.0)  # the sweeps after expiry delete it, in every region, with later versions
    topology.wait_converged()
    for region in topology.regions:
        global_table.assert_eventually(region, key, absent, within=0)
