"""Contributor Insights and the capacity metrics through a region process (`globaltables region --capacity
modelled`, standalone): the three operations' shapes and errors as botocore parses them, and `/metrics` with the
CloudWatch-named counters and the top keys. The limits are a few units a second, so the requests of a test land
within a second of each other on any machine."""

from __future__ import annotations

import urllib.request

import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, ParamValidationError
from prometheus_client.parser import text_string_to_metric_families

from region_process import REGION_NAME, RegionProcess, make_client

NO_RETRIES = Config(retries={"total_max_attempts": 1}, connect_timeout=10, read_timeout=60)


@pytest.fixture(scope="module")
def region(tmp_path_factory):
    process = RegionProcess(REGION_NAME, tmp_path_factory.mktemp("insights"), capacity="modelled")
    process.start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def client(region):
    return make_client(region.endpoint, config=NO_RETRIES)


def create(client, name: str, provisioned: tuple[int, int] = (5, 5), sort_key: bool = True, gsi: bool = False) -> str:
    definitions = [{"AttributeName": "pk", "AttributeType": "S"}]
    schema = [{"AttributeName": "pk", "KeyType": "HASH"}]
    if sort_key:
        definitions.append({"AttributeName": "sk", "AttributeType": "S"})
        schema.append({"AttributeName": "sk", "KeyType": "RANGE"})
    extra = {}
    if gsi:
        definitions.append({"AttributeName": "g", "AttributeType": "S"})
        extra["GlobalSecondaryIndexes"] = [
            {
                "IndexName": "byG",
                "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
                "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
            }
        ]
    client.create_table(
        TableName=name, AttributeDefinitions=definitions, KeySchema=schema,
        ProvisionedThroughput={"ReadCapacityUnits": provisioned[0], "WriteCapacityUnits": provisioned[1]}, **extra,
    )  # fmt: skip
    return name


def metrics(region) -> list[str]:
    with urllib.request.urlopen(f"{region.endpoint}/metrics", timeout=30) as answer:
        assert answer.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        return answer.read().decode().splitlines()


def test_update_describe_and_list_as_botocore_parses_them(client, unique_table_name):
    table = create(client, unique_table_name("ci"), gsi=True)
    answer = client.update_contributor_insights(TableName=table, ContributorInsightsAction="ENABLE")
    answer.pop("ResponseMetadata")
    assert answer == {
        "TableName": table,
        "ContributorInsightsStatus": "ENABLING",
        "ContributorInsightsMode": "ACCESSED_AND_THROTTLED_KEYS",
    }
    described = client.describe_contributor_insights(TableName=table)
    assert described["ContributorInsightsStatus"] == "ENABLED"
    assert [rule.split("-")[1] for rule in described["ContributorInsightsRuleList"]] == ["PKC", "SKC", "PKT", "SKT"]
    assert all(rule.startswith("DynamoDBContributorInsights-") for rule in described["ContributorInsightsRuleList"])
    assert described["LastUpdateDateTime"].year >= 2024  # a timestamp botocore parsed
    index = client.update_contributor_insights(
        TableName=table, IndexName="byG", ContributorInsightsAction="ENABLE", ContributorInsightsMode="THROTTLED_KEYS"
    )
    assert index["IndexName"] == "byG" and index["ContributorInsightsMode"] == "THROTTLED_KEYS"
    rules = client.describe_contributor_insights(TableName=table, IndexName="byG")["ContributorInsightsRuleList"]
    assert len(rules) == 1 and rules[0].startswith(f"DynamoDBContributorInsights-PKT-{table}-byG-")
    listed = client.list_contributor_insights(TableName=table)["ContributorInsightsSummaries"]
    assert listed == [
        {"TableName": table, "ContributorInsightsStatus": "ENABLED",
         "ContributorInsightsMode": "ACCESSED_AND_THROTTLED_KEYS"},
        {"TableName": table, "IndexName": "byG", "ContributorInsightsStatus": "ENABLED",
         "ContributorInsightsMode": "THROTTLED_KEYS"},
    ]  # fmt: skip
    disabled = client.update_contributor_insights(TableName=table, ContributorInsightsAction="DISABLE")
    assert disabled["ContributorInsightsStatus"] == "DISABLING"
    assert client.describe_contributor_insights(TableName=table)["ContributorInsightsStatus"] == "DISABLED"
    arn = client.describe_table(TableName=table)["Table"]["TableArn"]
    assert client.describe_contributor_insights(TableName=arn)["TableName"] == table  # a table ARN names it too


def test_unknown_tables_and_indexes_are_resource_not_found(client, unique_table_name):
    table = create(client, unique_table_name("ci-missing"))
    calls = [
        lambda: client.describe_contributor_insights(TableName="no-such-table"),
        lambda: client.update_contributor_insights(TableName="no-such-table", ContributorInsightsAction="ENABLE"),
        lambda: client.list_contributor_insights(TableName="no-such-table"),
        lambda: client.describe_contributor_insights(TableName=table, IndexName="noSuchIndex"),
    ]
    for attempt in calls:
        with pytest.raises(client.exceptions.ResourceNotFoundException) as caught:
            attempt()
        assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400


def test_a_bad_action_or_mode_is_a_validation_error(client, unique_table_name, region):
    table = create(client, unique_table_name("ci-bad"))
    # botocore checks required members itself; enum values it leaves to the service.
    with pytest.raises(ParamValidationError):
        client.update_contributor_insights(TableName=table)
    for bad in ({"ContributorInsightsAction": "PAUSE"},
                {"ContributorInsightsAction": "ENABLE", "ContributorInsightsMode": "ALL_KEYS"}):  # fmt: skip
        with pytest.raises(ClientError) as caught:
            client.update_contributor_insights(TableName=table, **bad)
        error = caught.value.response["Error"]
        assert error["Code"] == "ValidationException"
        assert "Member must satisfy enum value set" in error["Message"]
    with pytest.raises(ClientError) as caught:
        client.list_contributor_insights(MaxResults=101)
    assert caught.value.response["Error"]["Code"] == "ValidationException"


def test_metrics_show_consumption_throttles_and_the_hottest_keys(client, unique_table_name, region):
    table = create(client, unique_table_name("ci-hot"), provisioned=(5, 1))
    client.update_contributor_insights(TableName=table, ContributorInsightsAction="ENABLE")
    client.put_item(TableName=table, Item={"pk": {"S": "hot"}, "sk": {"S": "a"}})  # the table's one unit
    with pytest.raises(client.exceptions.ProvisionedThroughputExceededException):
        client.put_item(TableName=table, Item={"pk": {"S": "hot"}, "sk": {"S": "b"}})
    lines = set(metrics(region))
    for line in (
        f'ConsumedWriteCapacityUnits{{TableName="{table}"}} 1',
        f'ProvisionedWriteCapacityUnits{{TableName="{table}"}} 1',
        f'WriteThrottleEvents{{TableName="{table}"}} 1',
        f'WriteProvisionedThroughputThrottleEvents{{TableName="{table}"}} 1',
        f'ThrottledRequests{{TableName="{table}",Operation="PutItem"}} 1',
    ):
        assert line in lines, line
    top = sorted(line for line in lines if line.startswith("ContributorInsightsTopKey") and table in line)
    assert any('-PKC-' in line and 'Key="{\\"pk\\":{\\"S\\":\\"hot\\"}}"' in line and line.endswith(" 3")
               for line in top), top  # fmt: skip
    assert any("-PKT-" in line and line.endswith(" 1") for line in top), top
    families = {family.name: family.type for family in text_string_to_metric_families("\n".join(metrics(region)))}
    assert families["ConsumedReadCapacityUnits"] == "counter" and families["ThrottledRequests"] == "counter"
    assert families["ProvisionedReadCapacityUnits"] == "gauge" and families["ContributorInsightsTopKey"] == "gauge"
    per_reason = {name for name in families if name.startswith(("Read", "Write")) and name.endswith("ThrottleEvents")}
    assert len(per_reason) == 10  # Read/WriteThrottleEvents and the eight per-reason metrics
