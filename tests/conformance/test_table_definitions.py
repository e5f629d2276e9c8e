"""Table and index definitions DynamoDB refuses: duplicated attribute definitions, redefined key types, GSI
creation without its own definitions, INCLUDE projections, and reads of attributes a GSI does not project."""

import pytest

from conformance.tables import error_of

INVALID = "One or more parameter values were invalid: "


def definitions(**types):
    return [{"AttributeName": name, "AttributeType": kind} for name, kind in types.items()]


def hash_key(name):
    return [{"AttributeName": name, "KeyType": "HASH"}]


def absent(dynamodb, name):
    return name not in dynamodb.list_tables()["TableNames"]


def test_duplicated_attribute_definition_comes_first(dynamodb, unique_table_name):
    # Why: DynamoDB answers "Attribute Name is duplicated: <name>" before it counts or matches definitions (here the
    # definitions also outnumber the key, which would otherwise be the error).
    name = unique_table_name("Dup")
    code, message = error_of(
        dynamodb.create_table,
        TableName=name,
        KeySchema=hash_key("pk"),
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[*definitions(pk="S"), *definitions(pk="S"), *definitions(other="N")],
    )
    assert (code, message) == ("ValidationException", "Attribute Name is duplicated: pk")
    assert absent(dynamodb, name)


def test_duplicated_attribute_definition_with_a_different_type(dynamodb, unique_table_name):
    name = unique_table_name("Dup")
    code, message = error_of(
        dynamodb.create_table,
        TableName=name,
        KeySchema=hash_key("pk"),
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[*definitions(pk="S"), *definitions(pk="N")],
    )
    assert (code, message) == ("ValidationException", "Attribute Name is duplicated: pk")


@pytest.fixture(scope="module")
def indexed(dynamodb, unique_table_name):
    """pk/sk table with an LSI on `lsk` (N) and a KEYS_ONLY GSI on `g`."""
    name = unique_table_name("Defs")
    dynamodb.create_table(
        TableName=name,
        AttributeDefinitions=definitions(pk="S", sk="S", lsk="N", g="S"),
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        LocalSecondaryIndexes=[
            {
                "IndexName": "byLsk",
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "lsk", "KeyType": "RANGE"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        GlobalSecondaryIndexes=[
            {"IndexName": "byG", "KeySchema": hash_key("g"), "Projection": {"ProjectionType": "KEYS_ONLY"}}
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    dynamodb.put_item(
        TableName=name,
        Item={"pk": {"S": "p"}, "sk": {"S": "s"}, "lsk": {"N": "1"}, "g": {"S": "x"}, "extra": {"S": "o"}},
    )
    return name


def create_index(dynamodb, table, index_name, key, attribute_definitions=None, projection=None):
    request = {
        "TableName": table,
        "GlobalSecondaryIndexUpdates": [
            {
                "Create": {
                    "IndexName": index_name,
                    "KeySchema": hash_key(key),
                    "Projection": projection or {"ProjectionType": "ALL"},
                }
            }
        ],
    }
    if attribute_definitions is not None:
        request["AttributeDefinitions"] = attribute_definitions
    return request


def index_names(dynamodb, table):
    return sorted(
        index["IndexName"]
        for index in dynamodb.describe_table(TableName=table)["Table"].get("GlobalSecondaryIndexes", [])
    )


def test_an_index_cannot_redefine_a_key_attribute_type(dynamodb, indexed):
    # Why: an attribute already used in a key keeps its type; DynamoDB names both schemas in its refusal.
    code, message = error_of(
        dynamodb.update_table, **create_index(dynamodb, indexed, "byLskS", "lsk", definitions(lsk="S"))
    )
    assert code == "ValidationException"
    assert message.startswith(
        INVALID + "Attributes cannot be redefined. Please check that your attribute has the same type as previously "
        "defined. Existing schema: "
    )
    assert "New schema: " in message
    assert index_names(dynamodb, indexed) == ["byG"]


def test_an_index_needs_its_own_attribute_definitions(dynamodb, indexed):
    # Why: a GSI Create must define its key attributes in the request's AttributeDefinitions, even ones the table
    # already knows (here `lsk`, an LSI's sort key).
    code, message = error_of(dynamodb.update_table, **create_index(dynamodb, indexed, "byLskG", "lsk"))
    assert (code, message) == (
        "ValidationException",
        INVALID + "AttributeDefinitions is not specified for index: byLskG",
    )
    code, message = error_of(
        dynamodb.update_table, **create_index(dynamodb, indexed, "byLskG", "lsk", definitions(g="S"))
    )
    assert code == "ValidationException"
    assert message.startswith(INVALID + "Some index key attributes are not defined in AttributeDefinitions")
    assert index_names(dynamodb, indexed) == ["byG"]


def test_include_projection_needs_non_key_attributes(dynamodb, unique_table_name):
    # Why: ProjectionType INCLUDE names the attributes it adds: without NonKeyAttributes, or with one of them twice,
    # it is refused.
    name = unique_table_name("Include")
    base = {
        "TableName": name,
        "KeySchema": hash_key("pk"),
        "AttributeDefinitions": definitions(pk="S", g="S"),
        "BillingMode": "PAY_PER_REQUEST",
    }
    code, message = error_of(
        dynamodb.create_table,
        **base,
        GlobalSecondaryIndexes=[
            {"IndexName": "byG", "KeySchema": hash_key("g"), "Projection": {"ProjectionType": "INCLUDE"}}
        ],
    )
    assert (code, message) == (
        "ValidationException",
        INVALID + "ProjectionType is INCLUDE, but NonKeyAttributes is not specified",
    )
    code, message = error_of(
        dynamodb.create_table,
        **base,
        GlobalSecondaryIndexes=[
            {
                "IndexName": "byG",
                "KeySchema": hash_key("g"),
                "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["a", "b", "a"]},
            }
        ],
    )
    assert code == "ValidationException" and "Duplicate" in message and message.endswith(": a")
    assert absent(dynamodb, name)


@pytest.mark.parametrize("operation", ["query", "scan"])
def test_a_gsi_read_cannot_ask_for_unprojected_attributes(dynamodb, indexed, operation):
    # Why: "If you query or scan a global secondary index, you can only request attributes that are projected into
    # the index" (Query and Scan, Select, in the API reference).
    call = getattr(dynamodb, operation)
    extra = (
        {"KeyConditionExpression": "g = :g", "ExpressionAttributeValues": {":g": {"S": "x"}}}
        if operation == "query"
        else {}
    )
    code, message = error_of(call, TableName=indexed, IndexName="byG", ProjectionExpression="pk, extra", **extra)
    assert code == "ValidationException" and "not projected" in message and "extra" in message
    legacy = (
        {"KeyConditions": {"g": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "x"}]}}}
        if operation == "query"
        else {}
    )
    code, message = error_of(call, TableName=indexed, IndexName="byG", AttributesToGet=["extra"], **legacy)
    assert code == "ValidationException" and "not projected" in message
    found = call(TableName=indexed, IndexName="byG", ProjectionExpression="pk, sk, g", **extra)
    assert found["Items"] == [{"pk": {"S": "p"}, "sk": {"S": "s"}, "g": {"S": "x"}}]
