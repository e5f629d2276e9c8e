"""MRSC writes make progress under steady contention on one item (docs/mrsc.md, decision 1).

Three replicas, long links, and every region writing one key without pause. A member refuses a higher-ranked
proposal as `conflict` while it holds its own lower-ranked one; once its own is aborted it must take the
higher-ranked one up before its next queued write starts, or that proposal meets a fresh conflict at every
Repropose and no write ever commits (RWCE and 500s for all, for as long as the clients keep writing). Racing writes
may fail with ReplicatedWriteConflictException (facts §3), but some write wins every round: the item's version
advances, a floor of the writes is acknowledged in every region, and the history stays linearizable.

A write on an item another Region's proposal holds is refused at once (decision 2), so a client answered RWCE
pauses (`RETRY_PAUSE_S`, as an SDK's retry backoff does) before writing again: without a pause it would write again
at the same virtual moment, and be refused again, forever.
"""

from __future__ import annotations

from collections import Counter

import pytest

from globaltables.chaos.checkers import linearizable
from globaltables.sim.mrsc_cluster import MrscCluster
from globaltables.sim.network import LinkSettings

K = {"pk": {"S": "hot"}}
MEMBERS = ("us-east-1", "us-east-2", "us-west-2")
STREAM_S = 10.0
RETRY_PAUSE_S = 0.01


def writes(cluster: MrscCluster) -> list:
    return [op for op in cluster.history.ops if op.type != "invoke" and op.f == "put"]


def versions(cluster: MrscCluster) -> list[int]:
    """The item's commit version at each member, right now (one version per committed write)."""
    return [cluster.members[m].strong.committed(cluster.table_name, K)[0] for m in MEMBERS]


def contended(latency_ms: float, seed: int) -> MrscCluster:
    return MrscCluster(MEMBERS, witness=None, seed=seed, link=LinkSettings(latency_ms=latency_ms, jitter_ms=2))


@pytest.mark.parametrize("latency_ms", [60, 100])
@pytest.mark.parametrize("clients", [1, 3])
def test_back_to_back_writers_in_every_region_to_one_key_commit_every_few_round_trips(latency_ms, clients):
    cluster = contended(latency_ms, seed=5)
    issued = Counter()

    def issue(process: str, region: str) -> None:
        if cluster.now() < STREAM_S:
            issued[region] += 1
            cluster.write(region, "put", K, {"S": f"{process}-{issued[region]}"}, process=process)

    def answered(process: str, region: str) -> None:
        last = cluster.history.ops[-1]  # the completion just recorded (mrsc_cluster.py `_done`)
        assert last.process == process and last.type != "invoke"
        if last.error == "ReplicatedWriteConflictException":
            cluster.scheduler.call_later(RETRY_PAUSE_S, issue, process, region)
        else:
            issue(process, region)

    cluster.on_complete = answered  # closed loop: each client writes again as soon as it is answered
    for region in MEMBERS:
        for i in range(clients):
            cluster.scheduler.call_at(0.001 * i, issue, f"{region}/{i}", region)
    cluster.run_until(STREAM_S)
    during = versions(cluster)
    cluster.on_complete = None
    cluster.run_until_quiescent()

    done = writes(cluster)
    acked = Counter(op.region for op in done if op.type == "ok")
    round_trip_s = 2 * latency_ms / 1000
    # A round among three racers needs a couple of round trips; at least one commit per four of them.
    floor = int(STREAM_S / (4 * round_trip_s))
    assert min(during) >= floor, (during, floor)
    assert sum(acked.values()) >= floor, acked
    in_doubt = sum(op.error == "InternalServerError" for op in done)
    assert sum(acked.values()) >= 2 * in_doubt, (acked, Counter((op.type, op.error) for op in done))
    assert set(acked) == set(MEMBERS), acked  # the rank's turn rotates with the version: nobody starves
    assert {op.error for op in done if op.type != "ok"} <= {"ReplicatedWriteConflictException",
                                                          "InternalServerError"}  # fmt: skip
    result = linearizable.check(cluster.history)
    assert result.verdict == "valid", result


def test_an_open_loop_stream_of_twenty_writes_a_second_per_region_to_one_key_commits():
    """The hot-partition shape: 20 puts a second in each region, 60 ms links. The key cannot take 60 writes a
    second (a commit costs round trips), so most writes fail, RWCE or 500 after queueing; the item still commits
    every few round trips and writes are acknowledged."""
    cluster = contended(60, seed=1)
    sent = Counter()

    def tick(region: str) -> None:
        if cluster.now() < STREAM_S:
            sent[region] += 1
            cluster.write(region, "put", K, {"S": f"{region}-{sent[region]}"}, process=f"{region}/{sent[region]}")
            cluster.scheduler.call_later(1 / 20, tick, region)

    for n, region in enumerate(MEMBERS):
        cluster.scheduler.call_at(0.001 * (n + 1), tick, region)
    cluster.run_until(STREAM_S)
    during = versions(cluster)
    cluster.run_until_quiescent()

    floor = int(STREAM_S / (4 * 0.12))
    assert min(during) >= floor, (during, floor)
    acked = sum(op.type == "ok" for op in writes(cluster))
    assert acked >= 5, Counter((op.type, op.error) for op in writes(cluster))
    result = linearizable.check(cluster.history)
    assert result.verdict == "valid", result
