"""The AWS path to strong mode, engine side (engine/strong_membership.py): UpdateTable's rules and texts (facts §3),
fixed membership, and the steps a conversion takes in each region. No processes: one engine per region, configured
as a member of a `mode: mrsc` topology, on either store (`make_store`: SQLite, as a region process keeps it, and the
simulator's in-memory store)."""

from __future__ import annotations

import pytest

from engine_calls import call, error_of
from globaltables.engine.engine import Engine
from globaltables.engine.errors import ValidationException
from globaltables.engine.storage.memory_store import MemoryStore
from globaltables.engine.storage.sqlite_store import SqliteStore
from globaltables.engine.strong_requests import prepare
from globaltables.runtime.clock import ManualClock

A, B, C = "us-east-1", "us-east-2", "us-west-2"
TABLE = "Conv"
STORES = {"sqlite": lambda: SqliteStore(None), "memory": MemoryStore}


@pytest.fixture(params=sorted(STORES))
def make_store(request: pytest.FixtureRequest):
    return STORES[request.param]


def member(make_store, region: str, witness: str | None = C, members=(A, B, C)) -> Engine:
    engine = Engine(make_store(), ManualClock(wall_time=1_700_000_000.0), region=region)
    engine.strong_membership.configure(members, witness)
    call(
        engine,
        "CreateTable",
        {
            "TableName": TABLE,
            "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST",
        },
    )
    return engine


def update(**fields) -> dict:
    return {"TableName": TABLE, **fields}


def creates(*regions: str) -> list[dict]:
    return [{"Create": {"RegionName": region}} for region in regions]


def witness(region: str, action: str = "Create") -> list[dict]:
    return [{action: {"RegionName": region}}]


def refused(engine: Engine, request: dict) -> str:
    error = error_of(engine, "UpdateTable", request)
    assert isinstance(error, ValidationException), error
    return error.message


def test_rules_and_texts_of_facts_3_and_nothing_changes(make_store):
    engine = member(make_store, A)
    before = call(engine, "DescribeTable", {"TableName": TABLE})
    cases = {
        "MultiRegionConsistency must be set as STRONG when GlobalTableWitnessUpdates parameter is present.": [
            update(ReplicaUpdates=creates(B), GlobalTableWitnessUpdates=witness(C)),
            update(ReplicaUpdates=creates(B), GlobalTableWitnessUpdates=witness(C), MultiRegionConsistency="EVENTUAL"),
        ],
        "Unsupported replica count for global tables with MultiRegionConsistency set to STRONG.": [
            update(ReplicaUpdates=creates(B), MultiRegionConsistency="STRONG"),
            update(GlobalTableWitnessUpdates=witness(C), MultiRegionConsistency="STRONG"),
            update(ReplicaUpdates=creates(B, C), GlobalTableWitnessUpdates=witness("us-east-2"), MultiRegionConsistency="STRONG"),
        ],
        "Requests that modify replicas or witnesses must not also modify other fields": [
            update(ReplicaUpdates=creates(B), GlobalTableWitnessUpdates=witness(C), MultiRegionConsistency="STRONG",
                   DeletionProtectionEnabled=True),
        ],
    }  # fmt: skip
    for text, requests in cases.items():
        for request in requests:
            assert refused(engine, request) == text, request
    # Ours: MultiRegionConsistency only with replicas to create; one region set; the topology's members; empty.
    assert "only be specified on a request whose ReplicaUpdates create" in refused(
        engine, update(MultiRegionConsistency="STRONG")
    )
    assert "only be specified" in refused(
        engine, update(ReplicaUpdates=[{"Delete": {"RegionName": B}}, *creates(C)], MultiRegionConsistency="STRONG")
    )
    assert "within one region set" in refused(
        engine, update(ReplicaUpdates=creates("eu-west-1"), GlobalTableWitnessUpdates=witness(C),
                       MultiRegionConsistency="STRONG")
    )  # fmt: skip
    assert "is the witness Region of this globaltables topology" in refused(
        engine, update(ReplicaUpdates=creates(B, C), MultiRegionConsistency="STRONG")
    )
    assert "three different Regions" in refused(
        engine, update(ReplicaUpdates=creates(B, A), MultiRegionConsistency="STRONG")
    )
    assert call(engine, "DescribeTable", {"TableName": TABLE}) == before
    call(engine, "PutItem", {"TableName": TABLE, "Item": {"id": {"S": "x"}}})
    assert "holds items" in refused(
        engine, update(ReplicaUpdates=creates(B), GlobalTableWitnessUpdates=witness(C), MultiRegionConsistency="STRONG")
    )


def test_a_region_outside_an_mrsc_topology_refuses_strong_mode(make_store):
    engine = member(make_store, A)
    engine.strong_membership.configure((), None)
    assert "needs a globaltables topology in mode mrsc" in refused(
        engine, update(ReplicaUpdates=creates(B), GlobalTableWitnessUpdates=witness(C), MultiRegionConsistency="STRONG")
    )


def test_three_replica_topology_takes_two_creates_and_refuses_a_witness(make_store):
    engine = member(make_store, A, witness=None)
    assert "is a replica Region of this globaltables topology" in refused(
        engine, update(ReplicaUpdates=creates(B), GlobalTableWitnessUpdates=witness(C), MultiRegionConsistency="STRONG")
    )
    answer = call(engine, "UpdateTable", update(ReplicaUpdates=creates(C, B), MultiRegionConsistency="STRONG"))
    table = answer["TableDescription"]
    assert table["TableStatus"] == "UPDATING"
    assert table["MultiRegionConsistency"] == "STRONG"
    assert table["Replicas"] == [
        {"RegionName": A, "ReplicaStatus": "ACTIVE"},
        {"RegionName": B, "ReplicaStatus": "CREATING"},
        {"RegionName": C, "ReplicaStatus": "CREATING"},
    ]
    assert "GlobalTableWitnesses" not in table


def test_conversion_steps_then_fixed_membership(make_store):
    driver, joiner = member(make_store, A), Engine(make_store(), ManualClock(wall_time=1_700_000_000.0), region=B)
    joiner.strong_membership.configure((A, B, C), C)
    answer = call(
        driver,
        "UpdateTable",
        update(ReplicaUpdates=creates(B), GlobalTableWitnessUpdates=witness(C), MultiRegionConsistency="STRONG"),
    )
    assert answer["TableDescription"]["GlobalTableWitnesses"] == [{"RegionName": C, "WitnessStatus": "CREATING"}]
    assert driver.strong_membership.driving() == [TABLE]
    # Nothing is written during the conversion.
    put = {"TableName": TABLE, "Item": {"id": {"S": "x"}}}
    with pytest.raises(ValidationException, match="being converted"):
        prepare(driver, "PutItem", put)
    with pytest.raises(ValidationException, match="being converted"):
        prepare(driver, "BatchWriteItem", {"RequestItems": {TABLE: [{"PutRequest": {"Item": {"id": {"S": "x"}}}}]}})
    # The joiner's steps (region/strong_conversion.py calls them), each idempotent.
    strong = dict(driver.tables[TABLE].strong)
    for _ in range(2):
        joiner.strong_membership.join(driver.strong_membership.create_request(TABLE), strong)
    assert joiner.strong_membership.driving() == []
    for engine in (joiner, driver):
        engine.strong_membership.activate(TABLE)
        engine.strong_membership.activate(TABLE)
    for engine in (driver, joiner):
        table = call(engine, "DescribeTable", {"TableName": TABLE})["Table"]
        assert table["MultiRegionConsistency"] == "STRONG"
        assert table["Replicas"] == [
            {"RegionName": A, "ReplicaStatus": "ACTIVE"},
            {"RegionName": B, "ReplicaStatus": "ACTIVE"},
        ]
        assert table["GlobalTableWitnesses"] == [{"RegionName": C, "WitnessStatus": "ACTIVE"}]
    assert len(prepare(driver, "PutItem", put).writes) == 1
    # Fixed membership.
    assert refused(driver, update(ReplicaUpdates=creates("us-west-1"))) == (
        "Unsupported replica count for global tables with MultiRegionConsistency set to STRONG."
    )
    assert refused(driver, update(ReplicaUpdates=[{"Delete": {"RegionName": B}}])) == (
        "Deletion of only one table replica is not supported"
    )
    assert refused(driver, update(GlobalTableWitnessUpdates=witness(C, "Delete"))) == (
        "Deletion of only one table replica is not supported"
    )
    assert refused(
        driver, update(ReplicaUpdates=creates(B), GlobalTableWitnessUpdates=witness(C), MultiRegionConsistency="STRONG")
    ) == "MultiRegionConsistency parameter is unsupported on existing global table"
    assert "not supported by globaltables yet" in refused(
        driver, update(ReplicaUpdates=[{"Delete": {"RegionName": B}}], GlobalTableWitnessUpdates=witness(C, "Delete"))
    )


def test_a_region_holding_a_table_of_that_name_refuses_to_join_and_the_conversion_is_abandoned(make_store):
    driver, other = member(make_store, A), member(make_store, B)
    call(driver, "UpdateTable", update(ReplicaUpdates=creates(B), GlobalTableWitnessUpdates=witness(C),
                                       MultiRegionConsistency="STRONG"))  # fmt: skip
    with pytest.raises(ValidationException, match="already existed as tables"):
        other.strong_membership.join(driver.strong_membership.create_request(TABLE), driver.tables[TABLE].strong)
    other.strong_membership.abandon(TABLE, A)  # not its conversion: nothing happens
    assert other.tables[TABLE].strong is None
    driver.strong_membership.abandon(TABLE, A)
    assert "MultiRegionConsistency" not in call(driver, "DescribeTable", {"TableName": TABLE})["Table"]
    call(driver, "PutItem", {"TableName": TABLE, "Item": {"id": {"S": "x"}}})
