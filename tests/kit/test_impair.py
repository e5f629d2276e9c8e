"""`impair`: the link faults a kit test can put on a link (harness.IMPAIRMENTS), the same names in both modes."""

from __future__ import annotations


def test_impair_names_what_it_can_do_when_asked_for_something_else():
    import pytest

    from globaltables.testing.simulated import simulated_harness
    from globaltables.testing.spec import load_spec

    harness = simulated_harness(load_spec(None), 1)
    try:
        with pytest.raises(TypeError, match="bandwidth_kbps"):
            harness.impair("us-east-1", "eu-west-1", latency_ms=5)
        with pytest.raises(TypeError, match="got distribution"):  # the delay's shape is not an impairment
            harness.impair("us-east-1", "eu-west-1", distribution="pareto")
        harness.impair("us-east-1", "eu-west-1", loss=0.5, loss_burst=3)
        assert harness.cluster.network.link_settings("eu-west-1", "us-east-1").loss_burst == 3
        assert [op.f for op in harness.history.faults()][-1] == "impair"
    finally:
        harness.close()
