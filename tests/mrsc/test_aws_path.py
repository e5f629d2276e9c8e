"""The AWS path to strong mode through boto3 and `globaltables up` (topologies/mrsc-test.yaml: replicas us-east-1
and us-east-2, witness us-west-2): a table created with CreateTable in one region, then UpdateTable with
MultiRegionConsistency STRONG, becomes a strong-mode table in the three regions (region/strong_conversion.py)."""

from __future__ import annotations

import uuid

import pytest
from botocore.exceptions import ClientError

from mrec_cluster import wait_until

pytestmark = pytest.mark.timeout(120)

A, B, W = "us-east-1", "us-east-2", "us-west-2"


def create(client, name: str) -> None:
    client.create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "N"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        BillingMode="PAY_PER_REQUEST",
    )


def convert(client, name: str, **extra):
    return client.update_table(
        TableName=name,
        ReplicaUpdates=[{"Create": {"RegionName": B}}],
        GlobalTableWitnessUpdates=[{"Create": {"RegionName": W}}],
        MultiRegionConsistency="STRONG",
        **extra,
    )


def message_of(call) -> str:
    with pytest.raises(ClientError) as caught:
        call()
    assert caught.value.response["Error"]["Code"] == "ValidationException", caught.value.response
    return caught.value.response["Error"]["Message"]


def strong_everywhere(cluster, name: str) -> bool:
    for region in (A, B):
        try:
            table = cluster.clients[region].describe_table(TableName=name)["Table"]
        except ClientError:
            return False
        if [r["ReplicaStatus"] for r in table.get("Replicas", [])] != ["ACTIVE", "ACTIVE"]:
            return False
        if table.get("GlobalTableWitnesses") != [{"RegionName": W, "WitnessStatus": "ACTIVE"}]:
            return False
    return True


def test_update_table_makes_an_empty_table_strong_in_the_three_regions(cluster):
    name = f"Conv-{uuid.uuid4().hex[:8]}"
    a, b = cluster.clients[A], cluster.clients[B]
    create(a, name)
    answer = convert(a, name)["TableDescription"]
    assert answer["TableStatus"] == "UPDATING"
    assert answer["MultiRegionConsistency"] == "STRONG"
    assert {r["RegionName"]: r["ReplicaStatus"] for r in answer["Replicas"]} == {A: "ACTIVE", B: "CREATING"}
    assert answer["GlobalTableWitnesses"] == [{"RegionName": W, "WitnessStatus": "CREATING"}]
    wait_until(lambda: strong_everywhere(cluster, name), 30, "the conversion to finish", interval=0.05)
    table = b.describe_table(TableName=name)["Table"]
    assert table["MultiRegionConsistency"] == "STRONG"
    assert table["KeySchema"] == [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}]
    # Strong mode: a write acknowledged in A is returned by a strong read in B, and the reverse.
    a.put_item(TableName=name, Item={"pk": {"S": "p"}, "sk": {"N": "1"}, "v": {"S": "from A"}})
    got = b.get_item(TableName=name, Key={"pk": {"S": "p"}, "sk": {"N": "1"}}, ConsistentRead=True)
    assert got["Item"]["v"] == {"S": "from A"}
    b.update_item(
        TableName=name, Key={"pk": {"S": "p"}, "sk": {"N": "1"}}, UpdateExpression="SET v = :v",
        ExpressionAttributeValues={":v": {"S": "from B"}},
    )  # fmt: skip
    got = a.get_item(TableName=name, Key={"pk": {"S": "p"}, "sk": {"N": "1"}}, ConsistentRead=True)
    assert got["Item"]["v"] == {"S": "from B"}
    # Strong-mode refusals apply to it, and its membership is fixed.
    assert "multi-Region strong consistency" in message_of(
        lambda: a.transact_get_items(TransactItems=[{"Get": {"TableName": name, "Key": {"pk": {"S": "p"}, "sk": {"N": "1"}}}}])
    )
    assert message_of(lambda: a.update_table(TableName=name, ReplicaUpdates=[{"Delete": {"RegionName": B}}])) == (
        "Deletion of only one table replica is not supported"
    )
    assert message_of(lambda: convert(b, name)) == "MultiRegionConsistency parameter is unsupported on existing global table"
    assert message_of(
        lambda: a.update_table(TableName=name, ReplicaUpdates=[{"Create": {"RegionName": "us-west-1"}}])
    ) == "Unsupported replica count for global tables with MultiRegionConsistency set to STRONG."
    # The witness still serves no table data.
    with pytest.raises(ClientError) as caught:
        cluster.clients[W].get_item(TableName=name, Key={"pk": {"S": "p"}, "sk": {"N": "1"}})
    assert caught.value.response["Error"]["Code"] == "ResourceNotFoundException"


def test_refused_conversions_change_nothing(cluster):
    name = f"Refused-{uuid.uuid4().hex[:8]}"
    a = cluster.clients[A]
    create(a, name)
    before = a.describe_table(TableName=name)["Table"]
    assert message_of(lambda: convert(a, name, BillingMode="PAY_PER_REQUEST")) == (
        "Requests that modify replicas or witnesses must not also modify other fields"
    )
    assert message_of(
        lambda: a.update_table(
            TableName=name, ReplicaUpdates=[{"Create": {"RegionName": B}}], GlobalTableWitnessUpdates=[{"Create": {"RegionName": W}}]
        )
    ) == "MultiRegionConsistency must be set as STRONG when GlobalTableWitnessUpdates parameter is present."
    assert message_of(
        lambda: a.update_table(TableName=name, ReplicaUpdates=[{"Create": {"RegionName": B}}], MultiRegionConsistency="STRONG")
    ) == "Unsupported replica count for global tables with MultiRegionConsistency set to STRONG."
    assert "region set" in message_of(
        lambda: a.update_table(
            TableName=name, ReplicaUpdates=[{"Create": {"RegionName": "eu-west-1"}}],
            GlobalTableWitnessUpdates=[{"Create": {"RegionName": W}}], MultiRegionConsistency="STRONG",
        )
    )  # fmt: skip
    assert a.describe_table(TableName=name)["Table"] == before
    a.put_item(TableName=name, Item={"pk": {"S": "p"}, "sk": {"N": "1"}})
    assert "holds items" in message_of(lambda: convert(a, name))
    assert "MultiRegionConsistency" not in a.describe_table(TableName=name)["Table"]


def test_a_table_of_the_same_name_in_the_other_replica_abandons_the_conversion(cluster):
    name = f"Clash-{uuid.uuid4().hex[:8]}"
    a, b = cluster.clients[A], cluster.clients[B]
    create(a, name)
    create(b, name)
    b.put_item(TableName=name, Item={"pk": {"S": "mine"}, "sk": {"N": "1"}})
    convert(a, name)
    wait_until(
        lambda: "MultiRegionConsistency" not in a.describe_table(TableName=name)["Table"],
        30,
        "the refused conversion to be abandoned",
        interval=0.05,
    )
    a.put_item(TableName=name, Item={"pk": {"S": "again"}, "sk": {"N": "1"}})  # a regional table again
    assert "MultiRegionConsistency" not in b.describe_table(TableName=name)["Table"]
    assert b.get_item(TableName=name, Key={"pk": {"S": "mine"}, "sk": {"N": "1"}})["Item"]


def test_strong_batch_get_item_returns_writes_acknowledged_elsewhere(cluster):
    """BatchGetItem with ConsistentRead syncs every key first (region/mrsc_host.py), like GetItem."""
    a, b = cluster.clients[A], cluster.clients[B]
    names = [f"bg-{uuid.uuid4().hex[:8]}" for _ in range(4)]
    for round_ in range(3):
        for n in names:
            a.put_item(TableName="Items", Item={"id": {"S": n}, "round": {"N": str(round_)}})
        got = b.batch_get_item(
            RequestItems={"Items": {"Keys": [{"id": {"S": n}} for n in names], "ConsistentRead": True}}
        )
        assert got["UnprocessedKeys"] == {}
        assert sorted((i["id"]["S"], i["round"]["N"]) for i in got["Responses"]["Items"]) == sorted(
            (n, str(round_)) for n in names
        )
