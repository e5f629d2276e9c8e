"""`globaltables validate FILE...`: topology files (with their `workload:`) and chaos schedules, nothing run.

A file is a chaos schedule when its top level has `steps` or `nemesis` and no `regions`; anything else is read as
a topology. A schedule names regions, so it is checked against a topology: `--topology T`, else the topology files
given in the same call (it must be valid against at least one of them), else only its structure is checked — every
region it names is accepted — and a warning says so.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path

import yaml

from ..chaos.schedule import ScheduleError, fit_tables, load_schedule
from ..runtime.yaml_documents import load_yaml
from ..topology.load import TopologyError
from ..topology.model import Topology
from .topology import load_topology

STAND_INS = ("us-east-1", "eu-west-1", "ap-southeast-1")
AWS_REGION = re.compile(r"\b[a-z]{2}(?:-[a-z]+)+-[0-9]{1,2}\b")


def is_chaos_schedule(path: Path) -> bool:
    try:
        document = load_yaml(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False
    return isinstance(document, dict) and ("steps" in document or "nemesis" in document) and "regions" not in document


def validate_files(paths: Iterable[Path], report: Callable[[str], None], topology_path: Path | None = None) -> bool:
    paths = list(paths)
    valid = True
    schedules = [path for path in paths if is_chaos_schedule(path)]
    topologies: list[Topology] = []
    for path in [path for path in paths if path not in schedules]:
        try:
            topology = load_topology(path)
        except TopologyError as error:
            valid = False
            for line in error.errors:
                report(line)
            continue
        topologies.append(topology)
        for warning in topology.warnings:
            report(f"warning: {warning}")
    if topology_path is not None:
        try:
            topologies = [load_topology(topology_path)]
        except TopologyError as error:
            for line in error.errors:
                report(line)
            return False
    for path in schedules:
        valid &= _validate_schedule(path, topologies, report)
    return valid


def _validate_schedule(path: Path, topologies: list[Topology], report: Callable[[str], None]) -> bool:
    if not topologies:
        regions = sorted(set(AWS_REGION.findall(path.read_text(encoding="utf-8"))))
        # A nemesis draws among the topology's regions: give it enough stand-ins to expand its faults.
        regions += [name for name in STAND_INS if name not in regions][: max(0, 3 - len(regions))]
        report(f"warning: {path}: region names not checked (give --topology or a topology file in the same call)")
        candidates = [(None, regions, ())]
    else:
        candidates = [(t, list(t.region_names), [r.name for r in t.regions if r.role == "witness"]) for t in topologies]
    failures: list[str] = []
    for topology, regions, witnesses in candidates:
        try:
            schedule = load_schedule(path, regions, witnesses)
            problems = [] if topology is None else fit_tables(schedule, [t.name for t in topology.tables],
                                                              topology.mode)[1]  # fmt: skip
            if not problems:
                return True
            failures.extend(f"{line} (against topology {topology.name})" for line in problems)
        except (ScheduleError, ValueError) as error:
            if not isinstance(error, ScheduleError):
                failures.append(f"{path}: {error}")
                continue
            against = f" (against topology {topology.name})" if topology is not None else ""
            failures.extend(line + against for line in error.errors)
    for line in failures:
        report(line)
    return False
