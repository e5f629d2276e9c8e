"""The typed model of a topology: which regions run, where they are placed, how they are linked, and which tables
they hold. Frozen dataclasses, built by `load.py` from a topology file (`topologies/*.yaml`) and read by every layer
above: `plan.py` cuts one region's view out of it, the simulator and the region processes run it.

Placement (docs/beyond-one-machine.md): a Region's `host` is the address peers and clients use, `bind` the address
it listens on, `endpoint` the URL of a region started elsewhere. Links are one-way delays between ordered pairs:
the default, then the last override naming that direction.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import networkx as nx

from .capacity import apply_overrides
from .credentials import AccessKey

Mode = Literal["mrec", "mrsc"]
Role = Literal["replica", "witness"]
ConflictClock = Literal["hlc", "wall"]
MODES = ("mrec", "mrsc")
ROLES = ("replica", "witness")
CONFLICT_CLOCKS = ("hlc", "wall")
# A region's capacity model (the region process's --capacity; docs/capacity.md): "modelled" throttles as DynamoDB
# does, "unlimited" never throttles. The same names as engine/throughput.py's options (this package sits below it).
CAPACITY_OPTIONS = ("modelled", "unlimited")

DEFAULT_HOST = "127.0.0.1"
DEFAULT_MAX_CLOCK_OFFSET_MS = 500  # CockroachDB's default maximum offset; a skew budget no sane NTP setup exceeds
DEFAULT_TTL_SWEEP_INTERVAL_S = 1.0  # a testbed sweeps often; DynamoDB only promises deletion within days

LOOPBACK_NAMES = ("localhost", "::1")


def is_loopback(host: str) -> bool:
    """Whether `host` names this machine only (127.0.0.0/8, ::1, localhost): binding it reaches no other host."""
    return host in LOOPBACK_NAMES or bool(re.fullmatch(r"127(?:\.\d{1,3}){3}", host))


@dataclass(frozen=True)
class Region:
    name: str
    host: str = DEFAULT_HOST  # the address peers and clients use (`advertise` in the file is a synonym)
    port: int | None = None  # None: bind port 0 and report the bound port
    role: Role = "replica"
    clock_offset_ms: float = 0  # added to this region's wall clock (skew on purpose)
    bind: str = DEFAULT_HOST  # the address the region listens on; beyond loopback only when the file says so
    endpoint: str | None = None  # the URL of a region started elsewhere; overrides host and port for callers
    capacity: str = "modelled"  # CAPACITY_OPTIONS: the region process's --capacity

    @property
    def url(self) -> str | None:
        """Where peers and clients reach this region, when the topology pins it (an endpoint or a fixed port)."""
        if self.endpoint is not None:
            return self.endpoint
        if self.port:
            host = f"[{self.host}]" if ":" in self.host else self.host
            return f"http://{host}:{self.port}"
        return None


@dataclass(frozen=True)
class Link:
    """One-way delay of a directed link: `latency_ms` plus up to `jitter_ms` of jitter."""

    latency_ms: float
    jitter_ms: float = 0


@dataclass(frozen=True)
class LinkOverride:
    source: str  # `from` in the file
    target: str  # `to` in the file
    link: Link
    bidirectional: bool = False


NO_DELAY = Link(0, 0)


@dataclass(frozen=True)
class Links:
    default: Link = NO_DELAY
    overrides: tuple[LinkOverride, ...] = ()


@dataclass(frozen=True)
class TableSpec:
    """A declared table: its CreateTable request (read-only; `request()` gives a fresh mutable copy) and, per
    replica, its read overrides (a CloudFormation ReplicaSpecification; topology/capacity.py)."""

    name: str
    definition: Mapping[str, Any]
    replicas: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def request(self) -> dict[str, Any]:
        return copy.deepcopy(dict(self.definition))

    def request_for(self, region: str) -> dict[str, Any]:
        """The CreateTable request `region` runs: the table's, with that replica's read settings (write capacity
        is global, so it is the table's everywhere)."""
        replica = self.replicas.get(region)
        return apply_overrides(self.request(), copy.deepcopy(dict(replica)) if replica else None)


@dataclass(frozen=True)
class Topology:
    name: str
    regions: tuple[Region, ...]
    mode: Mode = "mrec"
    links: Links = Links()
    tables: tuple[TableSpec, ...] = ()
    conflict_clock: ConflictClock = "hlc"
    ttl_sweep_interval_s: float = DEFAULT_TTL_SWEEP_INTERVAL_S
    max_clock_offset_ms: float = DEFAULT_MAX_CLOCK_OFFSET_MS
    secret_file: Path | None = None  # resolved against the topology file's folder
    # Access key id -> its AccessKey (whose repr hides the secret); None: signatures are not verified.
    credentials: Mapping[str, AccessKey] | None = field(default=None, compare=False)
    workload: Mapping[str, Any] | None = None  # experiment/workload.py checks it; parse_workload() reads it
    source: Path | None = None  # the file it came from
    warnings: tuple[str, ...] = field(default=(), compare=False)

    # ------------------------------------------------------------------------------------------ lookups

    @property
    def region_names(self) -> tuple[str, ...]:
        return tuple(region.name for region in self.regions)

    def region(self, name: str) -> Region:
        for region in self.regions:
            if region.name == name:
                return region
        raise KeyError(f"no region {name!r} in topology {self.name!r}; regions: {', '.join(self.region_names)}")

    @property
    def replicas(self) -> tuple[Region, ...]:
        return tuple(region for region in self.regions if region.role == "replica")

    def link(self, source: str, target: str) -> Link:
        """The link from `source` to `target`: the last override naming that direction, else the default."""
        self.region(source), self.region(target)
        found = self.links.default
        for override in self.links.overrides:
            if (override.source, override.target) == (source, target) or (
                override.bidirectional and (override.target, override.source) == (source, target)
            ):
                found = override.link
        return found

    # -------------------------------------------------------------------------------------------- graph

    def graph(self) -> nx.DiGraph:
        """Every region a node (with its Region as `region`), every ordered pair an edge with `latency_ms` and
        `jitter_ms` after overrides. A fresh graph each call, so callers may change it."""
        graph = nx.DiGraph(name=self.name)
        for region in self.regions:
            graph.add_node(region.name, region=region)
        for source in self.region_names:
            for target in self.region_names:
                if source != target:
                    link = self.link(source, target)
                    graph.add_edge(source, target, latency_ms=link.latency_ms, jitter_ms=link.jitter_ms)
        return graph

    def latency_matrix(self) -> dict[str, dict[str, float]]:
        """`matrix[source][target]`: one-way latency in ms (0 from a region to itself)."""
        graph = self.graph()
        return {
            source: {target: 0 if source == target else graph.edges[source, target]["latency_ms"] for target in graph}
            for source in graph
        }

    def _surviving(self, grudges: Mapping[str, Iterable[str]] | None) -> nx.DiGraph:
        """The graph without the links a partition cuts: `grudges[receiver]` are the senders it refuses."""
        graph = self.graph()
        for receiver, senders in (grudges or {}).items():
            self.region(receiver)
            for sender in senders:
                self.region(sender)
                if graph.has_edge(sender, receiver):
                    graph.remove_edge(sender, receiver)
        return graph

    def link_up(self, source: str, target: str, grudges: Mapping[str, Iterable[str]] | None = None) -> bool:
        """Whether `target` accepts messages sent directly by `source` (replication never relays)."""
        self.region(source), self.region(target)
        return source == target or source not in set((grudges or {}).get(target, ()))

    def reachable(self, source: str, target: str, grudges: Mapping[str, Iterable[str]] | None = None) -> bool:
        """Whether some path of uncut links leads from `source` to `target` (possibly through other regions)."""
        self.region(source), self.region(target)
        return nx.has_path(self._surviving(grudges), source, target)

    def partition_components(self, grudges: Mapping[str, Iterable[str]] | None = None) -> list[frozenset[str]]:
        """The groups a partition separates: strongly connected components of the uncut links (regions that can
        each reach the other), sorted by their alphabetically first member. One group means nothing is cut off."""
        components = nx.strongly_connected_components(self._surviving(grudges))
        return sorted((frozenset(component) for component in components), key=min)
