"""Where a topology's regions run: the endpoints, the shared secret and the supervisors that can crash and restart
them, whether `globaltables run` started them here or they were started elsewhere (`up --only` on other hosts,
Kubernetes pods) and the caller attaches to them (`run --attach`, `chaos`, `check`).

An attached region is found where the topology places it (its `endpoint`, or its host and fixed port), with the
secret from the topology's `secret_file` or `$GLOBALTABLES_SECRET`. Its supervisor, if one started it, is named in
its `/control/status` (`supervisor_url`, read from the supervisor's state file); a region with none (a pod, a
hand-started `globaltables region`) takes no process faults from here. A region that is down (crashed on purpose)
cannot name its supervisor, so the supervisors found are remembered in a small JSON file (`remember`), and a later
`chaos T restart R` finds the one that can bring R back.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..region.control_client import ControlClient, ControlError
from ..topology.model import Topology
from ..topology.secret import SECRET_ENV, SecretError, topology_secret

STATUS_TIMEOUT_S = 5.0


class DeploymentError(RuntimeError):
    """The regions cannot be reached as placed; the message says which and why."""


@dataclass(frozen=True)
class Deployment:
    endpoints: Mapping[str, str]  # every region of the topology
    secret: str
    supervisors: Mapping[str, str] = field(default_factory=dict)  # region -> control URL that crashes/restarts it
    fresh: bool = False  # started for this run: its tables hold nothing the run did not write

    def control_target(self, topology: Topology):
        from ..chaos.target import RegionControlTarget

        return RegionControlTarget(
            self.endpoints,
            self.secret,
            None,
            {region.name: region.clock_offset_ms for region in topology.regions},
            supervisors=self.supervisors,
            dynamodb=self.dynamodb_call(topology),
        )

    def dynamodb_call(self, topology: Topology):
        """(region, operation, request) -> answer, signed with the topology's keys: the chaos target's data plane
        (the update-table verb)."""
        from .dynamodb_client import dynamodb

        endpoints, credentials = self.endpoints, topology.credentials
        return lambda region, operation, body: dynamodb(endpoints[region], operation, dict(body), region, credentials)


def attached(topology: Topology, remember: Path | None = None) -> Deployment:
    """The regions of `topology` as placed, already running somewhere (DeploymentError when one is not placed, the
    secret is missing, no region answers, or one answers as another region or refuses the secret). `remember`: a
    JSON file of the supervisors found, read first and updated."""
    unplaced = [region.name for region in topology.regions if region.url is None]
    if unplaced:
        raise DeploymentError(
            f"{topology.source or topology.name}: to attach, every region needs an endpoint or a host and a fixed "
            f"port; not placed: {', '.join(unplaced)}"
        )
    try:
        secret = topology_secret(topology)
    except SecretError as error:
        raise DeploymentError(str(error)) from None
    if secret is None:
        raise DeploymentError(
            f"to attach to {topology.name}, give the shared secret: secret_file in the topology or ${SECRET_ENV}"
        )
    endpoints = {region.name: region.url for region in topology.regions if region.url}
    supervisors = _recall(remember)
    down: list[str] = []
    for name, endpoint in endpoints.items():
        try:
            status = region_status(endpoint, secret)
        except RegionDown:
            down.append(name)  # crashed or stopped on purpose, perhaps: process faults still reach its supervisor
            continue
        if status.get("region") not in (None, name):
            raise DeploymentError(f"{endpoint} is region {status.get('region')!r}, not {name} as the topology says")
        if status.get("supervisor_url"):
            supervisors[name] = status["supervisor_url"]
    if len(down) == len(endpoints):
        raise DeploymentError(
            f"no region of {topology.name} answers where the topology places it: "
            + ", ".join(f"{name} at {endpoints[name]}" for name in down)
        )
    supervisors = {name: url for name, url in supervisors.items() if name in endpoints}
    _keep(remember, supervisors)
    return Deployment(endpoints, secret, supervisors)


def _recall(path: Path | None) -> dict[str, str]:
    if path is None:
        return {}
    with contextlib.suppress(OSError, ValueError, AttributeError):
        found = json.loads(path.read_text())
        return {str(name): str(url) for name, url in found.items() if isinstance(url, str)}
    return {}


def _keep(path: Path | None, supervisors: Mapping[str, str]) -> None:
    if path is None:
        return
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(dict(supervisors), indent=2, sort_keys=True) + "\n")
        os.replace(temporary, path)


class RegionDown(DeploymentError):
    """Nothing answers at the region's address."""


def region_status(endpoint: str, secret: str) -> dict:
    """GET /control/status with the secret (DeploymentError naming the endpoint when it cannot be had)."""
    try:
        return ControlClient(secret, STATUS_TIMEOUT_S).call(endpoint, "/control/status")
    except ControlError as error:
        if error.status is None:
            raise RegionDown(f"not reachable: {error}") from None
        raise DeploymentError(f"{error}" + (" (is the secret the same?)" if error.status == 401 else "")) from None
