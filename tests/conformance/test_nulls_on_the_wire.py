"""Nulls through the wire protocol of a real region process (SDKs leave nulls out; hand-written and buggy clients do
not): every request that once answered 500 answers DynamoDB's 400, and DescribeContinuousBackups keeps answering
after an UpdateContinuousBackups with a null period, before and after a restart on the same data dir.

Texts: "Value null at '<path>' failed to satisfy constraint: Member must not be null" (dynalite's validations,
recorded against DynamoDB); a null structure member is an absent member (the AWS JSON protocol).
"""

from __future__ import annotations

import pytest

from fuzz.harness import call

TABLE = "NullsOnTheWire"
ARN = f"arn:aws:dynamodb:us-east-1:000000000000:table/{TABLE}"
KEY = {"pk": {"S": "a"}}
VALIDATION = "com.amazon.coral.validate#ValidationException"

REFUSED = [
    ("TransactWriteItems", {"TransactItems": [None]}, "transactItems.1.member"),
    ("TransactGetItems", {"TransactItems": [None]}, "transactItems.1.member"),
    ("BatchWriteItem", {"RequestItems": {TABLE: [None]}}, f"requestItems.{TABLE}.member.1.member"),
    ("BatchWriteItem", {"RequestItems": {TABLE: None}}, f"requestItems.{TABLE}.member"),
    ("BatchGetItem", {"RequestItems": {TABLE: {"Keys": [None]}}}, f"requestItems.{TABLE}.member.keys.1.member"),
    ("PutItem", {"TableName": TABLE, "Item": KEY, "Expected": {"v": None}}, "expected.v.member"),
    ("UpdateItem", {"TableName": TABLE, "Key": KEY, "AttributeUpdates": {"v": None}}, "attributeUpdates.v.member"),
    ("Query", {"TableName": TABLE, "KeyConditions": {"pk": None}}, "keyConditions.pk.member"),
    ("Scan", {"TableName": TABLE, "ScanFilter": {"v": None}}, "scanFilter.v.member"),
    ("GetItem", {"TableName": TABLE, "Key": KEY, "AttributesToGet": [None]}, "attributesToGet.1.member"),
    ("CreateTable", {"TableName": "Other", "KeySchema": [None], "AttributeDefinitions": [None]}, "keySchema.1.member"),
    ("UpdateTable", {"TableName": TABLE, "GlobalSecondaryIndexUpdates": [None]}, "globalSecondaryIndexUpdates.1.member"),
    ("TagResource", {"ResourceArn": ARN, "Tags": [None]}, "tags.1.member"),
]


@pytest.fixture(scope="module")
def address(region):
    status, answer = call(region.address, "CreateTable", {
        "TableName": TABLE, "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}], "BillingMode": "PAY_PER_REQUEST",
    })  # fmt: skip
    assert status == 200, answer
    return region.address


@pytest.mark.parametrize(("operation", "body", "path"), REFUSED, ids=[f"{o}-{p}" for o, _, p in REFUSED])
def test_every_request_with_a_null_element_answers_400_naming_it(address, operation, body, path):
    status, answer = call(address, operation, body)
    assert status == 400, answer
    assert answer["__type"] == VALIDATION
    assert f"Value null at '{path}' failed to satisfy constraint: Member must not be null" in answer["message"]


def test_describe_continuous_backups_answers_after_a_null_period_across_a_restart(region_factory, tmp_path):
    region = region_factory(data_dir=tmp_path / "data")
    region.start()
    assert call(region.address, "CreateTable", {
        "TableName": TABLE, "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}], "BillingMode": "PAY_PER_REQUEST",
    })[0] == 200  # fmt: skip
    spec = {"PointInTimeRecoveryEnabled": True, "RecoveryPeriodInDays": None}
    status, answer = call(region.address, "UpdateContinuousBackups",
                          {"TableName": TABLE, "PointInTimeRecoverySpecification": spec})  # fmt: skip
    assert status == 200, answer
    assert answer["ContinuousBackupsDescription"]["PointInTimeRecoveryDescription"]["RecoveryPeriodInDays"] == 35
    for restart in (False, True):
        if restart:
            region.stop()
            region.restart()
        status, answer = call(region.address, "DescribeContinuousBackups", {"TableName": TABLE})
        assert status == 200, answer
        recovery = answer["ContinuousBackupsDescription"]["PointInTimeRecoveryDescription"]
        assert (recovery["PointInTimeRecoveryStatus"], recovery["RecoveryPeriodInDays"]) == ("ENABLED", 35)
