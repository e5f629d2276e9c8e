"""Replicated writes consume write capacity where they arrive (docs/capacity.md, decision 16), on virtual time: a
provisioned global table whose write capacity covers each region's own writes but not their sum falls behind
(replication lag and pending counts grow, records deferred, never dropped), and after UpdateTable raises the
capacity in every region the lag drains; every acknowledged write reaches every region and the replicas converge."""

from __future__ import annotations

from globaltables.chaos.checkers.convergence import check_convergence
from globaltables.chaos.checkers.lww import check_lww
from globaltables.chaos.history import key_id
from globaltables.sim.cluster import SimCluster

REGIONS = ("eu-west-1", "us-east-1")
TABLE = "Orders"
RATE = 60.0  # writes a second from each region: each alone fits in 100 WCU, both (120 WCU) do not
RAISE_AT = 30.0
LOAD_UNTIL = 45.0


def table(write_units: int) -> dict:
    return {
        "TableName": TABLE,
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        "BillingMode": "PROVISIONED",
        "ProvisionedThroughput": {"ReadCapacityUnits": 100, "WriteCapacityUnits": write_units},
    }


def pending(cluster: SimCluster) -> int:
    return sum(link["pending"] for node in cluster.status().values() for link in node["links"])


def raise_capacity(cluster: SimCluster) -> None:
    for region in REGIONS:  # write capacity is global: every replica gets the new setting
        cluster.engine(region).handle(
            "UpdateTable",
            {"TableName": TABLE, "ProvisionedThroughput": {"ReadCapacityUnits": 100, "WriteCapacityUnits": 400}},
        )


def run(seed: int = 7):
    cluster = SimCluster(list(REGIONS), seed, tables=[table(100)], capacity="modelled", journal=False)
    for offset, region in enumerate(REGIONS):
        count = int(LOAD_UNTIL * RATE)
        for i in range(count):
            item = {"pk": {"S": f"{region}-{i}"}, "value": {"S": f"{region}:{i}"}, "pad": {"S": "x" * 200}}
            cluster.at(1.0 + i / RATE + offset * 0.003, cluster.put, region, TABLE, item)
    cluster.at(RAISE_AT, raise_capacity, cluster)
    samples = {}
    for at in (10.0, 20.0, RAISE_AT - 0.01, 35.0, LOAD_UNTIL):
        cluster.run_until(at)
        samples[at] = pending(cluster)
    deferred = {name: node["received"]["deferred"] for name, node in cluster.status().items()}
    cluster.run_until_quiescent()
    return cluster, samples, deferred


def test_lag_grows_while_replicated_writes_exceed_capacity_and_drains_after_update_table():
    cluster, samples, deferred = run()
    # Short of capacity, every receiver defers records, and what waits grows through the load ...
    assert all(count > 0 for count in deferred.values()), deferred
    assert 0 < samples[10.0] < samples[20.0] < samples[RAISE_AT - 0.01], samples
    assert samples[RAISE_AT - 0.01] > 200, samples  # about 20 units a second short, for 29 s
    # ... and drains once UpdateTable raised the capacity, while the load goes on.
    assert samples[35.0] < samples[RAISE_AT - 0.01] / 4, samples
    assert samples[LOAD_UNTIL] < 50, samples
    # Nothing lost: every acknowledged write (each to its own key) is in every region, and the replicas agree.
    acked = [op for op, done in cluster.history.pairs() if done is not None and done.type == "ok"]
    throttled = [done for _, done in cluster.history.pairs() if done is not None and done.type != "ok"]
    assert len(acked) > 0.9 * 2 * LOAD_UNTIL * RATE
    assert all(done.error == "ProvisionedThroughputExceededException" for done in throttled)
    final = cluster.final_states()
    for region in REGIONS:
        held = final[region][TABLE]
        missing = [op for op in acked if key_id(op.key) not in held]
        assert not missing, f"{region} lacks {len(missing)} acknowledged writes"
    assert check_convergence(final, history=cluster.history).passed
    assert check_lww(cluster.history, final).passed
    assert pending(cluster) == 0


def test_unlimited_capacity_defers_nothing():
    cluster = SimCluster(list(REGIONS), 3, tables=[table(100)], journal=False)
    for i in range(600):
        for region in REGIONS:
            cluster.at(1.0 + i / 120.0, cluster.put, region, TABLE, {"pk": {"S": f"{region}-{i}"}})
    cluster.run_until_quiescent()
    assert all(node["received"]["deferred"] == 0 for node in cluster.status().values())


def test_replicated_gsi_updates_draw_on_the_gsi_capacity_of_the_receiving_region():
    """GSI updates on a replica are ordinary writes of the GSI (facts §1): with the table's capacity ample and the
    GSI's covering each region's own writes only, replication is deferred by the GSI, and drains once it is raised."""
    request = table(1000)
    request["AttributeDefinitions"].append({"AttributeName": "status", "AttributeType": "S"})
    request["GlobalSecondaryIndexes"] = [{
        "IndexName": "byStatus", "KeySchema": [{"AttributeName": "status", "KeyType": "HASH"}],
        "Projection": {"ProjectionType": "KEYS_ONLY"},
        "ProvisionedThroughput": {"ReadCapacityUnits": 10, "WriteCapacityUnits": 80},
    }]  # fmt: skip
    cluster = SimCluster(list(REGIONS), 11, tables=[request], capacity="modelled", journal=False)
    for offset, region in enumerate(REGIONS):
        for i in range(int(20 * RATE)):
            item = {"pk": {"S": f"{region}-{i}"}, "status": {"S": f"s{i % 50}"}, "value": {"S": f"{region}:{i}"}}
            cluster.at(1.0 + i / RATE + offset * 0.003, cluster.put, region, TABLE, item)

    def raise_gsi() -> None:
        update = {"Update": {"IndexName": "byStatus",
                             "ProvisionedThroughput": {"ReadCapacityUnits": 10, "WriteCapacityUnits": 400}}}  # fmt: skip
        for region in REGIONS:
            cluster.engine(region).handle("UpdateTable", {"TableName": TABLE, "GlobalSecondaryIndexUpdates": [update]})

    cluster.at(15.0, raise_gsi)
    cluster.run_until(14.9)
    behind = pending(cluster)
    assert behind > 100 and all(node["received"]["deferred"] > 0 for node in cluster.status().values())
    cluster.run_until_quiescent()
    pairs = cluster.history.pairs()
    assert all(done is not None and done.type == "ok" for _, done in pairs)  # the regions' own writes were served
    final = cluster.final_states()
    assert check_convergence(final, history=cluster.history).passed
    assert all(len(final[region][TABLE]) == len(pairs) for region in REGIONS)
    assert pending(cluster) == 0
