"""MrecRegion (replication/hosted.py): the one way local commits reach the replication core, for every host."""

from __future__ import annotations

import pytest

from global_engines import REGIONS, TABLE, global_engine
from globaltables.replication.hosted import MrecRegion
from globaltables.replication.node import RegionNode


def hosted(region: str = "us-east-1") -> tuple[MrecRegion, list[str]]:
    engine, _clock = global_engine(region)
    node = RegionNode(region, [r for r in REGIONS if r != region], engine.replica)
    node.poll(0.0)  # the first poll (after a start) ships what the log holds: nothing yet, and no deadline after
    return MrecRegion(engine, node), []


def put(target: MrecRegion, k: str, value: str) -> dict:
    return target.execute("PutItem", {"TableName": TABLE, "Item": {"pk": {"S": k}, "v": {"S": value}}})


def test_a_local_commit_makes_a_poll_due_at_once_and_wakes_the_host():
    region, woken = hosted()
    region.attach(lambda: 10.0, lambda: woken.append("wake"))
    assert region.next_deadline() is None
    answer = put(region, "a", "x")
    assert answer.version is not None
    assert woken == ["wake"] and region.local_commits == 1
    assert region.next_deadline() == 10.0  # no flush delay: the poll is due when the commit is
    put(region, "b", "y")  # before that poll ran: it ships this write too, no new wake-up
    assert woken == ["wake"] and region.local_commits == 2
    assert [envelope.dest for envelope in region.poll(10.5)] == ["eu-west-1"]


def test_a_write_that_commits_nothing_wakes_nothing():
    region, woken = hosted()
    put(region, "a", "x")  # before attaching: the host learns nothing of it
    region.attach(lambda: 0.0, lambda: woken.append("wake"))
    put(region, "a", "x")  # an unchanged item of a global table: nothing committed
    region.execute("GetItem", {"TableName": TABLE, "Key": {"pk": {"S": "a"}}})
    assert woken == [] and region.local_commits == 0


def test_a_detached_region_hears_no_more_commits_and_attaches_once_at_a_time():
    region, woken = hosted()
    region.attach(lambda: 0.0, lambda: woken.append("wake"))
    with pytest.raises(RuntimeError):
        region.attach(lambda: 0.0, lambda: None)
    region.detach()
    put(region, "a", "x")
    assert woken == []
    region.attach(lambda: 0.0, lambda: woken.append("again"))
    put(region, "b", "y")
    assert woken == ["again"]
