"""Nulls and deep values in requests, for every operation: one validator (engine/validation.py) decides.

DynamoDB (the AWS JSON protocol) reads a `null` structure member as an absent member, and refuses a `null` list
element or map value: "Value null at '<path>.1.member' failed to satisfy constraint: Member must not be null"
(dynalite's validations, recorded against the live service, build the same paths). Every request below once
answered 500; each must now be refused with DynamoDB's 400 and change nothing, and no stored setting may ever hold a
null that makes a later read fail.
"""

from __future__ import annotations

import copy

import pytest

from engine_calls import pk_table
from globaltables.engine.engine import Engine
from globaltables.engine.errors import DynamoError
from globaltables.runtime.clock import ManualClock

TABLE = "Orders"
ARN = f"arn:aws:dynamodb:us-east-1:000000000000:table/{TABLE}"
KEY = {"pk": {"S": "a"}}
NULL = "failed to satisfy constraint: Member must not be null"


@pytest.fixture
def clock():
    return ManualClock(wall_time=1_700_000_000.0)


@pytest.fixture
def engine(clock, make_store):
    engine = Engine(make_store(), clock)
    engine.handle("CreateTable", pk_table(TABLE))
    engine.handle("PutItem", {"TableName": TABLE, "Item": {**KEY, "v": {"N": "1"}}})
    return engine


def new_table(**extra):
    request = {
        "TableName": "Other",
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
        "BillingMode": "PAY_PER_REQUEST",
    }
    request.update(extra)
    return request


NULL_ELEMENTS = [
    ("TransactWriteItems", {"TransactItems": [None]}, "transactItems.1.member"),
    ("TransactGetItems", {"TransactItems": [None]}, "transactItems.1.member"),
    ("BatchWriteItem", {"RequestItems": {TABLE: [None]}}, f"requestItems.{TABLE}.member.1.member"),
    ("BatchWriteItem", {"RequestItems": {TABLE: None}}, f"requestItems.{TABLE}.member"),
    ("BatchGetItem", {"RequestItems": {TABLE: {"Keys": [None]}}}, f"requestItems.{TABLE}.member.keys.1.member"),
    ("BatchGetItem", {"RequestItems": {TABLE: None}}, f"requestItems.{TABLE}.member"),
    ("PutItem", {"TableName": TABLE, "Item": KEY, "Expected": {"v": None}}, "expected.v.member"),
    ("DeleteItem", {"TableName": TABLE, "Key": KEY, "Expected": {"v": None}}, "expected.v.member"),
    ("UpdateItem", {"TableName": TABLE, "Key": KEY, "AttributeUpdates": {"v": None}}, "attributeUpdates.v.member"),
    ("Query", {"TableName": TABLE, "KeyConditions": {"pk": None}}, "keyConditions.pk.member"),
    ("Query", {"TableName": TABLE, "KeyConditions": {"pk": {"ComparisonOperator": "EQ", "AttributeValueList": [
        {"S": "a"}]}}, "QueryFilter": {"v": None}}, "queryFilter.v.member"),
    ("Scan", {"TableName": TABLE, "ScanFilter": {"v": None}}, "scanFilter.v.member"),
    ("GetItem", {"TableName": TABLE, "Key": KEY, "AttributesToGet": [None]}, "attributesToGet.1.member"),
    ("Scan", {"TableName": TABLE, "AttributesToGet": ["v", None]}, "attributesToGet.2.member"),
    ("GetItem", {"TableName": TABLE, "Key": KEY, "ProjectionExpression": "#v", "ExpressionAttributeNames": {
        "#v": None}}, "expressionAttributeNames.#v.member"),
    ("CreateTable", new_table(KeySchema=[None]), "keySchema.1.member"),
    ("CreateTable", new_table(AttributeDefinitions=[None]), "attributeDefinitions.1.member"),
    ("CreateTable", new_table(GlobalSecondaryIndexes=[None]), "globalSecondaryIndexes.1.member"),
    ("CreateTable", new_table(LocalSecondaryIndexes=[None]), "localSecondaryIndexes.1.member"),
    ("CreateTable", new_table(Tags=[None]), "tags.1.member"),
    ("UpdateTable", {"TableName": TABLE, "GlobalSecondaryIndexUpdates": [None]}, "globalSecondaryIndexUpdates.1.member"),
    ("UpdateTable", {"TableName": TABLE, "ReplicaUpdates": [None]}, "replicaUpdates.1.member"),
    ("TagResource", {"ResourceArn": ARN, "Tags": [None]}, "tags.1.member"),
    ("UntagResource", {"ResourceArn": ARN, "TagKeys": [None]}, "tagKeys.1.member"),
]


def state(engine):
    tables = {name: definition.to_dict() for name, definition in engine.tables.items()}
    items = engine.handle("Scan", {"TableName": TABLE})["Items"]
    return tables, items


@pytest.mark.parametrize(("operation", "request_", "path"), NULL_ELEMENTS, ids=lambda v: v if isinstance(v, str) else "")
def test_a_null_element_or_map_value_is_refused_naming_its_path(engine, operation, request_, path):
    before = state(engine)
    with pytest.raises(DynamoError) as caught:
        engine.handle(operation, copy.deepcopy(request_))
    error = caught.value
    assert (error.type_name, error.status) == ("ValidationException", 400)
    assert f"Value null at '{path}' {NULL}" in error.message
    assert state(engine) == before


def test_null_members_of_a_structure_are_absent(engine):
    # A null optional member is no member: defaults apply, and nothing stores the null.
    engine.handle(
        "PutItem", {"TableName": TABLE, "Item": {**KEY, "v": {"N": "2"}}, "ConditionExpression": None,
                    "ReturnValues": None, "Expected": None},
    )  # fmt: skip
    assert engine.handle("GetItem", {"TableName": TABLE, "Key": KEY, "ConsistentRead": None})["Item"]["v"] == {"N": "2"}
    answer = engine.handle("Scan", {"TableName": TABLE, "Limit": None, "Select": None, "ExclusiveStartKey": None})
    assert answer["Count"] == 1


def test_a_null_recovery_period_is_the_default_and_describe_keeps_answering(engine, clock):
    spec = {"PointInTimeRecoveryEnabled": True, "RecoveryPeriodInDays": None}
    answer = engine.handle(
        "UpdateContinuousBackups", {"TableName": TABLE, "PointInTimeRecoverySpecification": spec}
    )
    recovery = answer["ContinuousBackupsDescription"]["PointInTimeRecoveryDescription"]
    assert (recovery["PointInTimeRecoveryStatus"], recovery["RecoveryPeriodInDays"]) == ("ENABLED", 35)
    assert engine.tables[TABLE].point_in_time_recovery["RecoveryPeriodInDays"] == 35
    restarted = Engine(engine.store, clock)
    described = restarted.handle("DescribeContinuousBackups", {"TableName": TABLE})
    assert described["ContinuousBackupsDescription"]["PointInTimeRecoveryDescription"]["RecoveryPeriodInDays"] == 35


@pytest.mark.parametrize(
    "stored",
    [{"RecoveryPeriodInDays": None, "Since": 1.0}, {"RecoveryPeriodInDays": "7", "Since": None}, {}, {"Since": 5}],
)
def test_a_stored_setting_no_update_would_accept_still_reads(engine, clock, stored):
    # A table saved by an older version with an invalid setting: the read answers, as the update now would save it.
    definition = engine.tables[TABLE]
    definition.point_in_time_recovery = stored
    engine.save_table(definition)
    restarted = Engine(engine.store, clock)
    recovery = restarted.handle("DescribeContinuousBackups", {"TableName": TABLE})["ContinuousBackupsDescription"]
    assert recovery["PointInTimeRecoveryDescription"]["RecoveryPeriodInDays"] == 35
    spec = {"PointInTimeRecoveryEnabled": True, "RecoveryPeriodInDays": 7}
    restarted.handle("UpdateContinuousBackups", {"TableName": TABLE, "PointInTimeRecoverySpecification": spec})
    assert restarted.tables[TABLE].point_in_time_recovery["RecoveryPeriodInDays"] == 7


@pytest.mark.parametrize(
    ("operation", "request_"),
    [
        ("UpdateTimeToLive", {"TableName": TABLE, "TimeToLiveSpecification": {"Enabled": True, "AttributeName": None}}),
        ("UpdateTimeToLive", {"TableName": TABLE, "TimeToLiveSpecification": {"Enabled": None, "AttributeName": "t"}}),
        ("TagResource", {"ResourceArn": ARN, "Tags": [{"Key": "k", "Value": None}]}),
        ("TagResource", {"ResourceArn": ARN, "Tags": [{"Key": None, "Value": "v"}]}),
        ("UpdateTable", {"TableName": TABLE, "StreamSpecification": {"StreamEnabled": None}}),
        ("UpdateTable", {"TableName": TABLE, "GlobalSecondaryIndexUpdates": [{"Create": None}]}),
        ("UpdateTable", {"TableName": TABLE, "GlobalSecondaryIndexUpdates": [{"Create": {
            "IndexName": "byV", "KeySchema": [{"AttributeName": "v", "KeyType": "HASH"}],
            "Projection": {"ProjectionType": None}}}], "AttributeDefinitions": [
            {"AttributeName": "v", "AttributeType": None}]}),
        ("UpdateTable", {"TableName": TABLE, "BillingMode": "PROVISIONED", "ProvisionedThroughput": {
            "ReadCapacityUnits": None, "WriteCapacityUnits": 1}}),
        ("CreateTable", new_table(Tags=[{"Key": "k", "Value": None}])),
        ("CreateTable", new_table(StreamSpecification={"StreamEnabled": None})),
        ("CreateTable", new_table(GlobalSecondaryIndexes=[{"IndexName": "byV", "KeySchema": [None],
                                                          "Projection": {"ProjectionType": "ALL"}}])),
        ("UpdateContinuousBackups", {"TableName": TABLE, "PointInTimeRecoverySpecification": {
            "PointInTimeRecoveryEnabled": None}}),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_control_plane_writes_with_nulls_are_refused_before_anything_is_saved(engine, clock, operation, request_):
    before = state(engine)
    with pytest.raises(DynamoError) as caught:
        engine.handle(operation, copy.deepcopy(request_))
    assert caught.value.status == 400
    assert state(engine) == before
    # And every read of the stored settings still answers, now and after a restart.
    for reader in (engine, Engine(engine.store, clock)):
        reader.handle("DescribeTable", {"TableName": TABLE})
        reader.handle("DescribeTimeToLive", {"TableName": TABLE})
        reader.handle("DescribeContinuousBackups", {"TableName": TABLE})
        reader.handle("ListTagsOfResource", {"ResourceArn": ARN})


def deep(levels: int, leaf=None):
    value = leaf
    for _ in range(levels):
        value = [value]
    return value


def deep_map(levels: int):
    value: dict = {}
    for _ in range(levels):
        value = {"a": value}
    return value


@pytest.mark.parametrize("levels", [300, 990])
def test_a_refusal_quoting_a_value_deeper_than_the_serializer_allows_renders_truncated(engine, levels):
    # 101 keys break BatchGetItem's length limit: the message quotes the list, whose elements nest `levels` deep.
    keys = [{"pk": {"M": deep_map(levels)}}] * 101
    with pytest.raises(DynamoError) as caught:
        engine.handle("BatchGetItem", {"RequestItems": {TABLE: {"Keys": keys}}})
    assert caught.value.type_name == "ValidationException"
    assert "Member must have length less than or equal to 100" in caught.value.message
    assert "{...}" in caught.value.message
    # A list element quoted in a list-length message, nested as deep.
    with pytest.raises(DynamoError) as caught:
        engine.handle("BatchWriteItem", {"RequestItems": {TABLE: [{"PutRequest": {"Item": {
            "pk": {"M": deep_map(levels)}}}}] * 26}})  # fmt: skip
    assert "Member must have length less than or equal to 25" in caught.value.message
    assert "{...}" in caught.value.message


@pytest.mark.parametrize("operation", ["CreateTable", "UpdateTable"])
def test_unknown_members_of_stored_settings_are_never_stored(engine, clock, operation):
    # DynamoDB ignores unknown members; kept, one nested 300 levels deep could not even be saved (a 500 at save).
    junk = {"MaxReadRequestUnits": 10, "M": deep_map(300)}
    request = (
        new_table(OnDemandThroughput=junk, WarmThroughput={"ReadUnitsPerSecond": 12000, "x": deep_map(300)})
        if operation == "CreateTable"
        else {"TableName": TABLE, "OnDemandThroughput": junk}
    )
    engine.handle(operation, copy.deepcopy(request))
    name = request["TableName"]
    assert engine.tables[name].on_demand == {"MaxReadRequestUnits": 10}
    described = Engine(engine.store, clock).handle("DescribeTable", {"TableName": name})["Table"]
    assert described["OnDemandThroughput"]["MaxReadRequestUnits"] == 10
