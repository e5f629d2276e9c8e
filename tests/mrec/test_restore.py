"""Point-in-time restore of a global table's replica, with real processes (`globaltables up`) and boto3.

Why: the operator's case of issue 19, "restore us-east-1's table to a second before the deploy" after a bad write
replicated everywhere. The restored table must hold us-east-1's items of that second, including items a write in
another region later overwrote or deleted, and it is a new table of us-east-1 only, not a replica (DynamoDB:
RestoreTableToPointInTime restores "to a new table"; replication settings are not part of what is restored).
"""

from __future__ import annotations

import time
import uuid

import pytest

from mrec_cluster import Cluster, wait_until

pytestmark = pytest.mark.timeout(180)

TABLE = "Items"
CONVERGE_TIMEOUT_S = 30.0


def next_second() -> float:
    """The next whole second, once the clock has passed it (restore times are whole seconds)."""
    moment = float(int(time.time()) + 1)
    while time.time() <= moment:
        time.sleep(moment - time.time() + 0.001)
    return moment


def mine(cluster: Cluster, region: str, table: str, prefix: str) -> dict[str, dict]:
    items = cluster.clients[region].scan(TableName=table, ConsistentRead=True)["Items"]
    return {item["id"]["S"]: item for item in items if item["id"]["S"].startswith(prefix)}


def test_restoring_a_replica_to_before_a_replicated_bad_write(cluster: Cluster):
    us, eu = cluster.clients["us-east-1"], cluster.clients["eu-west-1"]
    prefix = f"pitr-{uuid.uuid4().hex[:8]}"
    us.update_continuous_backups(TableName=TABLE, PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True})
    good = {f"{prefix}-{n}": {"id": {"S": f"{prefix}-{n}"}, "v": {"S": "good"}} for n in range(3)}
    for item in good.values():
        us.put_item(TableName=TABLE, Item=item)
    wait_until(
        lambda: len(mine(cluster, "eu-west-1", TABLE, prefix)) == 3, CONVERGE_TIMEOUT_S, "eu-west-1 to hold them"
    )
    before_deploy = next_second()
    # The bad deploy runs in eu-west-1: it overwrites one item and deletes another; both replicate to us-east-1.
    eu.put_item(TableName=TABLE, Item={"id": {"S": f"{prefix}-0"}, "v": {"S": "bad"}})
    eu.delete_item(TableName=TABLE, Key={"id": {"S": f"{prefix}-1"}})

    def damaged():
        now = mine(cluster, "us-east-1", TABLE, prefix)
        return f"{prefix}-1" not in now and now.get(f"{prefix}-0", {}).get("v") == {"S": "bad"}

    wait_until(damaged, CONVERGE_TIMEOUT_S, "the bad writes to reach us-east-1")
    target = f"Items-{prefix}"
    answer = us.restore_table_to_point_in_time(SourceTableName=TABLE, TargetTableName=target,
                                               RestoreDateTime=before_deploy)  # fmt: skip
    assert answer["TableDescription"]["RestoreSummary"]["RestoreInProgress"] is True
    us.get_waiter("table_exists").wait(TableName=target)
    assert mine(cluster, "us-east-1", target, prefix) == good
    described = us.describe_table(TableName=target)["Table"]
    assert "Replicas" not in described and "GlobalTableVersion" not in described
    assert target not in eu.list_tables()["TableNames"]
