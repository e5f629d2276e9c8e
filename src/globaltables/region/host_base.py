"""What the MREC and MRSC region hosts share: the transport's lifetime, peer discovery and the clock faults.

A host drives a replication node from asyncio. Its background work is one coroutine, `run()` (a TaskGroup of the
transport's links, the poller and the rest), which the region's server lifetime runs and cancels (region/main.py);
its peers' endpoints come from the supervisor's state file (polled, so a restarted peer is found again) or from the
control API; clock faults move only the wall clock under the HLC.
Subclasses set `region`, `settings` (with `peers_file`), `transport`, `clock`, `baseline_offset_s` and
`_peers_file_mtime`, and define `run()`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .http_transport import HttpTransport, LinkDelay

log = logging.getLogger("globaltables.replication.host")

PEERS_FILE_POLL_S = 0.2


def peer_transport(region: str, settings: Any) -> HttpTransport:
    """The authenticated links of a region to its topology peers, with each link's latency and the endpoints known
    at start (more come from the peers file or the control API)."""
    return HttpTransport(
        region,
        settings.secret,
        {peer.name: LinkDelay(peer.latency_ms, peer.jitter_ms) for peer in settings.peers},
        {peer.name: peer.endpoint for peer in settings.peers},
    )


class RegionHost:
    async def run(self) -> None:
        """The host's background work, until cancelled (subclasses)."""
        raise NotImplementedError

    # ------------------------------------------------------------------------------------------------ peers

    def set_endpoints(self, endpoints: Mapping[str, str | None]) -> None:
        unknown = set(endpoints) - set(self.transport.peers) - {self.region}
        if unknown:
            raise ValueError(
                f"unknown region(s) {', '.join(sorted(unknown))}; peers are {', '.join(self.transport.peers)}"
            )
        for peer, endpoint in endpoints.items():
            if peer != self.region:
                self.transport.set_endpoint(peer, endpoint)

    def _read_peers_file(self) -> None:
        path = self.settings.peers_file
        if path is None:
            return
        try:
            mtime = os.stat(path).st_mtime_ns
        except FileNotFoundError:
            return
        if mtime == self._peers_file_mtime:
            return
        try:
            state = json.loads(Path(path).read_text())
            regions = state.get("regions", {})
            endpoints = {
                name: entry["endpoint"]
                for name, entry in regions.items()
                if name in self.transport.peers and isinstance(entry, dict) and entry.get("endpoint")
            }
            # The supervisor that can crash and restart this region, reported in /control/status so that callers
            # on other hosts (`chaos`, `run --attach`) find it through the region.
            supervisor = state.get("supervisor") or {}
            self.supervisor_url = supervisor.get("control_url") if supervisor.get("running", True) else None
        except (OSError, ValueError, AttributeError, TypeError) as error:  # half-written by a foreign tool: retry
            log.warning("cannot read peers file %s: %s", path, error)
            return
        self._peers_file_mtime = mtime
        self.set_endpoints(endpoints)

    supervisor_url: str | None = None

    async def _watch_peers_file(self) -> None:
        while True:
            await asyncio.sleep(PEERS_FILE_POLL_S)
            self._read_peers_file()

    # ----------------------------------------------------------------------------------------------- faults

    def set_clock_offset_ms(self, offset_ms: float | None) -> None:
        """Skew the wall clock under the HLC (stamps and TTL); None restores the topology's offset."""
        self.clock.set_offset(self.baseline_offset_s if offset_ms is None else offset_ms / 1000.0)

    def heal(self) -> None:
        self.transport.heal()
        self.clock.heal()  # baseline offset, no drift, no strobe
        hold = getattr(getattr(self, "node", None), "hold", None)
        if hold is not None and getattr(self.node, "held", None):  # replication held by pause-replication resumes
            hold({})
            self.wake()
