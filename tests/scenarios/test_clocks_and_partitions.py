"""Clocks and partitions.

- Clock skew: under `conflict_clock: wall` a region whose clock is behind can write *after* it has seen another
  region's write and still lose to it — the write is acknowledged, then silently lost everywhere, its own region
  included. Under `hlc` (the default) a region that has seen a write stamps its later writes above it, so
  causality wins over skewed clocks.
- A region cut off for a long time keeps accepting writes; after the partition heals, both sides catch up from
  their acknowledged positions (no full resync) and every region converges, within the links' retransmit backoff.
"""

from __future__ import annotations

import pytest

from globaltables.testing import has
from globaltables.testing.spec import ORDERS_TABLE

A, B, C = "us-east-1", "eu-west-1", "ap-southeast-1"


def skewed(conflict_clock: str) -> dict:
    return {
        "name": f"skew-{conflict_clock}",
        "conflict_clock": conflict_clock,
        "regions": [{"name": A}, {"name": B, "clock_offset_ms": -300}, {"name": C}],
        "links": {"default": {"latency_ms": 40, "jitter_ms": 2}},
        "tables": [ORDERS_TABLE],
    }


def cancel_after_seeing_the_order(topology, global_table, customer) -> None:
    key = {"customerId": customer, "sk": "order#1"}
    global_table.put(A, {**key, "status": "NEW"})
    global_table.assert_eventually(B, key, has(status="NEW"), within=1.0)  # B has seen the order...
    global_table.update(B, key, {"status": "CANCELLED"})  # ...and cancels it, causally after
    topology.wait_converged()


@pytest.mark.globaltables(topology=skewed("wall"))
def test_under_wall_clocks_a_skewed_region_loses_a_causally_later_write(topology, global_table, customer):
    cancel_after_seeing_the_order(topology, global_table, customer)
    key = {"customerId": customer, "sk": "order#1"}
    for region in topology.regions:  # the cancel was acknowledged, then lost — in B too
        assert global_table.read(region, key)["status"] == "NEW"


@pytest.mark.globaltables(topology=skewed("hlc"))
def test_under_hlc_the_causally_later_write_wins_despite_skew(topology, global_table, customer):
    cancel_after_seeing_the_order(topology, global_table, customer)
    key = {"customerId": customer, "sk": "order#1"}
    for region in topology.regions:
        assert global_table.read(region, key)["status"] == "CANCELLED"


def test_a_region_rejoining_after_a_long_partition_catches_up_both_ways(topology, global_table, customer):
    topology.partition(C)  # C is cut off from everyone, both ways
    for minute in range(10):
        global_table.put(A, {"customerId": customer, "sk": f"a#{minute}", "n": minute})
        global_table.put(C, {"customerId": customer, "sk": f"c#{minute}", "n": minute})
        global_table.update(A, {"customerId": customer, "sk": "shared"}, {"last": f"a{minute}"})
        topology.advance(60.0)
    assert global_table.read(A, {"customerId": customer, "sk": "c#0"}) is None  # nothing crossed
    healed_at = topology.now()
    topology.heal()
    final = topology.wait_converged(timeout=600)
    # Retransmits back off to at most retransmit_after * max_backoff between tries (2 s by default).
    assert topology.now() - healed_at <= 260
    assert len([key for key in final["Orders"] if customer in key]) == 21
    assert global_table.read(C, {"customerId": customer, "sk": "shared"})["last"] == "a9"


@pytest.mark.globaltables(modes=("sim", "process"))
def test_a_stalled_link_holds_replication_and_loses_nothing(topology, global_table, customer):
    # A stall is not a partition: what A sends B waits on the link and arrives, in order, when the stall ends.
    topology.impair(A, B, stalled=True)
    for n in range(3):
        global_table.put(A, {"customerId": customer, "sk": f"held#{n}", "n": n})
    topology.advance(1.0)
    assert global_table.read(B, {"customerId": customer, "sk": "held#0"}) is None
    assert global_table.read(C, {"customerId": customer, "sk": "held#0"}) is not None  # only A -> B is stalled
    topology.heal()
    for n in range(3):
        global_table.assert_eventually(B, {"customerId": customer, "sk": f"held#{n}"}, has(n=n), within=5.0)
