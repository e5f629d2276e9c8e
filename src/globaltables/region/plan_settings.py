"""From a region's plan (`topology.plan.RegionPlan`) to what its replication host needs
(`replication_host.ReplicationSettings`): `globaltables region --topology T --name R` and the kit go this way.

A peer's endpoint: `endpoints[peer]` if given (the command line's `--peer`), else where the topology places it (its
`endpoint`, or its host and a non-zero port), else unknown until the peers file or the control API says.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..topology.plan import RegionPlan
from .replication_host import PeerSettings, ReplicationSettings


def replication_settings(
    plan: RegionPlan,
    secret: str,
    *,
    peers_file: Path | None = None,
    endpoints: Mapping[str, str] | None = None,
) -> ReplicationSettings:
    """The replication settings of the planned region, with the shared `secret`."""
    peers = tuple(
        PeerSettings(
            peer.name, (endpoints or {}).get(peer.name) or peer.url, float(peer.link.latency_ms),
            float(peer.link.jitter_ms),
        )
        for peer in plan.peers
    )  # fmt: skip
    return ReplicationSettings(
        peers=peers,
        secret=secret,
        tables=tuple(spec.request_for(plan.name) for spec in plan.tables),  # with this replica's read settings
        replicas=plan.replicas,
        conflict_clock=plan.conflict_clock,
        max_clock_offset_ms=plan.max_clock_offset_ms,
        clock_offset_ms=plan.clock_offset_ms,
        peers_file=peers_file,
        role=plan.role,
        mode=plan.mode,
        witness=plan.witness,
    )
