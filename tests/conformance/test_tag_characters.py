"""Tag keys and values may hold only letters, digits, white space and + - = . _ : / @ (any script)."""

import pytest

from conformance.tables import create_pk_table, error_of


@pytest.fixture(scope="module")
def table_arn(dynamodb, unique_table_name):
    name = unique_table_name("Tags")
    create_pk_table(dynamodb, name)
    return dynamodb.describe_table(TableName=name)["Table"]["TableArn"]


ALLOWED = ["team", "Cost Center", "a+b-c=d.e_f:g/h@i", "Équipe", "チーム", "٣٤", "v 1.2"]
REFUSED = ["a*b", "semi;colon", 'quote"', "hash#", "percent%", "comma,", "emoji\U0001f600", "brace{"]


@pytest.mark.parametrize("text", ALLOWED)
def test_allowed_characters(dynamodb, table_arn, text):
    # Why: "The allowed characters are letters, white space, and numbers, plus the following special characters:
    # + - = . _ : /" (Tagging restrictions in DynamoDB), of any script.
    dynamodb.tag_resource(ResourceArn=table_arn, Tags=[{"Key": text, "Value": text}])
    assert {"Key": text, "Value": text} in dynamodb.list_tags_of_resource(ResourceArn=table_arn)["Tags"]
    dynamodb.untag_resource(ResourceArn=table_arn, TagKeys=[text])


@pytest.mark.parametrize("text", REFUSED)
def test_refused_characters(dynamodb, table_arn, text):
    assert error_of(dynamodb.tag_resource, ResourceArn=table_arn, Tags=[{"Key": text, "Value": "v"}]) == (
        "ValidationException",
        f"The Tag Key provided is invalid, Key: {text}",
    )
    assert error_of(dynamodb.tag_resource, ResourceArn=table_arn, Tags=[{"Key": "k", "Value": text}]) == (
        "ValidationException",
        f"The Tag Value provided is invalid, Value: {text}",
    )
    code, _ = error_of(dynamodb.untag_resource, ResourceArn=table_arn, TagKeys=[text])
    assert code == "ValidationException"
    assert dynamodb.list_tags_of_resource(ResourceArn=table_arn)["Tags"] == []


def test_create_table_checks_tag_characters(dynamodb, unique_table_name):
    name = unique_table_name("TagsAtCreate")
    code, message = error_of(
        dynamodb.create_table,
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        Tags=[{"Key": "bad*key", "Value": "v"}],
    )
    assert (code, message) == ("ValidationException", "The Tag Key provided is invalid, Key: bad*key")
    assert name not in dynamodb.list_tables()["TableNames"]
