"""report.html: one self-contained page per run (and per compare) that works offline.

Why: report.md and its PNGs are for a glance; finding the one key that lost an order needs a page to explore. The
page embeds everything it shows: plotly's JavaScript read from the installed Python package (never a CDN), the run's
numbers as one JSON document, and a little script that draws the charts and tables from it. It fetches nothing,
so it opens from disk, from a CI artifact or an e-mail attachment alike.

What it shows (the sections of `RUN_SECTIONS`): the fault timeline, whose shaded windows repeat on every time chart;
throughput, errors by type and latency percentiles over time per region; the hottest keys (the most accessed and
most throttled partition keys per region and table, from Contributor Insights: experiment/capacity.py); replication lag per link and the time each
heal took to converge; latency CDFs; clock offsets over time; the lost-write ledger as a sortable table; a key
explorer (every version of a key: who wrote it, which won, when each region learnt of it); and for a failed
checker its violating operations as per-region lanes in time. `compare` gets a page with the modes side by side,
each MRSC write latency beside its floor, and links to each mode's own page.

Rules: the data is computed here, in Python (`run_data`, testable without a browser); the page only draws it, with
the stylesheet and scripts of report_page/ (common.js, run.js, compare.js), embedded like plotly.
Times are seconds since the measurement start (negative: warm-up). Series are thinned to keep the page light
(CDFs to CDF_POINTS points a series, the ledger table to LEDGER_ROWS rows, the explorer to EXPLORER_KEYS keys).
Writing the page never fails a run: an error is written into the page instead of the section.
"""

from __future__ import annotations

import csv
import html
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

CDF_POINTS = 400
LEDGER_ROWS = 5000
EXPLORER_KEYS = 300
LANE_OPERATIONS = 200
RUN_SECTIONS = ("summary", "faults", "throughput", "errors", "throttles", "hottest", "latency", "lag", "convergence", "cdf",
                "clocks", "ledger", "explorer", "violations")  # fmt: skip


def plotly_js() -> str:
    """plotly.min.js from the installed plotly package: embedded, so the page needs no network."""
    import plotly

    return (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_text(encoding="utf-8")


def _percentile(values: list[float], pct: float) -> float | None:
    if not values:
        return None
    rank = max(1, math.ceil(pct / 100.0 * len(values)))
    return round(values[min(rank, len(values)) - 1], 3)


# --------------------------------------------------------------------------------------------------- the data


def fault_windows(results: dict[str, Any]) -> list[dict[str, Any]]:
    from .report import _fault_windows

    return [{"start": round(a, 3), "end": round(b, 3), "label": label} for a, b, label in _fault_windows(results)]


def _samples(out_dir: Path) -> list[dict[str, Any]]:
    path = out_dir / "samples.csv"
    if not path.exists():
        return []
    rows = []
    with open(path, newline="") as file:
        for row in csv.DictReader(file):
            if row["probe"] == "1":
                continue
            latency_ms = float(row["latency_ms"])
            rows.append({"region": row["region"], "op": row["op"], "outcome": row["outcome"],
                         "error": row["error"], "measured": row["measured"] == "1", "latency_ms": latency_ms,
                         "done_s": float(row["intended_s"]) + latency_ms / 1000.0})  # fmt: skip
    return rows


def time_series(samples: list[dict[str, Any]], bucket_s: float = 1.0) -> dict[str, Any]:
    """Per region and time bucket (`t`: its middle): answered ops per second, errors by type per second, p50/p99
    latency of the answered ones."""
    answered: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    errors: dict[str, dict[str, dict[int, int]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(int)))
    for sample in samples:
        second = math.floor(sample["done_s"] / bucket_s)
        if sample["outcome"] != "info":
            answered[sample["region"]][second].append(sample["latency_ms"])
        if sample["error"]:
            errors[sample["region"]][sample["error"]][second] += 1
    def middle(index: int) -> float:
        return round((index + 0.5) * bucket_s, 3)

    throughput, latency = {}, {}
    for region, buckets in sorted(answered.items()):
        indexes = sorted(buckets)
        times = [middle(i) for i in indexes]
        throughput[region] = {"t": times, "ops": [round(len(buckets[i]) / bucket_s, 2) for i in indexes]}
        ordered = {i: sorted(buckets[i]) for i in indexes}
        latency[region] = {"t": times, "p50": [_percentile(ordered[i], 50) for i in indexes],
                           "p99": [_percentile(ordered[i], 99) for i in indexes]}  # fmt: skip
    error_series = {
        region: {name: {"t": [middle(i) for i in sorted(counts)], "n": [round(counts[i] / bucket_s, 2)
                                                                       for i in sorted(counts)]}
                 for name, counts in kinds.items()}
        for region, kinds in sorted(errors.items())
    }  # fmt: skip
    return {"throughput": throughput, "latency": latency, "errors": error_series, "bucket_s": bucket_s}


def cdfs(samples: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """{op: {region: {"ms": [...], "p": [...]}}}, answered measured attempts, thinned to CDF_POINTS points."""
    grouped: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for sample in samples:
        if sample["measured"] and sample["outcome"] != "info":
            grouped[sample["op"]][sample["region"]].append(sample["latency_ms"])
    result: dict[str, dict[str, Any]] = {}
    for op, regions in sorted(grouped.items()):
        result[op] = {}
        for region, values in sorted(regions.items()):
            values.sort()
            n = len(values)
            step = max(1, n // CDF_POINTS)
            picks = list(range(0, n, step)) + ([n - 1] if (n - 1) % step else [])
            result[op][region] = {"ms": [values[i] for i in picks], "p": [round((i + 1) / n, 5) for i in picks]}
    return result


def clock_offsets(results: dict[str, Any], baseline_ms: dict[str, float]) -> dict[str, dict[str, list]]:
    """Per region, a step series of the offset its clock was given: the topology's, then each skew and bump."""
    origin = results.get("measure_from_mono")
    end = results.get("duration_s", 0.0)
    series = {region: {"t": [None], "ms": [baseline_ms.get(region, 0.0)]} for region in results["regions"]}
    current = dict(baseline_ms)
    for fault in results.get("faults") or []:
        value = fault.get("value") or {}
        region = fault.get("region")
        if origin is None or fault.get("mono") is None or region not in series:
            if fault.get("f") == "heal" and origin is not None and fault.get("mono") is not None:
                for name in series:
                    if current.get(name, 0.0) != baseline_ms.get(name, 0.0):
                        current[name] = baseline_ms.get(name, 0.0)
                        series[name]["t"].append(round(fault["mono"] - origin, 3))
                        series[name]["ms"].append(current[name])
            continue
        t = round(fault["mono"] - origin, 3)
        phase = value.get("phase")
        if fault["f"] == "skew":
            current[region] = value.get("offset_ms", 0.0) if phase == "start" else baseline_ms.get(region, 0.0)
        elif fault["f"] == "bump" and phase == "start":
            current[region] = current.get(region, 0.0) + value.get("bump_ms", 0.0)
        else:
            continue
        series[region]["t"].append(t)
        series[region]["ms"].append(current[region])
    for region, line in series.items():
        first = min([t for t in line["t"] if t is not None] + [-1.0])
        line["t"][0] = min(first, -1.0)
        line["t"].append(round(end, 3))
        line["ms"].append(line["ms"][-1])
    return series


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    import orjson

    if not path.exists():
        return []
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def violations(out_dir: Path, origin: float | None) -> list[dict[str, Any]]:
    """Each failed check's findings with their operations as (region, start, end) lanes, from checks.json."""
    path = out_dir / "checks.json"
    if not path.exists():
        return []
    drawn = []
    for check in json.loads(path.read_text()):
        if check.get("passed", True):
            continue
        findings = []
        for finding in check.get("offending", [])[:50]:
            invoked: dict[Any, dict] = {}
            lanes = []
            for op in finding.get("operations", [])[:LANE_OPERATIONS]:
                if op.get("type") == "invoke":
                    invoked[op.get("process")] = op
                    continue
                start = invoked.pop(op.get("process"), None)
                lanes.append(_lane(start or op, op, origin))
            lanes.extend(_lane(op, None, origin) for op in invoked.values())
            findings.append({"table": finding.get("table"), "key": finding.get("key"),
                             "problem": finding.get("problem"), "detail": finding.get("detail"),
                             "regions": finding.get("regions", []), "lanes": lanes})  # fmt: skip
        drawn.append({"name": check["name"], "detail": check.get("detail", ""), "findings": findings})
    return drawn


def _lane(start: dict, end: dict | None, origin: float | None) -> dict[str, Any]:
    def t(op: dict | None) -> float | None:
        if op is None or op.get("mono") is None:
            return None
        return round(op["mono"] - (origin or 0.0), 4)

    indexes = f"#{start.get('index')}" + (f"/#{end.get('index')}" if end is not None and end is not start else "")
    label = f"{indexes} {start.get('f')} {json.dumps(start.get('value'))[:60]}"
    if end is not None:
        label += f" → {end.get('type')}"
        if end.get("type") == "ok" and end.get("value") is not None and end.get("f") not in ("put", "update"):
            label += f" {json.dumps(end.get('value'))[:80]}"
        if end.get("error"):
            label += f" {end['error']}"
    return {"region": start.get("region") or "?", "start": t(start), "end": t(end), "type": (end or {}).get("type",
            "open"), "label": label}  # fmt: skip


def run_data(out_dir: Path, results: dict[str, Any], baseline_offsets_ms: dict[str, float] | None = None,
             ledger: Any = None) -> dict:  # fmt: skip
    """Everything report.html draws, as one JSON-ready document. `ledger`: the run's lost-write ledger
    (experiment/ledger.py, built with `measure_from_mono` as its origin) when the caller still holds it, as the
    simulated run does; otherwise it is rebuilt from history.jsonl and apply_decisions.jsonl, which hold the same
    history and decisions (reading a long history back costs as much as the run's checks)."""
    from ..chaos.history import History
    from .capacity import hottest_keys
    from .ledger import Ledger, read_decisions
    from .load import is_probe_key

    out_dir = Path(out_dir)
    samples = _samples(out_dir)
    origin = results.get("measure_from_mono")
    data: dict[str, Any] = {
        "title": f"{results['topology']} — {results['mode'].upper()}",
        "results": {key: results.get(key) for key in ("topology", "mode", "seed", "regions", "chaos", "started_at",
                                                      "duration_s", "checks", "conflicts", "lost_writes",
                                                      "convergence_ms", "replication_lag_ms", "throughput",
                                                      "workload", "links_ms")},  # fmt: skip
        "windows": fault_windows(results),
        "faults": [{"f": f["f"], "region": f.get("region"), "t": None if origin is None or f.get("mono") is None
                    else round(f["mono"] - origin, 3), "value": f.get("value")}
                   for f in results.get("faults") or []],  # fmt: skip
        **time_series(samples, 1.0 if results.get("duration_s", 0) >= 20 else 0.25),
        "range": [-float((results.get("workload") or {}).get("warmup_s", 0.0)),
                  max([results.get("duration_s", 0.0)] + [w["end"] for w in fault_windows(results)])],
        "cdf": cdfs(samples),
        "lag": _lag_series(results),
        "throttles": throttle_series(results),
        "hottest": hottest_keys(results.get("capacity")),
        "clocks": clock_offsets(results, baseline_offsets_ms or {}),
        "ledger": _read_jsonl(out_dir / "lost_writes.jsonl")[:LEDGER_ROWS],
        "violations": violations(out_dir, origin),
        "keys": {},
        "heals": [],
    }
    history_path = out_dir / "history.jsonl"
    if ledger is None and history_path.exists():
        ledger = Ledger(History.read_jsonl(history_path), read_decisions(out_dir / "apply_decisions.jsonl"),
                        origin_mono=origin)  # fmt: skip
    if ledger is not None:
        data["keys"] = ledger.key_versions(EXPLORER_KEYS, exclude=is_probe_key)  # workload keys only
        data["heals"] = ledger.convergence_after_heals(results.get("faults") or [])
    return data


def throttle_series(results: dict[str, Any]) -> dict[str, Any]:
    """Throttled attempts per ThrottlingReasons reason per second ({reason: {t, n}}) and the counts in all."""
    throttles = results.get("throttles") or {}
    series: dict[str, dict[str, list]] = {}
    for row in throttles.get("timeline") or []:
        for reason, count in row["by_reason"].items():
            line = series.setdefault(reason, {"t": [], "n": []})
            line["t"].append(row["t_s"] + 0.5)
            line["n"].append(count)
    counts = {key: throttles.get(key) for key in ("attempts", "retries", "operations_failed", "replication_deferred")}
    return {"series": dict(sorted(series.items())), "by_reason": throttles.get("by_reason") or {}, **counts}


def _lag_series(results: dict[str, Any]) -> dict[str, dict[str, list]]:
    series: dict[str, dict[str, list]] = {}
    for row in results.get("lag_timeline") or []:
        line = series.setdefault(row["link"], {"t": [], "ms": []})
        line["t"].append(row["t_s"])
        line["ms"].append(row["lag_ms"])
    return dict(sorted(series.items()))


# --------------------------------------------------------------------------------------------------- the page


def _page(title: str, data: dict[str, Any], script: str) -> str:
    document = json.dumps(data, separators=(",", ":"), default=str).replace("</", "<\\/")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{html.escape(title)}</title>"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline' "
        "'unsafe-eval'; style-src 'unsafe-inline'; img-src data: blob:; font-src data:\">"
        f"<style>{_asset('style.css')}</style></head><body>"
        f"<script>{plotly_js()}</script>"
        f"<script id=\"report-data\" type=\"application/json\">{document}</script>"
        f"<main id=\"report\"></main><script>{script}</script></body></html>\n"
    )


def write_run_html(out_dir: Path, results: dict[str, Any], baseline_offsets_ms: dict[str, float] | None = None,
                   ledger: Any = None) -> Path:  # fmt: skip
    path = Path(out_dir) / "report.html"
    try:
        data = run_data(out_dir, results, baseline_offsets_ms, ledger)
    except Exception as error:  # noqa: BLE001 - the page must never cost the run its results
        data = {"title": results.get("topology", "run"), "error": f"{type(error).__name__}: {error}"}
    path.write_text(_page(f"globaltables: {data['title']}", data, _asset("common.js") + _asset("run.js")),
                    encoding="utf-8")
    return path


def write_compare_html(out_dir: Path, document: dict[str, Any]) -> Path:
    path = Path(out_dir) / "report.html"
    data = {"title": f"compare {document.get('topology')}", "compare": document}
    path.write_text(_page(f"globaltables: {data['title']}", data, _asset("common.js") + _asset("compare.js")),
                    encoding="utf-8")
    return path


PAGE_FILES = Path(__file__).parent / "report_page"  # the page's stylesheet and scripts (package data)


def _asset(name: str) -> str:
    return (PAGE_FILES / name).read_text(encoding="utf-8")
