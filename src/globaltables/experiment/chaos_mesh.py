"""`globaltables export chaos-mesh CHAOS.yaml --topology T`: a chaos schedule as Chaos Mesh resources.

One `Workflow` (chaos-mesh.org/v1alpha1) runs the schedule: a Parallel entry with one Serial branch per fault, a
`Suspend` until the fault's start, then the fault's chaos for its duration (`deadline`). A fault without a duration
lasts until the schedule's final heal (its end). Pods are selected by the labels `globaltables export kubernetes`
puts on every region (`globaltables.io/topology`, `globaltables.io/region`), in the topology's namespace. A seeded
nemesis is expanded first (the seed in the schedule, or `--seed`), so the export is the exact fault list a run with
that seed injects. Field names follow Chaos Mesh's documentation (NetworkChaos, TimeChaos, PodChaos, Workflow).

How the kinds map, and where the semantics differ (docs/beyond-one-machine.md has the table):
- partitions of every shape (partition, isolate, split, bridge, ring, witness-loss): the fault's grudge, one
  NetworkChaos `partition` per cut direction (`direction: to`, from the sender's pods to the receiver's), or
  `both` where both directions are cut. Exact.
- latency: NetworkChaos `delay`. netem's delay is added on the sender's egress, per direction, *on top of* the
  topology's link latency (which the regions keep applying themselves), whereas the regions' own latency fault
  replaces the link's latency. Distributions other than constant/uniform jitter have no netem equivalent: jitter.
- loss / duplicate: NetworkChaos `loss` / `duplicate` in percent; a bursty loss (`burst`) becomes netem's
  correlation, which is not a Gilbert-Elliott burst model.
- reorder: NetworkChaos `delay` with `reorder` (netem sends the reordered share at once and delays the rest).
- bandwidth: NetworkChaos `bandwidth` (`rate` in tc's units: our KB/s is tc's `kbps`).
- pause-replication (AWS FIS's aws:dynamodb:global-table-pause-replication): a partition of the replication links
  it holds. Chaos Mesh cuts packets, not one table's records: every table and the region's other traffic between
  those pods stop too, where the regions' own action holds only the named table.
- stall: no netem equivalent; exported as a partition (messages dropped, not held; replication resends them after
  the heal, so a stall and a partition end the same way, with different lag on the way).
- skew and bump: TimeChaos `timeOffset` on the region container (CLOCK_REALTIME). TimeChaos shifts only the target
  container's processes, as the regions' own skew shifts only that region's clock. drift and strobe have no Chaos
  Mesh equivalent: skipped, and listed in the Workflow's annotation `globaltables.io/skipped`.
- crash: PodChaos `pod-kill`; the StatefulSet restarts the pod at once, so the region is down for a pod restart,
  not for the fault's duration (use pause for a longer outage). pause: PodChaos `pod-failure` for the duration (the
  container is replaced by a pause image and restarted after: the process restarts, where SIGSTOP would freeze it).
  restart / resume / heal are instants the Workflow does not need: every chaos ends at its deadline.
- update-table changes a table's capacity through DynamoDB's API, which Chaos Mesh cannot do: skipped (a schedule
  with nothing else is refused rather than exported as a Workflow that injects nothing).
"""

from __future__ import annotations

from typing import Any

from ..chaos.faults import LINK_VERBS, PARTITION_VERBS, TABLE_VERBS, Fault
from ..chaos.schedule import Schedule
from ..topology.model import Topology
from .kubernetes import REGION_LABEL, TOPOLOGY_LABEL, dns_label

API_VERSION = "chaos-mesh.org/v1alpha1"
UNSUPPORTED = ("drift", "strobe", "update-table")
MIN_DEADLINE_S = 1.0  # a fault still in force at the final heal gets at least this long


def _seconds(value: float) -> str:
    return f"{max(value, 0.0):.3f}".rstrip("0").rstrip(".") + "s"


def _millis(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".") + "ms"


def _percent(rate: float) -> str:
    return f"{rate * 100:.2f}".rstrip("0").rstrip(".")


class ChaosMeshExport:
    def __init__(self, topology: Topology, namespace: str | None = None) -> None:
        self.topology = topology
        self.namespace = dns_label(namespace or topology.name)
        self.skipped: list[str] = []

    # ------------------------------------------------------------------------------------------ selectors

    def selector(self, regions: tuple[str, ...] | list[str]) -> dict[str, Any]:
        selector: dict[str, Any] = {
            "namespaces": [self.namespace],
            "labelSelectors": {TOPOLOGY_LABEL: dns_label(self.topology.name)},
        }
        if len(regions) == 1:
            selector["labelSelectors"][REGION_LABEL] = regions[0]
        else:
            selector["expressionSelectors"] = [{"key": REGION_LABEL, "operator": "In", "values": sorted(regions)}]
        return selector

    def network(self, action: str, source: list[str], target: list[str], direction: str, **fields: Any) -> dict:
        return {
            "action": action,
            "mode": "all",
            "selector": self.selector(source),
            "direction": direction,
            "target": {"mode": "all", "selector": self.selector(target)},
            **fields,
        }

    # ------------------------------------------------------------------------------------------ one fault

    def chaos_of(self, fault: Fault) -> list[tuple[str, str, dict[str, Any]]]:
        """[(templateType, field name, spec)] that inject `fault` (empty when Chaos Mesh cannot express it)."""
        verb = fault.verb
        if verb in PARTITION_VERBS or verb == "stall" or verb in TABLE_VERBS:
            if verb == "stall":
                pairs = set(fault.directions())
            elif verb in TABLE_VERBS:  # pause-replication: the links that stop carrying the table's records
                held = fault.held_replication([region.name for region in self.topology.replicas])
                pairs = {
                    (source, peer) for source, tables in held.items() for peers in tables.values() for peer in peers
                }
            else:
                grudge = fault.grudge(self.topology.region_names)
                pairs = {(sender, receiver) for receiver, senders in grudge.items() for sender in senders}
            found = []
            for sender, receiver in sorted(pairs):
                if (receiver, sender) in pairs and receiver < sender:
                    continue  # the `both` entry of the pair below covers it
                direction = "both" if (receiver, sender) in pairs else "to"
                found.append(
                    ("NetworkChaos", "networkChaos", self.network("partition", [sender], [receiver], direction))
                )
            return found
        if verb in LINK_VERBS:
            source, target = fault.regions
            direction = "to" if fault.one_way else "both"
            params = fault.params
            if verb == "latency":
                fields = {
                    "delay": {
                        "latency": _millis(params["latency_ms"]),
                        "jitter": _millis(params.get("jitter_ms", 0.0)),
                        "correlation": "0",
                    }
                }
                return [
                    ("NetworkChaos", "networkChaos", self.network("delay", [source], [target], direction, **fields))
                ]
            if verb == "loss":
                correlation = "0" if params.get("loss_burst", 1) <= 1 else _percent(1 - 1 / params["loss_burst"])
                fields = {"loss": {"loss": _percent(params["loss"]), "correlation": correlation}}
                return [("NetworkChaos", "networkChaos", self.network("loss", [source], [target], direction, **fields))]
            if verb == "duplicate":
                fields = {"duplicate": {"duplicate": _percent(params["duplicate"]), "correlation": "0"}}
                return [
                    ("NetworkChaos", "networkChaos", self.network("duplicate", [source], [target], direction, **fields))
                ]
            if verb == "reorder":
                fields = {
                    "delay": {
                        "latency": _millis(params["reorder_ms"]),
                        "correlation": "0",
                        "reorder": {"reorder": _percent(params["reorder"]), "correlation": "0", "gap": 0},
                    }
                }
                return [
                    ("NetworkChaos", "networkChaos", self.network("delay", [source], [target], direction, **fields))
                ]
            if verb == "bandwidth":
                fields = {
                    "bandwidth": {"rate": f"{params['bandwidth_kbps']:g}kbps", "limit": 20971520, "buffer": 10000}
                }
                return [
                    ("NetworkChaos", "networkChaos", self.network("bandwidth", [source], [target], direction, **fields))
                ]
        if verb in ("skew", "bump"):
            offset = fault.params.get("offset_ms", fault.params.get("bump_ms", 0.0))
            spec = {
                "mode": "all",
                "selector": self.selector(fault.regions),
                "timeOffset": _millis(offset),
                "clockIds": ["CLOCK_REALTIME"],
                "containerNames": ["region"],
            }
            return [("TimeChaos", "timeChaos", spec)]
        if verb == "crash":
            return [
                (
                    "PodChaos",
                    "podChaos",
                    {"action": "pod-kill", "mode": "all", "selector": self.selector(fault.regions), "gracePeriod": 0},
                )
            ]
        if verb == "pause":
            return [
                (
                    "PodChaos",
                    "podChaos",
                    {"action": "pod-failure", "mode": "all", "selector": self.selector(fault.regions)},
                )
            ]
        if verb in UNSUPPORTED:
            self.skipped.append(f"{verb} {'/'.join(fault.regions)} at {fault.at:g}s: no Chaos Mesh equivalent")
        return []

    # ------------------------------------------------------------------------------------------ the schedule

    def workflow(self, schedule: Schedule) -> dict[str, Any]:
        end = schedule.end_s
        entry = dns_label(f"{schedule.name}-entry")
        templates: list[dict[str, Any]] = []
        branches: list[str] = []
        for index, fault in enumerate(schedule.faults):
            chaos = self.chaos_of(fault)
            if not chaos:
                continue
            lasts = fault.duration if fault.duration is not None else max(end - fault.at, MIN_DEADLINE_S)
            branch = dns_label(f"f{index}-{fault.verb}")
            children = []
            if fault.at > 0:
                children.append(f"{branch}-wait")
                templates.append({"name": f"{branch}-wait", "templateType": "Suspend", "deadline": _seconds(fault.at)})
            names = []
            for part, (kind, field, spec) in enumerate(chaos):
                name = f"{branch}-{part}"
                names.append(name)
                templates.append({"name": name, "templateType": kind, "deadline": _seconds(lasts), field: spec})
            if len(names) > 1:
                templates.append({"name": f"{branch}-all", "templateType": "Parallel", "children": names})
                children.append(f"{branch}-all")
            else:
                children.extend(names)
            templates.append({"name": branch, "templateType": "Serial", "children": children})
            branches.append(branch)
        templates.insert(0, {"name": entry, "templateType": "Parallel", "children": branches})
        metadata: dict[str, Any] = {
            "name": dns_label(f"globaltables-{schedule.name}")[:51],  # Chaos Mesh appends a suffix to Workflows
            "namespace": self.namespace,
            "labels": {TOPOLOGY_LABEL: dns_label(self.topology.name)},
            "annotations": {
                "globaltables.io/schedule": schedule.source,
                **({"globaltables.io/seed": str(schedule.seed)} if schedule.seed is not None else {}),
            },
        }
        if self.skipped:
            metadata["annotations"]["globaltables.io/skipped"] = "; ".join(self.skipped)
        return {
            "apiVersion": API_VERSION,
            "kind": "Workflow",
            "metadata": metadata,
            "spec": {"entry": entry, "templates": templates},
        }


def export_schedule(topology: Topology, schedule: Schedule, namespace: str | None = None) -> tuple[dict, list[str]]:
    """(the Workflow, the faults it could not express)."""
    exporter = ChaosMeshExport(topology, namespace)
    workflow = exporter.workflow(schedule)
    return workflow, exporter.skipped
