"""The run's capacity phase: Contributor Insights switched on at the start, every region's capacity counters and
top keys collected at the end (results.json `capacity`, report.md's "Hottest keys"; docs/results.md).

Why here and not from the load generator: the generator sees the throttles its own requests met; the regions also
count what replication drew on the same partitions, and only the regions know which keys were hottest. The numbers
come from `GET /control/capacity` (region/control.py), which answers the same document `/metrics` renders
(region/capacity_metrics.capacity_document), so results.json and a scraper never disagree.

Rules:
1. Contributor Insights (ACCESSED_AND_THROTTLED_KEYS) is enabled on every declared table and GSI of each replica
   whose capacity is modelled (an unlimited region counts no keys), unless the workload says
   `contributor_insights: false`. It is enabled through the data plane (UpdateContributorInsights), as a client
   would, before the warm-up, so the warm-up's requests are counted too.
2. The counters are the regions' own since they started: a fresh deployment's are the run's; an attached one's
   include what came before. An attached region without the route (404) is left out of the section.
"""

from __future__ import annotations

import asyncio
import urllib.error
from typing import Any

from ..region.control_client import ControlError
from .dynamodb_client import dynamodb

MODE = "ACCESSED_AND_THROTTLED_KEYS"
ACCESSED, THROTTLED = "PKC", "PKT"  # Contributor Insights rule codes: partition keys by units, by throttles
HOTTEST_SHOWN = 3  # ranks per region and table in report.md


class CapacityPhaseError(OSError):
    """A region refused to enable Contributor Insights. An OSError, as the control client's ControlError is, so the
    runner treats it as any region that answered wrongly: the run could not complete (exit 2)."""


def insight_targets(topology) -> list[dict[str, str]]:
    """UpdateContributorInsights targets: every declared table and each of its GSIs."""
    targets = []
    for spec in topology.tables:
        targets.append({"TableName": spec.name})
        for index in spec.definition.get("GlobalSecondaryIndexes") or []:
            targets.append({"TableName": spec.name, "IndexName": index["IndexName"]})
    return targets


def modelled_replicas(topology, replicas: list[str]) -> list[str]:
    by_name = {region.name: region for region in topology.regions}
    return [name for name in replicas if getattr(by_name.get(name), "capacity", "modelled") == "modelled"]


def insight_regions(topology, workload, replicas: list[str]) -> list[str]:
    """Rule 1: the replicas Contributor Insights is enabled in (none when the workload says so)."""
    if not getattr(workload, "contributor_insights", True):
        return []
    return modelled_replicas(topology, replicas)


def enable_requests(topology) -> list[dict[str, Any]]:
    """Rule 1: the UpdateContributorInsights requests each of those regions gets."""
    return [{**target, "ContributorInsightsAction": "ENABLE", "ContributorInsightsMode": MODE}
            for target in insight_targets(topology)]  # fmt: skip


def capacity_entry(answer: dict[str, Any], insights: bool) -> dict[str, Any]:
    """One region's entry of results.json `capacity`, from its capacity document (GET /control/capacity, or
    capacity_metrics.capacity_document of a simulated region's engine)."""
    return {"modelled": bool(answer.get("modelled")), "contributor_insights": insights,
            "tables": answer.get("tables", {})}  # fmt: skip


async def enable_contributor_insights(run) -> list[str]:
    """Rule 1; the regions where it was enabled."""
    experiment = run.experiment
    topology = experiment.topology
    regions = insight_regions(topology, experiment.workload, run.replicas)
    for region in regions:
        endpoint = run.regions.endpoints[region]
        for body in enable_requests(topology):
            target = {name: body[name] for name in ("TableName", "IndexName") if name in body}
            try:
                await asyncio.to_thread(
                    dynamodb, endpoint, "UpdateContributorInsights", body, region, topology.credentials
                )
            except urllib.error.HTTPError as error:
                detail = error.read().decode(errors="replace")[:300]
                raise CapacityPhaseError(
                    f"enabling Contributor Insights on {target} in {region} failed: HTTP {error.code} {detail}"
                ) from None
    return regions


async def collect_capacity(run) -> dict[str, Any]:
    """{region: {"modelled", "contributor_insights", "tables": {...}}}: each replica's GET /control/capacity."""
    enabled = set(getattr(run, "insights_enabled", ()) or ())
    capacity: dict[str, Any] = {}
    for region in run.replicas:
        try:
            answer = await run.regions.control.call(run.regions.endpoints[region], "/control/capacity", region=region)
        except ControlError as error:
            if error.status != 404:
                raise
            continue  # an attached region older than the route: no counters to report, not a failed run
        capacity[region] = capacity_entry(answer, region in enabled)
    return capacity


# ------------------------------------------------------------------------------------------------ reading it


def rule_rows(resource: dict[str, Any], code: str) -> list[dict[str, Any]]:
    """The rows of the resource's Contributor Insights rule `code` (PKC, PKT, SKC, SKT), by rank."""
    for rule, rows in (resource.get("top_keys") or {}).items():
        if rule.split("-")[1:2] == [code]:
            return sorted(rows, key=lambda row: row["rank"])
    return []


def key_text(key: dict[str, Any]) -> str:
    """A top key as `name=value` pairs (DynamoDB JSON's one type member each; a multi-attribute key as hex)."""
    parts = []
    for name, value in key.items():
        shown = next(iter(value.values())) if isinstance(value, dict) and len(value) == 1 else value
        parts.append(f"{name}={shown}")
    return ", ".join(parts)


def hottest_keys(capacity: dict[str, Any] | None, n: int = HOTTEST_SHOWN) -> list[dict[str, Any]]:
    """[{region, table, rank, accessed: {key, units} | None, throttled: {key, throttles} | None}]: the tables'
    most accessed and most throttled partition keys, rank 1..n, for the reports."""
    rows: list[dict[str, Any]] = []
    for region, found in (capacity or {}).items():
        for table, resource in (found.get("tables") or {}).items():
            accessed, throttled = rule_rows(resource, ACCESSED)[:n], rule_rows(resource, THROTTLED)[:n]
            for rank in range(1, max(len(accessed), len(throttled)) + 1):
                a = accessed[rank - 1] if rank <= len(accessed) else None
                t = throttled[rank - 1] if rank <= len(throttled) else None
                rows.append({
                    "region": region, "table": table, "rank": rank,
                    "accessed": None if a is None else {"key": key_text(a["key"]), "units": round(a["value"], 3)},
                    "throttled": None if t is None else {"key": key_text(t["key"]), "throttles": round(t["value"])},
                })  # fmt: skip
    return rows


def hottest_key_lines(results: dict[str, Any]) -> list[str]:
    """report.md's "Hottest keys" section: per region and table, the partition keys that drew the most capacity
    units and met the most throttles (Contributor Insights), and each table's capacity counters."""
    capacity = results.get("capacity")
    if not capacity:
        return []
    lines = ["", "## Hottest keys (Contributor Insights, per region and table)", ""]
    rows = hottest_keys(capacity)
    if rows:
        lines += [
            "| region | table | rank | most accessed partition key | units | most throttled partition key | throttles |",
            "| --- | --- | ---: | --- | ---: | --- | ---: |",
        ]
        for row in rows:
            a, t = row["accessed"], row["throttled"]
            lines.append(
                f"| {row['region']} | {row['table']} | {row['rank']} | {a['key'] if a else '—'} | "
                f"{format(a['units'], 'g') if a else '—'} | {t['key'] if t else '—'} | {t['throttles'] if t else '—'} |"
            )
    else:
        lines.append("No keys counted (Contributor Insights off, or capacity not modelled).")
    lines += [
        "",
        (
            "| region | table | ConsumedReadCapacityUnits | ConsumedWriteCapacityUnits | ThrottledRequests | "
            "ReadThrottleEvents | WriteThrottleEvents | by reason |"
        ),
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for region, found in capacity.items():
        for table, resource in (found.get("tables") or {}).items():
            if "ConsumedWriteCapacityUnits" not in resource:
                continue
            reasons = ", ".join(
                f"{name} {value}" for name, value in resource.items()
                if name.endswith("ThrottleEvents") and name not in ("ReadThrottleEvents", "WriteThrottleEvents")
                and value
            ) or "none"  # fmt: skip
            lines.append(
                f"| {region} | {table} | {resource['ConsumedReadCapacityUnits']:g} | "
                f"{resource['ConsumedWriteCapacityUnits']:g} | {resource.get('ThrottledRequests', 0)} | "
                f"{resource['ReadThrottleEvents']} | {resource['WriteThrottleEvents']} | {reasons} |"
            )
    return lines
