"""Deterministic replay: every simulated scenario of this library, run twice with the same seed, gives the same
message trace, the same history and the same final items, byte for byte (SimHarness.fingerprint) — in one process,
and in two processes with different PYTHONHASHSEEDs (replay_digests.py prints each scenario's fingerprint digest)."""

from __future__ import annotations

import importlib.util
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

from globaltables.testing import load_spec
from globaltables.testing.simulated import SimHarness

HERE = Path(__file__).parent
SRC = HERE.parents[1] / "src"
MODULES = ["test_conflicts.py", "test_replication_visibility.py", "test_clocks_and_partitions.py"]
FIXTURES = {"topology", "global_table", "customer"}


def scenarios():
    for name in MODULES:
        spec = importlib.util.spec_from_file_location(f"replay_{name[:-3]}", HERE / name)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for attribute, function in sorted(vars(module).items()):
            if attribute.startswith("test_") and set(inspect.signature(function).parameters) <= FIXTURES:
                yield pytest.param(function, id=f"{name[:-3]}::{attribute}")


def run_once(function, seed: int) -> bytes:
    markers = [m for m in getattr(function, "pytestmark", []) if m.name == "globaltables"]
    topology = markers[0].kwargs.get("topology") if markers else None
    with SimHarness(load_spec(topology), seed) as harness:
        arguments = {"topology": harness, "global_table": harness.table(), "customer": function.__name__}
        function(**{name: arguments[name] for name in inspect.signature(function).parameters})
        return harness.fingerprint()


@pytest.mark.parametrize("function", list(scenarios()))
def test_same_seed_same_trace(function, globaltables_seed):
    first = run_once(function, globaltables_seed)
    assert b" deliver " in first  # messages really flowed
    assert run_once(function, globaltables_seed) == first


def test_a_different_seed_gives_a_different_trace():
    function = next(iter(scenarios())).values[0]
    assert run_once(function, 1) != run_once(function, 2)


def test_same_seed_same_trace_in_processes_with_different_hash_seeds(globaltables_seed):
    command = [sys.executable, str(HERE / "replay_digests.py"), "--globaltables-seed", str(globaltables_seed)]
    runs = [
        subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(SRC)},
        )  # fmt: skip
        for hash_seed in ("1", "2")
    ]
    outputs = []
    for run in runs:
        out, err = run.communicate(timeout=120)
        assert run.returncode == 0, err.decode()
        outputs.append(out.decode().splitlines())
    expected = [param.id for param in scenarios()]
    assert [line.split()[0] for line in outputs[0]] == expected  # every scenario ran, in order
    assert outputs[0] == outputs[1]
