"""Replicas added and removed through UpdateTable, and the replication metrics, on a real topology.

The path is the one DynamoDB users take: CreateTable in one region makes a regional table; UpdateTable with
ReplicaUpdates Create adds replicas (first eu-west-1, then, while writes continue in two regions, ap-southeast-1);
Delete removes one. Uses tests/mrec/conftest.py's `globaltables up topologies/mrec-test.yaml`.
"""

from __future__ import annotations

import random
import threading
import urllib.request

import pytest
from botocore.exceptions import ClientError
from prometheus_client.parser import text_string_to_metric_families

from mrec_cluster import Cluster, wait_until

pytestmark = pytest.mark.timeout(240)

TABLE = "Grow"
ITEMS = 10_000
SETTLE_TIMEOUT_S = 60.0
US, EU, AP = "us-east-1", "eu-west-1", "ap-southeast-1"


def replicas(cluster: Cluster, region: str, table: str = TABLE) -> dict[str, str]:
    answer = cluster.clients[region].describe_table(TableName=table)["Table"]
    return {r["RegionName"]: r["ReplicaStatus"] for r in answer.get("Replicas", [])}


def all_items(cluster: Cluster, region: str) -> dict[str, dict]:
    paginator = cluster.clients[region].get_paginator("scan")
    out = {}
    for page in paginator.paginate(TableName=TABLE, ConsistentRead=True):
        for item in page["Items"]:
            out[item["id"]["S"]] = item
    return out


def error_of(call) -> tuple[str, str]:
    with pytest.raises(ClientError) as caught:
        call()
    return caught.value.response["Error"]["Code"], caught.value.response["Error"]["Message"]


def put_many(client, keys: list[str], origin: str) -> None:
    for start in range(0, len(keys), 25):
        requests = [
            {"PutRequest": {"Item": {"id": {"S": key}, "origin": {"S": origin}, "n": {"N": "0"}}}}
            for key in keys[start : start + 25]
        ]
        pending = {TABLE: requests}
        while pending:
            pending = client.batch_write_item(RequestItems=pending).get("UnprocessedItems") or None


class Writer(threading.Thread):
    """Puts, updates and deletes keys of the table in one region until stopped."""

    def __init__(self, client, region: str, keys: list[str], seed: int) -> None:
        super().__init__(daemon=True)
        self.client, self.region, self.keys = client, region, keys
        self.random = random.Random(seed)
        self.stop = threading.Event()
        self.writes = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                key = self.random.choice(self.keys)
                roll = self.random.random()
                if roll < 0.1:
                    self.client.delete_item(TableName=TABLE, Key={"id": {"S": key}})
                elif roll < 0.6:
                    self.client.update_item(
                        TableName=TABLE,
                        Key={"id": {"S": key}},
                        UpdateExpression="SET n = if_not_exists(n, :zero) + :one, lastRegion = :region",
                        ExpressionAttributeValues={":zero": {"N": "0"}, ":one": {"N": "1"}, ":region": {"S": self.region}},
                    )
                else:
                    self.client.put_item(
                        TableName=TABLE, Item={"id": {"S": key}, "origin": {"S": self.region}, "w": {"N": str(self.writes)}}
                    )
                self.writes += 1
        except BaseException as error:  # noqa: BLE001 - reported by the test
            self.error = error


def started(writers: list[Writer], before: list[int]) -> bool:
    for writer in writers:
        if writer.error is not None:
            raise AssertionError(f"writer in {writer.region} failed: {writer.error!r}")
    return all(w.writes > b + 50 for w, b in zip(writers, before, strict=True))


def test_replica_added_under_load_and_removed(cluster: Cluster) -> None:
    us, eu, ap = (cluster.clients[r] for r in (US, EU, AP))
    us.create_table(
        TableName=TABLE,
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    # CreateTable in one region makes a regional table only.
    assert "Replicas" not in us.describe_table(TableName=TABLE)["Table"]
    assert error_of(lambda: ap.describe_table(TableName=TABLE))[0] == "ResourceNotFoundException"

    answer = us.update_table(TableName=TABLE, ReplicaUpdates=[{"Create": {"RegionName": EU}}])["TableDescription"]
    assert {r["RegionName"]: r["ReplicaStatus"] for r in answer["Replicas"]} == {US: "ACTIVE", EU: "CREATING"}
    wait_until(lambda: replicas(cluster, US) == {US: "ACTIVE", EU: "ACTIVE"}, SETTLE_TIMEOUT_S, "eu-west-1 ACTIVE")
    assert replicas(cluster, EU) == {US: "ACTIVE", EU: "ACTIVE"}
    assert eu.describe_table(TableName=TABLE)["Table"]["StreamSpecification"]["StreamEnabled"] is True

    keys = [f"k{i:05d}" for i in range(ITEMS)]
    put_many(us, keys[: ITEMS // 2], US)  # two origins in the snapshot
    put_many(eu, keys[ITEMS // 2 :], EU)

    writers = [Writer(us, US, keys + [f"new-us-{i}" for i in range(200)], 1),
               Writer(eu, EU, keys + [f"new-eu-{i}" for i in range(200)], 2)]  # fmt: skip
    for writer in writers:
        writer.start()
    try:
        wait_until(lambda: started(writers, [0, 0]), 30, "writers to get going")
        answer = us.update_table(TableName=TABLE, ReplicaUpdates=[{"Create": {"RegionName": AP}}])
        assert {r["RegionName"]: r["ReplicaStatus"] for r in answer["TableDescription"]["Replicas"]}[AP] == "CREATING"
        assert answer["TableDescription"]["TableStatus"] == "UPDATING"
        # Only one replica change at a time.
        code, _ = error_of(lambda: us.update_table(TableName=TABLE, ReplicaUpdates=[{"Delete": {"RegionName": EU}}]))
        assert code == "ResourceInUseException"
        wait_until(lambda: replicas(cluster, US).get(AP) == "ACTIVE", SETTLE_TIMEOUT_S, "ap-southeast-1 ACTIVE")
        before = [w.writes for w in writers]
        wait_until(lambda: started(writers, before), 30, "writes after ACTIVE")
    finally:
        for writer in writers:
            writer.stop.set()
        for writer in writers:
            writer.join(30)
    assert all(w.error is None for w in writers), [w.error for w in writers]
    assert all(replicas(cluster, r) == {US: "ACTIVE", EU: "ACTIVE", AP: "ACTIVE"} for r in (US, EU, AP))

    wait_until(cluster.quiesced, SETTLE_TIMEOUT_S, "replication to quiesce")
    contents = {region: all_items(cluster, region) for region in (US, EU, AP)}
    assert len(contents[US]) >= ITEMS * 0.8
    assert contents[AP] == contents[US]
    assert contents[EU] == contents[US]

    # Delete the new replica, asked in another region: its data goes, the others carry on.
    answer = eu.update_table(TableName=TABLE, ReplicaUpdates=[{"Delete": {"RegionName": AP}}])
    assert {r["RegionName"]: r["ReplicaStatus"] for r in answer["TableDescription"]["Replicas"]}[AP] == "DELETING"
    wait_until(lambda: AP not in replicas(cluster, EU) and AP not in replicas(cluster, US), SETTLE_TIMEOUT_S, "delete")
    wait_until(
        lambda: error_of(lambda: ap.describe_table(TableName=TABLE))[0] == "ResourceNotFoundException",
        SETTLE_TIMEOUT_S,
        "ap-southeast-1's replica to go",
    )
    us.put_item(TableName=TABLE, Item={"id": {"S": "after-delete"}, "v": {"N": "1"}})
    wait_until(lambda: "Item" in eu.get_item(TableName=TABLE, Key={"id": {"S": "after-delete"}}), 30, "us -> eu")
    wait_until(cluster.quiesced, SETTLE_TIMEOUT_S, "replication to quiesce after the delete")
    assert all_items(cluster, US) == all_items(cluster, EU)
    for region in (US, EU):
        assert not [link for link in cluster.status(region)["links"] if link["table"] == TABLE and link["peer"] == AP]


def test_replica_updates_are_validated(cluster: Cluster) -> None:
    us = cluster.clients[US]
    name = "Checked"
    us.create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )

    def update(*updates):
        return lambda: us.update_table(TableName=name, ReplicaUpdates=list(updates))

    code, message = error_of(update({"Create": {"RegionName": "us-west-2"}}))
    assert code == "ValidationException" and "us-west-2" in message
    code, message = error_of(update({"Create": {"RegionName": US}}))
    assert code == "ValidationException" and "already existed as tables" in message
    code, message = error_of(update({"Delete": {"RegionName": EU}}))
    assert code == "ValidationException" and EU in message
    code, _ = error_of(update({"Create": {"RegionName": EU}}, {"Create": {"RegionName": AP}}))
    assert code == "ValidationException"
    assert "Replicas" not in us.describe_table(TableName=name)["Table"]  # nothing changed

    # A region that already holds a regional table of that name refuses the replica: CREATION_FAILED.
    cluster.clients[AP].create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    us.update_table(TableName=name, ReplicaUpdates=[{"Create": {"RegionName": AP}}])
    wait_until(lambda: replicas(cluster, US, name).get(AP) == "CREATION_FAILED", SETTLE_TIMEOUT_S, "failure")
    description = us.describe_table(TableName=name)["Table"]
    failed = [r for r in description["Replicas"] if r["RegionName"] == AP][0]
    assert "already existed as tables" in failed["ReplicaStatusDescription"]


def test_metrics_report_lag_for_every_link(cluster: Cluster) -> None:
    names = {}
    for region in cluster.regions:
        names[region] = f"metrics-{region}"
        cluster.clients[region].put_item(TableName="Items", Item={"id": {"S": names[region]}})
    for region in cluster.regions:
        for other in cluster.regions:
            wait_until(
                lambda r=region, o=other: "Item" in cluster.clients[r].get_item(TableName="Items", Key={"id": {"S": names[o]}}),
                30,
                f"{names[other]} in {region}",
            )
    for region in cluster.regions:
        with urllib.request.urlopen(cluster.endpoints[region] + "/metrics", timeout=30) as response:
            text = response.read().decode()
        families = {family.name: family for family in text_string_to_metric_families(text)}
        assert families["ReplicationLatency"].type == "histogram"
        counts = {
            s.labels["SourceRegion"]: s.value
            for s in families["ReplicationLatency"].samples
            if s.name == "ReplicationLatency_count" and s.labels["TableName"] == "Items"
        }
        others = [r for r in cluster.regions if r != region]
        assert sorted(counts) == sorted(others), counts
        assert all(value >= 1 for value in counts.values()), counts
        assert all(
            s.labels["ReceivingRegion"] == region for s in families["ReplicationLatency"].samples
        )
        quantiles = {
            (s.labels["SourceRegion"], s.labels["quantile"]): s.value
            for s in families["ReplicationLatencyQuantile"].samples
            if s.labels["TableName"] == "Items"
        }
        for other in others:
            assert quantiles[(other, "0.5")] <= quantiles[(other, "0.99")] <= quantiles[(other, "1")]
            assert quantiles[(other, "1")] >= 15  # the test topology's links are 20 ms one way (floor only)
        pending = {
            s.labels["ReceivingRegion"]
            for s in families["PendingReplicationCount"].samples
            if s.labels["TableName"] == "Items"
        }
        assert pending == set(others)
        lag = cluster.status(region)["replication_lag"]
        assert {(entry["source_region"], entry["table"]) for entry in lag} >= {(o, "Items") for o in others}


def test_a_restart_keeps_the_replica_changes_made_through_the_api(cluster: Cluster) -> None:
    # "Items" is declared in the topology file over all three regions. Removing a replica through the API is the
    # table's membership from then on: a region restarted on its data must neither bring the replica back as a peer
    # nor, in the region that lost it, recreate the table.
    us = cluster.clients[US]
    us.update_table(TableName="Items", ReplicaUpdates=[{"Delete": {"RegionName": AP}}])
    wait_until(
        lambda: AP not in replicas(cluster, US, "Items") and AP not in replicas(cluster, EU, "Items"),
        SETTLE_TIMEOUT_S,
        "the replica to leave",
    )
    ap = cluster.clients[AP]
    wait_until(
        lambda: error_of(lambda: ap.describe_table(TableName="Items"))[0] == "ResourceNotFoundException",
        SETTLE_TIMEOUT_S,
        "ap-southeast-1's replica to go",
    )
    for region in (US, AP):
        cluster.supervise(region, "crash")
        cluster.supervise(region, "restart")
    assert replicas(cluster, US, "Items") == {US: "ACTIVE", EU: "ACTIVE"}
    assert error_of(lambda: ap.describe_table(TableName="Items"))[0] == "ResourceNotFoundException"
    assert not [link for link in cluster.status(US)["links"] if link["table"] == "Items" and link["peer"] == AP]
    us.put_item(TableName="Items", Item={"id": {"S": "after-restart"}})
    wait_until(lambda: "Item" in cluster.clients[EU].get_item(TableName="Items", Key={"id": {"S": "after-restart"}}),
               30, "us -> eu after the restart")  # fmt: skip
