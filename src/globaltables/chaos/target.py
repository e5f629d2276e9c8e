"""Where faults land: a `FaultTarget` is a running topology, either region processes (through their control APIs
and the `up` supervisor's) or a `SimCluster` (virtual time). The controller composes the active faults and pushes
each region's whole state, so a target only ever *sets* things; it never has to remember what to undo.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from ..region.control_client import ControlClient, ControlError
from ..runtime.link import FAULT_FIELDS
from .capacity_change import update_table_request

# (region, operation, request) -> the region's DynamoDB answer: how a target of region processes reaches their data
# plane (injected by the caller, which knows the topology's access keys).
DynamoDBCall = Callable[[str, str, Mapping[str, Any]], dict]


class TargetError(RuntimeError):
    pass


class FaultTarget(Protocol):
    regions: tuple[str, ...]

    def now(self) -> float: ...
    def wait_until(self, when: float) -> None: ...
    def set_grudges(self, region: str, senders: Iterable[str]) -> None: ...
    def set_link(self, source: str, target: str, changes: Mapping[str, Any] | None) -> None: ...
    def set_clock(self, region: str, offset_ms: float | None, bump_ms: float, drift_ppm: float,
                  strobe: Mapping[str, float] | None) -> None: ...  # fmt: skip
    def process(self, region: str, action: str) -> None: ...
    def set_held_replication(self, region: str, held: Mapping[str, Iterable[str]]) -> None: ...
    def update_table(self, region: str, table: str, read_units: int | None, write_units: int | None) -> None: ...
    def heal_all(self) -> None: ...


# ----------------------------------------------------------------------------------------- region processes


class RegionControlTarget:
    """Region processes: their endpoints, and for process faults the supervisor that started each one (one `up` for
    all, from its state.json; or, for regions of several hosts, each region's own, which its status names)."""

    def __init__(
        self,
        endpoints: Mapping[str, str],
        secret: str,
        supervisor_url: str | None,
        baseline_offsets_ms: Mapping[str, float] | None = None,
        timeout_s: float = 10.0,
        supervisors: Mapping[str, str] | None = None,
        dynamodb: DynamoDBCall | None = None,
    ) -> None:
        self.endpoints = dict(endpoints)
        self.dynamodb = dynamodb
        self.regions = tuple(self.endpoints)
        self.control = ControlClient(secret, timeout_s)
        self.supervisor_url = supervisor_url
        self.supervisors = dict(supervisors or {})
        self.baseline_offsets_ms = dict(baseline_offsets_ms or {})
        self._start = time.monotonic()

    @classmethod
    def from_state(cls, state: Mapping[str, Any], secret: str, baseline_offsets_ms=None) -> RegionControlTarget:
        regions = {**state.get("elsewhere", {}), **state.get("regions", {})}  # elsewhere: regions of other hosts
        endpoints = {name: entry["endpoint"] for name, entry in regions.items() if entry.get("endpoint")}
        return cls(endpoints, secret, state.get("supervisor", {}).get("control_url"), baseline_offsets_ms)

    def request(self, endpoint: str, route: str, body: Mapping[str, Any] | None = None, region: str | None = None):
        """One control call (region/control_client.py); TargetError, naming route, region and status, if it fails."""
        try:
            return self.control.call(endpoint, route, body, region=region)
        except ControlError as error:
            raise TargetError(str(error)) from None

    def faults(self, region: str, body: Mapping[str, Any]) -> dict:
        return self.request(self.endpoints[region], "/control/faults", body, region)

    def status(self, region: str) -> dict:
        return self.request(self.endpoints[region], "/control/status", region=region)

    def now(self) -> float:
        return time.monotonic() - self._start

    def wait_until(self, when: float) -> None:
        delay = when - self.now()
        if delay > 0:
            time.sleep(delay)

    def set_grudges(self, region: str, senders: Iterable[str]) -> None:
        self.faults(region, {"grudges": sorted(senders)})

    def set_link(self, source: str, target: str, changes: Mapping[str, Any] | None) -> None:
        changes = dict(changes or {})
        latency = None
        if "latency_ms" in changes or "jitter_ms" in changes:
            latency = {"latency_ms": changes.get("latency_ms", 0.0), "jitter_ms": changes.get("jitter_ms", 0.0)}
            if "latency_ms" not in changes or "jitter_ms" not in changes:  # keep the topology's other half
                current = self.status(source)["transport"]["peers"][target]
                latency.setdefault("latency_ms", current["latency_ms"])
                if "jitter_ms" not in changes:
                    latency["jitter_ms"] = current["jitter_ms"]
        link = {name: changes[name] for name in FAULT_FIELDS if name in changes} or None
        self.faults(source, {"latency": {target: latency}, "links": {target: link}})

    def set_clock(self, region, offset_ms, bump_ms, drift_ppm, strobe) -> None:
        if bump_ms:
            offset_ms = (self.baseline_offsets_ms.get(region, 0.0) if offset_ms is None else offset_ms) + bump_ms
        self.faults(region, {"clock_offset_ms": offset_ms, "clock": {"drift_ppm": drift_ppm, "strobe": strobe or None}})

    def set_held_replication(self, region: str, held: Mapping[str, Iterable[str]]) -> None:
        self.faults(region, {"held_replication": {table: sorted(peers) for table, peers in held.items()}})

    def update_table(self, region: str, table: str, read_units: int | None, write_units: int | None) -> None:
        if self.dynamodb is None:
            raise TargetError(f"this target reaches no data plane: it cannot update {table} in {region}")
        try:
            described = self.dynamodb(region, "DescribeTable", {"TableName": table})["Table"]
            self.dynamodb(region, "UpdateTable", update_table_request(described, read_units, write_units))
        except (OSError, KeyError, ValueError) as error:
            raise TargetError(f"update-table of {table} in {region} failed: {error}") from None

    def supervisor_of(self, region: str) -> str:
        url = self.supervisors.get(region) or self.supervisor_url
        if url is None:  # a region of another host: its status names the supervisor that started it
            url = self.status(region).get("supervisor_url")
            if url:
                self.supervisors[region] = url
        if url is None:
            raise TargetError(f"no supervisor started {region} (is it under `globaltables up`?); it takes no {region} "
                              "process faults from here")  # fmt: skip
        return url

    def process(self, region: str, action: str) -> None:
        self.request(self.supervisor_of(region), f"/control/regions/{region}/{action}", {}, region)

    def heal_all(self) -> None:
        for region in self.regions:
            self.faults(region, {"heal": True})


# ------------------------------------------------------------------------------------------------ simulator


class SimTarget:
    """A `SimCluster` (duck-typed: chaos sits above sim). Waiting runs the scheduler, so the workload scheduled on
    it runs between faults. Bandwidth caps and stalls act as on the region processes' links: a cap makes each message
    wait for the ones before it, a stall holds messages and lets them go in order when it ends."""

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster
        self.regions = tuple(cluster.region_names)
        self._grudges: dict[str, frozenset[str]] = {}
        self._links: dict[tuple[str, str], dict[str, Any]] = {}  # the controller's composed changes per link
        self._paused: set[str] = set()

    def now(self) -> float:
        return self.cluster.now()

    def wait_until(self, when: float) -> None:
        if when > self.cluster.now():
            self.cluster.run_until(when)

    def set_grudges(self, region: str, senders: Iterable[str]) -> None:
        self._grudges[region] = frozenset(senders)
        self.cluster.network.set_grudges(self._grudges)

    def set_link(self, source: str, target: str, changes: Mapping[str, Any] | None) -> None:
        self._links[(source, target)] = dict(changes or {})
        network = self.cluster.network
        network._faults.pop((source, target), None)  # back to the baseline, then apply the composed changes
        network._refresh(source, target)
        changes = dict(changes or {})
        if source in self._paused or target in self._paused:
            changes["stalled"] = True  # a paused region neither hears nor says anything until it resumes
        if not changes:
            return
        network.set_link(source, target, network.link_settings(source, target).replace(**changes))

    def set_clock(self, region, offset_ms, bump_ms, drift_ppm, strobe) -> None:
        clock = self.cluster.clock(region)
        base = clock.baseline_offset_s if offset_ms is None else offset_ms / 1000.0
        clock.set_offset(base + bump_ms / 1000.0)
        clock.set_drift(drift_ppm)
        if strobe:
            clock.strobe(strobe["delta_ms"] / 1000.0, strobe["period_ms"] / 1000.0)
        else:
            clock.stop_strobe()

    def set_held_replication(self, region: str, held: Mapping[str, Iterable[str]]) -> None:
        state = self.cluster.region(region)
        node = getattr(state, "node", None)
        if node is None or not hasattr(node, "hold"):
            if not held:  # nothing held: a strong-mode member has nothing to release either
                return
            raise TargetError(f"the simulator cannot pause replication in {region}")
        node.hold({table: frozenset(peers) for table, peers in held.items()})
        state.driver.arm()

    def update_table(self, region: str, table: str, read_units: int | None, write_units: int | None) -> None:
        engine = self.cluster.engine(region)
        described = engine.handle("DescribeTable", {"TableName": table})["Table"]
        engine.handle("UpdateTable", update_table_request(described, read_units, write_units))

    def process(self, region: str, action: str) -> None:
        state = self.cluster.region(region)
        if action == "crash":
            if state.up:
                state.crash()
        elif action == "restart":
            if not state.up:
                state.start()
        elif action in ("pause", "resume"):
            # SIGSTOP as the network sees it: every link to and from the region holds its messages, and lets them
            # go in order on resume (its own timers still run: a pause on the simulator is a stall of its links).
            (self._paused.add if action == "pause" else self._paused.discard)(region)
            for other in self.regions:
                if other != region:
                    for link in ((region, other), (other, region)):
                        self.set_link(*link, self._links.get(link))
        else:
            raise TargetError(f"the simulator cannot {action} a region")

    def heal_all(self) -> None:
        self._grudges = {}
        self._links.clear()
        self._paused.clear()
        self.cluster.network.heal()
        for region in self.regions:
            self.cluster.clock(region).heal()
            state = self.cluster.region(region)
            if getattr(getattr(state, "node", None), "held", None):
                state.node.hold({})
                state.driver.arm()
