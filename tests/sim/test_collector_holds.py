"""The simulation collector settings are held by count (runtime/collector_hold.py): overlapping simulations, closed in any
order or run on threads, leave the process with the thresholds it had before the first began."""

from __future__ import annotations

import gc
import threading

from globaltables.runtime.collector_hold import hold, release
from globaltables.sim.collector import SIMULATION_THRESHOLDS, simulation_collector


def test_holders_released_out_of_order_give_back_the_thresholds_from_before_the_first():
    before = gc.get_threshold()
    assert before != SIMULATION_THRESHOLDS
    hold(SIMULATION_THRESHOLDS)
    hold(SIMULATION_THRESHOLDS)
    release()  # the first holder leaves while the second still simulates
    assert gc.get_threshold() == SIMULATION_THRESHOLDS
    release()
    assert gc.get_threshold() == before


def test_simulations_on_threads_that_finish_out_of_order_restore_the_thresholds():
    before = gc.get_threshold()
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()

    def first():
        with simulation_collector():
            first_in.set()
            second_in.wait(10)
        first_out.set()

    def second():
        first_in.wait(10)
        with simulation_collector():
            second_in.set()
            first_out.wait(10)

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert gc.get_threshold() == before
