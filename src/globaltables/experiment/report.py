"""What a person reads after a run: results.json, report.md (a minute's reading) and the PNG plots.

Plots (matplotlib, headless Agg backend): latency CDF per op and region, throughput and p99 over time with fault
windows shaded, replication lag over time per link, and the region graph with its link latencies (networkx).
A plot that cannot be drawn (no data) is skipped and the report says so; plotting never fails a run.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ..chaos.checkers.result import INVALID, UNKNOWN, overall, verdict_of
from ..topology.model import Topology
from .capacity import hottest_key_lines
from .proofs import proof_section

HEADLINE = {"valid": "all checks passed", "invalid": "CHECKS FAILED", "unknown": "CHECKS UNDECIDED"}

PLOTS = {
    "latency_cdf.png": "latency CDF per operation and region",
    "timeline.png": "throughput and p99 over time (fault windows shaded)",
    "replication_lag.png": "replication lag over time per link",
    "topology.png": "the regions and their one-way link latencies",
}


def write_report(out_dir: Path, results: dict[str, Any], topology: Topology, *, make_plots: bool = True,
                 ledger: Any = None) -> None:  # fmt: skip
    """results.json, the plots, report.md and report.html in `out_dir` (beside the run's other artifacts);
    `ledger`: the run's lost-write ledger, if the caller holds it (html_report.run_data)."""
    (out_dir / "results.json").write_text(json.dumps(results, indent=2, sort_keys=False) + "\n")
    drawn: dict[str, str] = {}
    if make_plots:
        drawn = draw_plots(out_dir, results, topology)
    (out_dir / "report.md").write_text(render_markdown(results, drawn))
    from .html_report import write_run_html

    write_run_html(out_dir, results, {region.name: region.clock_offset_ms for region in topology.regions}, ledger)


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.1f}" if value >= 10 else f"{value:.2f}"
    return str(value)


def _verdict_cell(check: dict[str, Any]) -> str:
    """valid / **invalid** / **unknown**, with the keys the check could not decide."""
    verdict = verdict_of(check)
    cell = f"**{verdict}**" if verdict in (INVALID, UNKNOWN) else verdict
    undecided = check.get("undecided") or []
    if undecided:
        cell += " (undecided: " + ", ".join(undecided[:10]) + (" …" if len(undecided) > 10 else "") + ")"
    return cell


def render_markdown(results: dict[str, Any], drawn: dict[str, str]) -> str:
    w = results["workload"]
    verdict = overall(results["checks"])
    lines = [
        f"# {results['topology']} — {results['mode'].upper()} — {HEADLINE[verdict]}",
        "",
        f"Seed {results['seed']}, started {results['started_at']}, {results['duration_s']:.1f} s measured after "
        f"{w['warmup_s']:.0f} s warm-up; {_fmt(w['rate_per_region'])} ops/s per region (open loop) on table "
        f"`{w['table']}`, {w['keys']} keys ({w['distribution']}), mix "
        + ", ".join(f"{op} {weight:.0%}" for op, weight in w["mix"].items())
        + (f"; chaos `{results['chaos']}`" if results.get("chaos") else "; no faults")
        + ".",
        "",
        "## Checks",
        "",
        "| check | verdict | detail |",
        "| --- | --- | --- |",
        *(f"| {c['name']} | {_verdict_cell(c)} | {c['detail']} |" for c in results["checks"]),
        *proof_section(results["checks"], results.get("regions", [])),
        "",
        "Convergence: "
        + "; ".join(f"{_fmt(c['ms'])} ms after {c['after']}" for c in results["convergence_ms"])
        + " (time until every replication lane was drained).",
        "",
        _latency_heading(w.get("sdk_retries", "none")),
        "",
        "| region | op | count | p50 | p90 | p99 | p99.9 | max |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for region, ops in results["latency_ms"].items():
        for op, stats in ops.items():
            lines.append(
                f"| {region} | {op} | {stats['count']} | {_fmt(stats['p50'])} | {_fmt(stats['p90'])} | "
                f"{_fmt(stats['p99'])} | {_fmt(stats['p999'])} | {_fmt(stats['max'])} |"
            )
    lines += ["", "## Throughput and errors", "", "| region | target/s | achieved/s | ok | fail | info | errors |",
              "| --- | ---: | ---: | ---: | ---: | ---: | --- |"]  # fmt: skip
    for region, rate in results["throughput"].items():
        outcomes = results["outcomes"].get(region, {"ok": 0, "fail": 0, "info": 0})
        errors = ", ".join(f"{name} {count}" for name, count in results["errors"].get(region, {}).items()) or "none"
        lines.append(
            f"| {region} | {_fmt(rate['target_per_s'])} | {_fmt(rate['achieved_per_s'])} | {outcomes['ok']} | "
            f"{outcomes['fail']} | {outcomes['info']} | {errors} |"
        )
    lines += throttle_lines(results)
    lines += hottest_key_lines(results)
    lines += ["", "## Replication lag (ms, probe write acknowledged → first read that returns it)", ""]
    if results["replication_lag_ms"]:
        lines += ["| link | one-way link | samples | p50 | p99 | max |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
        for link, stats in results["replication_lag_ms"].items():
            lines.append(
                f"| {link} | {_fmt(results.get('links_ms', {}).get(link))} | {stats['count']} | {_fmt(stats['p50'])} | "
                f"{_fmt(stats['p99'])} | {_fmt(stats['max'])} |"
            )
    else:
        lines.append("No lag samples (one region, or the probe was off).")
    c = results["conflicts"]
    lines += [
        "",
        (
            f"Conflicts: {c['replicated_write_conflicts']} ReplicatedWriteConflictException answers; "
            f"{c['lww_overwrites']} of the {c['replicated_records']} replicated writes the regions merged lost "
            "last-writer-wins to a newer version already there (a concurrent write overwrote them)."
        ),
        "",
        "## Plots",
        "",
    ]
    for name, title in PLOTS.items():
        lines.append(
            f"- [{title}]({name})" if name in drawn else f"- {title}: not drawn ({drawn.get('!' + name, 'no data')})"
        )
    lw = results.get("lost_writes")
    if lw is not None:
        lines[lines.index("## Plots")] = (
            f"Lost writes (lost_writes.jsonl): {lw['count']} acknowledged writes discarded by a region that held a "
            f"newer version ({lw['writes']} distinct writes; {lw['at_origin']} at their own origin); causes: "
            + ", ".join(f"{cause} {count}" for cause, count in lw["by_cause"].items())
            + ".\n\n## Plots"
        )
    lines += ["", "The interactive report: [report.html](report.html) (one file, works offline).",
              "", "Files: results.json (schema: docs/results.md), history.jsonl, final_state.jsonl, logs/.",
              "Rerun the checkers offline: `globaltables check --results <this directory>`.", ""]  # fmt: skip
    return "\n".join(lines)


def draw_plots(out_dir: Path, results: dict[str, Any], topology: Topology) -> dict[str, str]:
    """Draw what there is data for; {file: title} of the drawn ones ('!file': why not, for the others)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as error:  # matplotlib is a dependency, but a broken install must not lose the results
        return {f"!{name}": f"matplotlib unavailable: {error}" for name in PLOTS}
    drawn: dict[str, str] = {}
    for name, draw in (
        ("latency_cdf.png", _latency_cdf),
        ("timeline.png", _timeline),
        ("replication_lag.png", _lag),
        ("topology.png", _topology),
    ):
        try:
            figure = draw(plt, out_dir, results, topology)
        except Exception as error:  # noqa: BLE001 - a plot must never cost the run its results
            drawn[f"!{name}"] = f"{type(error).__name__}: {error}"
            continue
        if figure is None:
            continue
        figure.savefig(out_dir / name, dpi=100, bbox_inches="tight")
        plt.close(figure)
        drawn[name] = PLOTS[name]
    return drawn


def _latency_cdf(plt, out_dir: Path, results: dict[str, Any], topology: Topology):
    import csv

    spans: dict[tuple[str, str], list[float]] = {}
    with open(out_dir / "samples.csv", newline="") as file:
        for row in csv.DictReader(file):
            if row["measured"] == "1" and row["outcome"] != "info":
                spans.setdefault((row["region"], row["op"]), []).append(float(row["latency_ms"]))
    if not spans:
        return None
    ops = sorted({op for _, op in spans})
    columns = min(len(ops), 4)
    rows = math.ceil(len(ops) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.4 * rows), squeeze=False)
    for index, op in enumerate(ops):
        axis = axes[index // columns][index % columns]
        for (region, name), values in sorted(spans.items()):
            if name != op:
                continue
            values.sort()
            n = len(values)
            axis.plot(values, [(i + 1) / n for i in range(n)], label=region)
        axis.set_xscale("log")
        axis.xaxis.set_minor_formatter(plt.NullFormatter())
        axis.xaxis.set_major_formatter(plt.FuncFormatter(lambda value, _: f"{value:g}"))
        axis.set_title(op)
        axis.set_xlabel("latency (ms, log)")
        axis.set_ylabel("fraction of requests")
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=7)
    for index in range(len(ops), rows * columns):
        axes[index // columns][index % columns].set_axis_off()
    figure.suptitle(f"{results['topology']} ({results['mode']}): latency CDF (from intended start)")
    figure.tight_layout()
    return figure


def _fault_windows(results: dict[str, Any]) -> list[tuple[float, float, str]]:
    """(start, end, label) in seconds since the measurement start, from the nemesis records' start/end phases."""
    origin = results.get("measure_from_mono")
    if origin is None:
        return []
    windows, open_at = [], {}
    for fault in results.get("faults") or []:
        value = fault.get("value") or {}
        if fault.get("mono") is None or not isinstance(value, dict):
            continue
        label = f"{fault['f']} {'/'.join(value.get('regions', []))}".strip()
        if value.get("phase") == "start":
            open_at[label] = fault["mono"]
        elif value.get("phase") == "end" and label in open_at:
            windows.append((open_at.pop(label) - origin, fault["mono"] - origin, label))
        elif fault["f"] == "heal":
            windows.extend((start - origin, fault["mono"] - origin, name) for name, start in open_at.items())
            open_at.clear()
    return windows


def _latency_heading(sdk_retries: str) -> str:
    """The latency table's heading: with an SDK retry mode, an operation's latency runs to its last attempt's
    answer, so the retries' delays are in it (experiment/load.py)."""
    if sdk_retries == "none":
        return "## Latency (ms, from each operation's intended start; answered attempts)"
    return (f"## Latency (ms, from each operation's intended start to its last attempt's answer: the delays of "
            f"`sdk_retries: {sdk_retries}` included)")  # fmt: skip


def throttle_lines(results: dict[str, Any]) -> list[str]:
    """report.md's throttling section: throttled attempts per ThrottlingReasons reason and per region, the SDK's
    retries, and the replication Ships deferred for lack of write capacity."""
    throttles = results.get("throttles")
    if not throttles:
        return []
    lines = ["", "## Throttling", ""]
    retries = (results.get("workload") or {}).get("sdk_retries", "none")
    lines.append(
        f"{throttles['attempts']} throttled attempts; SDK retries: {retries} ({throttles['retries']} retries made); "
        f"{throttles['operations_failed']} operations ended throttled; {throttles['replication_deferred']} "
        "replication Ships deferred for lack of write capacity at the receiver (back-pressure: applied later, "
        "never dropped)."
    )
    accepted = ", ".join(
        f"{region} {rate['ok_per_s']:g}/s of {rate['target_per_s']:g}/s"
        for region, rate in results["throughput"].items()
        if "ok_per_s" in rate
    )
    if accepted:
        lines += ["", f"Accepted (answered ok): {accepted}."]
    if throttles["by_reason"]:
        regions = list(throttles["by_region"])
        lines += ["", "| reason | all | " + " | ".join(regions) + " |", "| --- | ---: |" + " ---: |" * len(regions)]
        for reason, count in throttles["by_reason"].items():
            cells = " | ".join(str(throttles["by_region"][region].get(reason, 0)) for region in regions)
            lines.append(f"| {reason} | {count} | {cells} |")
        errors = ", ".join(f"{name} {count}" for name, count in throttles["by_error"].items())
        lines += ["", f"Errors: {errors}."]
    return lines


def _timeline(plt, out_dir: Path, results: dict[str, Any], topology: Topology):
    rows = results.get("timeline") or []
    if not rows:
        return None
    throttled = any(row.get("throttled") for row in rows)
    figure, axes = plt.subplots(3 if throttled else 2, 1, figsize=(9, 7 if throttled else 5), sharex=True)
    top, bottom = axes[0], axes[1]
    xs = [row["t_s"] for row in rows]
    top.step(xs, [row["completed"] for row in rows], where="post")
    top.set_ylabel("answered ops/s (all regions)")
    top.set_ylim(bottom=0)
    p99 = [math.nan if row["p99_ms"] is None else row["p99_ms"] for row in rows]
    bottom.step(xs, p99, where="post", color="tab:red")
    bottom.set_ylabel("p99 latency (ms)")
    if throttled:
        axes[2].step(xs, [row.get("throttled", 0) for row in rows], where="post", color="tab:purple")
        axes[2].set_ylabel("throttled attempts/s")
        axes[2].set_ylim(bottom=0)
    axes[-1].set_xlabel("seconds since measurement start (negative: warm-up)")
    for start, end, label in _fault_windows(results):
        for axis in axes:
            axis.axvspan(start, end, color="orange", alpha=0.25, label=label)
    for axis in axes:
        axis.grid(True, alpha=0.3)
    title = "throughput, p99 and throttles" if throttled else "throughput and p99"
    figure.suptitle(f"{results['topology']} ({results['mode']}): {title} over time")
    return figure


def _lag(plt, out_dir: Path, results: dict[str, Any], topology: Topology):
    rows = results.get("lag_timeline") or []
    if not rows:
        return None
    figure, axis = plt.subplots(figsize=(9, 4))
    for link in sorted({row["link"] for row in rows}):
        points = [row for row in rows if row["link"] == link]
        axis.plot([p["t_s"] for p in points], [p["lag_ms"] for p in points], marker=".", label=link)
    axis.set_xlabel("seconds since measurement start")
    axis.set_ylabel("replication lag (ms)")
    axis.grid(True, alpha=0.3)
    axis.legend(fontsize=7, ncol=2)
    figure.suptitle(f"{results['topology']}: replication lag per link (probe)")
    return figure


def _topology(plt, out_dir: Path, results: dict[str, Any], topology: Topology):
    import networkx as nx

    graph = topology.graph()
    undirected = nx.Graph()
    for region in graph.nodes:
        undirected.add_node(region)
    for a, b, data in graph.edges(data=True):
        if a < b:
            back = graph.edges[b, a]["latency_ms"]
            label = f"{data['latency_ms']:g}" if back == data["latency_ms"] else f"{data['latency_ms']:g}/{back:g}"
            undirected.add_edge(a, b, label=f"{label} ms")
    figure, axis = plt.subplots(figsize=(6, 5))
    layout = nx.circular_layout(undirected)
    colors = ["lightgrey" if graph.nodes[n]["region"].role == "witness" else "lightblue" for n in undirected.nodes]
    nx.draw_networkx(undirected, layout, ax=axis, node_color=colors, node_size=1800, font_size=8)
    nx.draw_networkx_edge_labels(
        undirected, layout, edge_labels=nx.get_edge_attributes(undirected, "label"), ax=axis, font_size=7
    )
    axis.set_axis_off()
    axis.set_title(f"{topology.name} ({topology.mode}): one-way link latency")
    return figure
