"""The simulated strong-mode harness (testing/simulated_mrsc.py) beyond what the scenario library shows: replay that
does not depend on thread timing or on the global `random`, calls that wait in virtual time inside `concurrently`,
and the region process's answers for the paths a test rarely reaches (the guard, a failing node, retries)."""

from __future__ import annotations

import random
import sys
import time

import pytest
from botocore.exceptions import ClientError

from globaltables.testing import simulate
from globaltables.testing.simulated_mrsc import MrscSimHarness
from globaltables.testing.spec import ORDERS_TABLE

pytestmark = pytest.mark.timeout(120)

A, B, W = "us-east-1", "us-east-2", "us-west-2"
STRONG = {
    "name": "kit-strong",
    "mode": "mrsc",
    "regions": [{"name": A}, {"name": B}, {"name": W, "role": "witness"}],
    "links": {"default": {"latency_ms": 10, "jitter_ms": 4}},
    "tables": [ORDERS_TABLE],
}
KEY = {"customerId": "c", "sk": "1"}


def code(result: object) -> str:
    return result.response["Error"]["Code"] if isinstance(result, ClientError) else type(result).__name__


def race(harness, nap: float = 0.0) -> list[str]:
    """Three regions' writers and a reader race on one item, for several rounds; `nap`: real seconds each call
    sleeps before its request (outside the simulation)."""
    table = harness.table()
    outcomes = []

    def writer(region: str, value: int, round_: int):
        def call():
            time.sleep(nap * value)
            return table.put(region, {**KEY, "v": value, "round": round_})

        return call

    for round_ in range(6):
        results = harness.concurrently(
            writer(A, 1, round_), writer(B, 2, round_), writer(A, 3, round_),
            lambda: (time.sleep(nap), table.get(B, KEY))[1],
        )  # fmt: skip
        outcomes.append(" ".join(code(r) if isinstance(r, Exception) else "ok" for r in results))
    harness.wait_converged()
    return outcomes


def test_the_simulated_harness_of_a_strong_topology_is_the_strong_one():
    with simulate(STRONG, seed=1) as harness:
        assert isinstance(harness, MrscSimHarness) and harness.witnesses == {W}


def test_replay_does_not_depend_on_thread_timing_or_the_global_random(monkeypatch):
    fingerprints, outcomes = [], []
    switch = sys.getswitchinterval()
    try:
        for nap, interval, global_seed in ((0.0, switch, 1), (0.003, 1e-6, 2), (0.0, 0.05, 3)):
            sys.setswitchinterval(interval)
            random.seed(global_seed)
            with simulate(STRONG, seed=11) as harness:
                outcomes.append(race(harness, nap))
                fingerprints.append(harness.fingerprint())
    finally:
        sys.setswitchinterval(switch)
    assert fingerprints[0] == fingerprints[1] == fingerprints[2]
    assert outcomes[0] == outcomes[1] == outcomes[2]
    assert any("ReplicatedWriteConflictException" in line for line in outcomes[0]), outcomes[0]
    with simulate(STRONG, seed=12) as harness:
        race(harness)
        assert harness.fingerprint() != fingerprints[0]  # while another seed gives another run


def test_a_concurrent_call_can_wait_in_virtual_time_before_its_request():
    with simulate(STRONG, seed=3) as harness:
        table = harness.table()
        table.put(A, {**KEY, "v": 0})
        start = harness.now()
        results = harness.concurrently(
            lambda: table.update(A, KEY, {"v": 1}),
            lambda: (harness.advance(0.5), table.update(B, KEY, {"v": 2}))[1],
        )
        assert not any(isinstance(result, Exception) for result in results), results
        assert harness.now() >= start + 0.5
        invoked = {op.region: op.mono for op in harness.history.ops if op.f == "update" and op.type == "invoke"}
        assert invoked[A] == start and invoked[B] == start + 0.5
        assert table.get(A, KEY)["v"] == 2  # B's write came later, on top of A's


def test_retries_back_off_in_virtual_time_drawn_from_the_seed():
    elapsed = []
    for global_seed in (1, 2):
        random.seed(global_seed)
        with simulate(STRONG, seed=5) as harness:
            harness.partition(B)  # B can reach nobody: its strong reads answer 500 after the bounded wait
            started = harness.now()
            with pytest.raises(ClientError) as unavailable:
                harness.client(B, max_attempts=3).get_item(
                    TableName="Orders", Key={"customerId": {"S": "c"}, "sk": {"S": "1"}}, ConsistentRead=True
                )
            assert unavailable.value.response["Error"]["Code"] == "InternalServerError"
            elapsed.append(harness.now() - started)
    # Three attempts of 2 s each, with two backoffs between them: the same, whatever the global random says.
    assert elapsed[0] == elapsed[1] and elapsed[0] > 6.0


def test_a_node_that_never_answers_is_answered_in_doubt_after_the_guard(monkeypatch):
    with simulate(STRONG, seed=2) as harness:
        node = harness.cluster.members[A].node
        monkeypatch.setattr(node, "submit_write", lambda *args, **kwargs: [])  # swallowed: never completes
        started = harness.now()
        with pytest.raises(ClientError) as in_doubt:
            harness.table().put(A, {**KEY, "v": 1})
        error = in_doubt.value.response
        assert error["ResponseMetadata"]["HTTPStatusCode"] == 500
        assert (
            error["Error"]["Message"] == "the write's outcome is not known yet: another Region did not answer in time"
        )
        assert harness.now() - started == pytest.approx(2.0 + 1.0)  # write_timeout_ms + the host's guard


def test_a_failing_node_gives_a_generic_500_as_the_region_process_does(monkeypatch):
    with simulate(STRONG, seed=2) as harness:
        node = harness.cluster.members[A].node

        def broken(*args, **kwargs):
            raise RuntimeError("a bug")

        monkeypatch.setattr(node, "submit_write", broken)
        with pytest.raises(ClientError) as failed:
            harness.table().put(A, {**KEY, "v": 1})
        assert failed.value.response["Error"] == {"Code": "InternalServerError", "Message": "Internal server error"}
        harness.wait_converged()  # nothing was left in flight


def test_a_strong_write_named_by_table_arn_takes_the_strong_path():
    # Routing to the commit protocol depends on the table a request names: an ARN must route as its name does, or a
    # strong table would be written locally and never reach the other replica.
    arn = f"arn:aws:dynamodb:{A}:000000000000:table/Orders"
    with simulate(STRONG, seed=2) as harness:
        harness.client(A).put_item(TableName=arn, Item={"customerId": {"S": "c"}, "sk": {"S": "arn"}})
        got = harness.client(B).get_item(
            TableName=f"arn:aws:dynamodb:{B}:000000000000:table/Orders",
            Key={"customerId": {"S": "c"}, "sk": {"S": "arn"}},
            ConsistentRead=True,
        )
        assert got["Item"]["sk"] == {"S": "arn"}
