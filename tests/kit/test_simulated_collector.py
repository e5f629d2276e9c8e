"""The simulated harness runs with the simulation collector settings (sim/collector.py) and restores the old ones."""

from __future__ import annotations


def test_the_simulated_harness_holds_the_simulation_collector_and_gives_the_old_one_back():
    import gc

    from globaltables.sim.collector import SIMULATION_THRESHOLDS
    from globaltables.testing.simulated import simulated_harness
    from globaltables.testing.spec import load_spec

    before = gc.get_threshold()
    assert before != SIMULATION_THRESHOLDS
    harness = simulated_harness(load_spec(None), 1)
    try:
        assert gc.get_threshold() == SIMULATION_THRESHOLDS
    finally:
        harness.close()
    assert gc.get_threshold() == before
