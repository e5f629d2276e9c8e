"""results.json: the numbers of one experiment, in the stable schema docs/results.md documents (and SCHEMA checks).

Latency statistics come from raw samples (an experiment has 10^3..10^6 of them): nearest-rank percentiles over the
exact values, in milliseconds rounded to 0.001.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from .load import LagSample, Sample, ThrottleSample
from .sdk_retries import THROTTLES as THROTTLE_ERRORS

RESULTS_VERSION = 1
PERCENTILES = (("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("p999", 99.9))


def percentile(sorted_values: Sequence[float], pct: float) -> float:
    """Nearest rank: the smallest value with at least pct% of the values at or below it."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(pct / 100.0 * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def summary_ms(values_s: Iterable[float], keys: Sequence[tuple[str, float]] = PERCENTILES) -> dict[str, Any]:
    values = sorted(value * 1000.0 for value in values_s)
    result: dict[str, Any] = {"count": len(values)}
    for name, pct in keys:
        result[name] = round(percentile(values, pct), 3) if values else None
    result["max"] = round(values[-1], 3) if values else None
    return result


def latency_table(samples: Iterable[Sample]) -> dict[str, dict[str, dict[str, Any]]]:
    """latency_ms[region][op]: answered attempts (ok or fail) of the measured period, from intended start."""
    grouped: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for sample in samples:
        if sample.measured and sample.outcome != "info":
            grouped[sample.region][sample.op].append(sample.done - sample.intended)
    return {
        region: {op: summary_ms(values) for op, values in sorted(ops.items())}
        for region, ops in sorted(grouped.items())
    }


def error_table(samples: Iterable[Sample], regions: Iterable[str]) -> dict[str, dict[str, int]]:
    errors: dict[str, Counter] = {region: Counter() for region in regions}
    for sample in samples:
        if sample.error is not None and not sample.probe:
            errors.setdefault(sample.region, Counter())[sample.error] += 1
    return {region: dict(sorted(counter.items())) for region, counter in sorted(errors.items())}


def outcome_table(samples: Iterable[Sample]) -> dict[str, dict[str, int]]:
    counts: dict[str, Counter] = defaultdict(Counter)
    for sample in samples:
        if not sample.probe:
            counts[sample.region][sample.outcome] += 1
    return {region: {k: counts[region].get(k, 0) for k in ("ok", "fail", "info")} for region in sorted(counts)}


def lag_table(lag: Iterable[LagSample]) -> dict[str, dict[str, Any]]:
    grouped: dict[str, list[float]] = defaultdict(list)
    for sample in lag:
        grouped[f"{sample.source}->{sample.target}"].append(sample.lag_s)
    return {link: summary_ms(values, (("p50", 50.0), ("p99", 99.0))) for link, values in sorted(grouped.items())}


def timeline(
    samples: Iterable[Sample], origin: float, bucket_s: float = 1.0, throttles: Iterable[ThrottleSample] = ()
) -> list[dict[str, Any]]:
    """Per second since `origin` (the start of measurement): completions, p99 latency and throttled attempts, all
    regions together."""
    buckets: dict[int, list[float]] = defaultdict(list)
    for sample in samples:
        if sample.outcome != "info" and not sample.probe:
            buckets[math.floor((sample.done - origin) / bucket_s)].append(sample.done - sample.intended)
    throttled: Counter = Counter()
    for throttle in throttles:
        if not throttle.probe:
            throttled[math.floor((throttle.at - origin) / bucket_s)] += 1
    rows = []
    for index in sorted(set(buckets) | set(throttled)):
        values = sorted(v * 1000.0 for v in buckets.get(index, []))
        p99 = round(percentile(values, 99), 3) if values else None
        rows.append({"t_s": index * bucket_s, "completed": len(values), "p99_ms": p99, "throttled": throttled[index]})
    return rows


def throttle_table(
    throttles: Iterable[ThrottleSample],
    retries: int,
    samples: Iterable[Sample],
    replication_deferred: int = 0,
    origin: float = 0.0,
    bucket_s: float = 1.0,
) -> dict[str, Any]:
    """Throttled attempts (workload, not the lag probe): in all, per ThrottlingReasons reason, per region and reason,
    per error, and per second since `origin` by reason; the SDK's retries; the operations that ended throttled
    (after any retries); and the Ships the regions' receivers deferred for lack of write capacity (replication
    back-pressure)."""
    per_second: dict[int, Counter] = defaultdict(Counter)
    by_reason: Counter = Counter()
    by_error: Counter = Counter()
    by_region: dict[str, Counter] = defaultdict(Counter)
    attempts = 0
    for throttle in throttles:
        if throttle.probe:
            continue
        attempts += 1
        by_error[throttle.error] += 1
        for reason in throttle.reasons or ("(none given)",):
            by_reason[reason] += 1
            by_region[throttle.region][reason] += 1
            per_second[math.floor((throttle.at - origin) / bucket_s)][reason] += 1
    failed = sum(1 for sample in samples if not sample.probe and sample.error in THROTTLE_ERRORS)
    return {
        "attempts": attempts,
        "by_reason": dict(sorted(by_reason.items())),
        "by_region": {region: dict(sorted(counts.items())) for region, counts in sorted(by_region.items())},
        "by_error": dict(sorted(by_error.items())),
        "retries": retries,
        "operations_failed": failed,
        "replication_deferred": replication_deferred,
        "timeline": [
            {"t_s": index * bucket_s, "by_reason": dict(sorted(per_second[index].items()))}
            for index in sorted(per_second)
        ],
    }



# The schema the tests hold results.json to; docs/results.md explains every field.
_STATS = {
    "type": "object",
    "required": ["count", "p50", "p90", "p99", "p999", "max"],
    "properties": {
        "count": {"type": "integer", "minimum": 0},
        **{k: {"type": ["number", "null"]} for k in ("p50", "p90", "p99", "p999", "max")},
    },
}
_TOP_KEYS = {
    "type": "object",
    "additionalProperties": {
        "type": "array",
        "items": {
            "type": "object",
            "required": ["rank", "key", "value"],
            "properties": {
                "rank": {"type": "integer", "minimum": 1},
                "key": {"type": "object"},
                "value": {"type": "number"},
            },
        },
    },
}
_CAPACITY_METRICS = {
    "^(Consumed|Provisioned)(Read|Write)CapacityUnits$|ThrottleEvents$|^OnlineIndexPercentageProgress$": {
        "type": "number",
        "minimum": 0,
    },
}
_CAPACITY_TABLE = {
    "type": "object",
    "required": ["indexes"],
    "patternProperties": _CAPACITY_METRICS,
    "properties": {
        "ThrottledRequests": {"type": "integer", "minimum": 0},
        "ThrottledRequestsByOperation": {"type": "object", "additionalProperties": {"type": "integer"}},
        "top_keys": _TOP_KEYS,
        "indexes": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "patternProperties": _CAPACITY_METRICS,
                "properties": {"top_keys": _TOP_KEYS},
            },
        },
    },
}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": [
        "results_version",
        "name",
        "topology",
        "mode",
        "seed",
        "regions",
        "workload",
        "chaos",
        "started_at",
        "duration_s",
        "throughput",
        "latency_ms",
        "outcomes",
        "errors",
        "replication_lag_ms",
        "conflicts",
        "lost_writes",
        "checks",
        "convergence_ms",
        "quiesced",
        "faults",
        "completed",
    ],
    "properties": {
        "results_version": {"const": RESULTS_VERSION},
        "name": {"type": "string"},
        "topology": {"type": "string"},
        "mode": {"enum": ["mrec", "mrsc"]},
        "conflict_clock": {"enum": ["hlc", "wall"]},
        "seed": {"type": "integer"},
        "regions": {"type": "array", "items": {"type": "string"}},
        "workload": {"type": "object", "required": ["table", "duration_s", "rate_per_region", "mix"]},
        "chaos": {"type": ["string", "null"]},
        "started_at": {"type": "string"},
        "duration_s": {"type": "number"},
        "throughput": {
            "type": "object",
            "additionalProperties": {"type": "object", "required": ["target_per_s", "achieved_per_s"]},
        },
        "latency_ms": {"type": "object", "additionalProperties": {"type": "object", "additionalProperties": _STATS}},
        "outcomes": {"type": "object", "additionalProperties": {"type": "object", "required": ["ok", "fail", "info"]}},
        "errors": {
            "type": "object",
            "additionalProperties": {"type": "object", "additionalProperties": {"type": "integer"}},
        },
        "replication_lag_ms": {
            "type": "object",
            "propertyNames": {"pattern": "^[^>]+->[^>]+$"},
            "additionalProperties": {"type": "object", "required": ["count", "p50", "p99", "max"]},
        },
        "conflicts": {
            "type": "object",
            "required": ["replicated_write_conflicts", "lww_overwrites", "replicated_records"],
            "properties": {
                k: {"type": "integer"} for k in ("replicated_write_conflicts", "lww_overwrites", "replicated_records")
            },
        },
        "checks": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "passed", "verdict", "detail", "undecided"],
                "properties": {
                    "name": {"type": "string"},
                    "passed": {"type": "boolean"},
                    "verdict": {"enum": ["valid", "invalid", "unknown"]},
                    "detail": {"type": "string"},
                    "undecided": {"type": "array", "items": {"type": "string"}},
                    "stats": {"type": "object"},
                    "findings": {"type": "array"},
                },
            },
        },
        "staleness": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "required": ["reads", "stale_reads", "max_versions", "max_ms", "mean_ms"],
            },
        },
        "convergence_ms": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["after", "ms"],
                "properties": {"ms": {"type": ["number", "null"]}},
            },
        },
        "lost_writes": {
            "type": "object",
            "required": ["count", "writes", "replicated", "at_origin", "unacknowledged", "never_read", "by_pair", "by_region",
                         "by_table", "by_cause"],
            "properties": {
                **{k: {"type": "integer", "minimum": 0}
                   for k in ("count", "writes", "replicated", "at_origin", "unacknowledged", "never_read")},
                "by_pair": {"type": "object", "propertyNames": {"pattern": "^[^>]+->[^>]+$"},
                            "additionalProperties": {"type": "integer"}},
                "by_region": {"type": "object", "additionalProperties": {"type": "integer"}},
                "by_table": {"type": "object", "additionalProperties": {"type": "integer"}},
                "by_cause": {"type": "object", "required": ["skew", "concurrent", "superseded"],
                             "additionalProperties": {"type": "integer"}},
            },
        },
        "capacity": {  # experiment/capacity.py; region/capacity_metrics.capacity_document per region
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "required": ["modelled", "contributor_insights", "tables"],
                "properties": {
                    "modelled": {"type": "boolean"},
                    "contributor_insights": {"type": "boolean"},
                    "tables": {"type": "object", "additionalProperties": _CAPACITY_TABLE},
                },
            },
        },
        "quiesced": {"type": "boolean"},
        "faults": {"type": "array"},
        "completed": {"type": "boolean"},
        # Only a run on the simulator (`run --simulated`, experiment/simulated_run.py) has these.
        "simulated": {"type": "boolean"},
        "virtual_time": {
            "type": "object",
            "required": ["end_s", "events", "epoch"],
            "properties": {"end_s": {"type": "number"}, "events": {"type": "integer"}, "epoch": {"type": "number"}},
        },
        "replay": {"type": "string"},
    },
}
