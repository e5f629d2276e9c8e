"""Conflicting writes to one item from two regions (MREC): last writer wins, per item, everywhere.

What these scenarios document:
- Concurrent puts: every region ends with the same one of the two items: the write with the greater version
  (the `x-globaltables-version` header, `<hlc>/<region>`, compared as strings).
- Update vs update on different attributes: resolution is per item, not per attribute; the losing region's
  attribute is lost, although each update only touched its own attribute.
- Delete vs update: whichever has the greater version wins; an update that wins brings the item back.
- Optimistic locking (`version = :expected` conditions) does not protect against a concurrent writer in another
  region: both conditional writes pass locally, one of them is silently lost (a lost update).
- Put-if-absent (`attribute_not_exists`) raced in two regions: both succeed, each client believes it created the
  item, and one creation is overwritten.
Concurrency is made certain with a partition between the writers (healed afterwards), so the scenarios hold in
simulation and with real processes alike.
"""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from globaltables.runtime.transport import VERSION_HEADER
from globaltables.testing import has

BOTH = pytest.mark.globaltables(modes=("sim", "process"))
A, B, C = "us-east-1", "eu-west-1", "ap-southeast-1"


def version(answer: dict) -> str:
    return answer["ResponseMetadata"]["HTTPHeaders"][VERSION_HEADER]


@BOTH
def test_concurrent_puts_converge_on_the_greater_version(topology, global_table, customer):
    key = {"customerId": customer, "sk": "order#1"}
    first, second = topology.concurrently(
        lambda: global_table.put(A, {**key, "status": "NEW", "by": A}),
        lambda: global_table.put(B, {**key, "status": "NEW", "by": B}),
    )
    winner = A if version(first) > version(second) else B
    final = topology.wait_converged()
    for region in topology.regions:
        assert global_table.read(region, key)["by"] == winner
    assert len([k for k in final["Orders"] if customer in k]) == 1


@BOTH
def test_update_vs_update_on_different_attributes_loses_one_attribute(topology, global_table, customer):
    key = {"customerId": customer, "sk": "order#1"}
    global_table.put(A, {**key, "status": "NEW"})
    topology.wait_converged()
    topology.partition(A, B)
    in_a = global_table.update(A, key, {"address": "1 Main St"})
    in_b = global_table.update(B, key, {"status": "PAID"})
    topology.heal()
    topology.wait_converged()
    final = global_table.read(C, key)
    # Item-level last writer wins: the winning region's whole item replaces the other's.
    if version(in_a) > version(in_b):
        assert final == {**key, "status": "NEW", "address": "1 Main St"}  # the PAID status is lost
    else:
        assert final == {**key, "status": "PAID"}  # the address is lost
    assert not ("address" in final and final["status"] == "PAID"), "a merge of both updates would be field-level"


@BOTH
def test_delete_vs_update_greater_version_wins(topology, global_table, customer):
    key = {"customerId": customer, "sk": "order#1"}
    global_table.put(A, {**key, "status": "NEW"})
    topology.wait_converged()
    topology.partition(A, B)
    deleted = global_table.delete(A, key)
    updated = global_table.update(B, key, {"status": "SHIPPED"})
    topology.heal()
    topology.wait_converged()
    expected = None if version(deleted) > version(updated) else {**key, "status": "SHIPPED"}
    for region in topology.regions:
        assert global_table.read(region, key) == expected


def test_an_update_after_a_delete_resurrects_the_item_everywhere(topology, global_table, customer):
    key = {"customerId": customer, "sk": "order#1"}
    global_table.put(A, {**key, "status": "NEW"})
    topology.wait_converged()
    topology.partition(A, B)
    global_table.delete(A, key)
    topology.advance(0.5)  # the update comes later: its version is greater
    global_table.update(B, key, {"status": "SHIPPED"})
    topology.heal()
    topology.wait_converged()
    assert global_table.read(A, key) == {**key, "status": "SHIPPED"}


@BOTH
def test_optimistic_locking_passes_in_both_regions_and_loses_an_update(topology, global_table, customer):
    key = {"customerId": customer, "sk": "order#1"}
    global_table.put(A, {**key, "total": 100, "v": 1})
    topology.wait_converged()
    topology.partition(A, B)
    # Both read v=1 and write v=2 on condition v = 1; each condition holds in its own region.
    global_table.update(A, key, {"total": 90, "v": 2}, condition="#v = :expected", values={":expected": 1})
    global_table.update(B, key, {"total": 120, "v": 2}, condition="#v = :expected", values={":expected": 1})
    topology.heal()
    topology.wait_converged()
    final = global_table.read(A, key)
    assert final["v"] == 2 and final["total"] in (90, 120)  # one of the two acknowledged updates is gone
    # In one region the conditional check does its job: a second writer there is refused.
    with pytest.raises(ClientError) as refused:
        global_table.update(A, key, {"total": 1, "v": 2}, condition="#v = :expected", values={":expected": 1})
    assert refused.value.response["Error"]["Code"] == "ConditionalCheckFailedException"


@BOTH
def test_put_if_absent_raced_in_two_regions_both_succeed(topology, global_table, customer):
    key = {"customerId": customer, "sk": "profile"}
    topology.partition(A, B)
    create = {"ConditionExpression": "attribute_not_exists(customerId)"}
    in_a = global_table.put(A, {**key, "createdIn": A}, **create)
    in_b = global_table.put(B, {**key, "createdIn": B}, **create)  # no ConditionalCheckFailedException
    topology.heal()
    topology.wait_converged()
    winner = A if version(in_a) > version(in_b) else B
    for region in topology.regions:
        global_table.assert_eventually(region, key, has(createdIn=winner), within=1.0)
