"""A region's capacity metrics under CloudWatch's names, for `/metrics` (Prometheus text format 0.0.4), and its
Contributor Insights top keys (capacity-facts §6, §7; docs/capacity.md, decisions 16-19).

What is published, per table (label TableName) and per GSI (TableName, GlobalSecondaryIndexName), since the region
started (counters: a scraper takes rates; CloudWatch's per-minute sums are the increase over a minute):
- ConsumedReadCapacityUnits, ConsumedWriteCapacityUnits (counters): the units the throughput model served; a table's
  own (its LSIs included), not its GSIs'.
- ProvisionedReadCapacityUnits, ProvisionedWriteCapacityUnits (gauges): provisioned tables and GSIs only.
- ReadThrottleEvents, WriteThrottleEvents (counters): one per throttled item on the table and on each GSI it would
  have written, so the table's series excludes GSI events.
- Read/Write{ProvisionedThroughput,KeyRangeThroughput,AccountLimit,MaxOnDemandThroughput}ThrottleEvents (counters):
  the eight per-reason metrics, on the resource whose limit refused.
- ThrottledRequests (counter; TableName, Operation): requests that failed with a throttle; a batch only when every
  item was throttled (a batch that read or wrote anything answers with Unprocessed* and is not counted).
- OnlineIndexPercentageProgress (gauge; TableName, GlobalSecondaryIndexName): while a GSI backfills.
  OnlineIndexConsumedWriteCapacity and OnlineIndexThrottleEvents are not published: a backfill draws no capacity here.
- ContributorInsightsTopKey (gauge; TableName, [GlobalSecondaryIndexName], Rule, Rank, Key): while Contributor
  Insights is enabled, the ten heaviest keys of each rule over the last hour (contributor_insights.py): the rule's
  ConsumedThroughputUnits (PKC, SKC) or ThrottleCount (PKT, SKT). Key is the key's attributes as DynamoDB JSON.

A region whose capacity is unlimited has no throughput model: it publishes the provisioned gauges only.
"""

from __future__ import annotations

from typing import Any

import orjson

from ..engine.throttling import LIMIT_TYPES
from ..engine.values import decode_key_value
from .replication_metrics import _labels, _number

TOP_N = 10
KINDS = (("read", "Read"), ("write", "Write"))


def key_attributes(key_schema, pk: bytes, sk: bytes | None) -> dict:
    """An encoded key as the attributes it stands for (DynamoDB JSON); a multi-attribute key as its bytes' hex."""
    if key_schema.more_hash or key_schema.more_range:
        out: dict[str, Any] = {"partition": pk.hex()}
        if sk is not None:
            out["sort"] = sk.hex()
        return out
    out = {key_schema.hash_name: decode_key_value(key_schema.hash_type, pk)}
    if sk is not None and key_schema.range_name is not None:
        out[key_schema.range_name] = decode_key_value(key_schema.range_type, sk)
    return out


def top_keys(engine, n: int = TOP_N) -> list[dict[str, Any]]:
    """Every enabled Contributor Insights rule's heaviest keys: [{table, index, rule, rank, key, value}], the
    table a "hottest keys" report shows."""
    rows: list[dict[str, Any]] = []
    now = engine.clock.monotonic()
    for (table_name, index_name), setting in sorted(
        engine.contributor_insights.settings.items(), key=lambda pair: (pair[0][0], pair[0][1] or "")
    ):
        table = engine.tables.get(table_name)
        tracker = setting.tracker
        if table is None or tracker is None:
            continue
        key_schema = table.key if index_name is None else table.index(index_name).key
        for rule in setting.rule_names(tracker.has_sort_key):
            code = rule.split("-")[1]
            for rank, (key, value) in enumerate(tracker.top(code, now, n=n), 1):
                pk, sk = key if isinstance(key, tuple) else (key, None)
                rows.append(
                    {
                        "table": table_name, "index": index_name, "rule": rule, "rank": rank,
                        "key": key_attributes(key_schema, pk, sk), "value": value,
                    }
                )  # fmt: skip
    return rows


def _resource_labels(table: str, index: str | None) -> dict[str, str]:
    return {"TableName": table} if index is None else {"TableName": table, "GlobalSecondaryIndexName": index}


def prometheus_text(engine) -> str:
    """The capacity metrics of every table of `engine` (module docstring)."""
    model = engine.throughput
    series: dict[str, tuple[str, str, list[str]]] = {}

    def add(name: str, kind: str, help_text: str, labels: dict[str, str], value: float) -> None:
        entry = series.get(name)
        if entry is None:
            entry = series[name] = (kind, help_text, [])
        entry[2].append(f"{name}{_labels(**labels)} {_number(value)}")

    for name in sorted(engine.tables):
        table = engine.tables[name]
        specs = {None: table, **{index.name: index for index in table.gsis}}
        for index_name, spec in specs.items():
            labels = _resource_labels(name, index_name)
            if table.billing_mode != "PAY_PER_REQUEST" and spec.provisioned:
                for member, metric in (("ReadCapacityUnits", "Read"), ("WriteCapacityUnits", "Write")):
                    add(f"Provisioned{metric}CapacityUnits", "gauge", f"Provisioned {metric.lower()} capacity units.",
                        labels, spec.provisioned.get(member, 0))  # fmt: skip
            if index_name is not None:
                progress = engine.indexes.backfill_progress(name, index_name)
                if progress is not None:
                    add("OnlineIndexPercentageProgress", "gauge", "How far the GSI's backfill is, in percent.",
                        labels, round(progress, 3))  # fmt: skip
        state = model.state(name) if model is not None else None
        if state is None:
            continue
        for index_name, resource in state.resources.items():
            labels = _resource_labels(name, index_name)
            for kind, word in KINDS:
                add(f"Consumed{word}CapacityUnits", "counter", f"{word} capacity units consumed.", labels,
                    resource.consumed[kind])  # fmt: skip
            for kind, word in KINDS:
                add(f"{word}ThrottleEvents", "counter", f"Throttled {word.lower()} events.", labels,
                    resource.events[kind])  # fmt: skip
            for kind, word in KINDS:
                for limit in LIMIT_TYPES:
                    metric = f"{word}{limit.removesuffix('Exceeded')}ThrottleEvents"
                    add(metric, "counter", f"{word} events throttled by {limit}.", labels,
                        resource.reasons.get((kind, limit), 0))  # fmt: skip
        for operation, count in sorted(state.throttled_requests.items()):
            add("ThrottledRequests", "counter", "Requests that failed with a throttle (a batch: every item throttled).",
                {"TableName": name, "Operation": operation}, count)  # fmt: skip
    for row in top_keys(engine):
        labels = {
            **_resource_labels(row["table"], row["index"]),
            "Rule": row["rule"], "Rank": str(row["rank"]), "Key": orjson.dumps(row["key"]).decode(),
        }  # fmt: skip
        add("ContributorInsightsTopKey", "gauge",
            "Contributor Insights: a rule's heaviest keys over the last hour (ConsumedThroughputUnits or ThrottleCount).",
            labels, round(row["value"], 3))  # fmt: skip
    lines: list[str] = []
    for name, (kind, help_text, samples) in series.items():
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", *samples]
    return "\n".join(lines) + "\n" if lines else ""
