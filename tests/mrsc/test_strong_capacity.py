"""Capacity in strong mode (MRSC) with real processes and boto3 (docs/capacity.md, decision 21): the region a client
calls admits a strong write against its own buckets before proposing it, a refused write changes nothing anywhere
and gets the answer an MREC region gives, the other member charges the commits it applies, and a strong read is
charged once.

Topology: topologies/mrsc-test.yaml (replicas A = us-east-1 and B = us-east-2, witness W = us-west-2, 10 ms links)
with capacity modelled, the regions' default, in place of the unlimited the other MRSC tests run with. A 350 KB item costs 350 write units, so three writes of one key within a second
ask more than its partition's 1,000: the hot key throttles after a handful of writes whatever the machine's speed
(each write would have to take over a third of a second for the partition to keep up).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from botocore.exceptions import ClientError

from mrec_cluster import ROOT, Cluster, start_up, stop_up, wait_until

pytestmark = pytest.mark.timeout(120)

TABLE = "Items"
A, B = "us-east-1", "us-east-2"
SIZE = 350 * 1024
WRITE_UNITS = 350.0
STRONG_READ_UNITS = 88.0  # 350 KB in 4 KB units, strongly consistent


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    workdir = tmp_path_factory.mktemp("mrsc-capacity")
    text = (ROOT / "topologies" / "mrsc-test.yaml").read_text()
    modelled = text.replace("    capacity: unlimited\n", "")
    assert modelled != text and "capacity" not in modelled.split("regions:")[1]
    topology = workdir / "mrsc-capacity.yaml"
    topology.write_text(modelled)
    running = start_up(topology, workdir)
    try:
        yield running
    finally:
        assert stop_up(running.process) == 0


def capacity(cluster: Cluster, region: str) -> dict:
    code, answer = cluster.control(f"{cluster.endpoints[region]}/control/capacity")
    assert code == 200, answer
    return answer["tables"][TABLE]


def big_item(name: str, n: int) -> dict:
    blob = "x" * (SIZE - len("id") - len(name) - len("n") - 2 - len("b"))
    return {"id": {"S": name}, "n": {"S": f"{n:02d}"}, "b": {"S": blob}}


def test_a_hot_key_throttles_a_strong_write_at_the_coordinator_and_the_refused_write_changes_nothing(cluster):
    client = cluster.clients[A]
    name = f"hot-{uuid.uuid4().hex[:10]}"
    before_a, before_b = capacity(cluster, A), capacity(cluster, B)
    served: list[float] = []
    refused = None
    for n in range(20):
        try:
            answer = client.put_item(TableName=TABLE, Item=big_item(name, n), ReturnConsumedCapacity="TOTAL")
        except ClientError as error:
            refused = error
            break
        served.append(answer["ConsumedCapacity"]["CapacityUnits"])
    assert refused is not None, "twenty 350-unit writes of one key were all served"
    assert served and all(units == WRITE_UNITS for units in served)
    response = refused.response
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert response["Error"]["Code"] == "ThrottlingException"  # an on-demand table's partition: as in MREC
    reasons = response.get("throttlingReasons") or response.get("ThrottlingReasons")
    assert reasons == [
        {
            "reason": "TableWriteKeyRangeThroughputExceeded",
            "resource": f"arn:aws:dynamodb:{A}:000000000000:table/{TABLE}",
        }
    ]
    # The refused write was never proposed: both replicas hold the last write served.
    last = len(served) - 1
    for region in (A, B):
        item = cluster.clients[region].get_item(TableName=TABLE, Key={"id": {"S": name}}, ConsistentRead=True)["Item"]
        assert item["n"] == {"S": f"{last:02d}"}, region
    # What the coordinator drew is what the clients were told; the other member charged every commit it applied,
    # as a replicated write of the same units; the throttle counts on the coordinator only.
    after_a = capacity(cluster, A)
    assert after_a["ConsumedWriteCapacityUnits"] - before_a["ConsumedWriteCapacityUnits"] == sum(served)
    assert after_a["WriteKeyRangeThroughputThrottleEvents"] - before_a["WriteKeyRangeThroughputThrottleEvents"] == 1
    assert (
        after_a["ThrottledRequestsByOperation"].get("PutItem", 0)
        - before_a["ThrottledRequestsByOperation"].get("PutItem", 0)
        == 1
    )
    wait_until(
        lambda: (
            capacity(cluster, B)["ConsumedWriteCapacityUnits"] - before_b["ConsumedWriteCapacityUnits"] >= sum(served)
        ),
        30,
        "the other member to charge the commits it applied",
    )
    after_b = capacity(cluster, B)
    assert after_b["ConsumedWriteCapacityUnits"] - before_b["ConsumedWriteCapacityUnits"] == sum(served)
    assert after_b["WriteThrottleEvents"] == before_b["WriteThrottleEvents"]  # charged, never refused


def test_a_strong_read_is_charged_once_where_it_was_asked(cluster):
    client = cluster.clients[A]
    name = f"read-{uuid.uuid4().hex[:10]}"

    def put() -> bool:  # the previous test may have left the partition short for a second: bounded retries
        try:
            client.put_item(TableName=TABLE, Item=big_item(name, 0))
        except ClientError as error:
            assert error.response["Error"]["Code"] == "ThrottlingException", error
            return False
        return True

    def replicated() -> bool:
        # Each poll of the 350 KB item draws 44 read units at B: polled every 10 ms, the reads alone would pass the
        # partition's 3,000 a second while replication is slow. Polled every 0.2 s, and a throttle is a retry.
        try:
            return "Item" in cluster.clients[B].get_item(TableName=TABLE, Key={"id": {"S": name}})
        except ClientError as error:
            assert error.response["Error"]["Code"] == "ThrottlingException", error
            return False

    wait_until(put, 30, "the write of the item to read", interval=0.2)
    wait_until(replicated, 30, "the write to reach the other member", interval=0.2)
    before_a, before_b = capacity(cluster, A), capacity(cluster, B)
    answer = client.get_item(
        TableName=TABLE, Key={"id": {"S": name}}, ConsistentRead=True, ReturnConsumedCapacity="TOTAL"
    )
    assert answer["Item"]["n"] == {"S": "00"}
    assert answer["ConsumedCapacity"]["CapacityUnits"] == STRONG_READ_UNITS
    after_a, after_b = capacity(cluster, A), capacity(cluster, B)
    # The checks before the round trip drew nothing; the read after it drew what the client was told.
    assert after_a["ConsumedReadCapacityUnits"] - before_a["ConsumedReadCapacityUnits"] == STRONG_READ_UNITS
    assert after_b["ConsumedReadCapacityUnits"] == before_b["ConsumedReadCapacityUnits"]  # the Sync is not a read
