"""CloudWatch's capacity metrics as the throughput model counts them (capacity-facts §6; docs/capacity.md, decision
16), on virtual time: consumed units per table and GSI, throttle events on the table and each GSI, the per-reason
events on the refusing resource, and ThrottledRequests per operation (a batch only when every item was throttled).
The Prometheus rendering is region/capacity_metrics.py's."""

from __future__ import annotations

import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from capacity_drive import modelled, put, table_request
from engine_calls import call, error_of
from globaltables.engine.errors import DynamoError, ProvisionedThroughputExceededException
from globaltables.region.capacity_metrics import capacity_document, prometheus_text


def gsi_table(name: str, table_units: tuple[int, int], index_units: tuple[int, int], indexes=("byA", "byB")) -> dict:
    request = table_request(name, provisioned=table_units)
    for attribute in sorted({index[-1].lower() for index in indexes}):
        request["AttributeDefinitions"].append({"AttributeName": attribute, "AttributeType": "S"})
    request["GlobalSecondaryIndexes"] = [
        {
            "IndexName": index,
            "KeySchema": [{"AttributeName": index[-1].lower(), "KeyType": "HASH"}],
            "Projection": {"ProjectionType": "KEYS_ONLY"},
            "ProvisionedThroughput": {"ReadCapacityUnits": index_units[0], "WriteCapacityUnits": index_units[1]},
        }
        for index in indexes
    ]
    return request


def resources(engine, table: str) -> dict:
    return engine.throughput.state(table).resources


def test_a_throttled_put_is_one_write_event_on_the_table_and_on_each_gsi_and_one_throttled_request():
    engine, clock = modelled()
    call(engine, "CreateTable", gsi_table("Events", (5, 1), (5, 100)))
    call(engine, "PutItem", put("Events", "k1", a="x", b="y"))  # the table's one unit of its first second
    error = error_of(engine, "PutItem", put("Events", "k2", a="x", b="y"))
    assert isinstance(error, ProvisionedThroughputExceededException)
    found = resources(engine, "Events")
    assert [found[name].events["write"] for name in (None, "byA", "byB")] == [1, 1, 1]  # "3 GSIs: 4 events"
    assert found[None].reasons == {("write", "ProvisionedThroughputExceeded"): 1}  # the refusing resource only
    assert found["byA"].reasons == {} and found["byB"].reasons == {}
    assert found[None].consumed == {"read": 0.0, "write": 1.0}  # the served put: 1 unit on the table,
    assert found["byA"].consumed["write"] == 1.0 and found["byB"].consumed["write"] == 1.0  # and 1 on each GSI
    assert engine.throughput.state("Events").throttled_requests == {"PutItem": 1}
    clock.advance(1.0)
    call(engine, "PutItem", put("Events", "k3"))  # writes no GSI: no GSI units, and no events if throttled
    assert found["byA"].consumed["write"] == 1.0
    clock.advance(0.001)
    error_of(engine, "PutItem", put("Events", "k4"))
    assert [found[name].events["write"] for name in (None, "byA", "byB")] == [2, 1, 1]


def test_a_write_a_gsi_refuses_counts_the_reason_on_the_gsi_and_events_on_both():
    engine, _clock = modelled()
    call(engine, "CreateTable", gsi_table("Pressed", (100, 100), (5, 1), indexes=("byA",)))
    call(engine, "PutItem", put("Pressed", "k1", a="x"))
    error = error_of(engine, "PutItem", put("Pressed", "k2", a="y"))
    assert error.to_body()["ThrottlingReasons"][0]["reason"] == "IndexWriteProvisionedThroughputExceeded"
    found = resources(engine, "Pressed")
    assert found["byA"].reasons == {("write", "ProvisionedThroughputExceeded"): 1}
    assert found[None].reasons == {}
    assert found[None].events["write"] == 1 and found["byA"].events["write"] == 1
    assert engine.throughput.state("Pressed").throttled_requests == {"PutItem": 1}


def test_reads_count_their_units_and_their_throttles():
    engine, _clock = modelled()
    call(engine, "CreateTable", table_request("Reads", provisioned=(1, 5)))
    call(engine, "PutItem", put("Reads", "k1"))
    get = {"TableName": "Reads", "Key": {"pk": {"S": "k1"}}}
    call(engine, "GetItem", get)  # eventually consistent: half a unit
    call(engine, "GetItem", get)  # the bucket's first second (1 unit) is spent
    assert resources(engine, "Reads")[None].consumed["read"] == 1.0
    with pytest.raises(DynamoError):
        call(engine, "GetItem", {**get, "ConsistentRead": True})
    assert resources(engine, "Reads")[None].events == {"read": 1, "write": 0}
    assert resources(engine, "Reads")[None].reasons == {("read", "ProvisionedThroughputExceeded"): 1}
    assert engine.throughput.state("Reads").throttled_requests == {"GetItem": 1}


def test_a_batch_counts_as_a_throttled_request_only_when_every_item_was_throttled():
    engine, clock = modelled()
    call(engine, "CreateTable", table_request("Batched", provisioned=(5, 2)))
    batch = lambda keys: {"RequestItems": {"Batched": [{"PutRequest": put("Batched", k)} for k in keys]}}
    answer = call(engine, "BatchWriteItem", batch(["a", "b", "c", "d"]))  # 2 served, 2 unprocessed
    assert len(answer["UnprocessedItems"]["Batched"]) == 2
    state = engine.throughput.state("Batched")
    assert state.resources[None].events["write"] == 2  # one event per throttled item
    assert state.throttled_requests == {}  # something was written: not a throttled request
    assert not engine.throughput.throttled  # and nothing is left over for the next request
    error_of(engine, "BatchWriteItem", batch(["e", "f"]))  # nothing left this second: the batch fails
    assert state.throttled_requests == {"BatchWriteItem": 1}
    assert state.resources[None].events["write"] == 4
    clock.advance(1.0)
    call(engine, "PutItem", put("Batched", "g"))  # a request that succeeds counts nothing
    assert state.throttled_requests == {"BatchWriteItem": 1}


def test_a_throttled_transaction_is_one_throttled_request():
    engine, _clock = modelled()
    call(engine, "CreateTable", table_request("Transacted", provisioned=(5, 1)))
    items = [{"Put": put("Transacted", k)} for k in ("a", "b")]
    error = error_of(engine, "TransactWriteItems", {"TransactItems": items})
    assert error.to_body()["__type"].endswith("TransactionCanceledException")
    state = engine.throughput.state("Transacted")
    assert state.throttled_requests == {"TransactWriteItems": 1}
    assert state.resources[None].events["write"] == 2  # each action needs 2 units; the table holds 1


def test_the_prometheus_text_names_every_metric_as_cloudwatch_does():
    engine, _clock = modelled()
    call(engine, "CreateTable", gsi_table("Shown", (5, 1), (7, 9), indexes=("byA",)))
    call(engine, "PutItem", put("Shown", "k1", a="x"))
    error_of(engine, "PutItem", put("Shown", "k2", a="x"))
    text = prometheus_text(engine)
    lines = set(text.splitlines())
    for line in (
        'ProvisionedReadCapacityUnits{TableName="Shown"} 5',
        'ProvisionedWriteCapacityUnits{TableName="Shown",GlobalSecondaryIndexName="byA"} 9',
        'ConsumedWriteCapacityUnits{TableName="Shown"} 1',
        'ConsumedWriteCapacityUnits{TableName="Shown",GlobalSecondaryIndexName="byA"} 1',
        'WriteThrottleEvents{TableName="Shown"} 1',
        'WriteThrottleEvents{TableName="Shown",GlobalSecondaryIndexName="byA"} 1',
        'WriteProvisionedThroughputThrottleEvents{TableName="Shown"} 1',
        'WriteKeyRangeThroughputThrottleEvents{TableName="Shown"} 0',
        'ReadAccountLimitThrottleEvents{TableName="Shown",GlobalSecondaryIndexName="byA"} 0',
        'ReadMaxOnDemandThroughputThrottleEvents{TableName="Shown"} 0',
        'ThrottledRequests{TableName="Shown",Operation="PutItem"} 1',
        "# TYPE ThrottledRequests counter",
        "# TYPE ProvisionedReadCapacityUnits gauge",
    ):
        assert line in lines, line
    reasons = {line.split("{")[0] for line in lines if "ThrottleEvents{" in line}
    assert len(reasons - {"ReadThrottleEvents", "WriteThrottleEvents"}) == 8


def test_an_unlimited_engine_shows_only_what_is_provisioned():
    engine, _clock = modelled(capacity="unlimited")
    call(engine, "CreateTable", table_request("Free", provisioned=(3, 4)))
    call(engine, "PutItem", put("Free", "k1"))
    assert prometheus_text(engine).splitlines() == [
        "# HELP ProvisionedReadCapacityUnits Provisioned read capacity units.",
        "# TYPE ProvisionedReadCapacityUnits gauge",
        'ProvisionedReadCapacityUnits{TableName="Free"} 3',
        "# HELP ProvisionedWriteCapacityUnits Provisioned write capacity units.",
        "# TYPE ProvisionedWriteCapacityUnits gauge",
        'ProvisionedWriteCapacityUnits{TableName="Free"} 4',
    ]


def _flattened(document: dict) -> dict[tuple, float]:
    """capacity_document's numbers keyed as /metrics labels them: (metric, sorted label pairs)."""
    samples: dict[tuple, float] = {}

    def resource(labels: dict, metrics: dict) -> None:
        for name, value in metrics.items():
            if name == "top_keys":
                for rule, rows in value.items():
                    for row in rows:
                        key = orjson.dumps(row["key"]).decode()
                        extra = {"Rule": rule, "Rank": str(row["rank"]), "Key": key}
                        samples[("ContributorInsightsTopKey", tuple(sorted({**labels, **extra}.items())))] = round(
                            row["value"], 3
                        )
            elif name == "ThrottledRequestsByOperation":
                for operation, count in value.items():
                    samples[("ThrottledRequests", tuple(sorted({**labels, "Operation": operation}.items())))] = count
            elif name not in ("indexes", "ThrottledRequests"):
                samples[(name, tuple(sorted(labels.items())))] = value

    for table, entry in document["tables"].items():
        resource({"TableName": table}, entry)
        for index, metrics in entry["indexes"].items():
            resource({"TableName": table, "GlobalSecondaryIndexName": index}, metrics)
    return samples


def _scraped(text: str) -> dict[tuple, float]:
    """What a scraper reads (the parser names a counter's samples NAME_total)."""
    scraped = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            name = sample.name.removesuffix("_total") if family.type == "counter" else sample.name
            scraped[(name, tuple(sorted(sample.labels.items())))] = sample.value
    return scraped


@pytest.mark.parametrize("capacity", ["modelled", "unlimited"])
def test_the_json_document_and_the_prometheus_text_are_the_same_numbers(capacity):
    """GET /control/capacity answers capacity_document and /metrics renders it: every sample of one is in the
    other, with the same value, throttles, reasons and top keys included."""
    engine, _clock = modelled(capacity=capacity)
    call(engine, "CreateTable", gsi_table("Shared", (5, 1), (7, 9), indexes=("byA",)))
    call(engine, "UpdateContributorInsights", {"TableName": "Shared", "ContributorInsightsAction": "ENABLE"})
    call(engine, "PutItem", put("Shared", "k1", a="x"))
    if capacity == "modelled":
        error_of(engine, "PutItem", put("Shared", "k2", a="x"))
    else:
        call(engine, "PutItem", put("Shared", "k2", a="x"))
    document = capacity_document(engine)
    assert document["modelled"] is (capacity == "modelled")
    flattened, scraped = _flattened(document), _scraped(prometheus_text(engine))
    assert flattened == pytest.approx(scraped) and set(flattened) == set(scraped)
    table = document["tables"]["Shared"]
    if capacity == "modelled":
        assert table["ThrottledRequests"] == 1 and table["ThrottledRequestsByOperation"] == {"PutItem": 1}
        assert table["WriteProvisionedThroughputThrottleEvents"] == 1
        assert table["indexes"]["byA"]["ConsumedWriteCapacityUnits"] == 1
        throttled = next(rows for rule, rows in table["top_keys"].items() if "-PKT-" in rule)
        assert throttled[0]["rank"] == 1 and throttled[0]["value"] == 1
        assert any(name == "ContributorInsightsTopKey" for name, _labels in scraped)
    else:
        assert "ThrottledRequests" not in table and "top_keys" not in table  # no model: no counters, no keys
        assert table["ProvisionedReadCapacityUnits"] == 5
