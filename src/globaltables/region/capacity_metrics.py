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

`capacity_document` is the one place these numbers are gathered: `/metrics` renders it as Prometheus text and
`GET /control/capacity` answers it as JSON (the experiment runner's results.json `capacity` section), so the two
never disagree.
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


def _resource_metrics(resource) -> dict[str, float]:
    """One modelled resource's counters under their CloudWatch names."""
    metrics: dict[str, float] = {}
    for kind, word in KINDS:
        metrics[f"Consumed{word}CapacityUnits"] = resource.consumed[kind]
    for kind, word in KINDS:
        metrics[f"{word}ThrottleEvents"] = resource.events[kind]
    for kind, word in KINDS:
        for limit in LIMIT_TYPES:
            metrics[f"{word}{limit.removesuffix('Exceeded')}ThrottleEvents"] = resource.reasons.get((kind, limit), 0)
    return metrics


def capacity_document(engine) -> dict[str, Any]:
    """Every capacity metric and top key of `engine` as JSON, the one source of both `/metrics` (prometheus_text)
    and `GET /control/capacity`, so the two never disagree:

        {"modelled": bool, "tables": {table: {<metric>: value, ..., "ThrottledRequests": n,
         "ThrottledRequestsByOperation": {operation: n}, "top_keys": {rule: [{rank, key, value}]},
         "indexes": {index: {<metric>: value, ..., "top_keys": {...}}}}}}

    Metrics are the module docstring's, under their CloudWatch names, present as /metrics publishes them (the
    provisioned gauges on provisioned resources only, the counters only where capacity is modelled)."""
    model = engine.throughput
    tables: dict[str, dict[str, Any]] = {}
    for name in sorted(engine.tables):
        table = engine.tables[name]
        entry: dict[str, Any] = {"indexes": {}}
        specs = {None: table, **{index.name: index for index in table.gsis}}
        for index_name, spec in specs.items():
            metrics = entry if index_name is None else entry["indexes"].setdefault(index_name, {})
            if table.billing_mode != "PAY_PER_REQUEST" and spec.provisioned:
                for member, metric in (("ReadCapacityUnits", "Read"), ("WriteCapacityUnits", "Write")):
                    metrics[f"Provisioned{metric}CapacityUnits"] = spec.provisioned.get(member, 0)
            if index_name is not None:
                progress = engine.indexes.backfill_progress(name, index_name)
                if progress is not None:
                    metrics["OnlineIndexPercentageProgress"] = round(progress, 3)
        state = model.state(name) if model is not None else None
        if state is not None:
            for index_name, resource in state.resources.items():
                metrics = entry if index_name is None else entry["indexes"].setdefault(index_name, {})
                metrics.update(_resource_metrics(resource))
            by_operation = dict(sorted(state.throttled_requests.items()))
            entry["ThrottledRequests"] = sum(by_operation.values())
            entry["ThrottledRequestsByOperation"] = by_operation
        tables[name] = entry
    for row in top_keys(engine):
        entry = tables.get(row["table"])
        if entry is None:
            continue
        metrics = entry if row["index"] is None else entry["indexes"].setdefault(row["index"], {})
        metrics.setdefault("top_keys", {}).setdefault(row["rule"], []).append(
            {"rank": row["rank"], "key": row["key"], "value": row["value"]}
        )
    return {"modelled": model is not None, "tables": tables}


_GAUGES = {
    "ProvisionedReadCapacityUnits": "Provisioned read capacity units.",
    "ProvisionedWriteCapacityUnits": "Provisioned write capacity units.",
    "OnlineIndexPercentageProgress": "How far the GSI's backfill is, in percent.",
}
_TOP_KEY_HELP = (
    "Contributor Insights: a rule's heaviest keys over the last hour (ConsumedThroughputUnits or ThrottleCount)."
)


def _counter_help() -> dict[str, str]:
    helps: dict[str, str] = {}
    for _kind, word in KINDS:
        helps[f"Consumed{word}CapacityUnits"] = f"{word} capacity units consumed."
    for _kind, word in KINDS:
        helps[f"{word}ThrottleEvents"] = f"Throttled {word.lower()} events."
    for _kind, word in KINDS:
        for limit in LIMIT_TYPES:
            helps[f"{word}{limit.removesuffix('Exceeded')}ThrottleEvents"] = f"{word} events throttled by {limit}."
    return helps


_COUNTERS = _counter_help()  # a resource's counters (ThrottledRequests is the table's, per operation)


def prometheus_text(engine) -> str:
    """The capacity metrics of every table of `engine` (module docstring), rendered from capacity_document."""
    series: dict[str, tuple[str, str, list[str]]] = {}

    def add(name: str, kind: str, help_text: str, labels: dict[str, str], value: float) -> None:
        entry = series.get(name)
        if entry is None:
            entry = series[name] = (kind, help_text, [])
        entry[2].append(f"{name}{_labels(**labels)} {_number(value)}")

    def resources(name: str, entry: dict[str, Any]):
        yield None, entry
        yield from entry["indexes"].items()

    document = capacity_document(engine)
    for name, entry in document["tables"].items():
        for index_name, metrics in resources(name, entry):
            for metric, value in metrics.items():
                if metric in _GAUGES:
                    add(metric, "gauge", _GAUGES[metric], _resource_labels(name, index_name), value)
        for index_name, metrics in resources(name, entry):
            for metric, value in metrics.items():
                if metric in _COUNTERS:
                    add(metric, "counter", _COUNTERS[metric], _resource_labels(name, index_name), value)
        for operation, count in entry.get("ThrottledRequestsByOperation", {}).items():
            add("ThrottledRequests", "counter", "Requests that failed with a throttle (a batch: every item throttled).",
                {"TableName": name, "Operation": operation}, count)  # fmt: skip
    for name, entry in document["tables"].items():
        for index_name, metrics in resources(name, entry):
            for rule, rows in metrics.get("top_keys", {}).items():
                for row in rows:
                    labels = {
                        **_resource_labels(name, index_name),
                        "Rule": rule, "Rank": str(row["rank"]), "Key": orjson.dumps(row["key"]).decode(),
                    }  # fmt: skip
                    add("ContributorInsightsTopKey", "gauge", _TOP_KEY_HELP, labels, round(row["value"], 3))
    lines: list[str] = []
    for name, (kind, help_text, samples) in series.items():
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", *samples]
    return "\n".join(lines) + "\n" if lines else ""
