"""Hostile YAML (nesting 20,000 levels deep, a document that holds itself through an alias) gets the same one-line
"<file>: invalid YAML: line L, column C: ..." error as any other bad file, from every command that reads files.

PyYAML builds documents recursively: before runtime/yaml_documents.py these raised RecursionError out of the
composer (a traceback), or built a self-referencing list that recursed endlessly later.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from globaltables.cli.main import main
from globaltables.runtime.yaml_documents import MAX_DEPTH, DocumentTooDeep, load_yaml

TOPOLOGY = Path(__file__).resolve().parents[2] / "topologies" / "quickstart.yaml"

HOSTILE = {
    "flow-nesting": "name: x\nregions: " + "[" * 20_000 + "]" * 20_000 + "\n",
    "block-nesting": "name: x\nregions:\n" + "".join(" " * i + "a:\n" for i in range(1, 3_000)),
    "recursion-limit": "steps: " + "{a: " * 990 + "1" + "}" * 990 + "\n",
    "self-alias": "name: &a [*a]\n",
    "self-alias-in-mapping": "regions: &r\n  - name: us-east-1\n    peers: *r\n",
}


@pytest.fixture(params=sorted(HOSTILE))
def hostile(request, tmp_path) -> Path:
    path = tmp_path / f"{request.param}.yaml"
    path.write_text(HOSTILE[request.param])
    return path


def commands(path: Path, state: Path) -> list[list[str]]:
    data = ["--data-dir", str(state)]
    return [
        ["validate", str(path)],
        ["validate", "--topology", str(TOPOLOGY), str(path)],
        ["up", str(path), *data],
        ["down", str(path)],  # (with --data-dir, down reads no topology)
        ["check", str(path), *data],
        ["chaos", str(path), "heal", "all", *data],
        ["chaos", str(TOPOLOGY), "run", str(path), *data],
        ["run", str(path), "--out", str(state / "run")],
        ["run", str(TOPOLOGY), "--chaos", str(path), "--out", str(state / "run-chaos")],
        ["compare", str(path), "--out", str(state / "compare")],
        ["region", "--name", "us-east-1", "--topology", str(path), "--in-memory"],
    ]


def test_every_command_that_reads_files_answers_hostile_yaml_with_one_line(hostile, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for argv in commands(hostile, tmp_path / "state"):
        code = main(argv)
        err = capsys.readouterr().err
        assert code != 0, argv
        assert "Traceback" not in err and "RecursionError" not in err, argv
        lines = [line for line in err.splitlines() if str(hostile) in line]
        assert lines, (argv, err)
        assert f"{hostile}: invalid YAML: line " in lines[0], (argv, err)
        assert ("nested deeper than" in lines[0]) or ("refers to a collection that contains it" in lines[0])


def test_nesting_up_to_the_limit_and_shared_aliases_still_load():
    # The top-level mapping is the first of MAX_DEPTH levels.
    levels = MAX_DEPTH - 1
    assert load_yaml("a: " + "[" * levels + "]" * levels) == {"a": eval("[" * levels + "]" * levels)}
    with pytest.raises(DocumentTooDeep):
        load_yaml("a: " + "[" * MAX_DEPTH + "]" * MAX_DEPTH)
    # An alias to a finished collection (YAML's way of sharing defaults) is fine.
    document = load_yaml("base: &b {x: 1}\nuse: *b\nmerged: {<<: *b, y: 2}\n")
    assert document == {"base": {"x": 1}, "use": {"x": 1}, "merged": {"x": 1, "y": 2}}
