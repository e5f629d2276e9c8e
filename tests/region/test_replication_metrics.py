"""Replication lag metrics (region/replication_metrics.py): quantiles of 2 % buckets, as the bucket's upper bound and
placed within the bucket by rank; lag sampled once an apply is durable (after its group commit)."""

from __future__ import annotations

import random

import pytest

from global_engines import TABLE, global_engine
from globaltables.engine.mutation import Mutation
from globaltables.engine.storage.sqlite_store import SqliteStore
from globaltables.region.replication_host import (
    PeerSettings,
    ReplicationHost,
    ReplicationSettings,
    make_clocks,
)
from globaltables.region.replication_metrics import (
    GROWTH,
    LagHistogram,
    interpolated_quantile_of,
    quantile_of,
)


def exact(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@pytest.mark.parametrize("seed", range(5))
def test_the_interpolated_quantile_is_within_a_bucket_of_the_truth_and_the_upper_bound_never_below(seed: int) -> None:
    rng = random.Random(seed)
    lags = [40.0 + rng.expovariate(1 / (0.3 + seed * 0.4)) for _ in range(2000)]
    histogram = LagHistogram()
    for lag in lags:
        histogram.add(lag)
    for q in (0.1, 0.5, 0.9, 0.99):
        truth = exact(lags, q)
        upper = quantile_of(histogram.fine, q)
        placed = interpolated_quantile_of(histogram.fine, q)
        assert upper is not None and placed is not None
        assert truth <= upper <= truth * GROWTH
        assert placed <= upper
        assert abs(placed - truth) <= truth * (GROWTH - 1)
    # Over many quantiles the bucket's upper bound overstates; the placed figure is far closer on average.
    qs = [i / 100 for i in range(5, 96)]
    upper_error = sum(quantile_of(histogram.fine, q) - exact(lags, q) for q in qs) / len(qs)
    placed_error = sum(abs(interpolated_quantile_of(histogram.fine, q) - exact(lags, q)) for q in qs) / len(qs)
    assert upper_error > 0.1  # about half a bucket, 0.4 ms at 40 ms
    assert placed_error < upper_error / 2


def test_quantiles_of_nothing_and_of_one_bucket() -> None:
    assert interpolated_quantile_of({}, 0.5) is None
    histogram = LagHistogram()
    histogram.add(40.0, 10)
    upper = GROWTH ** max(histogram.fine)
    assert quantile_of(histogram.fine, 0.5) == pytest.approx(upper)
    lower = upper / GROWTH
    assert interpolated_quantile_of(histogram.fine, 0.5) == pytest.approx((lower + upper) / 2)
    assert interpolated_quantile_of(histogram.fine, 0.5, maximum=40.0) == 40.0  # the exact maximum caps it
    histogram.add(0.0)
    assert interpolated_quantile_of(histogram.fine, 0.0) == 0.0  # the lowest bucket starts at 0
    assert histogram.summary()["sum_ms"] == 400.0


def test_lag_is_sampled_only_once_the_group_commit_holding_the_apply_committed(tmp_path) -> None:
    engine, _clock = global_engine("eu-west-1", store=SqliteStore(tmp_path / "region.db"))
    settings = ReplicationSettings(peers=(PeerSettings("us-east-1"),), secret="s")
    host = ReplicationHost(engine, settings, *make_clocks(settings))
    record = Mutation(1, None, "v/us-east-1", {"pk": {"S": "a"}}, 1_700_000_000_000, False, 10)

    def applied() -> int:
        histogram = host.metrics.lag.get(("us-east-1", TABLE))
        return 0 if histogram is None else histogram.count

    engine.begin_group()
    host._applied("us-east-1", TABLE, [record])
    assert applied() == 0  # not durable yet
    engine.commit_group()
    assert applied() == 1
    host._applied("us-east-1", TABLE, [record])  # outside a group: durable at once
    assert applied() == 2
