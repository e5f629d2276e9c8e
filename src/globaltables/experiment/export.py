"""`globaltables export kubernetes TOPOLOGY` and `globaltables export chaos-mesh CHAOS --topology T`: files to run
the same topology and schedule on a Kubernetes cluster (experiment/kubernetes.py, experiment/chaos_mesh.py).
Bad files get the same one-line file-and-field errors as `validate` (exit 2)."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from ..chaos.schedule import ScheduleError, load_schedule
from ..topology.load import TopologyError
from .chaos_mesh import export_schedule
from .kubernetes import manifests, read_source, render
from .topology import load_topology


def export_command(
    kind: str,
    file: Path,
    *,
    topology: Path | None = None,
    image: str | None = None,
    namespace: str | None = None,
    seed: int | None = None,
    out: Path | None = None,
) -> int:
    try:
        if kind == "kubernetes":
            loaded = load_topology(file)
            text = render(manifests(loaded, read_source(file), image=image, namespace=namespace))
        else:
            if topology is None:
                print(
                    "globaltables export chaos-mesh: give --topology, the topology the schedule runs on",
                    file=sys.stderr,
                )
                return 2
            loaded = load_topology(topology)
            witnesses = [region.name for region in loaded.regions if region.role == "witness"]
            schedule = load_schedule(file, loaded.region_names, witnesses, seed=seed)
            workflow, skipped = export_schedule(loaded, schedule, namespace)
            for line in skipped:
                print(f"globaltables export chaos-mesh: skipped {line}", file=sys.stderr)
            if schedule.faults and len(skipped) == len(schedule.faults):
                # An empty Workflow would look like a chaos experiment and inject nothing.
                print(f"globaltables export chaos-mesh: {file}: no step has a Chaos Mesh equivalent", file=sys.stderr)
                return 2
            text = yaml.safe_dump(workflow, sort_keys=False)
    except (TopologyError, ScheduleError) as error:
        for line in error.errors:
            print(line, file=sys.stderr)
        return 2
    if out is None:
        sys.stdout.write(text)
    else:
        out.write_text(text)
    return 0
