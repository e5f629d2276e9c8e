"""DynamoDB Streams API edges: iterators at the shard's advertised start, sequence numbers where none belong,
ListStreams and DescribeStream parameter checks, and disabling a stream a table does not have."""

import pytest
from botocore.config import Config

from conformance.tables import create_pk_table, error_of

NO_CLIENT_VALIDATION = Config(retries={"total_max_attempts": 1}, parameter_validation=False)


@pytest.fixture(scope="module")
def streams(client_factory):
    return client_factory("dynamodbstreams")


@pytest.fixture(scope="module")
def raw_streams(client_factory):
    """A streams client that sends what it is given (botocore would refuse some requests before sending them)."""
    return client_factory("dynamodbstreams", config=NO_CLIENT_VALIDATION)


def make_table(dynamodb, name, stream=True):
    extra = {"StreamSpecification": {"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"}} if stream else {}
    return create_pk_table(dynamodb, name, **extra)


def shard_of(dynamodb, streams, table):
    arn = dynamodb.describe_table(TableName=table)["Table"]["LatestStreamArn"]
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]
    return arn, shard


@pytest.mark.parametrize("kind", ["AT_SEQUENCE_NUMBER", "AFTER_SEQUENCE_NUMBER"])
def test_iterators_at_the_advertised_start_of_an_empty_shard(dynamodb, streams, unique_table_name, kind):
    # Why: a consumer may start from the StartingSequenceNumber DescribeStream advertises, before any record exists.
    table = make_table(dynamodb, unique_table_name("EmptyShard"))
    arn, shard = shard_of(dynamodb, streams, table)
    start = shard["SequenceNumberRange"]["StartingSequenceNumber"]
    iterator = streams.get_shard_iterator(
        StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType=kind, SequenceNumber=start
    )["ShardIterator"]
    assert streams.get_records(ShardIterator=iterator)["Records"] == []
    dynamodb.put_item(TableName=table, Item={"pk": {"S": "first"}})
    dynamodb.put_item(TableName=table, Item={"pk": {"S": "second"}})
    records = streams.get_records(ShardIterator=iterator)["Records"]
    keys = [record["dynamodb"]["Keys"]["pk"]["S"] for record in records]
    # AT the start reads the first record; AFTER the start reads what follows it.
    assert keys == (["first", "second"] if kind == "AT_SEQUENCE_NUMBER" else ["second"])
    if kind == "AT_SEQUENCE_NUMBER":
        assert records[0]["dynamodb"]["SequenceNumber"] == start


@pytest.mark.parametrize("kind", ["TRIM_HORIZON", "LATEST"])
def test_a_sequence_number_with_trim_horizon_or_latest(dynamodb, streams, unique_table_name, kind):
    # Why: SequenceNumber belongs to AT_/AFTER_SEQUENCE_NUMBER only.
    table = make_table(dynamodb, unique_table_name("SeqWithType"))
    dynamodb.put_item(TableName=table, Item={"pk": {"S": "a"}})
    arn, shard = shard_of(dynamodb, streams, table)
    code, _ = error_of(
        streams.get_shard_iterator,
        StreamArn=arn,
        ShardId=shard["ShardId"],
        ShardIteratorType=kind,
        SequenceNumber=shard["SequenceNumberRange"]["StartingSequenceNumber"],
    )
    assert code == "ValidationException"


def test_list_streams_start_must_be_a_stream_arn(dynamodb, streams, unique_table_name):
    # Why: ExclusiveStartStreamArn is a stream ARN, as LastEvaluatedStreamArn returns it.
    table = make_table(dynamodb, unique_table_name("ListStart"))
    table_arn = dynamodb.describe_table(TableName=table)["Table"]["TableArn"]
    code, _ = error_of(streams.list_streams, ExclusiveStartStreamArn=table_arn + "/not-a-stream-arn")
    assert code == "ValidationException"
    arn = dynamodb.describe_table(TableName=table)["Table"]["LatestStreamArn"]
    streams.list_streams(ExclusiveStartStreamArn=arn)


@pytest.mark.parametrize(
    "shard_filter", [{"Type": "CHILD_SHARDS"}, {"ShardId": "shardId-00000000000000000000-00000000"}]
)
def test_describe_stream_shard_filter_needs_type_and_shard(dynamodb, raw_streams, unique_table_name, shard_filter):
    # Why: a ShardFilter names both the filter type and the shard it applies to.
    table = make_table(dynamodb, unique_table_name("ShardFilter"))
    arn = dynamodb.describe_table(TableName=table)["Table"]["LatestStreamArn"]
    code, _ = error_of(raw_streams.describe_stream, StreamArn=arn, ShardFilter=shard_filter)
    assert code == "ValidationException"


def test_disabling_a_stream_the_table_does_not_have(dynamodb, unique_table_name):
    # Why: DynamoDB's refusal names the table: "Table has no stream to disable: TableName: <t>".
    table = make_table(dynamodb, unique_table_name("NoStream"), stream=False)
    assert error_of(dynamodb.update_table, TableName=table, StreamSpecification={"StreamEnabled": False}) == (
        "ValidationException",
        f"Table has no stream to disable: TableName: {table}",
    )
    assert "StreamSpecification" not in dynamodb.describe_table(TableName=table)["Table"]
