"""The convergence checker: identical replicas pass; a missing or different item fails and is named."""

from __future__ import annotations

import copy

from globaltables.chaos.checkers.convergence import bucket_of, check_convergence, range_digests
from globaltables.chaos.history import History


def replicas(n_keys: int = 500) -> dict:
    items = {f"k{i}": {"pk": {"S": f"k{i}"}, "value": {"S": f"w{i}"}, "n": {"N": str(i)}} for i in range(n_keys)}
    return {
        region: {"Orders": copy.deepcopy(items), "Empty": {}} for region in ("us-east-1", "eu-west-1", "ap-southeast-1")
    }


def test_identical_replicas_converge():
    result = check_convergence(replicas())
    assert result.passed, str(result)
    assert "identical" in result.detail


def test_digests_ignore_attribute_order_none_items_and_insertion_order():
    a = {"x": {"b": {"S": "1"}, "a": {"S": "2"}}, "y": {"a": {"N": "1"}}, "z": None}
    b = {"y": {"a": {"N": "1"}}, "x": {"a": {"S": "2"}, "b": {"S": "1"}}}
    assert range_digests(a, 8) == range_digests(b, 8)
    assert range_digests(a, 8) != range_digests({**b, "y": {"a": {"N": "2"}}}, 8)


def test_a_replica_missing_one_write_names_the_key_and_its_writes():
    states = replicas()
    del states["eu-west-1"]["Orders"]["k42"]
    history = History()
    put = history.invoke(1, "us-east-1", "put", "Orders", "k42", "w42")
    history.ok(put, version="0000000001.000000/us-east-1")
    result = check_convergence(states, history=history)
    assert not result.passed
    assert result.offending_keys() == [("Orders", "k42")]
    (finding,) = result.offending
    assert finding.problem == "missing" and "eu-west-1" in finding.detail
    assert finding.observed["eu-west-1"] is None and finding.observed["us-east-1"] is not None
    assert [op.index for op in finding.operations] == [0, 1]
    assert "(1 of 128 ranges)" in result.detail  # two tables of 64 ranges; only one range was opened


def test_a_different_version_fails_and_only_that_key_is_listed():
    states = replicas()
    states["ap-southeast-1"]["Orders"]["k7"]["value"] = {"S": "other"}
    states["us-east-1"]["Orders"]["k8"] = None  # None and absent are the same: no item...
    del states["eu-west-1"]["Orders"]["k8"]
    del states["ap-southeast-1"]["Orders"]["k8"]  # ...so k8 agrees everywhere
    result = check_convergence(states, buckets=16)
    assert [(f.key, f.problem) for f in result.offending] == [("k7", "different")]


def test_a_table_missing_in_one_region_lists_all_its_keys():
    states = replicas(20)
    del states["us-east-1"]["Orders"]
    result = check_convergence(states)
    assert len(result.offending) == 20 and all(f.problem == "missing" for f in result.offending)


def test_bucket_assignment_is_stable_across_processes():
    # Pinned values: blake2b, never the salted hash(), so replicas checked in different processes agree.
    assert [bucket_of(f"k{i}", 64) for i in range(5)] == [23, 32, 30, 29, 35]
