"""MRSC split votes resolve on the majority side (docs/mrsc.md, "The split vote, resolved").

Three replicas; one is partitioned away. Writers in the two others race on one item, round after round: each
round ends with at most one write committed and every other refused with ReplicatedWriteConflictException, all
answered within the MRSC write timeout (no 500 while the partition lasts), and a later write to the item succeeds.
Then seeded sweeps with every fault kind stay linearizable.
"""

from __future__ import annotations

import pytest

from globaltables.chaos.checkers import linearizable
from globaltables.chaos.controller import Controller
from globaltables.chaos.schedule import parse_schedule
from globaltables.chaos.target import SimTarget
from globaltables.runtime.rng import Rng
from globaltables.sim.mrsc_cluster import MrscCluster
from sim.mrsc_workload import run

K = {"pk": {"S": "hot"}}
MEMBERS = ("us-east-1", "us-east-2", "us-west-2")


def completions(cluster, since: int = 0):
    return [op for op in cluster.history.ops[since:] if op.type != "invoke" and op.f in ("put", "update", "delete")]


@pytest.mark.parametrize("cut", MEMBERS)
def test_racing_writes_on_the_majority_side_end_with_one_commit_and_rwce_for_the_rest(cut):
    cluster = MrscCluster(MEMBERS, witness=None, seed=4)
    majority = [m for m in MEMBERS if m != cut]
    cluster.write(majority[0], "put", K, {"S": "before"}, process="setup")
    cluster.run_until(1.0)
    for other in majority:
        cluster.network.partition(cut, other)
    timeout_s = cluster.config.write_timeout_ms / 1000
    winners = set()
    for round_ in range(10):
        start = len(cluster.history.ops)
        began = cluster.now()
        for region in majority:
            cluster.write(region, "put", K, {"S": f"r{round_}-{region}"}, process=f"{round_}/{region}")
        cluster.run_until(began + timeout_s + 0.5)
        done = completions(cluster, start)
        assert all(op.mono - began <= timeout_s for op in done), done  # answered within the MRSC timeout
        outcomes = sorted((op.type, op.error) for op in done)
        assert outcomes == [("fail", "ReplicatedWriteConflictException"), ("ok", None)], (round_, outcomes)
        winners |= {op.region for op in done if op.type == "ok"}
    assert winners == set(majority)  # the turn among racing proposals changes with the version: nobody starves
    start = len(cluster.history.ops)
    cluster.write(majority[1], "put", K, {"S": "after"}, process="later")
    cluster.run_until(cluster.now() + timeout_s)
    assert [op.type for op in completions(cluster, start)] == ["ok"]
    cluster.read(majority[0], K, process="reader")
    cluster.run_until(cluster.now() + timeout_s)
    assert cluster.history.ops[-1].value == {"S": "after"}
    cluster.network.heal()
    cluster.run_until_quiescent()
    result = linearizable.check(cluster.history)
    assert result.verdict == "valid", result


def test_three_racers_two_of_them_in_one_region_never_commit_twice_at_once():
    cluster = MrscCluster(MEMBERS, witness=None, seed=9)
    a, b, c = MEMBERS
    cluster.network.partition(c, a)
    cluster.network.partition(c, b)
    for round_ in range(6):
        start = len(cluster.history.ops)
        began = cluster.now()
        for n, region in enumerate((a, b, a)):  # a's two writes queue behind each other
            cluster.write(region, "put", K, {"S": f"{round_}-{n}"}, process=f"{round_}/{n}")
        cluster.run_until(began + 2.5)
        done = completions(cluster, start)
        assert len(done) == 3 and all(op.type != "info" for op in done), done
        assert all(op.error == "ReplicatedWriteConflictException" for op in done if op.type == "fail"), done
        racing = [op for op in done if op.process in (f"{round_}/0", f"{round_}/1")]
        assert sum(op.type == "ok" for op in racing) == 1, racing
    cluster.network.heal()
    cluster.run_until_quiescent()
    assert linearizable.check(cluster.history).verdict == "valid"


SWEEP_KINDS = ["partition", "isolate", "split", "ring", "latency", "loss", "duplicate", "reorder", "stall",
               "skew", "drift", "strobe", "crash", "pause"]  # fmt: skip


@pytest.mark.timeout(600)
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 416])  # 416: three proposals once stood off, each refusing the others
def test_seeded_sweeps_with_every_fault_kind_stay_linearizable(seed):
    cluster = MrscCluster(MEMBERS, witness="us-west-2" if seed % 2 else None, seed=seed)
    schedule = parse_schedule(
        {"nemesis": {"seed": seed, "kinds": SWEEP_KINDS, "every": "300ms", "for": ["300ms", "2s"], "until": "25s"}},
        list(MEMBERS), [cluster.witness] if cluster.witness else [],
    )  # fmt: skip
    rng = Rng(seed).fork("sweep")
    keys = [{"pk": {"S": f"k{n}"}} for n in range(3)]
    values = iter(range(1, 1_000_000))
    writers = [m for m in MEMBERS if m != cluster.witness]

    def issue(process: str, region: str) -> None:
        if cluster.now() >= schedule.end_s:
            return
        key, roll = rng.choice(keys), rng.random()
        if roll < 0.35:
            cluster.read(region, key, process=process)
        elif roll < 0.45:
            cluster.write(region, "delete", key, process=process)
        else:
            extra = {"ConditionExpression": "attribute_exists(pk)"} if roll > 0.9 else {}
            cluster.write(region, "put" if roll < 0.8 else "update", key, {"S": f"w{next(values)}"},
                          process=process, **extra)  # fmt: skip

    cluster.on_complete = lambda process, region: cluster.scheduler.call_later(
        rng.uniform(0, 0.03), issue, process, region
    )
    for region in writers:
        for i in range(3):
            cluster.on_complete(f"{region}/{i}", region)
    Controller(SimTarget(cluster), cluster.history).run(schedule)
    cluster.run_until_quiescent()
    cluster.on_complete = None
    for n, key in enumerate(keys):
        for region in writers:
            cluster.read(region, key, process=f"final/{region}/{n}")
    cluster.run_until_quiescent()
    assert cluster.quiescent(), [member.node.status() for member in cluster.members.values()]  # nothing stuck
    result = linearizable.check(cluster.history)
    assert result.verdict == "valid", result
    assert not [op for op in cluster.history.ops if op.type == "info" and str(op.process).startswith("final/")]
    kinds = {op.f for op in cluster.history.faults()}
    assert len(kinds) >= 8, kinds


@pytest.mark.parametrize("seed", [21, 22, 23])
def test_the_seeded_lossy_crashing_workload_stays_linearizable_with_reordering(seed):
    cluster = run(seed, operations=2000, reorder=0.2, reorder_ms=80)
    assert linearizable.check(cluster.history).verdict == "valid"


def test_an_accepted_proposal_its_coordinator_aborted_is_never_committed_by_recovery():
    """C accepts A's proposal P, then is cut off; A, outranked by B's racing Q, aborts P (RWCE) and B commits Q.
    When C is reachable again its recovery asks B, whose vote on P is `outranked`: that proves nothing (A may have
    aborted P on it), so C waits for A's answer (Settled, aborted) and drops P; it never commits it."""
    from globaltables.sim.network import LinkSettings

    a, b, c = MEMBERS  # at version 1, b's proposals outrank a's (turns: a 1, b 2, c 0)
    cluster = MrscCluster(MEMBERS, witness=None, seed=2, link=LinkSettings(latency_ms=30, jitter_ms=0))
    cluster.network.set_link(b, c, LinkSettings(latency_ms=80, jitter_ms=0), bidirectional=True)
    cluster.write(a, "put", K, {"S": "P"}, process="a")  # reaches b and c at 30 ms: c accepts it
    cluster.scheduler.call_at(0.02, lambda: cluster.write(b, "put", K, {"S": "Q"}, process="b"))  # c: at 100 ms
    cluster.scheduler.call_at(0.04, lambda: cluster.network.partition(a, c))  # C's acceptance never reaches A
    cluster.scheduler.call_at(0.11, lambda: cluster.network.partition(b, c))  # nor does Q's Commit reach C
    cluster.run_until(3.0)
    outcomes = {op.process: (op.type, op.error) for op in cluster.history.ops if op.type != "invoke"}
    assert outcomes == {"a": ("fail", "ReplicatedWriteConflictException"), "b": ("ok", None)}, outcomes
    assert cluster.members[c].strong.pending("Items", K).pid.startswith(a)  # C still holds A's aborted P
    cluster.network.heal()
    # A answers C slowly now, so C's recovery hears B's vote before A's Settled.
    cluster.network.set_link(a, c, LinkSettings(latency_ms=300, jitter_ms=0), bidirectional=True)
    cluster.run_until_quiescent()
    assert cluster.members[c].strong.pending("Items", K) is None  # dropped on A's answer, not committed
    for region in MEMBERS:  # a strong read at C syncs it with the committed Q
        cluster.read(region, K, process=f"final/{region}")
    cluster.run_until_quiescent()
    assert cluster.items(c) == cluster.items(a) == cluster.items(b)
    assert cluster.items(c)['{"pk":{"S":"hot"}}']["value"] == {"S": "Q"}
    assert linearizable.check(cluster.history).verdict == "valid"
