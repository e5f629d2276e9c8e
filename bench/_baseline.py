"""`--baseline-rev REV` for the benchmarks: the same measurement against a checkout of REV, in the same run, and
the ratio current / baseline of every number.

Why in the same run: this machine is shared and noisy, so a number measured an hour ago (or on another commit
while something else ran) says little; measured alternately, current and baseline see the same noise.

How:
1. REV is checked out into a temporary directory (`git worktree add --detach`, removed again at the end, also when
   a run fails or is interrupted).
2. The bench file being run (the current one: the measurement must be the same) is started as a child process
   once per side and round, alternating current, baseline, current, baseline, ... (`--baseline-rounds`, default 1).
   The child finds the package under test through $GLOBALTABLES_BENCH_SRC (the current tree's `src`, or the
   checkout's): a bench uses `source_tree()` both for its own imports and for the PYTHONPATH of the processes it
   starts.
3. The child writes its numbers (`report({...})`, name -> value) to the JSON file named by
   $GLOBALTABLES_BENCH_METRICS; per side the median over the rounds is kept, and one line per number prints
   current, baseline and current / baseline. Whether higher is better is in each number's name (ops/s, ms).

A baseline older than a number's introduction simply lacks it (shown as "-"); a baseline whose package the
current bench file cannot drive fails with that child's exit status and output.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

SRC_ENV = "GLOBALTABLES_BENCH_SRC"
METRICS_ENV = "GLOBALTABLES_BENCH_METRICS"
REPO = Path(__file__).resolve().parent.parent


def source_tree() -> Path:
    """The `src` folder of the package under test: the checkout's in a baseline run, else this tree's."""
    return Path(os.environ.get(SRC_ENV) or REPO / "src").resolve()


def use_source_tree() -> Path:
    """Put the package under test first on sys.path (before any `import globaltables`); returns its `src`."""
    src = source_tree()
    sys.path.insert(0, str(src))
    return src


def child_pythonpath(extra: str | None = None) -> str:
    """PYTHONPATH for the processes a bench starts (regions, `globaltables up`): the package under test first."""
    inherited = extra if extra is not None else os.environ.get("PYTHONPATH")
    return os.pathsep.join(filter(None, [str(source_tree()), inherited]))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--baseline-rev", metavar="REV",
        help="also measure a checkout of git revision REV, alternately with this tree, and print current/baseline",
    )  # fmt: skip
    parser.add_argument(
        "--baseline-rounds", type=int, default=1, metavar="N",
        help="with --baseline-rev: measure each side N times, alternating (the median is compared; default 1)",
    )  # fmt: skip


def report(metrics: Mapping[str, float]) -> None:
    """Hand this run's numbers to a `--baseline-rev` parent (nothing happens in a plain run)."""
    path = os.environ.get(METRICS_ENV)
    if path:
        Path(path).write_text(json.dumps({name: float(value) for name, value in metrics.items()}))


# ------------------------------------------------------------------------------------------------ the checkout


class BaselineError(RuntimeError):
    pass


def _git(repo: Path, *args: str) -> str:
    result = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise BaselineError(f"git {' '.join(args)}: {result.stderr.strip() or result.stdout.strip()}")
    return result.stdout.strip()


@contextlib.contextmanager
def checkout(rev: str, repo: Path = REPO) -> Iterator[Path]:
    """A detached worktree of `rev` in a temporary directory, removed (and unregistered) on exit."""
    try:
        commit = _git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}") if rev else ""
    except BaselineError:
        commit = ""
    if not commit:
        raise BaselineError(f"{rev!r} is not a revision of {repo}") from None
    parent = Path(tempfile.mkdtemp(prefix="bench-baseline-"))
    tree = parent / commit[:12]
    try:
        _git(repo, "worktree", "add", "--detach", "--quiet", str(tree), commit)
        yield tree
    finally:
        with contextlib.suppress(BaselineError):
            _git(repo, "worktree", "remove", "--force", str(tree))
        with contextlib.suppress(BaselineError):
            _git(repo, "worktree", "prune")
        shutil.rmtree(parent, ignore_errors=True)


# ---------------------------------------------------------------------------------------------- the comparison


def _without_baseline_options(argv: Sequence[str]) -> list[str]:
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg in ("--baseline-rev", "--baseline-rounds"):
            skip = True
            continue
        if arg.startswith(("--baseline-rev=", "--baseline-rounds=")):
            continue
        kept.append(arg)
    return kept


def _measure(bench: Path, argv: Sequence[str], src: Path, label: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench-metrics-") as folder:
        metrics = Path(folder) / "metrics.json"
        env = dict(os.environ, **{SRC_ENV: str(src), METRICS_ENV: str(metrics)})
        print(f"=== {label}: {src}", flush=True)
        result = subprocess.run([sys.executable, str(bench), *argv], env=env, check=False)
        if result.returncode != 0:
            raise BaselineError(f"{label}: {bench.name} exited with status {result.returncode}")
        if not metrics.exists():
            raise BaselineError(f"{label}: {bench.name} reported no numbers (it does not call _baseline.report)")
        return json.loads(metrics.read_text())


def ratio_lines(current: Mapping[str, float], baseline: Mapping[str, float]) -> list[str]:
    """One line per number: name, current, baseline, current / baseline ("-" where a side lacks it)."""
    names = list(current) + [name for name in baseline if name not in current]
    width = max([len(name) for name in names] + [6])

    def show(value: float | None) -> str:
        return "-" if value is None or math.isnan(value) else f"{value:,.3f}"

    lines = [f"{'number':<{width}} {'current':>14} {'baseline':>14} {'current/baseline':>17}"]
    for name in names:
        now, then = current.get(name), baseline.get(name)
        ratio = now / then if now is not None and then not in (None, 0) else None
        lines.append(f"{name:<{width}} {show(now):>14} {show(then):>14} {show(ratio):>17}")
    return lines


def _medians(runs: list[dict[str, float]]) -> dict[str, float]:
    names = {name: None for run in runs for name in run}
    return {name: statistics.median(run[name] for run in runs if name in run) for name in names}


def compare(bench_file: str, argv: Sequence[str], rev: str, rounds: int = 1, repo: Path = REPO) -> int:
    """Run `bench_file` with `argv` (its --baseline-* options dropped) against this tree and a checkout of `rev`,
    `rounds` times each, alternately; print the medians and their ratio. The process exit status."""
    bench = Path(bench_file).resolve()
    argv = _without_baseline_options(argv)
    try:
        with checkout(rev, repo) as tree:
            runs: dict[str, list[dict[str, float]]] = {"current": [], "baseline": []}
            for round_number in range(1, max(1, rounds) + 1):
                for side, src in (("current", repo / "src"), ("baseline", tree / "src")):
                    label = f"{side} (round {round_number}" + (f", {rev})" if side == "baseline" else ")")
                    runs[side].append(_measure(bench, argv, src, label))
    except BaselineError as error:
        print(f"{bench.name} --baseline-rev {rev}: {error}", file=sys.stderr)
        return 2
    print(f"\n{bench.name}: current tree vs {rev}, median of {max(1, rounds)} run(s) each")
    for line in ratio_lines(_medians(runs["current"]), _medians(runs["baseline"])):
        print(line)
    return 0


def baseline_requested(args: argparse.Namespace, bench_file: str) -> int | None:
    """When `--baseline-rev` was given: run the comparison and return its exit status; else None (measure here)."""
    if not getattr(args, "baseline_rev", None):
        return None
    return compare(bench_file, sys.argv[1:], args.baseline_rev, args.baseline_rounds)
