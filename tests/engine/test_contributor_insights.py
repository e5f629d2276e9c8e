"""Contributor Insights in the engine (engine/contributor_insights.py; capacity-facts §7; docs/capacity.md, decisions
17-19), on virtual time: the settings the three operations keep, the rule names, and the top keys the throughput
model feeds (most accessed by ConsumedThroughputUnits, most throttled by ThrottleCount), in bounded memory."""

from __future__ import annotations

import pytest

from capacity_drive import drive, modelled, put, table_request
from engine_calls import call, error_of
from globaltables.engine import contributor_insights
from globaltables.engine.contributor_insights import CAPACITY, KeyTracker, Summary
from globaltables.engine.errors import ResourceNotFoundException, ValidationException
from globaltables.region.capacity_metrics import top_keys


def sorted_table(name: str, provisioned=(100, 100), gsi: bool = False) -> dict:
    request = table_request(name, provisioned=provisioned)
    request["AttributeDefinitions"].append({"AttributeName": "sk", "AttributeType": "S"})
    request["KeySchema"].append({"AttributeName": "sk", "KeyType": "RANGE"})
    if gsi:
        request["AttributeDefinitions"].append({"AttributeName": "g", "AttributeType": "S"})
        request["GlobalSecondaryIndexes"] = [
            {
                "IndexName": "byG",
                "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
                "ProvisionedThroughput": {"ReadCapacityUnits": 100, "WriteCapacityUnits": 100},
            }
        ]
    return request


def item_put(table: str, pk: str, sk: str, **more) -> dict:
    request = put(table, pk, **more)
    request["Item"]["sk"] = {"S": sk}
    return request


def enable(engine, table: str, index: str | None = None, mode: str | None = None) -> dict:
    request = {"TableName": table, "ContributorInsightsAction": "ENABLE"}
    if index is not None:
        request["IndexName"] = index
    if mode is not None:
        request["ContributorInsightsMode"] = mode
    return call(engine, "UpdateContributorInsights", request)


def test_enabling_answers_enabling_and_is_enabled_at_once_with_the_rules_of_a_sorted_table():
    engine, clock = modelled()
    call(engine, "CreateTable", sorted_table("Watched"))
    assert call(engine, "DescribeContributorInsights", {"TableName": "Watched"}) == {
        "TableName": "Watched", "ContributorInsightsStatus": "DISABLED",
    }  # fmt: skip
    assert enable(engine, "Watched") == {
        "TableName": "Watched",
        "ContributorInsightsStatus": "ENABLING",
        "ContributorInsightsMode": "ACCESSED_AND_THROTTLED_KEYS",
    }
    stamp = int(clock.wall_time() * 1000)
    described = call(engine, "DescribeContributorInsights", {"TableName": "Watched"})
    assert described == {
        "TableName": "Watched",
        "ContributorInsightsStatus": "ENABLED",
        "ContributorInsightsMode": "ACCESSED_AND_THROTTLED_KEYS",
        "ContributorInsightsRuleList": [
            f"DynamoDBContributorInsights-{code}-Watched-{stamp}" for code in ("PKC", "SKC", "PKT", "SKT")
        ],
        "LastUpdateDateTime": clock.wall_time(),
    }
    clock.advance(5.0)
    answer = call(engine, "UpdateContributorInsights", {"TableName": "Watched", "ContributorInsightsAction": "DISABLE"})
    assert answer["ContributorInsightsStatus"] == "DISABLING"
    described = call(engine, "DescribeContributorInsights", {"TableName": "Watched"})
    assert described["ContributorInsightsStatus"] == "DISABLED" and "ContributorInsightsRuleList" not in described
    assert described["LastUpdateDateTime"] == clock.wall_time()


def test_a_gsi_and_throttled_keys_mode_have_their_own_rules():
    engine, clock = modelled()
    call(engine, "CreateTable", sorted_table("Indexed", gsi=True))
    answer = enable(engine, "Indexed", index="byG", mode="THROTTLED_KEYS")
    assert answer["IndexName"] == "byG" and answer["ContributorInsightsMode"] == "THROTTLED_KEYS"
    stamp = int(clock.wall_time() * 1000)
    described = call(engine, "DescribeContributorInsights", {"TableName": "Indexed", "IndexName": "byG"})
    # The GSI has no sort key, and THROTTLED_KEYS mode keeps only the most-throttled rule.
    assert described["ContributorInsightsRuleList"] == [f"DynamoDBContributorInsights-PKT-Indexed-byG-{stamp}"]
    table_only = call(engine, "DescribeContributorInsights", {"TableName": "Indexed"})
    assert table_only["ContributorInsightsStatus"] == "DISABLED"  # the table's own setting is separate


def test_list_pages_through_every_table_and_index_it_was_enabled_on():
    engine, _clock = modelled()
    for name in ("Alpha", "Beta", "Gamma"):
        call(engine, "CreateTable", sorted_table(name, gsi=True))
        enable(engine, name)
    enable(engine, "Beta", index="byG")
    call(engine, "UpdateContributorInsights", {"TableName": "Gamma", "ContributorInsightsAction": "DISABLE"})
    first = call(engine, "ListContributorInsights", {"MaxResults": 3})
    assert [(s["TableName"], s.get("IndexName")) for s in first["ContributorInsightsSummaries"]] == [
        ("Alpha", None), ("Beta", None), ("Beta", "byG"),
    ]  # fmt: skip
    rest = call(engine, "ListContributorInsights", {"MaxResults": 3, "NextToken": first["NextToken"]})
    assert rest == {
        "ContributorInsightsSummaries": [
            {
                "TableName": "Gamma",
                "ContributorInsightsStatus": "DISABLED",
                "ContributorInsightsMode": "ACCESSED_AND_THROTTLED_KEYS",
            }
        ]
    }
    only = call(engine, "ListContributorInsights", {"TableName": "Beta"})["ContributorInsightsSummaries"]
    assert [s.get("IndexName") for s in only] == [None, "byG"]
    call(engine, "DeleteTable", {"TableName": "Beta"})
    remaining = call(engine, "ListContributorInsights", {})["ContributorInsightsSummaries"]
    assert [s["TableName"] for s in remaining] == ["Alpha", "Gamma"]  # a deleted table takes its settings


def test_a_deleted_gsi_takes_its_setting():
    engine, _clock = modelled()
    call(engine, "CreateTable", sorted_table("Dropping", gsi=True))
    enable(engine, "Dropping", index="byG")
    enable(engine, "Dropping")
    call(
        engine,
        "UpdateTable",
        {"TableName": "Dropping", "GlobalSecondaryIndexUpdates": [{"Delete": {"IndexName": "byG"}}]},
    )
    listed = call(engine, "ListContributorInsights", {})["ContributorInsightsSummaries"]
    assert [(s["TableName"], s.get("IndexName")) for s in listed] == [("Dropping", None)]


@pytest.mark.parametrize(
    ("operation", "request_", "error"),
    [
        ("DescribeContributorInsights", {"TableName": "Missing"}, ResourceNotFoundException),
        ("UpdateContributorInsights", {"TableName": "Missing", "ContributorInsightsAction": "ENABLE"},
         ResourceNotFoundException),
        ("ListContributorInsights", {"TableName": "Missing"}, ResourceNotFoundException),
        ("DescribeContributorInsights", {"TableName": "Known", "IndexName": "noSuchIndex"}, ResourceNotFoundException),
        ("UpdateContributorInsights", {"TableName": "Known", "ContributorInsightsAction": "PAUSE"}, ValidationException),
        ("UpdateContributorInsights", {"TableName": "Known"}, ValidationException),
        ("UpdateContributorInsights",
         {"TableName": "Known", "ContributorInsightsAction": "ENABLE", "ContributorInsightsMode": "ALL_KEYS"},
         ValidationException),
        ("ListContributorInsights", {"MaxResults": 101}, ValidationException),
        ("ListContributorInsights", {"NextToken": "not-a-token"}, ValidationException),
    ],
)  # fmt: skip
def test_bad_requests_get_dynamodb_errors(operation, request_, error):
    engine, _clock = modelled()
    call(engine, "CreateTable", sorted_table("Known"))
    assert isinstance(error_of(engine, operation, request_), error)


def test_the_most_accessed_keys_are_ranked_by_consumed_throughput_units():
    engine, clock = modelled()
    call(engine, "CreateTable", sorted_table("Hot"))
    enable(engine, "Hot")
    for n in range(30):  # 30 writes of 1 unit to one key: 90 ConsumedThroughputUnits (3 x WCU)
        clock.advance(0.01)
        call(engine, "PutItem", item_put("Hot", "hot", f"s{n % 3}"))
    for n in range(20):  # 20 strongly consistent reads of another key: 20 units
        clock.advance(0.01)
        call(engine, "GetItem", {"TableName": "Hot", "Key": {"pk": {"S": "warm"}, "sk": {"S": "x"}},
                                 "ConsistentRead": True})  # fmt: skip
    clock.advance(0.01)
    call(engine, "PutItem", item_put("Hot", "cold", "s0"))
    rows = [row for row in top_keys(engine) if "-PKC-" in row["rule"]]
    assert [(row["rank"], row["key"], row["value"]) for row in rows] == [
        (1, {"pk": {"S": "hot"}}, 90.0), (2, {"pk": {"S": "warm"}}, 20.0), (3, {"pk": {"S": "cold"}}, 3.0),
    ]  # fmt: skip
    by_item = [row for row in top_keys(engine) if "-SKC-" in row["rule"]]
    assert by_item[0]["key"] == {"pk": {"S": "hot"}, "sk": {"S": "s0"}} and by_item[0]["value"] == 30.0
    assert by_item[1]["value"] == 30.0 and by_item[3]["key"] == {"pk": {"S": "warm"}, "sk": {"S": "x"}}


def test_the_most_throttled_keys_count_throttles_and_a_gsi_shortage_is_not_blamed_on_the_tables_key():
    engine, clock = modelled()
    call(engine, "CreateTable", sorted_table("Tight", provisioned=(1, 2)))
    enable(engine, "Tight")
    served, refused = drive(engine, clock, 1.0, 10, lambda n: ("PutItem", item_put("Tight", "k", "s")))
    assert served == 3 and len(refused) == 7  # 2 units to start with, then 2 a second
    throttled = [row for row in top_keys(engine) if "-PKT-" in row["rule"]]
    assert [(row["key"], row["value"]) for row in throttled] == [({"pk": {"S": "k"}}, 7.0)]
    # A GSI short of write capacity refuses the table's writes; the table's keys are not counted as throttled.
    engine, clock = modelled()
    request = sorted_table("Pushed", gsi=True)
    request["GlobalSecondaryIndexes"][0]["ProvisionedThroughput"] = {"ReadCapacityUnits": 1, "WriteCapacityUnits": 1}
    call(engine, "CreateTable", request)
    enable(engine, "Pushed")
    enable(engine, "Pushed", index="byG")
    call(engine, "PutItem", item_put("Pushed", "a", "s", g="G"))
    error = error_of(engine, "PutItem", item_put("Pushed", "b", "s", g="G"))
    assert error.to_body()["ThrottlingReasons"][0]["reason"] == "IndexWriteProvisionedThroughputExceeded"
    rows = top_keys(engine)
    assert not [row for row in rows if row["index"] is None and "-PKT-" in row["rule"]]
    assert [(row["key"], row["value"]) for row in rows if row["index"] == "byG" and "-PKT-" in row["rule"]] == [
        ({"g": {"S": "G"}}, 1.0)
    ]


def test_throttled_keys_mode_counts_no_accesses():
    engine, _clock = modelled()
    call(engine, "CreateTable", sorted_table("Quiet"))
    enable(engine, "Quiet", mode="THROTTLED_KEYS")
    call(engine, "PutItem", item_put("Quiet", "k", "s"))
    assert top_keys(engine) == []


def test_keys_age_out_of_the_hour_kept_and_disabling_forgets_them():
    engine, clock = modelled()
    call(engine, "CreateTable", sorted_table("Aging"))
    enable(engine, "Aging")
    call(engine, "PutItem", item_put("Aging", "old", "s"))
    clock.advance(contributor_insights.WINDOW_S * 30)
    call(engine, "PutItem", item_put("Aging", "new", "s"))
    assert {row["key"]["pk"]["S"] for row in top_keys(engine) if "-PKC-" in row["rule"]} == {"old", "new"}
    clock.advance(contributor_insights.WINDOW_S * 31)
    call(engine, "PutItem", item_put("Aging", "newer", "s"))
    assert {row["key"]["pk"]["S"] for row in top_keys(engine) if "-PKC-" in row["rule"]} == {"new", "newer"}
    call(engine, "UpdateContributorInsights", {"TableName": "Aging", "ContributorInsightsAction": "DISABLE"})
    assert top_keys(engine) == []


def test_a_summary_keeps_a_bounded_number_of_keys_and_every_heavy_one():
    summary = Summary()
    for n in range(10_000):  # a hot key (a tenth of the weight) among thousands of others seen once or twice
        summary.add("hot" if n % 10 == 0 else f"k{n % 3000}", 1.0)
        assert len(summary.counts) <= CAPACITY
    assert max(summary.counts, key=summary.counts.get) == "hot"
    # Misra-Gries: an under-count by at most total / (capacity + 1).
    assert 1000 - 10_000 / (CAPACITY + 1) <= summary.counts["hot"] <= 1000


def test_a_tracker_keeps_at_most_an_hour_of_windows():
    tracker = KeyTracker("ACCESSED_AND_THROTTLED_KEYS", has_sort_key=False)
    for minute in range(200):
        tracker.accessed(b"k", None, 1.0, minute * contributor_insights.WINDOW_S)
    assert len(tracker.windows) == contributor_insights.WINDOWS
    assert tracker.top("PKC", 199 * contributor_insights.WINDOW_S) == [(b"k", float(contributor_insights.WINDOWS))]
