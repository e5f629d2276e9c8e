"""From a topology to what one region process needs to replicate (`region.replication_host.ReplicationSettings`).

The region layer knows no topology files (the import direction runs experiment -> region), so `globaltables region
--topology T --name R` loads the topology here and hands the region plain settings: its peers with the one-way
delay towards each, the peers' endpoints when the topology pins their ports, the declared tables, the clock options
and the shared secret.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ..region.replication_host import PeerSettings, ReplicationSettings
from .topology import Topology

# Where a region, `up`, `chaos`, `check` and `run --attach` find the shared secret when the topology names no
# secret_file: an environment variable (a Kubernetes Secret mounts as one), never a command-line argument.
SECRET_ENV = "GLOBALTABLES_SECRET"


class SecretError(ValueError):
    pass


def topology_secret(topology: Topology, secret_file: Path | None = None) -> str | None:
    """The shared secret from `secret_file`, else the topology's secret_file, else $GLOBALTABLES_SECRET; None when
    none of them is set (SecretError for a file that cannot be read or an empty secret)."""
    path = secret_file or topology.secret_file
    if path is not None:
        return read_secret(Path(path))
    if SECRET_ENV in os.environ:
        secret = os.environ[SECRET_ENV].strip()
        if not secret:
            raise SecretError(f"${SECRET_ENV} is set but empty")
        return secret
    return None


def read_secret(path: Path) -> str:
    try:
        secret = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as error:
        raise SecretError(f"cannot read the secret file {path}: {error}") from None
    if not secret:
        raise SecretError(f"the secret file {path} is empty")
    return secret


def replication_settings(
    topology: Topology,
    name: str,
    secret: str,
    *,
    peers_file: Path | None = None,
    endpoints: Mapping[str, str] | None = None,
) -> ReplicationSettings:
    """Settings for region `name` of `topology` (KeyError naming the regions when it is not one of them).

    A peer's endpoint: `endpoints[peer]` if given, else where the topology places it (its `endpoint`, or its host
    and a non-zero port), else unknown until the peers file or the control API says.
    """
    region = topology.region(name)
    strong = topology.mode == "mrsc"
    peers = []
    for other in topology.regions:
        # MREC links replicas only; in strong mode every member (the witness too) votes.
        if other.name == name or (other.role != "replica" and not strong):
            continue
        link = topology.link(name, other.name)
        endpoint = (endpoints or {}).get(other.name) or other.url
        peers.append(PeerSettings(other.name, endpoint, float(link.latency_ms), float(link.jitter_ms)))
    return ReplicationSettings(
        peers=tuple(peers),
        secret=secret,
        tables=tuple(spec.request() for spec in topology.tables),
        replicas=tuple(replica.name for replica in topology.replicas),
        conflict_clock=topology.conflict_clock,
        max_clock_offset_ms=topology.max_clock_offset_ms,
        clock_offset_ms=region.clock_offset_ms,
        peers_file=peers_file,
        role=region.role,
        mode=topology.mode,
        witness=next((other.name for other in topology.regions if other.role == "witness"), None),
    )
