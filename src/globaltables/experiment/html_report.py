"""report.html: one self-contained page per run (and per compare) that works offline.

Why: report.md and its PNGs are for a glance; finding the one key that lost an order needs a page to explore. The
page embeds everything it shows: plotly's JavaScript read from the installed Python package (never a CDN), the run's
numbers as one JSON document, and a little script that draws the charts and tables from it. It fetches nothing,
so it opens from disk, from a CI artifact or an e-mail attachment alike.

What it shows (the sections of `RUN_SECTIONS`): the fault timeline, whose shaded windows repeat on every time chart;
throughput, errors by type and latency percentiles over time per region; replication lag per link and the time each
heal took to converge; latency CDFs; clock offsets over time; the lost-write ledger as a sortable table; a key
explorer (every version of a key: who wrote it, which won, when each region learnt of it); and for a failed
checker its violating operations as per-region lanes in time. `compare` gets a page with the modes side by side,
each MRSC write latency beside its floor, and links to each mode's own page.

Rules: the data is computed here, in Python (`run_data`, testable without a browser); the page only draws it.
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
RUN_SECTIONS = ("summary", "faults", "throughput", "errors", "latency", "lag", "convergence", "cdf", "clocks",
                "ledger", "explorer", "violations")  # fmt: skip


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

    label = f"#{start.get('index')} {start.get('f')} {json.dumps(start.get('value'))[:60]}"
    if end is not None:
        label += f" → {end.get('type')}"
        if end.get("type") == "ok" and end.get("value") is not None and end.get("f") not in ("put", "update"):
            label += f" {json.dumps(end.get('value'))[:80]}"
        if end.get("error"):
            label += f" {end['error']}"
    return {"region": start.get("region") or "?", "start": t(start), "end": t(end), "type": (end or {}).get("type",
            "open"), "label": label}  # fmt: skip


def run_data(out_dir: Path, results: dict[str, Any], baseline_offsets_ms: dict[str, float] | None = None) -> dict:
    """Everything report.html draws, as one JSON-ready document."""
    from ..chaos.history import History
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
        "clocks": clock_offsets(results, baseline_offsets_ms or {}),
        "ledger": _read_jsonl(out_dir / "lost_writes.jsonl")[:LEDGER_ROWS],
        "violations": violations(out_dir, origin),
        "keys": {},
        "heals": [],
    }
    history_path = out_dir / "history.jsonl"
    if history_path.exists():
        ledger = Ledger(History.read_jsonl(history_path), read_decisions(out_dir / "apply_decisions.jsonl"),
                        origin_mono=origin)  # fmt: skip
        data["keys"] = ledger.key_versions(EXPLORER_KEYS, exclude=is_probe_key)  # workload keys only
        data["heals"] = ledger.convergence_after_heals(results.get("faults") or [])
    return data


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
        f"<style>{STYLE}</style></head><body>"
        f"<script>{plotly_js()}</script>"
        f"<script id=\"report-data\" type=\"application/json\">{document}</script>"
        f"<main id=\"report\"></main><script>{script}</script></body></html>\n"
    )


def write_run_html(out_dir: Path, results: dict[str, Any], baseline_offsets_ms: dict[str, float] | None = None) -> Path:
    path = Path(out_dir) / "report.html"
    try:
        data = run_data(out_dir, results, baseline_offsets_ms)
    except Exception as error:  # noqa: BLE001 - the page must never cost the run its results
        data = {"title": results.get("topology", "run"), "error": f"{type(error).__name__}: {error}"}
    path.write_text(_page(f"globaltables: {data['title']}", data, RUN_SCRIPT), encoding="utf-8")
    return path


def write_compare_html(out_dir: Path, document: dict[str, Any]) -> Path:
    path = Path(out_dir) / "report.html"
    data = {"title": f"compare {document.get('topology')}", "compare": document}
    path.write_text(_page(f"globaltables: {data['title']}", data, COMPARE_SCRIPT), encoding="utf-8")
    return path


STYLE = """
body{font-family:system-ui,sans-serif;margin:0 2em 3em;color:#222}h1{font-size:1.4em}h2{font-size:1.15em;
margin-top:2em;border-bottom:1px solid #ddd}table{border-collapse:collapse;font-size:.85em}td,th{border:1px solid
#ddd;padding:2px 6px;text-align:left}th.sortable{cursor:pointer;background:#f4f4f4}th.sortable:after{content:" ⇅";
color:#aaa}.pass{color:#176b17}.fail{color:#b00;font-weight:bold}.chart{width:100%;min-height:320px}.note{color:#666;
font-size:.85em}.scroll{max-height:480px;overflow:auto}tr.won{background:#eaf7ea}tr.lost{background:#fbeaea}
"""

COMMON_SCRIPT = r"""
const DATA = JSON.parse(document.getElementById('report-data').textContent);
const main = document.getElementById('report');
const CONFIG = {displaylogo: false, responsive: true};
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) { if (k === 'class') node.className = v; else node.setAttribute(k, v); }
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}
function section(id, title, note) {
  const s = el('section', {id: id}, el('h2', {}, title));
  if (note) s.append(el('p', {class: 'note'}, note));
  main.append(s);
  return s;
}
function chart(parent, id, traces, layout) {
  const div = el('div', {id: id, class: 'chart'});
  parent.append(div);
  Plotly.newPlot(div, traces, Object.assign({margin: {t: 30, r: 20, b: 45, l: 60}, legend: {orientation: 'h'}}, layout), CONFIG);
  return div;
}
function table(parent, id, headers, rows, sortable) {
  const head = el('tr', {});
  headers.forEach((h, i) => {
    const th = el('th', sortable ? {class: 'sortable', 'data-column': i} : {}, h);
    head.append(th);
  });
  const body = el('tbody', {});
  for (const row of rows) {
    const tr = el('tr', row.class ? {class: row.class} : {});
    for (const cell of row.cells) tr.append(el('td', {}, cell === null || cell === undefined ? '–' : cell));
    body.append(tr);
  }
  const t = el('table', {id: id}, el('thead', {}, head), body);
  if (sortable) {
    head.querySelectorAll('th').forEach(th => th.addEventListener('click', () => {
      const column = Number(th.dataset.column), up = th.dataset.order !== 'asc';
      th.dataset.order = up ? 'asc' : 'desc';
      const value = tr => { const text = tr.children[column].textContent; const n = Number(text); return text !== '' && !isNaN(n) ? n : text; };
      const sorted = Array.from(body.children).sort((a, b) => { const x = value(a), y = value(b); return (x < y ? -1 : x > y ? 1 : 0) * (up ? 1 : -1); });
      body.append(...sorted);
    }));
  }
  parent.append(el('div', {class: 'scroll'}, t));
  return t;
}
"""

RUN_SCRIPT = COMMON_SCRIPT + r"""
const W = DATA.windows || [];
const COLORS = ['rgba(255,165,0,0.22)', 'rgba(100,149,237,0.22)', 'rgba(60,179,113,0.22)', 'rgba(238,130,238,0.22)'];
function shaded(extra) {
  const shapes = W.map((w, i) => ({type: 'rect', xref: 'x', yref: 'paper', x0: w.start, x1: w.end, y0: 0, y1: 1,
                                   fillcolor: COLORS[i % COLORS.length], line: {width: 0}, layer: 'below'}));
  return Object.assign({shapes: shapes, xaxis: {title: {text: 'seconds since measurement start'}, range: DATA.range}}, extra || {});
}
function lines(series, field, name) {
  return Object.entries(series).map(([region, s]) => ({x: s.t, y: s[field], name: name ? name(region) : region, mode: 'lines+markers', marker: {size: 4}}));
}
if (DATA.error) {
  main.append(el('h1', {}, DATA.title), el('p', {class: 'fail'}, 'The report could not be drawn: ' + DATA.error));
} else {
  const r = DATA.results;
  const passed = r.checks.every(c => c.passed);
  main.append(el('h1', {}, 'globaltables: ' + DATA.title + ' — ', el('span', {class: passed ? 'pass' : 'fail'}, passed ? 'all checks passed' : 'CHECKS FAILED')));
  const summary = section('summary', 'Summary', `Seed ${r.seed}, started ${r.started_at}, ${r.duration_s.toFixed(1)} s measured; chaos: ${r.chaos || 'none'}; write mode: ${(r.workload || {}).write_mode || 'any'}.`);
  table(summary, 'checks', ['check', 'verdict', 'detail'], r.checks.map(c => ({class: c.passed ? '' : 'lost', cells: [c.name, c.passed ? 'PASS' : 'FAIL', c.detail]})));
  const lw = r.lost_writes || {};
  summary.append(el('p', {}, `Conflicts: ${r.conflicts.replicated_write_conflicts} ReplicatedWriteConflictException answers; ${r.conflicts.lww_overwrites} of ${r.conflicts.replicated_records} replicated records lost last-writer-wins; the ledger holds ${lw.count || 0} discarded acknowledged writes (${lw.writes || 0} distinct; causes: ${JSON.stringify(lw.by_cause || {})}).`));

  const faults = section('faults', 'Fault timeline', W.length ? 'Each fault window; the same windows are shaded on every time chart below.' : 'No fault windows in this run.');
  const labels = [...new Set(W.map(w => w.label))];
  chart(faults, 'chart-faults', W.map((w, i) => ({x: [w.end - w.start], base: [w.start], y: [w.label], type: 'bar', orientation: 'h', name: w.label, marker: {color: COLORS[i % COLORS.length].replace('0.22', '0.8')}, showlegend: false})),
        shaded({height: Math.max(160, 60 + 30 * labels.length), yaxis: {automargin: true}, barmode: 'overlay'}));

  chart(section('throughput', 'Throughput per region (answered operations per second)', `In ${DATA.bucket_s} s buckets.`), 'chart-throughput', lines(DATA.throughput, 'ops'), shaded({yaxis: {title: {text: 'ops/s'}, rangemode: 'tozero'}}));
  const errorTraces = [];  // bars: one per bucket, stacked by region and error type
  for (const [region, kinds] of Object.entries(DATA.errors)) for (const [kind, s] of Object.entries(kinds)) errorTraces.push({x: s.t, y: s.n, width: DATA.bucket_s, name: `${region} ${kind}`, type: 'bar'});
  chart(section('errors', 'Errors by type per region (per second)', errorTraces.length ? '' : 'No errors.'), 'chart-errors', errorTraces, shaded({barmode: 'stack', yaxis: {title: {text: 'errors/s'}}}));
  chart(section('latency', 'Latency percentiles per region (ms, answered operations, from intended start)'), 'chart-latency',
        [...lines(DATA.latency, 'p50', g => g + ' p50'), ...lines(DATA.latency, 'p99', g => g + ' p99')], shaded({yaxis: {title: {text: 'ms'}, type: 'log'}}));
  const lag = section('lag', 'Replication lag per link (ms, probe)');
  chart(lag, 'chart-lag', Object.entries(DATA.lag).map(([link, s]) => ({x: s.t, y: s.ms, name: link, mode: 'lines+markers', marker: {size: 4}})), shaded({yaxis: {title: {text: 'ms'}}}));
  const conv = section('convergence', 'Time to converge', 'After each heal: until every region had learnt of every write acknowledged before it (from the apply decisions); after the load: until every lane drained.');
  table(conv, 'convergence-table', ['after', 'at (s)', 'converged in (ms)', 'writes'],
        [...DATA.heals.map(h => ({cells: [h.after, h.t_s, h.ms, h.writes]})), ...r.convergence_ms.map(c => ({cells: [c.after, '', c.ms, '']}))]);
  const cdf = section('cdf', 'Latency CDFs (ms, log scale)');
  for (const [op, regions] of Object.entries(DATA.cdf)) {
    cdf.append(el('h3', {}, op));
    chart(cdf, 'chart-cdf-' + op, Object.entries(regions).map(([region, s]) => ({x: s.ms, y: s.p, name: region, mode: 'lines'})), {xaxis: {type: 'log', title: {text: 'ms'}}, yaxis: {title: {text: 'fraction'}, range: [0, 1]}});
  }
  chart(section('clocks', 'Clock offsets (ms added to each region\'s wall clock)'), 'chart-clocks', lines(DATA.clocks, 'ms').map(t => Object.assign(t, {mode: 'lines', line: {shape: 'hv'}})), shaded({yaxis: {title: {text: 'offset ms'}}}));

  const ledger = section('ledger', `Lost-write ledger (${DATA.ledger.length} entries)`, 'Every acknowledged write a region discarded because it held a newer version; click a header to sort.');
  table(ledger, 'ledger-table', ['table', 'key', 'value', 'origin', 'version', 'discarded in', 'at (s)', 'winner', 'winner origin', 'cause'],
        DATA.ledger.map(e => ({cells: [e.table, e.key, e.value, e.origin, e.version, e.region, e.discarded_s, e.winner.value, e.winner.origin, e.cause]})), true);

  const explorer = section('explorer', 'Key explorer', 'Pick a key: every acknowledged version written to it, by whom, which won, and when each region learnt of it.');
  const keys = Object.keys(DATA.keys);
  const select = el('select', {id: 'key-select'}, el('option', {value: ''}, keys.length ? `— ${keys.length} keys —` : 'no keys'));
  for (const key of keys) select.append(el('option', {value: key}, `${key} (${DATA.keys[key].length} versions)`));
  const shown = el('div', {id: 'key-versions'});
  explorer.append(select, shown);
  select.addEventListener('change', () => {
    shown.replaceChildren();
    const versions = DATA.keys[select.value];
    if (!versions) return;
    const regions = r.regions;
    table(shown, 'key-table', ['version', 'origin', 'op', 'value', 'sent (s)', 'acknowledged (s)', 'won', 'discarded by', ...regions.map(g => 'learnt in ' + g + ' (s)')],
          versions.map(v => ({class: v.won ? 'won' : (v.discarded_by.length ? 'lost' : ''), cells: [v.version, v.origin, v.f, v.value, v.invoked_s, v.acknowledged_s, v.won ? 'won' : '', v.discarded_by.join(', '), ...regions.map(g => v.learnt_s[g])]})));
    chart(shown, 'chart-key', regions.map(g => ({x: versions.map(v => v.learnt_s[g]), y: versions.map(v => v.value), name: 'learnt in ' + g, mode: 'markers', marker: {size: 8}})), shaded({yaxis: {type: 'category', automargin: true}}));
  });

  const violated = section('violations', 'Violating operations', DATA.violations.length ? 'The operations each failed checker names, as per-region lanes in time (a bar from invocation to completion).' : 'No checker failed.');
  DATA.violations.forEach((check, ci) => {
    violated.append(el('h3', {}, `${check.name}: ${check.detail}`));
    check.findings.slice(0, 10).forEach((finding, fi) => {
      violated.append(el('p', {}, `${finding.table}[${finding.key}] ${finding.problem}: ${finding.detail}`));
      const lanes = finding.lanes.filter(l => l.start !== null);
      chart(violated, `chart-violation-${ci}-${fi}`, lanes.map(l => ({x: [l.start, l.end === null ? l.start : l.end], y: [l.region, l.region], mode: 'lines+markers+text', name: l.label, line: {width: 8}, marker: {size: 10}, text: ['', l.label], textposition: 'top left', hovertext: l.label, hoverinfo: 'text+x'})),
            shaded({showlegend: false, yaxis: {type: 'category', categoryorder: 'array', categoryarray: r.regions, range: [-0.5, r.regions.length - 0.5], automargin: true}, height: 90 + 50 * r.regions.length}));
    });
  });
}
document.body.dataset.ready = 'true';
"""

COMPARE_SCRIPT = COMMON_SCRIPT + r"""
const doc = DATA.compare;
main.append(el('h1', {}, 'globaltables compare: ' + doc.topology));
const modes = Object.entries(doc.modes);
const overview = section('summary', 'Modes', `Seed ${doc.seed}; chaos: ${doc.chaos || 'none'}. Each mode's own report: its report.html.`);
table(overview, 'modes-table', ['mode', 'ran', 'checks', 'lost writes', 'LWW overwrites', 'RWCE answers', 'report'],
      modes.map(([mode, s]) => ({class: s.ran && s.passed ? '' : 'lost', cells: [mode, s.ran ? 'yes' : 'no: ' + s.reason, s.ran ? (s.passed ? 'passed' : 'FAILED') : '–',
                                 s.ran && s.lost_writes ? s.lost_writes.count : '–', s.ran ? s.conflicts.lww_overwrites : '–', s.ran ? s.conflicts.replicated_write_conflicts : '–', s.ran ? mode + '/report.html' : '–']})));
overview.querySelectorAll('#modes-table td:last-child').forEach(td => { if (td.textContent.endsWith('.html')) { const a = el('a', {href: td.textContent}, td.textContent); td.replaceChildren(a); } });
const ran = modes.filter(([, s]) => s.ran);
const regions = [...new Set(ran.flatMap(([, s]) => Object.keys(s.writes_ms)))].sort();
const writes = section('writes', 'Write latency per region and mode (ms)', 'Bars: p50 and p99 of each mode\'s writes; outlined bars: the MRSC floor, one round trip to the nearest other member.');
const traces = [];
for (const [mode, s] of ran) {
  const pick = g => { const ops = s.writes_ms[g] || {}; return ops.put || Object.values(ops)[0] || {}; };
  traces.push({x: regions, y: regions.map(g => pick(g).p50), name: mode + ' write p50', type: 'bar'});
  traces.push({x: regions, y: regions.map(g => pick(g).p99), name: mode + ' write p99', type: 'bar'});
  // The floor as an outlined bar right beside the mode's own bars: each MRSC write latency next to its floor.
  if (s.write_floor_ms) traces.push({x: regions, y: regions.map(g => s.write_floor_ms[g]), name: 'MRSC floor', type: 'bar', marker: {color: 'rgba(0,0,0,0)', line: {color: 'black', width: 2}}});
}
chart(writes, 'chart-compare-writes', traces, {barmode: 'group', yaxis: {title: {text: 'ms'}}});
const reads = section('reads', 'Read latency per region and mode (ms, p50)');
const readTraces = [];
for (const [mode, s] of ran) for (const op of [...new Set(Object.values(s.reads_ms).flatMap(o => Object.keys(o)))]) readTraces.push({x: regions, y: regions.map(g => ((s.reads_ms[g] || {})[op] || {}).p50), name: `${mode} ${op}`, type: 'bar'});
chart(reads, 'chart-compare-reads', readTraces, {barmode: 'group', yaxis: {title: {text: 'ms'}}});
chart(section('costs', 'What each mode cost: conflicts and lost writes'), 'chart-compare-costs', [
  {x: ran.map(([m]) => m), y: ran.map(([, s]) => s.conflicts.lww_overwrites), name: 'LWW overwrites', type: 'bar'},
  {x: ran.map(([m]) => m), y: ran.map(([, s]) => (s.lost_writes || {}).count || 0), name: 'lost writes (ledger)', type: 'bar'},
  {x: ran.map(([m]) => m), y: ran.map(([, s]) => s.conflicts.replicated_write_conflicts), name: 'RWCE answers', type: 'bar'}], {barmode: 'group'});
const lagLinks = [...new Set(ran.flatMap(([, s]) => Object.keys(s.replication_lag_ms || {})))].sort();
chart(section('lag', 'Replication lag p50 per link and mode (ms)'), 'chart-compare-lag', ran.map(([mode, s]) => ({x: lagLinks, y: lagLinks.map(l => ((s.replication_lag_ms || {})[l] || {}).p50), name: mode, type: 'bar'})), {barmode: 'group'});
document.body.dataset.ready = 'true';
"""
