"""Control plane of one region's engine: CreateTable, DescribeTable, ListTables, DeleteTable, UpdateTable, tags,
DescribeLimits and DescribeEndpoints, called through `Engine.handle` on an in-memory store.

Each refused request is checked for DynamoDB's error type and message text, and for having changed nothing.
Texts come from DynamoDB as recorded by dynalite's live-tested validations unless a test says otherwise.
"""

from __future__ import annotations

import copy
import uuid

import pytest

from globaltables.engine.engine import Engine
from globaltables.engine.errors import DynamoError
from globaltables.engine.storage.records import ItemWrite
from globaltables.runtime.clock import ManualClock

INVALID = "One or more parameter values were invalid: "
ARN = "arn:aws:dynamodb:us-east-1:000000000000:table/"


@pytest.fixture
def clock():
    return ManualClock(wall_time=1_700_000_000.0)


@pytest.fixture
def engine(clock, make_store):
    return Engine(make_store(), clock)


def call(engine, operation, request):
    # Round-trip through copies: the engine must not keep references into the request.
    return copy.deepcopy(engine.handle(operation, copy.deepcopy(request)))


def attrs(**types):
    return [{"AttributeName": name, "AttributeType": kind} for name, kind in types.items()]


def keys(hash_name, range_name=None):
    out = [{"AttributeName": hash_name, "KeyType": "HASH"}]
    if range_name is not None:
        out.append({"AttributeName": range_name, "KeyType": "RANGE"})
    return out


def table_request(name="Orders", **extra):
    request = {
        "TableName": name,
        "AttributeDefinitions": attrs(customerId="S", sk="S"),
        "KeySchema": keys("customerId", "sk"),
        "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
    }
    request.update(extra)
    return {k: v for k, v in request.items() if v is not None}


def gsi(name="byOrderId", hash_name="orderId", range_name=None, projection=None, throughput=True):
    index = {
        "IndexName": name,
        "KeySchema": keys(hash_name, range_name),
        "Projection": projection or {"ProjectionType": "ALL"},
    }
    if throughput:
        index["ProvisionedThroughput"] = {"ReadCapacityUnits": 1, "WriteCapacityUnits": 1}
    return index


def lsi(name="byCreatedAt", hash_name="customerId", range_name="createdAt", projection=None):
    return {
        "IndexName": name,
        "KeySchema": keys(hash_name, range_name),
        "Projection": projection or {"ProjectionType": "KEYS_ONLY"},
    }


def snapshot(engine):
    """Everything a client can observe of the control plane."""
    tables = {}
    for name in sorted(engine.tables):
        tables[name] = (
            engine.handle("DescribeTable", {"TableName": name}),
            engine.handle("ListTagsOfResource", {"ResourceArn": ARN + name}),
        )
    return tables


def refused(engine, operation, request, error, message=None, contains=None):
    """The request fails with `error` (and the exact `message`, or a message containing `contains`) and changes
    nothing."""
    before = snapshot(engine)
    with pytest.raises(DynamoError) as caught:
        engine.handle(operation, copy.deepcopy(request))
    assert caught.value.type_name == error, caught.value.to_body()
    if message is not None:
        assert caught.value.message == message
    if contains is not None:
        assert contains in caught.value.message, caught.value.message
    assert snapshot(engine) == before
    return caught.value


def put(engine, table_name, item):
    table = engine.table(table_name)
    pk, sk = table.key.key_from_item(item)
    engine.commit([ItemWrite(table_name, pk, sk, item, 100)])


# ================================================================================================== CreateTable


def test_create_table_returns_creating_then_describe_shows_active(engine, clock):
    # CreateTable's response shows CREATING; the table is usable at once, so DescribeTable (what boto3's
    # table_exists waiter polls, first without delay) already answers ACTIVE.
    created = call(engine, "CreateTable", table_request())["TableDescription"]
    assert created["TableStatus"] == "CREATING"
    assert created["TableName"] == "Orders"
    assert created["TableArn"] == ARN + "Orders"
    assert uuid.UUID(created["TableId"])
    assert created["CreationDateTime"] == 1_700_000_000.0
    assert created["KeySchema"] == keys("customerId", "sk")
    assert created["AttributeDefinitions"] == attrs(customerId="S", sk="S")
    assert created["ProvisionedThroughput"] == {
        "NumberOfDecreasesToday": 0,
        "ReadCapacityUnits": 5,
        "WriteCapacityUnits": 5,
    }
    assert created["ItemCount"] == 0 and created["TableSizeBytes"] == 0
    assert created["DeletionProtectionEnabled"] is False
    assert "StreamSpecification" not in created and "LatestStreamArn" not in created

    described = call(engine, "DescribeTable", {"TableName": "Orders"})["Table"]
    assert described["TableStatus"] == "ACTIVE"
    assert {k: v for k, v in described.items() if k != "TableStatus"} == {
        k: v for k, v in created.items() if k != "TableStatus"
    }


def test_create_on_demand_table_reports_zero_capacity_and_billing_summary(engine):
    request = table_request(BillingMode="PAY_PER_REQUEST", ProvisionedThroughput=None)
    table = call(engine, "CreateTable", request)["TableDescription"]
    assert table["ProvisionedThroughput"] == {
        "NumberOfDecreasesToday": 0,
        "ReadCapacityUnits": 0,
        "WriteCapacityUnits": 0,
    }
    assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"


def test_create_existing_table_is_resource_in_use_and_keeps_the_original(engine):
    call(engine, "CreateTable", table_request())
    refused(
        engine,
        "CreateTable",
        table_request(BillingMode="PAY_PER_REQUEST", ProvisionedThroughput=None),
        "ResourceInUseException",
        "Table already exists: Orders",
    )


def test_create_simple_key_table(engine):
    request = table_request(AttributeDefinitions=attrs(id="N"), KeySchema=keys("id"))
    table = call(engine, "CreateTable", request)["TableDescription"]
    assert table["KeySchema"] == keys("id")
    assert engine.table("Orders").key.hash_type == "N"


# Table names: 3-255 characters of [a-zA-Z0-9_.-]. The exact wording differs between sources (dynalite recorded
# "TableName must be at least 3 characters long and at most 255 characters long" for the length), so only the
# error type and the pattern are pinned here.
@pytest.mark.parametrize(
    ("name", "contains"),
    [("ab", None), ("a" * 256, None), ("bad name!", "regular expression pattern: [a-zA-Z0-9_.-]+")],
)
def test_create_table_name_rules(engine, name, contains):
    refused(engine, "CreateTable", table_request(name=name), "ValidationException", contains=contains)


def test_create_table_collects_field_errors_in_one_message(engine):
    request = {
        "TableName": "Orders",
        "AttributeDefinitions": [{"AttributeName": "a", "AttributeType": "X"}],
        "KeySchema": [{"AttributeName": "a", "KeyType": "PARTITION"}],
        "ProvisionedThroughput": {"ReadCapacityUnits": 0, "WriteCapacityUnits": 1},
    }
    refused(
        engine,
        "CreateTable",
        request,
        "ValidationException",
        "3 validation errors detected: "
        "Value 'X' at 'attributeDefinitions.1.member.attributeType' failed to satisfy constraint: "
        "Member must satisfy enum value set: [B, N, S]; "
        "Value '0' at 'provisionedThroughput.readCapacityUnits' failed to satisfy constraint: "
        "Member must have value greater than or equal to 1; "
        "Value 'PARTITION' at 'keySchema.1.member.keyType' failed to satisfy constraint: "
        "Member must satisfy enum value set: [HASH, RANGE]",
    )


def test_create_table_requires_key_schema_and_attribute_definitions(engine):
    refused(
        engine,
        "CreateTable",
        {"TableName": "Orders"},
        "ValidationException",
        "2 validation errors detected: "
        "Value null at 'attributeDefinitions' failed to satisfy constraint: Member must not be null; "
        "Value null at 'keySchema' failed to satisfy constraint: Member must not be null",
    )


@pytest.mark.parametrize(
    ("definitions", "key_schema", "message"),
    [
        (attrs(a="S"), keys("a", "b"), "Invalid KeySchema: Some index key attribute have no definition"),
        (
            attrs(a="S", b="S"),
            keys("a", "c"),
            INVALID + "Some index key attributes are not defined in AttributeDefinitions. "
            "Keys: [a, c], AttributeDefinitions: [a, b]",
        ),
        (
            attrs(a="S", b="S"),
            keys("a", "a"),
            "Both the Hash Key and the Range Key element in the KeySchema have the same name",
        ),
        (
            attrs(a="S", b="S"),
            [{"AttributeName": "a", "KeyType": "RANGE"}, {"AttributeName": "b", "KeyType": "HASH"}],
            "Invalid KeySchema: The first KeySchemaElement is not a HASH key type",
        ),
        (
            attrs(a="S", b="S"),
            [{"AttributeName": "a", "KeyType": "HASH"}, {"AttributeName": "b", "KeyType": "HASH"}],
            "Invalid KeySchema: The second KeySchemaElement is not a RANGE key type",
        ),
        (
            attrs(a="S", b="S"),
            keys("a"),
            INVALID + "Number of attributes in KeySchema does not exactly match number of attributes defined in "
            "AttributeDefinitions",
        ),
    ],
)
def test_create_table_key_schema_rules(engine, definitions, key_schema, message):
    request = table_request(AttributeDefinitions=definitions, KeySchema=key_schema)
    refused(engine, "CreateTable", request, "ValidationException", message)


def test_key_schema_holds_at_most_two_elements(engine):
    request = table_request(AttributeDefinitions=attrs(a="S", b="S", c="S"), KeySchema=keys("a", "b") + keys("c"))
    refused(
        engine,
        "CreateTable",
        request,
        "ValidationException",
        contains="at 'keySchema' failed to satisfy constraint: Member must have length less than or equal to 2",
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            {"ProvisionedThroughput": None},
            INVALID + "ReadCapacityUnits and WriteCapacityUnits must both be specified when BillingMode is PROVISIONED",
        ),
        (
            {"BillingMode": "PROVISIONED", "ProvisionedThroughput": None},
            INVALID + "ReadCapacityUnits and WriteCapacityUnits must both be specified when BillingMode is PROVISIONED",
        ),
        (
            {"BillingMode": "PAY_PER_REQUEST"},
            INVALID + "Neither ReadCapacityUnits nor WriteCapacityUnits can be specified when BillingMode is "
            "PAY_PER_REQUEST",
        ),
        (
            {"ProvisionedThroughput": {"ReadCapacityUnits": 1_000_000_000_001, "WriteCapacityUnits": 1}},
            "Given value 1000000000001 for ReadCapacityUnits is out of bounds",
        ),
        (
            {"ProvisionedThroughput": {"ReadCapacityUnits": 1, "WriteCapacityUnits": 1_000_000_000_001}},
            "Given value 1000000000001 for WriteCapacityUnits is out of bounds",
        ),
        (
            {"ProvisionedThroughput": {"ReadCapacityUnits": 1}},
            "1 validation error detected: Value null at 'provisionedThroughput.writeCapacityUnits' failed to satisfy "
            "constraint: Member must not be null",
        ),
        (
            {"BillingMode": "ON_DEMAND"},
            "1 validation error detected: Value 'ON_DEMAND' at 'billingMode' failed to satisfy constraint: "
            "Member must satisfy enum value set: [PROVISIONED, PAY_PER_REQUEST]",
        ),
    ],
)
def test_create_table_billing_rules(engine, extra, message):
    refused(engine, "CreateTable", table_request(**extra), "ValidationException", message)


# ------------------------------------------------------------------------------------------- secondary indexes


def index_table(**extra):
    request = table_request(AttributeDefinitions=attrs(customerId="S", sk="S", orderId="S", createdAt="N"))
    request.update(extra)
    return {k: v for k, v in request.items() if v is not None}


def test_create_table_with_indexes_describes_them(engine):
    request = index_table(
        GlobalSecondaryIndexes=[gsi(projection={"ProjectionType": "INCLUDE", "NonKeyAttributes": ["total"]})],
        LocalSecondaryIndexes=[lsi()],
    )
    created = call(engine, "CreateTable", request)["TableDescription"]
    (global_index,) = created["GlobalSecondaryIndexes"]
    assert global_index["IndexName"] == "byOrderId"
    assert global_index["IndexStatus"] == "CREATING"
    assert global_index["KeySchema"] == keys("orderId")
    assert global_index["Projection"] == {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["total"]}
    assert global_index["ProvisionedThroughput"]["ReadCapacityUnits"] == 1
    assert global_index["IndexArn"] == ARN + "Orders/index/byOrderId"
    assert global_index["ItemCount"] == 0 and global_index["IndexSizeBytes"] == 0
    (local_index,) = created["LocalSecondaryIndexes"]
    assert local_index == {
        "IndexName": "byCreatedAt",
        "KeySchema": keys("customerId", "createdAt"),
        "Projection": {"ProjectionType": "KEYS_ONLY"},
        "IndexSizeBytes": 0,
        "ItemCount": 0,
        "IndexArn": ARN + "Orders/index/byCreatedAt",
    }
    described = call(engine, "DescribeTable", {"TableName": "Orders"})["Table"]
    assert described["GlobalSecondaryIndexes"][0]["IndexStatus"] == "ACTIVE"
    definition = engine.table("Orders")
    assert definition.index("byOrderId").non_key_attributes == ["total"]
    assert definition.index("byCreatedAt").key.range_name == "createdAt"


def test_on_demand_gsi_takes_no_throughput(engine):
    request = index_table(
        BillingMode="PAY_PER_REQUEST",
        ProvisionedThroughput=None,
        AttributeDefinitions=attrs(customerId="S", sk="S", orderId="S"),
        GlobalSecondaryIndexes=[gsi(throughput=False)],
    )
    created = call(engine, "CreateTable", request)["TableDescription"]
    assert created["GlobalSecondaryIndexes"][0]["ProvisionedThroughput"]["ReadCapacityUnits"] == 0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"LocalSecondaryIndexes": []}, INVALID + "List of LocalSecondaryIndexes is empty"),
        ({"GlobalSecondaryIndexes": []}, INVALID + "List of GlobalSecondaryIndexes is empty"),
        (
            {"LocalSecondaryIndexes": [lsi(hash_name="orderId")]},
            INVALID + "Index KeySchema does not have the same leading hash key as table KeySchema for index: "
            "byCreatedAt. index hash key: orderId, table hash key: customerId",
        ),
        (
            {"LocalSecondaryIndexes": [{**lsi(), "KeySchema": keys("customerId")}]},
            INVALID + "Index KeySchema does not have a range key for index: byCreatedAt",
        ),
        (
            {"LocalSecondaryIndexes": [lsi(name=f"lsi{i}") for i in range(6)]},
            INVALID + "Number of LocalSecondaryIndexes exceeds per-table limit of 5",
        ),
        (
            {"GlobalSecondaryIndexes": [gsi(name=f"gsi{i}") for i in range(21)]},
            INVALID + "GlobalSecondaryIndex count exceeds the per-table limit of 20",
        ),
        (
            {"GlobalSecondaryIndexes": [gsi(name="same")], "LocalSecondaryIndexes": [lsi(name="same")]},
            INVALID + "Duplicate index name: same",
        ),
        ({"GlobalSecondaryIndexes": [gsi(), gsi()]}, INVALID + "Duplicate index name: byOrderId"),
        (
            {"GlobalSecondaryIndexes": [gsi(hash_name="missing")]},
            INVALID + "Some index key attributes are not defined in AttributeDefinitions. Keys: [missing], "
            "AttributeDefinitions: [customerId, sk, orderId, createdAt]",
        ),
        (
            {"GlobalSecondaryIndexes": [gsi(range_name="orderId")]},
            "Both the Hash Key and the Range Key element in the KeySchema have the same name",
        ),
        (
            {"GlobalSecondaryIndexes": [gsi(projection={"NonKeyAttributes": ["a"]})]},
            INVALID + "Unknown ProjectionType: null",
        ),
        (
            {"GlobalSecondaryIndexes": [gsi(projection={"ProjectionType": "ALL", "NonKeyAttributes": ["a"]})]},
            INVALID + "ProjectionType is ALL, but NonKeyAttributes is specified",
        ),
        (
            {"LocalSecondaryIndexes": [lsi(projection={"ProjectionType": "KEYS_ONLY", "NonKeyAttributes": ["a"]})]},
            INVALID + "ProjectionType is KEYS_ONLY, but NonKeyAttributes is specified",
        ),
        (
            {"GlobalSecondaryIndexes": [gsi(throughput=False)]},
            INVALID + "ProvisionedThroughput must be specified for index: byOrderId",
        ),
        (
            {"GlobalSecondaryIndexes": [gsi()], "BillingMode": "PAY_PER_REQUEST", "ProvisionedThroughput": None},
            INVALID + "ProvisionedThroughput should not be specified for index: byOrderId when BillingMode is "
            "PAY_PER_REQUEST",
        ),
        (
            {"GlobalSecondaryIndexes": [gsi()]},
            INVALID + "Some AttributeDefinitions are not used. AttributeDefinitions: [createdAt, customerId, orderId, "
            "sk], keys used: [customerId, orderId, sk]",
        ),
    ],
)
def test_create_table_index_rules(engine, extra, message):
    refused(engine, "CreateTable", index_table(**extra), "ValidationException", message)


def test_local_secondary_index_needs_a_table_sort_key(engine):
    request = {
        "TableName": "Orders",
        "AttributeDefinitions": attrs(customerId="S", createdAt="N"),
        "KeySchema": keys("customerId"),
        "ProvisionedThroughput": {"ReadCapacityUnits": 1, "WriteCapacityUnits": 1},
        "LocalSecondaryIndexes": [lsi()],
    }
    refused(
        engine,
        "CreateTable",
        request,
        "ValidationException",
        INVALID + "Table KeySchema does not have a range key, which is required when specifying a LocalSecondaryIndex",
    )


def test_index_field_constraints(engine):
    index = {"IndexName": "ab", "KeySchema": keys("orderId")}
    refused(
        engine,
        "CreateTable",
        index_table(GlobalSecondaryIndexes=[index]),
        "ValidationException",
        "2 validation errors detected: "
        "Value 'ab' at 'globalSecondaryIndexes.1.member.indexName' failed to satisfy constraint: "
        "Member must have length greater than or equal to 3; "
        "Value null at 'globalSecondaryIndexes.1.member.projection' failed to satisfy constraint: "
        "Member must not be null",
    )


def test_projected_attributes_across_indexes_are_limited_to_100(engine):
    # The documented quota: NonKeyAttributes summed over all indexes of a table (the same name in two indexes
    # counts twice). The message text is our wording of that limit.
    def include(n, prefix):
        return {"ProjectionType": "INCLUDE", "NonKeyAttributes": [f"{prefix}{i}" for i in range(n)]}

    definitions = attrs(customerId="S", sk="S", a="S", b="S", c="S", d="S", e="S", f="N")
    indexes = [gsi(name=f"gsi_{x}", hash_name=x, projection=include(20, x)) for x in "abcde"]
    fits = table_request(AttributeDefinitions=definitions, GlobalSecondaryIndexes=indexes)
    over = table_request(
        AttributeDefinitions=definitions,
        GlobalSecondaryIndexes=indexes,
        LocalSecondaryIndexes=[lsi(name="lsi_f", range_name="f", projection=include(1, "z"))],
    )
    refused(
        engine,
        "CreateTable",
        over,
        "ValidationException",
        contains="Number of projected attributes in all indexes exceeds limit of 100",
    )
    call(engine, "CreateTable", {**fits, "AttributeDefinitions": definitions[:-1]})


def test_nonkeyattributes_per_index_field_limit(engine):
    index = gsi(projection={"ProjectionType": "INCLUDE", "NonKeyAttributes": [f"a{i}" for i in range(21)]})
    refused(
        engine,
        "CreateTable",
        index_table(GlobalSecondaryIndexes=[index], AttributeDefinitions=attrs(customerId="S", sk="S", orderId="S")),
        "ValidationException",
        contains="at 'globalSecondaryIndexes.1.member.projection.nonKeyAttributes' failed to satisfy constraint: "
        "Member must have length less than or equal to 20",
    )


# ------------------------------------------------------------------------------------ streams and other settings


def test_create_table_with_stream(engine):
    spec = {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    table = call(engine, "CreateTable", table_request(StreamSpecification=spec))["TableDescription"]
    assert table["StreamSpecification"] == spec
    assert table["LatestStreamLabel"] == "2023-11-14T22:13:20.000"
    assert table["LatestStreamArn"] == ARN + "Orders/stream/2023-11-14T22:13:20.000"


def test_disabled_stream_specification_creates_no_stream(engine):
    table = call(engine, "CreateTable", table_request(StreamSpecification={"StreamEnabled": False}))
    assert "StreamSpecification" not in table["TableDescription"]
    assert "LatestStreamArn" not in table["TableDescription"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        # Our text for a rule whose wording we could not confirm: an enabled stream needs a view type.
        ({"StreamEnabled": True}, INVALID + "You must specify a StreamViewType when enabling a stream"),
        (
            {"StreamViewType": "NEW_IMAGE"},
            "1 validation error detected: Value null at 'streamSpecification.streamEnabled' failed to satisfy "
            "constraint: Member must not be null",
        ),
        (
            {"StreamEnabled": True, "StreamViewType": "ALL"},
            "1 validation error detected: Value 'ALL' at 'streamSpecification.streamViewType' failed to satisfy "
            "constraint: Member must satisfy enum value set: [NEW_IMAGE, OLD_IMAGE, NEW_AND_OLD_IMAGES, KEYS_ONLY]",
        ),
    ],
)
def test_stream_specification_rules(engine, spec, message):
    refused(engine, "CreateTable", table_request(StreamSpecification=spec), "ValidationException", message)


def test_create_table_settings_are_reported(engine):
    request = table_request(
        TableClass="STANDARD_INFREQUENT_ACCESS",
        DeletionProtectionEnabled=True,
        SSESpecification={"Enabled": True},
        Tags=[{"Key": "team", "Value": "orders"}, {"Key": "env", "Value": "test"}],
    )
    table = call(engine, "CreateTable", request)["TableDescription"]
    assert table["TableClassSummary"]["TableClass"] == "STANDARD_INFREQUENT_ACCESS"
    assert table["DeletionProtectionEnabled"] is True
    assert table["SSEDescription"]["Status"] == "ENABLED"
    assert table["SSEDescription"]["SSEType"] == "KMS"
    assert table["SSEDescription"]["KMSMasterKeyArn"].startswith("arn:aws:kms:us-east-1:000000000000:key/")
    tags = call(engine, "ListTagsOfResource", {"ResourceArn": ARN + "Orders"})["Tags"]
    assert tags == [{"Key": "env", "Value": "test"}, {"Key": "team", "Value": "orders"}]


def test_create_table_refuses_multi_account_global_tables(engine):
    refused(engine, "CreateTable", table_request(GlobalTableSourceArn=ARN + "Other"), "ValidationException")


def test_definitions_survive_a_restart(engine, clock):
    request = index_table(
        GlobalSecondaryIndexes=[gsi()],
        LocalSecondaryIndexes=[lsi()],
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"},
        Tags=[{"Key": "k", "Value": "v"}],
        SSESpecification={"Enabled": True, "KMSMasterKeyId": "1234"},
    )
    call(engine, "CreateTable", request)
    before = snapshot(engine)
    restarted = Engine(engine.store, clock)
    assert snapshot(restarted) == before


# ================================================================================================ DescribeTable


def test_describe_unknown_table(engine):
    refused(
        engine,
        "DescribeTable",
        {"TableName": "Nope"},
        "ResourceNotFoundException",
        "Requested resource not found: Table: Nope not found",
    )


def test_describe_counts_items_and_bytes(engine):
    call(engine, "CreateTable", table_request())
    put(engine, "Orders", {"customerId": {"S": "C-17"}, "sk": {"S": "2026-10-01#o-967"}})
    put(engine, "Orders", {"customerId": {"S": "C-17"}, "sk": {"S": "2026-10-02#o-981"}})
    table = call(engine, "DescribeTable", {"TableName": "Orders"})["Table"]
    assert table["ItemCount"] == 2
    assert table["TableSizeBytes"] == 200


def test_describe_requires_a_table_name(engine):
    refused(
        engine,
        "DescribeTable",
        {},
        "ValidationException",
        "1 validation error detected: Value null at 'tableName' failed to satisfy constraint: Member must not be null",
    )


# =================================================================================================== ListTables


def test_list_tables_pages_in_name_order(engine):
    for name in ["delta", "Alpha", "charlie", "bravo", "echo"]:
        call(engine, "CreateTable", table_request(name=name))
    assert call(engine, "ListTables", {}) == {"TableNames": ["Alpha", "bravo", "charlie", "delta", "echo"]}

    first = call(engine, "ListTables", {"Limit": 2})
    assert first == {"TableNames": ["Alpha", "bravo"], "LastEvaluatedTableName": "bravo"}
    second = call(engine, "ListTables", {"Limit": 2, "ExclusiveStartTableName": "bravo"})
    assert second == {"TableNames": ["charlie", "delta"], "LastEvaluatedTableName": "delta"}
    # The last page holds exactly what remains: no LastEvaluatedTableName.
    assert call(engine, "ListTables", {"Limit": 1, "ExclusiveStartTableName": "delta"}) == {"TableNames": ["echo"]}
    # The start name need not exist.
    assert call(engine, "ListTables", {"ExclusiveStartTableName": "cat"}) == {
        "TableNames": ["charlie", "delta", "echo"]
    }


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (
            {"Limit": 0},
            "1 validation error detected: Value '0' at 'limit' failed to satisfy constraint: "
            "Member must have value greater than or equal to 1",
        ),
        (
            {"Limit": 101},
            "1 validation error detected: Value '101' at 'limit' failed to satisfy constraint: "
            "Member must have value less than or equal to 100",
        ),
        ({"ExclusiveStartTableName": "a!"}, None),
    ],
)
def test_list_tables_parameter_rules(engine, request_, message):
    refused(engine, "ListTables", request_, "ValidationException", message)


# ================================================================================================== DeleteTable


def test_delete_table_returns_deleting_and_the_table_is_gone(engine):
    call(
        engine,
        "CreateTable",
        index_table(GlobalSecondaryIndexes=[gsi()], AttributeDefinitions=attrs(customerId="S", sk="S", orderId="S")),
    )
    put(engine, "Orders", {"customerId": {"S": "C-17"}, "sk": {"S": "a"}})
    deleted = call(engine, "DeleteTable", {"TableName": "Orders"})["TableDescription"]
    assert deleted["TableStatus"] == "DELETING"
    assert deleted["TableName"] == "Orders"
    assert deleted["ItemCount"] == 1
    refused(engine, "DescribeTable", {"TableName": "Orders"}, "ResourceNotFoundException")
    assert call(engine, "ListTables", {}) == {"TableNames": []}
    # A new table of the same name starts empty.
    call(engine, "CreateTable", table_request())
    assert call(engine, "DescribeTable", {"TableName": "Orders"})["Table"]["ItemCount"] == 0


def test_delete_unknown_table(engine):
    refused(
        engine,
        "DeleteTable",
        {"TableName": "Nope"},
        "ResourceNotFoundException",
        "Requested resource not found: Table: Nope not found",
    )


def test_deletion_protection_refuses_delete_until_disabled(engine):
    call(engine, "CreateTable", table_request(DeletionProtectionEnabled=True))
    refused(
        engine,
        "DeleteTable",
        {"TableName": "Orders"},
        "ValidationException",
        "Resource cannot be deleted as it is currently protected against deletion. Disable deletion protection first.",
    )
    updated = call(engine, "UpdateTable", {"TableName": "Orders", "DeletionProtectionEnabled": False})
    assert updated["TableDescription"]["DeletionProtectionEnabled"] is False
    assert updated["TableDescription"]["TableStatus"] == "ACTIVE"
    call(engine, "DeleteTable", {"TableName": "Orders"})
    assert "Orders" not in engine.tables


# ================================================================================================== UpdateTable


NOTHING = (
    "At least one of ProvisionedThroughput, BillingMode, UpdateStreamEnabled, GlobalSecondaryIndexUpdates or "
    "SSESpecification or ReplicaUpdates is required"
)


def test_update_with_nothing_to_update(engine):
    call(engine, "CreateTable", table_request())
    refused(engine, "UpdateTable", {"TableName": "Orders"}, "ValidationException", NOTHING)
    refused(
        engine,
        "UpdateTable",
        {"TableName": "Orders", "GlobalSecondaryIndexUpdates": [], "AttributeDefinitions": attrs(x="S")},
        "ValidationException",
        NOTHING,
    )
    # Request validation comes before the table lookup.
    refused(engine, "UpdateTable", {"TableName": "Nope"}, "ValidationException", NOTHING)


def test_update_unknown_table(engine):
    refused(
        engine,
        "UpdateTable",
        {"TableName": "Nope", "BillingMode": "PAY_PER_REQUEST"},
        "ResourceNotFoundException",
        "Requested resource not found: Table: Nope not found",
    )


def test_switch_to_on_demand_and_back(engine, clock):
    call(engine, "CreateTable", table_request())
    clock.advance(60)
    response = call(engine, "UpdateTable", {"TableName": "Orders", "BillingMode": "PAY_PER_REQUEST"})
    assert response["TableDescription"]["TableStatus"] == "UPDATING"
    table = call(engine, "DescribeTable", {"TableName": "Orders"})["Table"]
    assert table["TableStatus"] == "ACTIVE"
    assert table["BillingModeSummary"] == {
        "BillingMode": "PAY_PER_REQUEST",
        "LastUpdateToPayPerRequestDateTime": 1_700_000_060.0,
    }
    assert table["ProvisionedThroughput"]["ReadCapacityUnits"] == 0
    assert table["ProvisionedThroughput"]["WriteCapacityUnits"] == 0

    refused(
        engine,
        "UpdateTable",
        {"TableName": "Orders", "ProvisionedThroughput": {"ReadCapacityUnits": 2, "WriteCapacityUnits": 2}},
        "ValidationException",
        INVALID + "Neither ReadCapacityUnits nor WriteCapacityUnits can be specified when BillingMode is "
        "PAY_PER_REQUEST",
    )
    refused(
        engine,
        "UpdateTable",
        {"TableName": "Orders", "BillingMode": "PROVISIONED"},
        "ValidationException",
        INVALID + "ProvisionedThroughput must be specified when BillingMode is PROVISIONED",
    )

    call(
        engine,
        "UpdateTable",
        {
            "TableName": "Orders",
            "BillingMode": "PROVISIONED",
            "ProvisionedThroughput": {"ReadCapacityUnits": 7, "WriteCapacityUnits": 3},
        },
    )
    table = call(engine, "DescribeTable", {"TableName": "Orders"})["Table"]
    assert table["BillingModeSummary"]["BillingMode"] == "PROVISIONED"
    assert table["ProvisionedThroughput"]["ReadCapacityUnits"] == 7
    assert table["ProvisionedThroughput"]["WriteCapacityUnits"] == 3


def test_switch_to_provisioned_needs_capacity_for_every_gsi(engine):
    request = index_table(
        BillingMode="PAY_PER_REQUEST",
        ProvisionedThroughput=None,
        AttributeDefinitions=attrs(customerId="S", sk="S", orderId="S"),
        GlobalSecondaryIndexes=[gsi(throughput=False)],
    )
    call(engine, "CreateTable", request)
    switch = {
        "TableName": "Orders",
        "BillingMode": "PROVISIONED",
        "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
    }
    refused(
        engine,
        "UpdateTable",
        switch,
        "ValidationException",
        INVALID + "ProvisionedThroughput must be specified for index: byOrderId",
    )
    capacity = {"ReadCapacityUnits": 2, "WriteCapacityUnits": 2}
    call(
        engine,
        "UpdateTable",
        {
            **switch,
            "GlobalSecondaryIndexUpdates": [{"Update": {"IndexName": "byOrderId", "ProvisionedThroughput": capacity}}],
        },
    )
    index = call(engine, "DescribeTable", {"TableName": "Orders"})["Table"]["GlobalSecondaryIndexes"][0]
    assert index["ProvisionedThroughput"]["ReadCapacityUnits"] == 2


def test_throughput_changes(engine, clock):
    call(engine, "CreateTable", table_request())
    same = {"TableName": "Orders", "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5}}
    refused(
        engine,
        "UpdateTable",
        same,
        "ValidationException",
        "The provisioned throughput for the table will not change. The requested value equals the current value. "
        "Current ReadCapacityUnits provisioned for the table: 5. Requested ReadCapacityUnits: 5. "
        "Current WriteCapacityUnits provisioned for the table: 5. Requested WriteCapacityUnits: 5. "
        "Refer to the Amazon DynamoDB Developer Guide for current limits and how to request higher limits.",
    )
    refused(
        engine,
        "UpdateTable",
        {
            "TableName": "Orders",
            "ProvisionedThroughput": {"ReadCapacityUnits": 1_000_000_000_001, "WriteCapacityUnits": 1},
        },
        "ValidationException",
        "Given value 1000000000001 for ReadCapacityUnits is out of bounds",
    )

    clock.advance(10)
    increase = {"TableName": "Orders", "ProvisionedThroughput": {"ReadCapacityUnits": 10, "WriteCapacityUnits": 10}}
    response = call(engine, "UpdateTable", increase)["TableDescription"]
    # The response shows the change in progress: UPDATING with the capacity still in force.
    assert response["TableStatus"] == "UPDATING"
    assert response["ProvisionedThroughput"]["ReadCapacityUnits"] == 5
    assert response["ProvisionedThroughput"]["LastIncreaseDateTime"] == 1_700_000_010.0
    table = call(engine, "DescribeTable", {"TableName": "Orders"})["Table"]
    assert table["ProvisionedThroughput"]["ReadCapacityUnits"] == 10

    clock.advance(10)
    decrease = {"TableName": "Orders", "ProvisionedThroughput": {"ReadCapacityUnits": 4, "WriteCapacityUnits": 10}}
    call(engine, "UpdateTable", decrease)
    throughput = call(engine, "DescribeTable", {"TableName": "Orders"})["Table"]["ProvisionedThroughput"]
    assert throughput["NumberOfDecreasesToday"] == 1
    assert throughput["LastDecreaseDateTime"] == 1_700_000_020.0
    # The count is per UTC calendar day.
    clock.advance(86_400)
    throughput = call(engine, "DescribeTable", {"TableName": "Orders"})["Table"]["ProvisionedThroughput"]
    assert throughput["NumberOfDecreasesToday"] == 0


def test_update_table_class_and_deletion_protection(engine, clock):
    call(engine, "CreateTable", table_request())
    clock.advance(5)
    call(
        engine,
        "UpdateTable",
        {"TableName": "Orders", "TableClass": "STANDARD_INFREQUENT_ACCESS", "DeletionProtectionEnabled": True},
    )
    table = call(engine, "DescribeTable", {"TableName": "Orders"})["Table"]
    assert table["TableClassSummary"] == {
        "TableClass": "STANDARD_INFREQUENT_ACCESS",
        "LastUpdateDateTime": 1_700_000_005.0,
    }
    assert table["DeletionProtectionEnabled"] is True


def test_update_stream(engine, clock):
    call(engine, "CreateTable", table_request())
    refused(
        engine,
        "UpdateTable",
        {"TableName": "Orders", "StreamSpecification": {"StreamEnabled": False}},
        "ValidationException",
    )
    refused(
        engine,
        "UpdateTable",
        {"TableName": "Orders", "StreamSpecification": {"StreamEnabled": True}},
        "ValidationException",
        contains="StreamViewType",
    )
    enable = {"TableName": "Orders", "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"}}
    call(engine, "UpdateTable", enable)
    table = call(engine, "DescribeTable", {"TableName": "Orders"})["Table"]
    assert table["StreamSpecification"] == {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"}
    first_arn = table["LatestStreamArn"]
    # Changing the view type needs a disable first (the model's documentation for StreamSpecification).
    refused(
        engine,
        "UpdateTable",
        {**enable, "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"}},
        "ValidationException",
        contains="Table already has an enabled stream",
    )
    call(engine, "UpdateTable", {"TableName": "Orders", "StreamSpecification": {"StreamEnabled": False}})
    table = call(engine, "DescribeTable", {"TableName": "Orders"})["Table"]
    assert "StreamSpecification" not in table
    assert table["LatestStreamArn"] == first_arn
    clock.advance(1)
    call(engine, "UpdateTable", enable)
    assert call(engine, "DescribeTable", {"TableName": "Orders"})["Table"]["LatestStreamArn"] != first_arn


def test_update_refuses_a_replica_outside_the_topology(engine):
    # A standalone region has no other regions: any new replica is refused (tests/engine/test_replica_membership.py
    # covers regions of a topology).
    call(engine, "CreateTable", table_request(BillingMode="PAY_PER_REQUEST", ProvisionedThroughput=None))
    refused(
        engine,
        "UpdateTable",
        {"TableName": "Orders", "ReplicaUpdates": [{"Create": {"RegionName": "us-west-2"}}]},
        "ValidationException",
        contains="Region us-west-2 is not a region",
    )


# ------------------------------------------------------------------------------------- GlobalSecondaryIndexUpdates


@pytest.fixture
def orders(engine):
    call(engine, "CreateTable", table_request())
    return engine


def create_gsi_update(**kw):
    index = gsi(**kw)
    return {
        "TableName": "Orders",
        "AttributeDefinitions": attrs(orderId="S"),
        "GlobalSecondaryIndexUpdates": [{"Create": index}],
    }


def test_create_and_delete_a_gsi(orders):
    response = call(orders, "UpdateTable", create_gsi_update())["TableDescription"]
    assert response["TableStatus"] == "UPDATING"
    assert response["GlobalSecondaryIndexes"][0]["IndexStatus"] == "CREATING"
    while orders.background_step():  # the backfill (tests/engine/test_indexes.py covers it)
        pass
    table = call(orders, "DescribeTable", {"TableName": "Orders"})["Table"]
    assert table["AttributeDefinitions"] == attrs(customerId="S", sk="S", orderId="S")
    assert table["GlobalSecondaryIndexes"][0]["IndexName"] == "byOrderId"
    assert table["GlobalSecondaryIndexes"][0]["IndexArn"] == ARN + "Orders/index/byOrderId"

    refused(
        orders,
        "UpdateTable",
        create_gsi_update(),
        "ValidationException",
        "Attempting to create an index which already exists",
    )

    response = call(
        orders,
        "UpdateTable",
        {"TableName": "Orders", "GlobalSecondaryIndexUpdates": [{"Delete": {"IndexName": "byOrderId"}}]},
    )
    assert response["TableDescription"]["GlobalSecondaryIndexes"][0]["IndexStatus"] == "DELETING"
    table = call(orders, "DescribeTable", {"TableName": "Orders"})["Table"]
    assert "GlobalSecondaryIndexes" not in table
    # Attribute definitions only describe key attributes still in use.
    assert table["AttributeDefinitions"] == attrs(customerId="S", sk="S")


def test_update_gsi_throughput(orders):
    call(orders, "UpdateTable", create_gsi_update())
    update = {
        "TableName": "Orders",
        "GlobalSecondaryIndexUpdates": [
            {
                "Update": {
                    "IndexName": "byOrderId",
                    "ProvisionedThroughput": {"ReadCapacityUnits": 3, "WriteCapacityUnits": 1},
                }
            }
        ],
    }
    response = call(orders, "UpdateTable", update)["TableDescription"]
    assert response["GlobalSecondaryIndexes"][0]["IndexStatus"] == "UPDATING"
    index = call(orders, "DescribeTable", {"TableName": "Orders"})["Table"]["GlobalSecondaryIndexes"][0]
    assert index["ProvisionedThroughput"]["ReadCapacityUnits"] == 3


@pytest.mark.parametrize(
    ("updates", "error", "message"),
    [
        (
            [{}],
            "ValidationException",
            INVALID + "One of GlobalSecondaryIndexUpdate.Update, GlobalSecondaryIndexUpdate.Create, "
            "GlobalSecondaryIndexUpdate.Delete must not be null",
        ),
        (
            [{"Delete": {"IndexName": "idx"}}, {"Delete": {"IndexName": "idx"}}],
            "ValidationException",
            INVALID + "Only one global secondary index update per index is allowed simultaneously. Index: idx",
        ),
        (
            [{"Create": gsi(name="one")}, {"Create": gsi(name="two")}],
            "LimitExceededException",
            "Subscriber limit exceeded: Only 1 online index can be created or deleted simultaneously per table",
        ),
        ([{"Delete": {"IndexName": "missing"}}], "ResourceNotFoundException", None),
        (
            [
                {
                    "Update": {
                        "IndexName": "missing",
                        "ProvisionedThroughput": {"ReadCapacityUnits": 1, "WriteCapacityUnits": 2},
                    }
                }
            ],
            "ResourceNotFoundException",
            None,
        ),
        (
            # The request's own AttributeDefinitions must define the new index's keys, so only they are listed.
            [{"Create": gsi(hash_name="undefined")}],
            "ValidationException",
            INVALID + "Some index key attributes are not defined in AttributeDefinitions. Keys: [undefined], "
            "AttributeDefinitions: [orderId]",
        ),
        (
            [{"Create": gsi(throughput=False)}],
            "ValidationException",
            INVALID + "ProvisionedThroughput must be specified for index: byOrderId",
        ),
        (
            [{"Create": gsi(projection={"ProjectionType": "KEYS_ONLY", "NonKeyAttributes": ["x"]})}],
            "ValidationException",
            INVALID + "ProjectionType is KEYS_ONLY, but NonKeyAttributes is specified",
        ),
        (
            [{"Create": {"IndexName": "byOrderId", "Projection": {"ProjectionType": "ALL"}}}],
            "ValidationException",
            "1 validation error detected: Value null at 'globalSecondaryIndexUpdates.1.member.create.keySchema' failed "
            "to satisfy constraint: Member must not be null",
        ),
    ],
)
def test_gsi_update_rules(orders, updates, error, message):
    request = {
        "TableName": "Orders",
        "AttributeDefinitions": attrs(orderId="S"),
        "GlobalSecondaryIndexUpdates": updates,
    }
    refused(orders, "UpdateTable", request, error, message)


def test_gsi_limit_applies_to_updates(orders):
    for i in range(20):
        name = f"attr{i}"
        call(
            orders,
            "UpdateTable",
            {
                "TableName": "Orders",
                "AttributeDefinitions": attrs(**{name: "S"}),
                "GlobalSecondaryIndexUpdates": [{"Create": gsi(name=f"gsi{i}", hash_name=name)}],
            },
        )
        while orders.background_step():  # one index is created at a time: let the backfill finish
            pass
    refused(
        orders,
        "UpdateTable",
        create_gsi_update(),
        "ValidationException",
        INVALID + "GlobalSecondaryIndex count exceeds the per-table limit of 20",
    )


# ========================================================================================================== Tags


def test_tag_untag_list(orders):
    arn = ARN + "Orders"
    assert call(orders, "ListTagsOfResource", {"ResourceArn": arn}) == {"Tags": []}
    assert (
        call(
            orders, "TagResource", {"ResourceArn": arn, "Tags": [{"Key": "b", "Value": "1"}, {"Key": "a", "Value": ""}]}
        )
        == {}
    )
    call(orders, "TagResource", {"ResourceArn": arn, "Tags": [{"Key": "b", "Value": "2"}]})
    assert call(orders, "ListTagsOfResource", {"ResourceArn": arn}) == {
        "Tags": [{"Key": "a", "Value": ""}, {"Key": "b", "Value": "2"}]
    }
    assert call(orders, "UntagResource", {"ResourceArn": arn, "TagKeys": ["a", "not-there"]}) == {}
    assert call(orders, "ListTagsOfResource", {"ResourceArn": arn}) == {"Tags": [{"Key": "b", "Value": "2"}]}


@pytest.mark.parametrize(
    ("operation", "request_", "error", "message"),
    [
        ("TagResource", {"Tags": [{"Key": "a", "Value": "b"}]}, "ValidationException", "Invalid TableArn"),
        ("ListTagsOfResource", {}, "ValidationException", "Invalid TableArn"),
        (
            "TagResource",
            {"ResourceArn": "Orders", "Tags": [{"Key": "a", "Value": "b"}]},
            "AccessDeniedException",
            "User: arn:aws:iam::000000000000:root is not authorized to perform: dynamodb:TagResource "
            "on resource: Orders",
        ),
        (
            "TagResource",
            {"ResourceArn": ARN + "Orders"},
            "ValidationException",
            "1 validation error detected: Value null at 'tags' failed to satisfy constraint: Member must not be null",
        ),
        (
            "UntagResource",
            {"ResourceArn": ARN + "Orders"},
            "ValidationException",
            "1 validation error detected: Value null at 'tagKeys' failed to satisfy constraint: "
            "Member must not be null",
        ),
        (
            "TagResource",
            {"ResourceArn": ARN + "Orders/index/byOrderId", "Tags": [{"Key": "a", "Value": "b"}]},
            "ValidationException",
            "Invalid TableArn: Invalid ResourceArn provided as input " + ARN + "Orders/index/byOrderId",
        ),
        (
            "TagResource",
            {"ResourceArn": ARN + "Orders", "Tags": []},
            "ValidationException",
            "Atleast one Tag needs to be provided as Input.",
        ),
        (
            "UntagResource",
            {"ResourceArn": ARN + "Orders", "TagKeys": []},
            "ValidationException",
            "Atleast one Tag Key needs to be provided as Input.",
        ),
        (
            "TagResource",
            {"ResourceArn": ARN + "Nope", "Tags": [{"Key": "a", "Value": "b"}]},
            "ResourceNotFoundException",
            f"Requested resource not found: ResourcArn: {ARN}Nope not found",
        ),
        (
            "ListTagsOfResource",
            {"ResourceArn": ARN + "Nope"},
            "ResourceNotFoundException",
            f"Requested resource not found: ResourcArn: {ARN}Nope not found",
        ),
        (
            "UntagResource",
            {"ResourceArn": ARN + "Nope", "TagKeys": ["a"]},
            "ResourceNotFoundException",
            "Requested resource not found",
        ),
        (
            "ListTagsOfResource",
            {"ResourceArn": "arn:aws:dynamodb:eu-west-1:000000000000:table/Orders"},
            "ResourceNotFoundException",
            None,
        ),
        (
            "TagResource",
            {"ResourceArn": ARN + "Orders", "Tags": [{"Key": "k" * 129, "Value": "v"}]},
            "ValidationException",
            None,
        ),
    ],
)
def test_tag_rules(orders, operation, request_, error, message):
    refused(orders, operation, request_, error, message)


def test_at_most_50_tags(orders):
    arn = ARN + "Orders"
    call(orders, "TagResource", {"ResourceArn": arn, "Tags": [{"Key": f"k{i}", "Value": "v"} for i in range(50)]})
    refused(
        orders, "TagResource", {"ResourceArn": arn, "Tags": [{"Key": "one-more", "Value": "v"}]}, "ValidationException"
    )
    # Overwriting an existing key is not a new tag.
    call(orders, "TagResource", {"ResourceArn": arn, "Tags": [{"Key": "k0", "Value": "w"}]})


# ============================================================================================ limits and endpoints


def test_describe_limits(engine):
    assert call(engine, "DescribeLimits", {}) == {
        "AccountMaxReadCapacityUnits": 80000,
        "AccountMaxWriteCapacityUnits": 80000,
        "TableMaxReadCapacityUnits": 40000,
        "TableMaxWriteCapacityUnits": 40000,
    }


def test_describe_endpoints(engine):
    assert call(engine, "DescribeEndpoints", {}) == {
        "Endpoints": [{"Address": "dynamodb.us-east-1.amazonaws.com", "CachePeriodInMinutes": 1440}]
    }
    engine.endpoint_address = "127.0.0.1:8000"
    assert call(engine, "DescribeEndpoints", {})["Endpoints"][0]["Address"] == "127.0.0.1:8000"
