"""A multi-attribute GSI on an MREC global table (issue 15): items written in one region are queryable through the
index in every other region once replicated, like any GSI.

DynamoDB's global tables keep a table's GSIs on every replica, each replica indexing the items it holds (developer
guide, "Global tables: how it works" and GSI.html#GSI.MultiAttributeKeys). The table is made the way users make it:
CreateTable with the GSI in one region, then UpdateTable ReplicaUpdates Create for the others. Uses
tests/mrec/conftest.py's `globaltables up topologies/mrec-test.yaml`.
"""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from mrec_cluster import Cluster, wait_until

pytestmark = pytest.mark.timeout(240)

TABLE = "Tournaments"
INDEX = "byTournament"
US, EU, AP = "us-east-1", "eu-west-1", "ap-southeast-1"
SETTLE_TIMEOUT_S = 60.0
KEY_SCHEMA = [
    {"AttributeName": "tournamentId", "KeyType": "HASH"},
    {"AttributeName": "region", "KeyType": "HASH"},
    {"AttributeName": "round", "KeyType": "RANGE"},
    {"AttributeName": "matchNo", "KeyType": "RANGE"},
]


def S(value):
    return {"S": value}


def N(value):
    return {"N": str(value)}


def match(match_id, round_, no, region="NA-EAST"):
    return {"matchId": S(match_id), "tournamentId": S("WINTER2024"), "region": S(region), "round": S(round_),
            "matchNo": N(no)}  # fmt: skip


def indexed(cluster: Cluster, region: str, **extra) -> list[tuple[str, str, str]]:
    """(matchId, round, matchNo) of every NA-EAST WINTER2024 match in `region`'s index, in index order."""
    request = {"TableName": TABLE, "IndexName": INDEX, "KeyConditionExpression": "tournamentId = :t AND #r = :r",
               "ExpressionAttributeNames": {"#r": "region"},
               "ExpressionAttributeValues": {":t": S("WINTER2024"), ":r": S("NA-EAST")}}  # fmt: skip
    answer = cluster.clients[region].query(**{**request, **extra})
    return [(i["matchId"]["S"], i["round"]["S"], i["matchNo"]["N"]) for i in answer["Items"]]


def replica_statuses(cluster: Cluster, region: str) -> dict[str, str]:
    answer = cluster.clients[region].describe_table(TableName=TABLE)["Table"]
    return {r["RegionName"]: r["ReplicaStatus"] for r in answer.get("Replicas", [])}


def test_items_written_anywhere_are_queryable_through_the_index_everywhere(cluster: Cluster) -> None:
    us, eu, ap = (cluster.clients[r] for r in (US, EU, AP))
    us.create_table(
        TableName=TABLE,
        AttributeDefinitions=[{"AttributeName": name, "AttributeType": kind} for name, kind in
                              (("matchId", "S"), ("tournamentId", "S"), ("region", "S"), ("round", "S"),
                               ("matchNo", "N"))],
        KeySchema=[{"AttributeName": "matchId", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
        GlobalSecondaryIndexes=[{"IndexName": INDEX, "KeySchema": KEY_SCHEMA, "Projection": {"ProjectionType": "ALL"}}],
    )  # fmt: skip
    us.put_item(TableName=TABLE, Item=match("before-replicas", "FINAL", 1))  # copied to replicas as they are made
    for region in (EU, AP):  # one replica change at a time
        us.update_table(TableName=TABLE, ReplicaUpdates=[{"Create": {"RegionName": region}}])
        wait_until(lambda r=region: replica_statuses(cluster, US).get(r) == "ACTIVE", SETTLE_TIMEOUT_S, f"{region} ACTIVE")
    for client in (eu, ap):  # every replica holds the index with its whole key schema
        index = client.describe_table(TableName=TABLE)["Table"]["GlobalSecondaryIndexes"][0]
        assert index["IndexName"] == INDEX and index["KeySchema"] == KEY_SCHEMA

    us.put_item(TableName=TABLE, Item=match("us-1", "SEMIFINALS", 2))
    eu.put_item(TableName=TABLE, Item=match("eu-1", "SEMIFINALS", 10))
    ap.batch_write_item(RequestItems={TABLE: [{"PutRequest": {"Item": match("ap-1", "QUARTERFINALS", 3)}},
                                              {"PutRequest": {"Item": match("ap-2", "SEMIFINALS", 2.5)}}]})  # fmt: skip
    eu.put_item(TableName=TABLE, Item=match("elsewhere", "FINAL", 1, region="EU-WEST"))  # another index partition
    # An update in one region moves the entry everywhere; a REMOVE in another takes one out everywhere. The update
    # in ap-southeast-1 waits for us-1 to arrive there: before that it would make a new item of its own (UpdateItem
    # creates one), holding no index key, which would win over the put by last-writer-wins.
    wait_until(lambda: "Item" in ap.get_item(TableName=TABLE, Key={"matchId": S("us-1")}), SETTLE_TIMEOUT_S,
               "us-1 in ap-southeast-1")  # fmt: skip
    ap.update_item(TableName=TABLE, Key={"matchId": S("us-1")}, UpdateExpression="SET matchNo = :n",
                   ExpressionAttributeValues={":n": N(-1)})  # fmt: skip
    us.update_item(TableName=TABLE, Key={"matchId": S("before-replicas")}, UpdateExpression="REMOVE #o",
                   ExpressionAttributeNames={"#o": "round"})  # fmt: skip

    # Sorted by (round, matchNo): QUARTERFINALS < SEMIFINALS, and matchNo numerically (-1 < 2.5 < 10).
    expected = [("ap-1", "QUARTERFINALS", "3"), ("us-1", "SEMIFINALS", "-1"), ("ap-2", "SEMIFINALS", "2.5"),
                ("eu-1", "SEMIFINALS", "10")]  # fmt: skip
    for region in (US, EU, AP):
        wait_until(lambda r=region: indexed(cluster, r) == expected, SETTLE_TIMEOUT_S, f"the index in {region}")
    for region in (US, EU, AP):
        narrowed = indexed(cluster, region, **{
            "KeyConditionExpression": "tournamentId = :t AND #r = :r AND #o = :o AND matchNo > :n",
            "ExpressionAttributeNames": {"#r": "region", "#o": "round"},
            "ExpressionAttributeValues": {":t": S("WINTER2024"), ":r": S("NA-EAST"), ":o": S("SEMIFINALS"),
                                          ":n": N(0)},
            "ScanIndexForward": False,
        })  # fmt: skip
        assert narrowed == [("eu-1", "SEMIFINALS", "10"), ("ap-2", "SEMIFINALS", "2.5")]
        # Each replica enforces the components' types on its own writes; nothing refused reaches the others.
        with pytest.raises(ClientError) as caught:
            cluster.clients[region].put_item(TableName=TABLE, Item={**match(f"bad-{region}", "FINAL", 1),
                                                                     "matchNo": S("one")})  # fmt: skip
        assert caught.value.response["Error"]["Code"] == "ValidationException"
    wait_until(cluster.quiesced, SETTLE_TIMEOUT_S, "replication to quiesce")
    for region in (US, EU, AP):
        assert indexed(cluster, region) == expected
        scanned = cluster.clients[region].scan(TableName=TABLE, IndexName=INDEX)["Items"]
        assert sorted(i["matchId"]["S"] for i in scanned) == ["ap-1", "ap-2", "elsewhere", "eu-1", "us-1"]
        table = cluster.clients[region].scan(TableName=TABLE, ConsistentRead=True)["Items"]
        assert sorted(i["matchId"]["S"] for i in table) == ["ap-1", "ap-2", "before-replicas", "elsewhere", "eu-1",
                                                            "us-1"]  # fmt: skip
