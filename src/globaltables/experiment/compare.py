"""`globaltables compare TOPOLOGY.yaml --modes mrec,mrsc [--chaos ...] [--out DIR]`: one experiment per mode.

Each mode runs the topology's workload with the same seed (and chaos schedule) on a copy of the topology with
`mode:` replaced (`DIR/<mode>/topology.yaml`); its full results land in `DIR/<mode>/`. A mode that cannot run — the
copy is not a valid topology for that mode, or the regions do not run it — is recorded as not
run, with the reason, never with made-up numbers. Then `DIR/compare.json` (keyed by mode), `DIR/compare.md` and
`DIR/compare.png` and `DIR/report.html` (the modes side by side, each linking its own report.html): write and read latency per region, errors, conflicts, replication lag, and next to every MRSC
write latency the floor the topology predicts: one round trip to the nearest other member (replica or witness),
since a strongly consistent write needs a quorum of two.

With `--write-modes any,single,home` each mode runs once per write mode (`DIR/<mode>-<write mode>/`), so the
comparison shows what each write mode costs in conflicts and lost writes on the same topology and seed.

Exit status: 0 every mode ran and its checks are valid, 1 a check is invalid, 2 a mode could not run or a check's
verdict is unknown.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from ..chaos.checkers.result import INVALID, VALID, overall
from ..runtime.yaml_documents import load_yaml
from ..topology.load import TopologyError
from ..topology.model import Topology
from .html_report import write_compare_html
from .runner import EXIT_CHECK_FAILED, EXIT_INCOMPLETE, EXIT_PASSED, run_experiment
from .topology import load_topology

VERDICT_WORDS = {"valid": "all checks passed", "invalid": "CHECKS FAILED", "unknown": "CHECKS UNDECIDED"}
WRITE_OPS = ("put", "update", "conditional_update", "delete")
READ_OPS = ("get", "strong_get", "query")


def mrsc_floor_ms(topology: Topology) -> dict[str, float]:
    """Per replica: the round trip to its nearest other member (the least an MRSC write can take there)."""
    floors = {}
    for region in topology.replicas:
        others = [
            topology.link(region.name, other.name).latency_ms + topology.link(other.name, region.name).latency_ms
            for other in topology.regions
            if other.name != region.name
        ]
        floors[region.name] = min(others) if others else 0.0
    return floors


def mode_copy(topology_path: Path, mode: str, directory: Path, write_mode: str | None = None) -> Path:
    """The topology file with `mode:` (and the workload's `write_mode:`) replaced (secret_file made absolute, so it
    still resolves)."""
    document = load_yaml(topology_path.read_text(encoding="utf-8"))
    document["mode"] = mode
    if write_mode is not None and isinstance(document.get("workload"), dict):
        document["workload"]["write_mode"] = write_mode
        if write_mode != "single":
            document["workload"].pop("write_region", None)
    if document.get("secret_file"):
        document["secret_file"] = str((topology_path.parent / document["secret_file"]).resolve())
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "topology.yaml"
    path.write_text(
        f"# {topology_path} with mode: {mode} (written by globaltables compare)\n"
        + yaml.safe_dump(document, sort_keys=False)
    )
    return path


def variants(modes: list[str], write_modes: list[str] | None) -> list[tuple[str, str, str | None]]:
    """(name, mode, write mode) of every run: the mode alone, or `<mode>-<write mode>` for each write mode."""
    if not write_modes:
        return [(mode, mode, None) for mode in modes]
    return [(f"{mode}-{write_mode}", mode, write_mode) for mode in modes for write_mode in write_modes]


def _pick(latency: dict[str, dict], region: str, ops: tuple[str, ...]) -> dict[str, Any]:
    return {op: latency.get(region, {}).get(op) for op in ops if op in latency.get(region, {})}


def summarise(results: dict[str, Any], floors: dict[str, float] | None) -> dict[str, Any]:
    latency = results["latency_ms"]
    regions = sorted(latency)
    summary = {
        "ran": True,
        "passed": overall(results["checks"]) == VALID,
        "verdict": overall(results["checks"]),
        "checks": results["checks"],
        "writes_ms": {region: _pick(latency, region, WRITE_OPS) for region in regions},
        "reads_ms": {region: _pick(latency, region, READ_OPS) for region in regions},
        "errors": results["errors"],
        "conflicts": results["conflicts"],
        "replication_lag_ms": results["replication_lag_ms"],
        "staleness": results.get("staleness", {}),
        "lost_writes": results.get("lost_writes"),
    }
    if floors is not None:
        summary["write_floor_ms"] = floors
    return summary


async def compare(
    topology_path: Path,
    modes: list[str],
    *,
    chaos_path: Path | None,
    seed: int,
    out_dir: Path,
    duration_s: float | None = None,
    progress_stream=None,
    write_modes: list[str] | None = None,
    attach: bool = False,
    simulated: bool = False,
) -> tuple[int, dict[str, Any]]:
    """Each mode in turn on the same workload and seed. With `attach`, against regions already up (they run one
    mode, so a mode they do not run is reported as not run: the runner refuses a mode mismatch). With `simulated`,
    each mode runs on the simulator in virtual time (experiment/simulated_run.py)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    comparison: dict[str, Any] = {}
    codes = []
    for name, mode, write_mode in variants(modes, write_modes):
        directory = out_dir / name
        copy = mode_copy(topology_path, mode, directory, write_mode)
        try:
            topology = load_topology(copy)
        except TopologyError as error:
            comparison[name] = {"ran": False, "reason": f"not a valid {mode} topology: " + "; ".join(error.errors)}
            codes.append(EXIT_INCOMPLETE)
            continue
        if simulated:
            from .simulated_run import run_simulated_file

            outcome = run_simulated_file(copy, chaos_path, seed, directory, duration_s)
        else:
            outcome = await run_experiment(
                copy, chaos_path=chaos_path, seed=seed, out_dir=directory, duration_s=duration_s,
                progress_stream=progress_stream, attach=attach,
            )  # fmt: skip
        codes.append(outcome.exit_code)
        if outcome.results is None:
            comparison[name] = {"ran": False, "reason": outcome.reason}
            continue
        comparison[name] = summarise(outcome.results, mrsc_floor_ms(topology) if mode == "mrsc" else None)
        comparison[name]["results"] = f"{name}/results.json"
        comparison[name]["mode"], comparison[name]["write_mode"] = mode, outcome.results["workload"]["write_mode"]
    document = {"topology": str(topology_path), "seed": seed, "chaos": str(chaos_path) if chaos_path else None,
                "modes": comparison}  # fmt: skip
    if simulated:
        document["simulated"] = True
    (out_dir / "compare.json").write_text(json.dumps(document, indent=2) + "\n")
    (out_dir / "compare.md").write_text(render(document))
    _plot(out_dir, comparison)
    write_compare_html(out_dir, document)
    if EXIT_INCOMPLETE in codes:
        return EXIT_INCOMPLETE, document
    return (EXIT_CHECK_FAILED if EXIT_CHECK_FAILED in codes else EXIT_PASSED), document


def _ms(stats: dict | None, key: str) -> str:
    if not stats or stats.get(key) is None:
        return "–"
    return f"{stats[key]:.1f}"


def render(document: dict[str, Any]) -> str:
    modes = document["modes"]
    lines = [f"# compare: {document['topology']} (seed {document['seed']})", ""]
    for mode, summary in modes.items():
        if not summary["ran"]:
            lines.append(f"- **{mode}: not run** — {summary['reason']}")
        else:
            verdict = VERDICT_WORDS[summary.get("verdict") or (VALID if summary["passed"] else INVALID)]
            lines.append(f"- **{mode}**: {verdict}; full results in `{summary['results']}`")
    ran = {mode: summary for mode, summary in modes.items() if summary["ran"]}
    if not ran:
        return "\n".join(lines + ["", "No mode ran, so there is nothing to compare.", ""])
    lines += ["", "## Writes (ms, p50 / p99 from intended start)", ""]
    header = "| region | op |" + "".join(f" {mode} p50 | {mode} p99 |" for mode in ran)
    floors = next((summary["write_floor_ms"] for summary in ran.values() if "write_floor_ms" in summary), None)
    if floors is not None:
        header += " MRSC floor (RTT to nearest member) |"
    lines += [header, "|" + " --- |" * (header.count("|") - 1)]
    regions = sorted({region for summary in ran.values() for region in summary["writes_ms"]})
    for kind in ("writes_ms", "reads_ms"):
        if kind == "reads_ms":
            lines += ["", "## Reads (ms, p50 / p99)", "", header.replace(" MRSC floor (RTT to nearest member) |", ""),
                      "|" + " --- |" * (header.replace(" MRSC floor (RTT to nearest member) |", "").count("|") - 1)]  # fmt: skip
        for region in regions:
            ops = sorted({op for summary in ran.values() for op in summary[kind].get(region, {})})
            for op in ops:
                row = f"| {region} | {op} |"
                for summary in ran.values():
                    stats = summary[kind].get(region, {}).get(op)
                    row += f" {_ms(stats, 'p50')} | {_ms(stats, 'p99')} |"
                if kind == "writes_ms" and floors is not None:
                    row += f" {floors.get(region, '–')} |"
                lines.append(row)
    lines += ["", "## Errors, conflicts, replication lag", "", "| mode | errors | RWCE | LWW overwrites | lost writes | lag p50 (ms, per link) |",
              "| --- | --- | ---: | ---: | ---: | --- |"]  # fmt: skip
    for mode, summary in ran.items():
        errors = {}
        for region_errors in summary["errors"].values():
            for name, count in region_errors.items():
                errors[name] = errors.get(name, 0) + count
        lag = ", ".join(f"{link} {_ms(stats, 'p50')}" for link, stats in summary["replication_lag_ms"].items()) or "–"
        lines.append(
            f"| {mode} | {', '.join(f'{k} {v}' for k, v in errors.items()) or 'none'} | "
            f"{summary['conflicts']['replicated_write_conflicts']} | {summary['conflicts']['lww_overwrites']} | "
            f"{(summary.get('lost_writes') or {}).get('count', '–')} | {lag} |"
        )
    lines += ["", "## Staleness of eventually consistent reads", "",
              "| mode | region | reads | stale | max versions behind | max ms behind | mean ms behind |",
              "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for mode, summary in ran.items():
        for region, stats in sorted(summary.get("staleness", {}).items()):
            lines.append(
                f"| {mode} | {region} | {int(stats['reads'])} | {int(stats['stale_reads'])} | "
                f"{int(stats['max_versions'])} | {stats['max_ms']:.1f} | {stats['mean_ms']:.1f} |"
            )
    lines += ["", "![write latency per region and mode](compare.png)", ""]
    return "\n".join(lines)


def _plot(out_dir: Path, comparison: dict[str, Any]) -> None:
    ran = {mode: summary for mode, summary in comparison.items() if summary["ran"]}
    if not ran:
        return
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    regions = sorted({region for summary in ran.values() for region in summary["writes_ms"]})
    figure, axis = plt.subplots(figsize=(max(6, 2.2 * len(regions)), 4))
    width = 0.8 / len(ran)
    for index, (mode, summary) in enumerate(ran.items()):
        values = []
        for region in regions:
            stats = summary["writes_ms"].get(region, {}).get("put") or next(
                iter(summary["writes_ms"].get(region, {}).values()), None
            )
            values.append(stats["p50"] if stats and stats.get("p50") is not None else 0)
        positions = [i + index * width for i in range(len(regions))]
        axis.bar(positions, values, width, label=f"{mode} write p50")
        if "write_floor_ms" in summary:
            floors = [summary["write_floor_ms"].get(region, 0) for region in regions]
            axis.scatter(positions, floors, marker="_", s=400, color="black", label="MRSC floor (RTT to nearest)")
    axis.set_xticks([i + width * (len(ran) - 1) / 2 for i in range(len(regions))], regions)
    axis.set_ylabel("ms")
    axis.legend(fontsize=8)
    axis.grid(True, axis="y", alpha=0.3)
    figure.savefig(out_dir / "compare.png", dpi=100, bbox_inches="tight")
    plt.close(figure)


def compare_command(
    topology_path: Path,
    modes_text: str,
    chaos_path: Path | None,
    seed: int,
    out_dir: Path | None,
    duration_s=None,
    write_modes_text: str | None = None,
    attach: bool = False,
    simulated: bool = False,
) -> int:
    from .workload import WRITE_MODES

    modes = [mode.strip() for mode in modes_text.split(",") if mode.strip()]
    unknown = [mode for mode in modes if mode not in ("mrec", "mrsc")]
    if not modes or unknown or len(set(modes)) != len(modes):
        print(f"globaltables compare: --modes {modes_text!r}: list distinct modes from mrec, mrsc", file=sys.stderr)
        return EXIT_INCOMPLETE
    write_modes = None
    if write_modes_text is not None:
        write_modes = [mode.strip() for mode in write_modes_text.split(",") if mode.strip()]
        if not write_modes or set(write_modes) - set(WRITE_MODES) or len(set(write_modes)) != len(write_modes):
            print(f"globaltables compare: --write-modes {write_modes_text!r}: list distinct write modes from "
                  f"{', '.join(WRITE_MODES)}", file=sys.stderr)  # fmt: skip
            return EXIT_INCOMPLETE
    try:
        name = load_topology(topology_path).name
    except TopologyError as error:
        print("\n".join(error.errors), file=sys.stderr)
        return EXIT_INCOMPLETE
    out_dir = out_dir or Path("results") / f"{name}-compare-{time.strftime('%Y%m%d-%H%M%S')}"
    code, document = asyncio.run(
        compare(
            topology_path,
            modes,
            chaos_path=chaos_path,
            seed=seed,
            out_dir=out_dir,
            duration_s=duration_s,
            progress_stream=sys.stderr,
            write_modes=write_modes,
            attach=attach,
            simulated=simulated,
        )
    )
    for mode, summary in document["modes"].items():
        print(
            f"{mode}: "
            + (
                "ran, " + VERDICT_WORDS[summary.get("verdict") or (VALID if summary["passed"] else INVALID)]
                if summary["ran"]
                else f"not run — {summary['reason']}"
            )
        )
    print(f"comparison: {out_dir / 'compare.md'}")
    return code
