"""Replication lag per link, as a histogram, for `/metrics` (Prometheus text format) and `/control/status` (JSON).

Theory of operation
- A link is (source region, table, receiving region). Lag is measured where records apply, in the receiving region:
  for every record a Ship applied, `apply time - commit time`, with the apply time read from this machine's
  *unskewed* wall clock (`time.time()`, never the region's skewed clock) and the commit time the record's
  `commit_ms`, the source region's wall clock at commit. All regions of a topology run on one machine and share its
  clock, so without clock faults the difference is exact; a clock offset injected into the *source* region (topology
  `clock_offset_ms` or a clock fault) shifts that link's lag by the offset, since `commit_ms` is read from the
  source's skewed clock (the same clock its streams show). The receiving region's own skew never enters.
- DynamoDB publishes `ReplicationLatency` in the source Region with dimensions TableName and ReceivingRegion; here
  each region publishes the links *into* it (the measurement is made there), labelled TableName, ReceivingRegion and
  SourceRegion, so the union of every region's `/metrics` covers every link. `PendingReplicationCount` (a testbed
  extra; DynamoDB publishes it only for legacy 2017 tables) is published by the source, per TableName and
  ReceivingRegion: records of its own not yet acknowledged by the receiver.
- A record's lag is sampled once its apply is durable: a replicated batch applied inside a group commit
  (region/group_commit.py) is timed after the group committed, so the figure includes the commit, as a reader of
  the receiving region sees it.
- Quantiles come from log-spaced buckets 2 % wide; the count, sum and maximum are exact. `quantile_of` gives the
  upper bound of the bucket a quantile falls in (never below the true value, up to 2 % above: 0.8 ms at 40 ms,
  0.4 ms on average); `interpolated_quantile_of` places it within that bucket by rank, as if the bucket's samples
  were spread evenly over it (Prometheus's histogram_quantile does the same), so it is within the bucket's width
  of the true value on either side and unbiased for a smooth distribution: the figure to compare with a floor
  closer than a bucket is wide (bench/replication.py shows both). The Prometheus histogram uses fixed buckets,
  finer around typical link delays.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

GROWTH = 1.02  # width of a quantile bucket: 2 %
LOG_GROWTH = math.log(GROWTH)
_FLOOR_INDEX = -233  # the bucket of every lag up to 0.01 ms (from 0)
EXPOSED_BUCKETS_MS = (
    1, 2, 5, 10, 15, 20, 25, 30, 35, 40, 42, 44, 46, 48, 50, 55, 60, 70, 80, 90, 100, 120, 150, 200, 250, 300, 400,
    500, 750, 1000, 1500, 2000, 3000, 5000, 10000, 20000, 30000, 60000, 120000, 300000,
)  # fmt: skip


class LagHistogram:
    """Lags in milliseconds: exact count, sum and maximum; quantiles from 2 % buckets."""

    __slots__ = ("count", "exposed", "fine", "max", "sum")

    def __init__(self) -> None:
        self.count = 0
        self.sum = 0.0
        self.max = 0.0
        self.fine: dict[int, int] = {}  # bucket index -> count; bucket i holds lags in (GROWTH**(i-1), GROWTH**i]
        self.exposed = [0] * (len(EXPOSED_BUCKETS_MS) + 1)  # per exposed bucket (not cumulative); last: +Inf

    def add(self, lag_ms: float, count: int = 1) -> None:
        """`count` samples of the same lag."""
        lag_ms = max(lag_ms, 0.0)
        self.count += count
        self.sum += lag_ms * count
        self.max = max(self.max, lag_ms)
        index = math.ceil(math.log(lag_ms) / LOG_GROWTH) if lag_ms > 0.01 else _FLOOR_INDEX
        self.fine[index] = self.fine.get(index, 0) + count
        self.exposed[bisect_left(EXPOSED_BUCKETS_MS, lag_ms)] += count

    def quantile(self, q: float) -> float | None:
        return quantile_of(self.fine, q, self.max)

    def summary(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "p50_ms": _round(self.quantile(0.5)),
            "p99_ms": _round(self.quantile(0.99)),
            "max_ms": round(self.max, 3),
            "mean_ms": _round(self.sum / self.count if self.count else None),
            "sum_ms": round(self.sum, 3),  # exact, so a client can take the mean of the interval between readings
            # Sparse 2 % buckets (upper bound index -> count), so a client can subtract two readings and take the
            # quantiles of the interval between them (bench/replication.py does).
            "buckets": {str(index): count for index, count in sorted(self.fine.items())},
        }


def quantile_of(fine: Mapping[int, int], q: float, maximum: float | None = None) -> float | None:
    """The q-quantile of sparse 2 % buckets (the upper bound of the bucket it falls in, capped by `maximum`)."""
    return _bucket_quantile(fine, q, maximum, placed=False)


def interpolated_quantile_of(fine: Mapping[int, int], q: float, maximum: float | None = None) -> float | None:
    """The q-quantile of sparse 2 % buckets, placed within its bucket by rank (module doc), capped by `maximum`."""
    return _bucket_quantile(fine, q, maximum, placed=True)


def _bucket_quantile(fine: Mapping[int, int], q: float, maximum: float | None, placed: bool) -> float | None:
    total = sum(fine.values())
    if total <= 0:
        return None
    rank = q * total
    seen = 0
    for index in sorted(fine):
        count = fine[index]
        if count > 0 and seen + count >= rank:
            value = GROWTH**index
            if placed:
                lower = 0.0 if index <= _FLOOR_INDEX else GROWTH ** (index - 1)
                value = lower + (value - lower) * (rank - seen) / count
            return min(value, maximum) if maximum is not None else value
        seen += count
    return maximum


def bucket_difference(after: Mapping[str, int], before: Mapping[str, int]) -> dict[int, int]:
    """The sparse buckets of the interval between two readings of `summary()["buckets"]`."""
    return {int(k): v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0) > 0}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


class ReplicationMetrics:
    """Lag histograms of the links into one region, keyed (source region, table)."""

    def __init__(self, region: str, wall_time) -> None:
        self.region = region
        self._wall_time = wall_time  # the unskewed wall clock, seconds (time.time)
        self.lag: dict[tuple[str, str], LagHistogram] = {}

    def on_applied(self, origin: str, table: str, records: Sequence[Any]) -> None:
        """The receiver applied these records (replication/receiver.py): one lag sample each."""
        if not records:
            return
        histogram = self.lag.get((origin, table))
        if histogram is None:
            histogram = self.lag[(origin, table)] = LagHistogram()
        now_ms = self._wall_time() * 1000.0
        # Records committed in the same millisecond (a batch write, a burst) have the same lag: one sample each,
        # added once per distinct commit time (a replicated backlog of 500 records holds a few dozen).
        commits: dict[int, int] = {}
        for record in records:
            commits[record.commit_ms] = commits.get(record.commit_ms, 0) + 1
        for commit_ms, count in commits.items():
            histogram.add(now_ms - commit_ms, count)

    def ensure(self, links: Iterable[tuple[str, str]]) -> None:
        """Make every inbound (source, table) link visible, even before its first record."""
        for key in links:
            self.lag.setdefault(key, LagHistogram())

    def status(self) -> list[dict[str, Any]]:
        return [
            {"table": table, "source_region": source, "receiving_region": self.region, **histogram.summary()}
            for (source, table), histogram in sorted(self.lag.items())
        ]


def _labels(**labels: str) -> str:
    def escape(value: str) -> str:
        return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

    return "{" + ",".join(f'{name}="{escape(value)}"' for name, value in labels.items()) + "}"


def _number(value: float) -> str:
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


def prometheus_text(metrics: ReplicationMetrics, pending: Mapping[tuple[str, str], int]) -> str:
    """The Prometheus text exposition (format 0.0.4) of the lag histograms and pending counts.

    `pending[(table, receiving region)]` is this region's unacknowledged records per outbound link."""
    lines = [
        "# HELP ReplicationLatency Milliseconds from a write's commit in the source region to its apply in the "
        "receiving region (measured in the receiving region on the unskewed clock).",
        "# TYPE ReplicationLatency histogram",
    ]
    quantiles: list[str] = []
    for (source, table), histogram in sorted(metrics.lag.items()):
        labels = {"TableName": table, "ReceivingRegion": metrics.region, "SourceRegion": source}
        cumulative = 0
        for bound, count in zip(EXPOSED_BUCKETS_MS, histogram.exposed, strict=False):
            cumulative += count
            lines.append(f"ReplicationLatency_bucket{_labels(**labels, le=_number(bound))} {cumulative}")
        lines.append(f'ReplicationLatency_bucket{_labels(**labels, le="+Inf")} {histogram.count}')
        lines.append(f"ReplicationLatency_sum{_labels(**labels)} {_number(round(histogram.sum, 3))}")
        lines.append(f"ReplicationLatency_count{_labels(**labels)} {histogram.count}")
        for name, value in (
            ("0.5", histogram.quantile(0.5)),
            ("0.99", histogram.quantile(0.99)),
            ("1", histogram.max if histogram.count else None),
        ):
            shown = "NaN" if value is None else _number(round(value, 3))
            quantiles.append(f"ReplicationLatencyQuantile{_labels(**labels, quantile=name)} {shown}")
    lines += [
        "# HELP ReplicationLatencyQuantile p50, p99 and maximum (quantile 1) of ReplicationLatency since start.",
        "# TYPE ReplicationLatencyQuantile gauge",
        *quantiles,
        "# HELP PendingReplicationCount Writes of this region not yet acknowledged by the receiving region "
        "(a testbed extra: DynamoDB publishes it only for legacy 2017.11.29 tables).",
        "# TYPE PendingReplicationCount gauge",
    ]
    for (table, receiver), count in sorted(pending.items()):
        lines.append(
            f"PendingReplicationCount{_labels(TableName=table, ReceivingRegion=receiver, SourceRegion=metrics.region)}"
            f" {count}"
        )
    return "\n".join(lines) + "\n"
