"""The run's capacity phase without regions (experiment/capacity.py): who gets Contributor Insights, and how the
collected top keys become report.md's Hottest keys table."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from globaltables.experiment.capacity import enable_contributor_insights, hottest_key_lines, hottest_keys
from globaltables.topology.model import Region


def test_insights_are_skipped_when_the_workload_says_so_and_on_unlimited_regions():
    topology = SimpleNamespace(regions=[Region("a", capacity="unlimited")], tables=[], credentials=None)
    off = SimpleNamespace(experiment=SimpleNamespace(topology=topology, workload=SimpleNamespace(
        contributor_insights=False)), replicas=["a"])  # fmt: skip
    assert asyncio.run(enable_contributor_insights(off)) == []
    on = SimpleNamespace(experiment=SimpleNamespace(topology=topology, workload=SimpleNamespace(
        contributor_insights=True)), replicas=["a"], regions=None)  # fmt: skip
    assert asyncio.run(enable_contributor_insights(on)) == []  # unlimited: nothing counts keys, nothing is called


CAPACITY = {
    "us-east-1": {
        "modelled": True,
        "contributor_insights": True,
        "tables": {
            "Hot": {
                "ConsumedReadCapacityUnits": 2.0, "ConsumedWriteCapacityUnits": 40.0, "ReadThrottleEvents": 0,
                "WriteThrottleEvents": 7, "WriteKeyRangeThroughputThrottleEvents": 7,
                "WriteProvisionedThroughputThrottleEvents": 0, "ThrottledRequests": 7,
                "ThrottledRequestsByOperation": {"PutItem": 7},
                "top_keys": {
                    "DynamoDBContributorInsights-PKC-Hot-1": [
                        {"rank": 1, "key": {"id": {"S": "k000000"}}, "value": 80.0},
                        {"rank": 2, "key": {"id": {"S": "k000001"}}, "value": 3.5},
                    ],
                    "DynamoDBContributorInsights-PKT-Hot-1": [
                        {"rank": 1, "key": {"id": {"S": "k000000"}}, "value": 7},
                    ],
                },
                "indexes": {},
            }
        },
    }
}


def test_the_hottest_keys_rank_accessed_and_throttled_side_by_side():
    rows = hottest_keys(CAPACITY)
    assert rows == [
        {"region": "us-east-1", "table": "Hot", "rank": 1, "accessed": {"key": "id=k000000", "units": 80.0},
         "throttled": {"key": "id=k000000", "throttles": 7}},
        {"region": "us-east-1", "table": "Hot", "rank": 2, "accessed": {"key": "id=k000001", "units": 3.5},
         "throttled": None},
    ]  # fmt: skip
    lines = hottest_key_lines({"capacity": CAPACITY})
    assert "| us-east-1 | Hot | 1 | id=k000000 | 80 | id=k000000 | 7 |" in lines
    assert "| us-east-1 | Hot | 2 | id=k000001 | 3.5 | — | — |" in lines
    assert "| us-east-1 | Hot | 2 | 40 | 7 | 0 | 7 | WriteKeyRangeThroughputThrottleEvents 7 |" in lines
    assert hottest_key_lines({}) == []  # results written before the capacity section: no section


def test_without_counted_keys_the_section_says_why():
    quiet = {"a": {"modelled": False, "contributor_insights": False, "tables": {"T": {"indexes": {}}}}}
    lines = hottest_key_lines({"capacity": quiet})
    assert "No keys counted (Contributor Insights off, or capacity not modelled)." in lines
