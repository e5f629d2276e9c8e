"""One region's view of a topology: what a region process, or a simulated region, needs to run it.

`region_plan(topology, name)` is the only way topology reaches the hosts (region/ and sim/): its peers with the
one-way link towards each and where they listen when the topology pins it, the declared tables, the region's role
and placement, the clock options, and where the shared secret comes from.

Peers: in MREC (`mode: mrec`) a region replicates with the other replicas; in strong mode (`mode: mrsc`) every
member votes, the witness too, so every other region is a peer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .credentials import AccessKey
from .model import ConflictClock, Link, Mode, Region, Role, TableSpec, Topology
from .secret import secret_from


@dataclass(frozen=True)
class PeerPlan:
    name: str
    role: Role
    url: str | None  # where the peer listens when the topology pins it (its endpoint, or host and a fixed port)
    link: Link  # the one-way delay from the planned region to this peer


@dataclass(frozen=True)
class RegionPlan:
    topology: str  # the topology's name
    region: Region  # this region's placement (host, bind, port, endpoint), role and clock offset
    mode: Mode
    peers: tuple[PeerPlan, ...]
    tables: tuple[TableSpec, ...]
    replicas: tuple[str, ...]  # every replica of the topology, this region too when it is one
    witness: str | None
    conflict_clock: ConflictClock
    max_clock_offset_ms: float
    ttl_sweep_interval_s: float
    secret_file: Path | None  # None: the secret comes from $GLOBALTABLES_SECRET (secret.py)
    credentials: Mapping[str, AccessKey] | None = field(default=None, compare=False, repr=False)

    @property
    def name(self) -> str:
        return self.region.name

    @property
    def role(self) -> Role:
        return self.region.role

    @property
    def clock_offset_ms(self) -> float:
        return self.region.clock_offset_ms

    @property
    def peer_names(self) -> tuple[str, ...]:
        return tuple(peer.name for peer in self.peers)

    def secret(self, secret_file: Path | None = None) -> str | None:
        """The shared secret: `secret_file` if given, else the topology's, else $GLOBALTABLES_SECRET; None when none
        of them is set (secret.SecretError for a file that cannot be read or an empty secret)."""
        return secret_from(secret_file or self.secret_file)


def region_plan(topology: Topology, name: str) -> RegionPlan:
    """The plan of region `name` of `topology` (KeyError naming the regions when it is not one of them)."""
    region = topology.region(name)
    strong = topology.mode == "mrsc"
    peers = tuple(
        PeerPlan(other.name, other.role, other.url, topology.link(name, other.name))
        for other in topology.regions
        if other.name != name and (strong or other.role == "replica")
    )
    return RegionPlan(
        topology=topology.name,
        region=region,
        mode=topology.mode,
        peers=peers,
        tables=topology.tables,
        replicas=tuple(replica.name for replica in topology.replicas),
        witness=next((other.name for other in topology.regions if other.role == "witness"), None),
        conflict_clock=topology.conflict_clock,
        max_clock_offset_ms=topology.max_clock_offset_ms,
        ttl_sweep_interval_s=topology.ttl_sweep_interval_s,
        secret_file=topology.secret_file,
        credentials=topology.credentials,
    )


def region_plans(topology: Topology) -> dict[str, RegionPlan]:
    """Every region's plan, in the topology's order (what the simulator builds a cluster from)."""
    return {name: region_plan(topology, name) for name in topology.region_names}
