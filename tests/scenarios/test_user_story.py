"""A user's own regression tests, written only against the documented fixtures (docs/testing-your-conflicts.md).
Run as a separate pytest, so the plugin is loaded through its pytest11 entry point as a user's project would load
it (with this checkout's sources first on the path).

- MREC: "region B sees the order as PAID within 2 s of the write in A"; when the expectation is false, the failure
  must show the operations on the order, the fault, and the seed to replay it.
- Strong mode (MRSC), simulated: "both customers get the seat" raced from two regions fails (one gets
  ReplicatedWriteConflictException), and rerunning with the printed seed replays it exactly: the same winner, the
  same message trace, the same history.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

USER_TEST = textwrap.dedent(
    '''
    from globaltables.testing import has

    def test_order_paid_in_a_is_seen_in_b(topology, global_table):
        order = {"customerId": "alice", "sk": "order#42"}
        global_table.put("us-east-1", {**order, "status": "NEW"})
        global_table.update("us-east-1", order, {"status": "PAID"})
        global_table.assert_eventually("eu-west-1", order, has(status="PAID"), within=2.0)

    def test_order_paid_during_a_partition(topology, global_table):
        order = {"customerId": "bob", "sk": "order#7"}
        global_table.put("us-east-1", {**order, "status": "NEW"})
        topology.wait_converged()
        topology.partition("us-east-1", "eu-west-1")
        global_table.update("us-east-1", order, {"status": "PAID"})
        global_table.assert_eventually("eu-west-1", order, has(status="PAID"), within=2.0)
    '''
)


USER_STRONG_TEST = textwrap.dedent(
    '''
    import hashlib

    import pytest

    STRONG = {
        "name": "seats",
        "mode": "mrsc",
        "regions": [{"name": "us-east-1"}, {"name": "us-east-2"}, {"name": "us-west-2", "role": "witness"}],
        "links": {"default": {"latency_ms": 12, "jitter_ms": 3}},
        "tables": [{
            "TableName": "Seats",
            "AttributeDefinitions": [{"AttributeName": "flight", "AttributeType": "S"},
                                     {"AttributeName": "seat", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "flight", "KeyType": "HASH"}, {"AttributeName": "seat", "KeyType": "RANGE"}],
        }],
    }

    @pytest.mark.globaltables(topology=STRONG)
    def test_both_customers_get_the_seat(topology, global_table):
        seat = {"flight": "GT17", "seat": "4A"}
        take = {"ConditionExpression": "attribute_not_exists(flight)"}
        results = topology.concurrently(
            lambda: global_table.put("us-east-1", {**seat, "holder": "ann"}, **take),
            lambda: global_table.put("us-east-2", {**seat, "holder": "bob"}, **take),
        )
        digest = hashlib.sha256(topology.fingerprint()).hexdigest()
        outcomes = [getattr(r, "response", {}).get("Error", {}).get("Code", "ok") for r in results]
        assert outcomes == ["ok", "ok"], f"outcomes {outcomes}; holder {global_table.get('us-east-1', seat)['holder']}; replay {digest}"
    '''
)


def run_pytest(folder: Path, name: str, seed: int) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--globaltables-seed", str(seed), "-rN",
         name],
        cwd=folder, capture_output=True, text=True, timeout=120, check=False, env=env,
    )  # fmt: skip


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("user")
    (folder / "test_orders.py").write_text(USER_TEST)
    return run_pytest(folder, "test_orders.py", 42)


@pytest.fixture(scope="module")
def strong_runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("user-strong")
    (folder / "test_seats.py").write_text(USER_STRONG_TEST)
    return [run_pytest(folder, "test_seats.py", seed) for seed in (42, 42, 7)]


def test_the_true_expectation_passes_and_the_false_one_fails(run):
    assert "1 failed, 1 passed" in run.stdout, run.stdout + run.stderr


def test_the_failure_shows_the_operations_the_fault_and_the_seed(run):
    out = run.stdout
    assert 'eu-west-1 did not see Orders[{"customerId":"bob","sk":"order#7"}] satisfy: item with status=\'PAID\'' in out
    assert "within 2 s (virtual time" in out
    assert 'last seen in eu-west-1: {"customerId":"bob","sk":"order#7","status":"NEW"}' in out
    assert 'us-east-1: {"customerId":"bob","sk":"order#7","status":"PAID"}' in out
    # The operations on the key, in order, with the partition between them.
    put = out.index('invoke put     @us-east-1 p1 value={"customerId":"bob","sk":"order#7","status":"NEW"}')
    fault = out.index('FAULT partition ["us-east-1","eu-west-1","both"]')
    update = out.index('invoke update  @us-east-1 p2 value={"update":"SET status = :v0","values":{":v0":"PAID"}}')
    assert put < fault < update
    assert "ok     update  @us-east-1 p2 version=" in out
    assert "alice" not in out.split("test_order_paid_during_a_partition", 1)[1]  # only this key's operations
    assert "--globaltables-seed 42" in out


def test_a_strong_mode_race_fails_with_a_replicated_write_conflict_and_the_seed_to_replay_it(strong_runs):
    out = strong_runs[0].stdout
    assert "1 failed" in out, out + strong_runs[0].stderr
    assert "test_both_customers_get_the_seat[sim]" in out
    assert re.search(r"outcomes \[('ok', 'ReplicatedWriteConflictException'|'ReplicatedWriteConflictException', 'ok')\]", out), out
    assert "replay this exact run with --globaltables-seed 42" in out


def test_rerunning_with_the_seed_replays_the_strong_mode_race_exactly(strong_runs):
    def replay(run: subprocess.CompletedProcess) -> str:
        (line,) = [line for line in run.stdout.splitlines() if "outcomes [" in line and "replay" in line]
        return line

    first, again, other_seed = (replay(run) for run in strong_runs)
    assert again == first  # same winner, and the same fingerprint: message trace, history, final items
    assert other_seed != first  # the fingerprint does depend on the seed
