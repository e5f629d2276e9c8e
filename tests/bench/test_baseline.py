"""bench/_baseline.py: `--baseline-rev REV` checks REV out into a temporary worktree, runs the same bench file
against it and this tree, prints current / baseline per number, and leaves no worktree behind.

Against a throwaway repository of two commits (the project's own is left alone), with a bench file that reports
one number read from the package under test: fast, and no timing is asserted.
"""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _load_helper():
    spec = importlib.util.spec_from_file_location("bench_baseline", BENCH / "_baseline.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


baseline = _load_helper()


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository whose package `pkg` says V = 1 at HEAD~1 and V = 2 at HEAD (and in the working tree)."""
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    git(root, "init", "--quiet")
    git(root, "config", "user.email", "bench@example.com")
    git(root, "config", "user.name", "bench")
    for version in (1, 2):
        (root / "src" / "pkg.py").write_text(f"V = {version}\n")
        git(root, "add", "src/pkg.py")
        git(root, "commit", "--quiet", "-m", f"version {version}")
    return root


def worktrees(repo: Path) -> list[str]:
    return [line.split(" ", 1)[1] for line in git(repo, "worktree", "list", "--porcelain").splitlines()
            if line.startswith("worktree ")]  # fmt: skip


def test_a_checkout_is_a_worktree_of_the_revision_removed_afterwards(repo: Path):
    with baseline.checkout("HEAD~1", repo) as tree:
        assert (tree / "src" / "pkg.py").read_text() == "V = 1\n"
        assert str(tree) in worktrees(repo)
    assert not tree.exists() and not tree.parent.exists()
    assert worktrees(repo) == [str(repo)]


def test_a_failing_run_still_removes_the_worktree(repo: Path):
    with pytest.raises(RuntimeError, match="planted"), baseline.checkout("HEAD~1", repo) as tree:
        raise RuntimeError("planted")
    assert not tree.exists() and worktrees(repo) == [str(repo)]


def test_an_unknown_revision_is_refused_by_name(repo: Path):
    with (
        pytest.raises(baseline.BaselineError, match="'no-such-rev' is not a revision of"),
        baseline.checkout("no-such-rev", repo),
    ):
        pass
    assert worktrees(repo) == [str(repo)]


def test_compare_runs_the_bench_on_both_trees_and_prints_the_ratio(repo: Path, tmp_path: Path, capfd):
    bench = tmp_path / "fake_bench.py"
    bench.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(BENCH)!r})\n"
        "import _baseline\n"
        "_baseline.use_source_tree()\n"
        "import pkg\n"
        "assert sys.argv[1:] == ['--size', '3'], sys.argv\n"
        "_baseline.report({'version': pkg.V, 'size': 3})\n"
    )
    argv = ["--baseline-rev", "HEAD~1", "--size", "3", "--baseline-rounds=2"]
    assert baseline.compare(str(bench), argv, "HEAD~1", rounds=2, repo=repo) == 0
    out = capfd.readouterr().out
    assert out.count("=== current") == 2 and out.count("=== baseline") == 2
    lines = {line.split()[0]: line.split()[1:] for line in out.splitlines()[-2:]}
    assert lines == {"version": ["2.000", "1.000", "2.000"], "size": ["3.000", "3.000", "1.000"]}
    assert worktrees(repo) == [str(repo)]


def test_a_bench_that_fails_on_the_baseline_is_reported_and_cleaned_up(repo: Path, tmp_path: Path, capfd):
    bench = tmp_path / "fails_on_old.py"
    bench.write_text(
        f"import sys\nsys.path.insert(0, {str(BENCH)!r})\nimport _baseline\n_baseline.use_source_tree()\n"
        "import pkg\nif pkg.V == 1:\n    sys.exit(3)\n_baseline.report({'version': pkg.V})\n"
    )
    assert baseline.compare(str(bench), [], "HEAD~1", repo=repo) == 2
    err = capfd.readouterr().err
    assert "baseline (round 1, HEAD~1): fails_on_old.py exited with status 3" in err
    assert worktrees(repo) == [str(repo)]


def test_ratio_lines_mark_a_number_one_side_lacks():
    lines = baseline.ratio_lines({"put ops/s": 200.0, "new p99 ms": 1.5}, {"put ops/s": 100.0, "gone": 4.0})
    assert [line.split() for line in lines[1:]] == [
        ["put", "ops/s", "200.000", "100.000", "2.000"],
        ["new", "p99", "ms", "1.500", "-", "-"],
        ["gone", "-", "4.000", "-"],
    ]
