"""A run's final reads are a client of the region's capacity: a replica that throttles them (a provisioned table in
capacity debt) is read again after backing off, on the run's own clock, instead of ending the run."""

from __future__ import annotations

import pytest
from capacity_drive import modelled, sized_put, table_request
from engine_calls import call

from globaltables.engine.errors import ProvisionedThroughputExceededException
from globaltables.engine.throttling import FINAL_READ_BACKOFF_S
from globaltables.sim.cluster import scan_items


def test_a_throttled_final_scan_backs_off_on_the_clock_it_is_given_and_reads_everything():
    engine, clock = modelled()
    call(engine, "CreateTable", table_request("Slow", provisioned=(1, 1000)))
    for n in range(40):
        call(engine, "PutItem", sized_put("Slow", f"k{n}", 4000))  # one read unit each, read consistently
    clock.advance(1)
    waits: list[float] = []

    def wait(seconds: float) -> None:
        waits.append(seconds)
        clock.advance(seconds)

    items = scan_items(engine, "Slow", wait=wait)
    assert len(items) == 40
    assert waits and waits == list(FINAL_READ_BACKOFF_S[: len(waits)])  # backed off, as the schedule says
    with pytest.raises(ProvisionedThroughputExceededException):  # without a clock to wait on, the throttle stands
        scan_items(engine, "Slow")
