"""The simulated harness of a strong-mode (`mode: mrsc`) topology: an `MrscCluster` reached through real boto3 clients.

Theory of operation: a kit client's request goes to the region's request path, region/mrsc_requests.py — the code
the region process (region/mrsc_host.py) runs — so clients get the same answers as from a real region: committed
writes, 409 ReplicatedWriteConflictException, a ConditionalCheckFailed confirmed against the latest version, 500
when a quorum cannot be reached in time, strong reads that see every acknowledged write, ResourceNotFoundException
from the witness. The request path is a generator that yields the node operations it waits for; here each request
in flight is a `_Flight`: its operations run on the cluster (`MrscCluster.host`, with the region process's guard),
and when all have completed the flight is "ready" and the next simulation step sends it their outcomes (outside any
event callback, as the region process resumes a request after the callback that completed its future).

A call waits for its answer: on the test's thread, it runs the simulation step by step until its flight has
landed; inside `concurrently`, it parks and the conductor runs the simulation (testing/handoff.py), so several
flights are in the air at one virtual instant. A request to a crashed region raises `EndpointConnectionError`; a
flight whose region crashes under it raises `ConnectionClosedError`, as the dropped connection of a killed region
process does (the write is in doubt: it may have committed).

Reads for assertions (`read`, `items`, hence `wait_converged` and `assert_eventually`) are strongly consistent
GetItem and Scan requests through an unrecorded client, as in process mode: a strong read syncs with another
member first, so a replica that missed commits (partitioned) shows them. They take virtual time, like every strong
read. A witness serves no table data: `read` gives None, and convergence compares the replicas that are up.
"""

from __future__ import annotations

from typing import Any

from ..experiment.strong_flights import Flight, advance
from ..region.mrsc_requests import MrscRequests
from ..replication.mrsc.config import MrscConfig
from ..sim.mrsc_cluster import MrscCluster
from ..topology.model import Topology
from .handoff import Caller
from .harness import ReadsThroughClients
from .simulated import SimulatedHarness


class _Flight(Flight):
    """A request in flight, answered to the call waiting for it: `answer` is (status, body) once it has landed,
    `owner` the concurrent call parked on it, if any."""

    __slots__ = ("answer", "owner")

    def __init__(self, region: str, steps: Any) -> None:
        super().__init__(region, steps)
        self.answer: tuple[int, bytes] | None = None
        self.owner: Caller | None = None

    @property
    def landed(self) -> bool:
        return self.answer is not None or self.crashed


class MrscSimHarness(ReadsThroughClients, SimulatedHarness):
    """A `mode: mrsc` topology (three replicas, or two and a witness) as an `MrscCluster`. `config`: the members'
    MRSC settings (default: a region process's). `capacity`: the replicas' engine capacity option, "unlimited" by
    default, "modelled" to throttle as a region process does on the virtual clock (docs/capacity.md, decision 21)."""

    def __init__(
        self, topology: Topology, seed: int = 0, *, journal: bool = True, config: MrscConfig | None = None,
        capacity: Any = "unlimited",
    ) -> None:  # fmt: skip
        if topology.mode != "mrsc":
            raise ValueError(f"topology {topology.name!r} is mode: {topology.mode}; MrscSimHarness runs mode: mrsc")
        self.cluster = MrscCluster.from_topology(topology, seed, config=config, journal=journal, capacity=capacity)
        super().__init__(topology, seed)
        self.witnesses = frozenset(name for name, member in self.cluster.members.items() if member.witness)
        self._flights: list[_Flight] = []  # in the air, in the order they took off
        self._ready: list[_Flight] = []  # every node operation completed: resumed at the next step, in this order
        self._paths: dict[str, MrscRequests] = {}

    # ----------------------------------------------------------------------------------------------- requests

    def _unrecorded_client(self, region: str, max_attempts: int) -> Any:
        return self._boto_client(region, max_attempts, "reader")

    def _path(self, region: str) -> MrscRequests:
        """The region's request path, over its current node (a restart brings a new node, and fresh counters)."""
        member = self.cluster.members[region]
        path = self._paths.get(region)
        if path is None or path.node is not member.node:
            path = self._paths[region] = MrscRequests(
                member.api, member.node, self.cluster.config, witness=member.witness
            )
        return path

    def _answer(self, region: str, url: str, headers: Any, body: bytes) -> tuple[int, bytes, dict[str, str]]:
        from botocore.exceptions import ConnectionClosedError, EndpointConnectionError

        if not self.cluster.members[region].up:
            raise EndpointConnectionError(endpoint_url=url)
        flight = _Flight(region, self._path(region).answer(headers, "", body))
        self._flights.append(flight)
        self._resume(flight, None)
        self._await(flight)
        if flight.crashed:
            raise ConnectionClosedError(endpoint_url=url)
        assert flight.answer is not None
        status, out = flight.answer
        return status, out, {}  # strong-mode answers carry no version header (app.py `answer_async`)

    def _await(self, flight: _Flight) -> None:
        caller = self.conductor.caller()
        if caller is not None:
            if not flight.landed:
                flight.owner = caller
                self.conductor.park()
            return
        while not flight.landed:
            if not self._step():
                raise RuntimeError(f"a request to {flight.region} is in flight but nothing is left to simulate")

    def _resume(self, flight: _Flight, outcomes: list | None) -> None:
        """Run the flight's request path to its next wait (submitting its node operations) or to its answer."""
        try:
            advance(flight, outcomes, self.cluster.host, self._completion)
        except StopIteration as done:
            flight.answer = done.value
            self._landed(flight)

    def _completion(self, flight: _Flight, index: int):
        def on_done(outcome: str, detail: Any) -> None:
            if flight.landed:
                return
            if outcome == "crashed":
                self._crashed(flight)
                return
            flight.outcomes[index] = (outcome, detail)
            flight.missing -= 1
            if flight.missing == 0 and not flight.submitting:
                self._ready.append(flight)

        return on_done

    def _crashed(self, flight: _Flight) -> None:
        flight.crashed = True
        flight.steps.close()
        if flight in self._ready:
            self._ready.remove(flight)
        self._landed(flight)

    def _landed(self, flight: _Flight) -> None:
        self._flights.remove(flight)
        if flight.owner is not None:
            self.conductor.wake(flight.owner)

    def _step(self) -> bool:
        """Resume the first ready flight, else run the next event; False when there is nothing to do."""
        if self._ready:
            flight = self._ready.pop(0)
            self._resume(flight, flight.outcomes)
            return True
        return self.scheduler.step()

    # ----------------------------------------------------------------------------------------------- reading

    def read(self, region: str, table: str, key: dict) -> dict | None:
        if not self.cluster.members[region].up:
            return None
        return super().read(region, table, key)

    def _up_regions(self) -> list[str]:
        return [name for name in self.regions if name not in self.witnesses and self.cluster.members[name].up]

    def _final_items(self) -> dict[str, dict[str, dict[str, dict]]]:
        return {
            name: {table: self.cluster.items(name, table) for table in self.cluster.table_names}
            for name in self._up_regions()
        }

    def _quiescent(self) -> bool:
        return not self._flights and self.cluster.quiescent()

    # ----------------------------------------------------------------------------------------------- faults

    def _clock(self, region: str) -> Any:
        return self.cluster.members[region].clock

    def crash(self, region: str) -> None:
        """Kill the region: requests in flight there lose their connection (ConnectionClosedError: a write among
        them is in doubt); its store survives, as a killed process's disk does."""
        for flight in list(self._flights):
            if flight.region == region:
                self._crashed(flight)
        self.cluster.crash(region)
        self.history.fault("crash", None, region)

    def restart(self, region: str) -> None:
        self.cluster.restart(region)
        self.history.fault("restart", None, region)

    def close(self) -> None:
        super().close()
        self._close_readers()
