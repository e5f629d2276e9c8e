"""Deterministic replay: every simulated scenario of this library, MREC and strong mode, run twice with the same
seed, gives the same message trace, the same history and the same final items, byte for byte
(SimulatedHarness.fingerprint) — in one process, and in two processes with different PYTHONHASHSEEDs
(replay_digests.py prints each scenario's fingerprint digest). Strong-mode scenarios race calls on threads
(`concurrently`); their replay must not depend on how the operating system schedules those threads either."""

from __future__ import annotations

import importlib.util
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

from globaltables.testing import simulate

HERE = Path(__file__).parent
SRC = HERE.parents[1] / "src"
MODULES = [
    "test_conflicts.py",
    "test_replication_visibility.py",
    "test_clocks_and_partitions.py",
    "test_strong_consistency.py",
]
FIXTURES = {"topology", "global_table", "customer"}


def kit_options(function) -> dict:
    """The `globaltables` marker closest to the scenario (its own, else its module's), as the plugin reads it."""
    module = sys.modules[function.__module__]
    for marker in [*getattr(function, "pytestmark", []), *getattr(module, "pytestmark", [])]:
        if marker.name == "globaltables":
            return dict(marker.kwargs)
    return {}


def scenarios():
    for name in MODULES:
        spec = importlib.util.spec_from_file_location(f"replay_{name[:-3]}", HERE / name)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        for attribute, function in sorted(vars(module).items()):
            if not attribute.startswith("test_") or not set(inspect.signature(function).parameters) <= FIXTURES:
                continue
            if "sim" in kit_options(function).get("modes", ("sim",)):
                yield pytest.param(function, id=f"{name[:-3]}::{attribute}")


def run_once(function, seed: int) -> bytes:
    with simulate(kit_options(function).get("topology"), seed) as harness:
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
