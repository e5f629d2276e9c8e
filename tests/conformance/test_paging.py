"""Query and Scan paging: Limit, the 1 MB page, and LastEvaluatedKey chains that cover the result exactly once."""

import pytest

ITEM_PAYLOAD = "x" * 30_000  # ~30 KB per item: 3 MB is about 100 items


@pytest.fixture(scope="module")
def big_table(dynamodb, unique_table_name):
    name = unique_table_name("Paging")
    dynamodb.create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "n", "AttributeType": "N"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "n", "KeyType": "RANGE"}],
        BillingMode="PAY_PER_REQUEST",
    )
    for n in range(105):
        dynamodb.put_item(TableName=name, Item={"pk": {"S": "big"}, "n": {"N": str(n)}, "payload": {"S": ITEM_PAYLOAD}})
    for n in range(-5, 20):
        dynamodb.put_item(TableName=name, Item={"pk": {"S": "small"}, "n": {"N": str(n / 4)}, "odd": {"BOOL": n % 2 == 1}})
    return name


def chain(call, **kwargs):
    pages = []
    while True:
        page = call(**kwargs)
        pages.append(page)
        if "LastEvaluatedKey" not in page:
            return pages
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def test_query_over_3mb_returns_1mb_pages(dynamodb, big_table):
    pages = chain(
        dynamodb.query,
        TableName=big_table,
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "big"}},
    )
    assert len(pages) >= 3
    for page in pages[:-1]:
        size = sum(len(i["payload"]["S"]) for i in page["Items"])
        assert 1024 * 1024 - 1_000 <= size < 1024 * 1024 + 31_000  # the item that reaches 1 MB ends the page
    numbers = [int(i["n"]["N"]) for page in pages for i in page["Items"]]
    assert numbers == list(range(105))


def test_numeric_sort_order_and_limit_chain(dynamodb, big_table):
    pages = chain(
        dynamodb.query,
        TableName=big_table,
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "small"}},
        Limit=7,
    )
    values = [float(i["n"]["N"]) for page in pages for i in page["Items"]]
    assert values == sorted(values) and len(values) == 25
    assert all(page["ScannedCount"] <= 7 for page in pages)


def test_filter_applies_after_limit(dynamodb, big_table):
    page = dynamodb.query(
        TableName=big_table,
        KeyConditionExpression="pk = :p",
        FilterExpression="odd = :t",
        ExpressionAttributeValues={":p": {"S": "small"}, ":t": {"BOOL": True}},
        Limit=10,
    )
    assert page["ScannedCount"] == 10
    assert page["Count"] == len(page["Items"]) < 10
    assert "LastEvaluatedKey" in page


def test_between_descending_and_count(dynamodb, big_table):
    page = dynamodb.query(
        TableName=big_table,
        KeyConditionExpression="pk = :p AND n BETWEEN :lo AND :hi",
        ExpressionAttributeValues={":p": {"S": "small"}, ":lo": {"N": "-0.5"}, ":hi": {"N": "1"}},
        ScanIndexForward=False,
    )
    assert [i["n"]["N"] for i in page["Items"]] == ["1", "0.75", "0.5", "0.25", "0", "-0.25", "-0.5"]
    count = dynamodb.query(
        TableName=big_table,
        KeyConditionExpression="pk = :p AND n < :hi",
        ExpressionAttributeValues={":p": {"S": "small"}, ":hi": {"N": "0"}},
        Select="COUNT",
    )
    assert count["Count"] == 5 and "Items" not in count


def test_scan_pages_cover_every_item_once(dynamodb, big_table):
    pages = chain(dynamodb.scan, TableName=big_table, ProjectionExpression="pk, n", Limit=17)
    keys = [(i["pk"]["S"], i["n"]["N"]) for page in pages for i in page["Items"]]
    assert len(keys) == len(set(keys)) == 130
    assert all(set(i) == {"pk", "n"} for page in pages for i in page["Items"])


def test_parallel_scan_segments_partition_the_table(dynamodb, big_table):
    seen = []
    for segment in range(4):
        pages = chain(dynamodb.scan, TableName=big_table, Segment=segment, TotalSegments=4, ProjectionExpression="pk, n")
        seen.extend((i["pk"]["S"], i["n"]["N"]) for page in pages for i in page["Items"])
    assert len(seen) == len(set(seen)) == 130
