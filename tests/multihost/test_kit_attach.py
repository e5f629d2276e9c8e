"""The pytest kit's process mode against regions it did not start (`--globaltables-attach`): a user's conflict test
runs unchanged against regions on other hosts, here three `up --only` invocations, faults included."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from separate_hosts import env, quickstart_on_separate_hosts

pytestmark = pytest.mark.timeout(300)
REGIONS = ["us-east-1", "eu-west-1", "ap-southeast-1"]

USER_TEST = """
import pytest

@pytest.mark.globaltables(topology={topology!r}, modes=("process",))
def test_a_partition_holds_writes_back_until_the_heal(topology):
    us, eu = topology.client("us-east-1"), topology.client("eu-west-1")
    topology.partition("us-east-1", "eu-west-1")
    us.put_item(TableName="Orders", Item={{"customerId": {{"S": "kit"}}, "sk": {{"S": "1"}}, "v": {{"S": "us"}}}})
    topology.advance(0.3)
    assert "Item" not in eu.get_item(TableName="Orders", Key={{"customerId": {{"S": "kit"}}, "sk": {{"S": "1"}}}})
    topology.heal()
    topology.wait_converged(timeout=30)
    assert eu.get_item(TableName="Orders", Key={{"customerId": {{"S": "kit"}}, "sk": {{"S": "1"}}}})["Item"]["v"] == {{"S": "us"}}

@pytest.mark.globaltables(topology={topology!r}, modes=("process",))
def test_a_crash_and_restart_reach_the_regions_own_supervisor(topology):
    topology.crash("ap-southeast-1")
    topology.restart("ap-southeast-1")
    ap = topology.client("ap-southeast-1")
    assert ap.describe_table(TableName="Orders")["Table"]["TableStatus"] == "ACTIVE"
"""


def test_the_kit_runs_a_users_conflict_test_against_attached_regions(tmp_path: Path):
    with quickstart_on_separate_hosts(tmp_path, REGIONS) as (topology, _, started):
        user = tmp_path / "user"
        user.mkdir()
        (user / "test_conflicts.py").write_text(USER_TEST.format(topology=str(topology)))
        answer = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--globaltables-attach", str(user)],
            cwd=user,
            env=env(),
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert answer.returncode == 0, answer.stdout + answer.stderr
        assert "2 passed" in answer.stdout
        # Nothing was started or stopped by the kit: the same three regions still serve.
        assert all(host.process.poll() is None for host in started)
        assert all(
            len(host.state()["regions"][host.region]["exit_codes"]) == (host.region == "ap-southeast-1")
            for host in started
        )
