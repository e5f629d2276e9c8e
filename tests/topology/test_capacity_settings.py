"""Capacity settings in topology files: CreateTable's capacity members per table and GSI, per-replica read overrides
(CloudFormation's ReplicaSpecification; write capacity is global), and `capacity: unlimited` per region. Every bad
value is named by file and field."""

from __future__ import annotations

import textwrap

import pytest

from globaltables.experiment.topology import parse_topology
from globaltables.region.plan_settings import replication_settings
from globaltables.sim.cluster import SimCluster
from globaltables.topology.load import TopologyError
from globaltables.topology.plan import region_plan

FILE = "topologies/x.yaml"

REGIONS = """
name: t
regions:
  - name: us-east-1
  - {name: eu-west-1, capacity: unlimited}
"""

TABLE = """
tables:
  - TableName: Orders
    AttributeDefinitions:
      - {AttributeName: id, AttributeType: S}
      - {AttributeName: status, AttributeType: S}
    KeySchema: [{AttributeName: id, KeyType: HASH}]
    BillingMode: PROVISIONED
    ProvisionedThroughput: {ReadCapacityUnits: 100, WriteCapacityUnits: 50}
    WarmThroughput: {ReadUnitsPerSecond: 12000, WriteUnitsPerSecond: 4000}
    GlobalSecondaryIndexes:
      - IndexName: byStatus
        KeySchema: [{AttributeName: status, KeyType: HASH}]
        Projection: {ProjectionType: KEYS_ONLY}
        ProvisionedThroughput: {ReadCapacityUnits: 20, WriteCapacityUnits: 50}
    Replicas:
      - Region: eu-west-1
        ReadProvisionedThroughputSettings: {ReadCapacityUnits: 300}
        GlobalSecondaryIndexes:
          - {IndexName: byStatus, ReadProvisionedThroughputSettings: {ReadCapacityUnits: 40}}
"""


def refused(text: str) -> list[str]:
    with pytest.raises(TopologyError) as caught:
        parse_topology(textwrap.dedent(text), FILE)
    assert all(line.startswith(f"{FILE}: ") for line in caught.value.errors), caught.value.errors
    return list(caught.value.errors)


def test_capacity_settings_load_and_each_replica_runs_its_own_reads_with_the_global_writes():
    topology = parse_topology(REGIONS + TABLE, FILE)
    assert [region.capacity for region in topology.regions] == ["modelled", "unlimited"]
    spec = topology.tables[0]
    assert "Replicas" not in spec.definition  # not a CreateTable member: kept beside the request
    assert spec.request_for("us-east-1") == spec.request()
    eu = spec.request_for("eu-west-1")
    assert eu["ProvisionedThroughput"] == {"ReadCapacityUnits": 300, "WriteCapacityUnits": 50}
    assert eu["GlobalSecondaryIndexes"][0]["ProvisionedThroughput"] == {"ReadCapacityUnits": 40, "WriteCapacityUnits": 50}
    assert eu["WarmThroughput"] == spec.request()["WarmThroughput"]
    # The region process creates the declared table with its replica's settings; so does the simulator.
    settings = replication_settings(region_plan(topology, "eu-west-1"), "s3cret")
    assert settings.tables[0]["ProvisionedThroughput"]["ReadCapacityUnits"] == 300
    cluster = SimCluster(topology, 1, journal=False)
    described = {
        name: cluster.engine(name).handle("DescribeTable", {"TableName": "Orders"})["Table"]["ProvisionedThroughput"]
        for name in ("us-east-1", "eu-west-1")
    }
    assert described["us-east-1"]["ReadCapacityUnits"] == 100 and described["eu-west-1"]["ReadCapacityUnits"] == 300
    assert {d["WriteCapacityUnits"] for d in described.values()} == {50}


def test_on_demand_tables_take_maximum_and_per_replica_read_maxima():
    text = REGIONS + """
tables:
  - TableName: Events
    AttributeDefinitions: [{AttributeName: id, AttributeType: S}]
    KeySchema: [{AttributeName: id, KeyType: HASH}]
    BillingMode: PAY_PER_REQUEST
    OnDemandThroughput: {MaxReadRequestUnits: 500, MaxWriteRequestUnits: 200}
    Replicas:
      - {Region: us-east-1, ReadOnDemandThroughputSettings: {MaxReadRequestUnits: 900}}
"""
    spec = parse_topology(text, FILE).tables[0]
    assert spec.request_for("us-east-1")["OnDemandThroughput"] == {"MaxReadRequestUnits": 900, "MaxWriteRequestUnits": 200}
    assert spec.request_for("eu-west-1")["OnDemandThroughput"] == {"MaxReadRequestUnits": 500, "MaxWriteRequestUnits": 200}


def test_bad_capacity_values_name_the_file_and_the_field():
    bad = TABLE.replace("WriteCapacityUnits: 50}\n    Warm", "WriteCapacityUnits: 0}\n    Warm")
    bad = bad.replace("ReadUnitsPerSecond: 12000", "ReadUnitsPerSecond: -3")
    bad = bad.replace("Region: eu-west-1", "Region: ap-south-1")
    bad = bad.replace("{IndexName: byStatus, Read", "{IndexName: byColour, Read")
    assert refused(REGIONS + bad) == [
        f"{FILE}: tables[0].ProvisionedThroughput.WriteCapacityUnits: expected a whole number >= 1, got 0",
        f"{FILE}: tables[0].WarmThroughput.ReadUnitsPerSecond: expected a whole number >= 1, got -3",
        f"{FILE}: tables[0].Replicas[0].Region: 'ap-south-1' is not a replica of this topology; use us-east-1, "
        "eu-west-1",
        f"{FILE}: tables[0].Replicas[0].GlobalSecondaryIndexes[0].IndexName: no global secondary index 'byColour' in "
        "this table; its indexes: byStatus",
    ]


def test_settings_of_the_other_billing_mode_and_write_overrides_are_refused():
    wrong_mode = TABLE.replace("ReadProvisionedThroughputSettings: {ReadCapacityUnits: 300}",
                               "ReadOnDemandThroughputSettings: {MaxReadRequestUnits: 300}")
    wrong_mode = wrong_mode.replace("    WarmThroughput", "    OnDemandThroughput: {MaxWriteRequestUnits: 5}\n    WarmThroughput")
    assert refused(REGIONS + wrong_mode) == [
        f"{FILE}: tables[0].OnDemandThroughput: only applies to BillingMode PAY_PER_REQUEST; this table is "
        "PROVISIONED (use ProvisionedThroughput)",
        f"{FILE}: tables[0].Replicas[0].ReadOnDemandThroughputSettings: only applies to BillingMode PAY_PER_REQUEST "
        "(use ReadProvisionedThroughputSettings)",
    ]
    write = TABLE.replace("{ReadCapacityUnits: 300}", "{ReadCapacityUnits: 300, WriteCapacityUnits: 9}")
    assert refused(REGIONS + write) == [
        f"{FILE}: tables[0].Replicas[0].ReadProvisionedThroughputSettings.WriteCapacityUnits: unknown key; allowed "
        "keys are ReadCapacityUnits",
    ]
    missing = TABLE.replace("    ProvisionedThroughput: {ReadCapacityUnits: 100, WriteCapacityUnits: 50}\n", "")
    missing = missing.replace("BillingMode: PROVISIONED", "BillingMode: PROVISIONAL")
    assert refused(REGIONS + missing) == [
        f"{FILE}: tables[0].BillingMode: 'PROVISIONAL' is not allowed; use one of PROVISIONED, PAY_PER_REQUEST",
    ]


def test_a_region_capacity_must_be_modelled_or_unlimited():
    assert refused(REGIONS.replace("capacity: unlimited", "capacity: infinite") + TABLE) == [
        f"{FILE}: regions[1].capacity: 'infinite' is not allowed; use one of modelled, unlimited",
    ]


def test_the_supervisor_passes_the_region_capacity_to_the_region_process(tmp_path):
    from globaltables.experiment.supervisor import RegionChild

    topology = parse_topology(REGIONS + TABLE, FILE)
    commands = {}
    for region in topology.regions:
        child = RegionChild(region, tmp_path / "t.yaml", tmp_path, None, tmp_path / "s.json", tmp_path / "log", tmp_path)
        command = child.command(tmp_path / "ready")
        commands[region.name] = command[command.index("--capacity") + 1]
    assert commands == {"us-east-1": "modelled", "eu-west-1": "unlimited"}
