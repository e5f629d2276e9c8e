"""A user's own regression test, written only against the documented fixtures (docs/testing-your-conflicts.md):
"region B sees the order as PAID within 2 s of the write in A". Run as a separate pytest, so the plugin is loaded
through its pytest11 entry point as a user's project would load it; when the expectation is false, the failure
must show the operations on the order, the fault, and the seed to replay it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

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


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("user")
    (folder / "test_orders.py").write_text(USER_TEST)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--globaltables-seed", "42", "-rN",
         "test_orders.py"],
        cwd=folder, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    return result


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
