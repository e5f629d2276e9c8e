"""The simulated harnesses: a topology on virtual time in one process, seeded, reached through real boto3 clients.
`SimHarness` runs a `mode: mrec` topology as a `SimCluster`; `simulated_mrsc.MrscSimHarness` a `mode: mrsc` one as
an `MrscCluster`; `simulated_harness` picks by the topology's mode. `SimulatedHarness` is what they share.

Theory of operation: each kit client gets a botocore `before-send` hook that hands the signed HTTP request to the
region through `region/wire.py`'s pure functions (in strong mode, the region's request path, region/mrsc_requests.py)
— the same checks, dispatch, error bodies and framing headers (`x-amz-crc32`, `x-globaltables-version`) as the
region process — and returns the answer as botocore's `AWSResponse`, so botocore parses it and raises the same
`ClientError`s as against a real region. A request to a crashed region raises botocore's `EndpointConnectionError`,
as a refused connection does. An MREC request takes no virtual time; a strong-mode write or strong read waits for
other members, so its call runs the simulation until its answer is there. `advance`, `wait_for` and the assertions
move time by running the scheduler. Retries (only with `max_attempts > 1`) sleep in virtual time: the backoff
botocore computes (drawn from a seeded stream, not the global `random`) is run on the scheduler and botocore sleeps
0 real seconds.

Concurrency (`concurrently`): each call runs on a thread of its own, but the threads hand a baton to each other so
that only one ever runs (testing/handoff.py): the calls start at the same virtual instant in an order drawn from
the seed, each until its request is submitted (then it parks) or it returns; then the simulation runs, and each
parked call resumes, alone, as soon as its answer is there. Inside a concurrent call, `advance` and `wait_for` park
the call until the virtual time comes. So two strong-mode writes really race (both proposals in flight at once)
and the interleaving is a function of the seed alone, never of the operating system's thread scheduling.

Determinism: everything random comes from the cluster's seeded `Rng` forks (the network's jitter, `concurrently`'s
order, retry backoff), and request ids are a counter, so a test replays exactly from its seed: same message trace,
same history, same final items (`fingerprint()`). The TTL sweep (MREC) runs every `ttl_sweep_interval_s` of virtual
time in every region (in sorted order), as the region process's sweeper does.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

import orjson

from ..chaos.history import History
from ..region import wire
from ..runtime.transport import VERSION_HEADER
from ..sim.cluster import SimCluster
from ..sim.collector import simulation_collector
from ..sim.loop import to_us
from ..topology.model import Topology
from .handoff import Conductor
from .harness import Harness, check_impairments

ENDPOINT = "http://{region}.sim.globaltables.invalid"
TTL_SWEEP_LIMIT = 500

_session: Any = None


def boto3_session() -> Any:
    """One shared boto3 session: its loader caches the service model, making each new client cheap."""
    global _session
    if _session is None:
        import boto3

        _session = boto3.session.Session(aws_access_key_id="kit", aws_secret_access_key="kit", region_name="us-east-1")
    return _session


class _Raw:
    """The `raw` of an AWSResponse: botocore reads the body through `stream()`."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any):
        yield self._body


class _BackoffInVirtualTime:
    """botocore's event emitter, except that retry handlers registered through it run their backoff on the
    scheduler and tell botocore to sleep 0 s."""

    def __init__(self, events: Any, advance: Callable[[float], None]) -> None:
        self._events = events
        self._advance = advance

    def register(self, event: str, handler: Callable[..., Any], unique_id: str | None = None, **options: Any) -> None:
        if event.startswith("needs-retry"):
            inner = handler

            def handler(**kwargs: Any) -> Any:
                delay = inner(**kwargs)
                if delay is None:
                    return None
                self._advance(delay)
                return 0

        self._events.register(event, handler, unique_id=unique_id, **options)


class SimulatedHarness(Harness):
    """What both simulated harnesses share: kit clients over the before-send hook, virtual time, `concurrently`,
    network and clock faults, replay. Subclasses set `cluster` (with `scheduler`, `network`, `rng`, `history`)
    before calling this `__init__`, and supply `_answer`, `_clock`, `_final_items`, reads, `crash` and `restart`."""

    mode = "sim"
    time_label = "virtual time"

    def __init__(self, topology: Topology, seed: int) -> None:
        self.scheduler = self.cluster.scheduler
        self._collector = simulation_collector()  # held for the life of the test (sim/collector.py)
        self._collector.__enter__()
        try:
            super().__init__(topology, seed)
            self._order = self.cluster.rng.fork("kit/concurrently")
            self._request_ids = itertools.count(1)
            self.conductor = Conductor(self._step)
        except BaseException:
            self._collector.__exit__(None, None, None)
            self._collector = None
            raise

    def _new_history(self) -> History:
        return self.cluster.history  # on the cluster's observer clock (virtual time); faults land in it too

    # ----------------------------------------------------------------------------------------------- clients

    def _make_client(self, region: str, max_attempts: int) -> Any:
        return self._boto_client(region, max_attempts, "kit")

    def _boto_client(self, region: str, max_attempts: int, purpose: str) -> Any:
        from botocore.config import Config
        from botocore.retries import standard

        client = boto3_session().client(
            "dynamodb",
            region_name=region,
            endpoint_url=ENDPOINT.format(region=region),
            config=Config(retries={"total_max_attempts": max_attempts, "mode": "standard"}),
        )
        events = client.meta.events
        events.register("before-send.dynamodb", self._sender(region))
        # Swap botocore's retry handler for the same one whose backoff passes in virtual time, drawn from the seed.
        events.unregister("needs-retry.dynamodb", unique_id="retry-config-dynamodb")
        shim = SimpleNamespace(
            meta=SimpleNamespace(service_model=client.meta.service_model, events=_BackoffInVirtualTime(events, self.advance))
        )
        handler = standard.register_retry_handler(shim, max_attempts=max_attempts)
        # Its backoff draws from the global `random`, which no seed governs: give it a stream of the seed's.
        backoff = getattr(getattr(handler, "_retry_policy", None), "_retry_backoff", None)
        if backoff is None or not hasattr(backoff, "_random"):
            raise RuntimeError("botocore's standard retry handler has changed: its backoff cannot be seeded")
        backoff._random = self.cluster.rng.fork(f"kit/retry-backoff/{purpose}/{region}/{max_attempts}").random
        return client

    def _sender(self, region: str) -> Callable[..., Any]:
        def send(request: Any, **_: Any) -> Any:
            from botocore.awsrequest import AWSResponse, HeadersDict

            # Header values arrive as bytes or str; the wire functions read text, case-insensitively.
            headers = HeadersDict(
                {name: value.decode() if isinstance(value, bytes) else value for name, value in request.headers.items()}
            )
            body = request.body or b""
            if isinstance(body, str):
                body = body.encode()
            elif not isinstance(body, (bytes, bytearray)):
                body = body.read()
            content_type = wire.media_type(headers.get("Content-Type")) or wire.AMZ_JSON
            status, out, extra = self._answer(region, request.url, headers, bytes(body))
            response_headers = wire.framing(f"SIM{next(self._request_ids):049d}", out, content_type)
            response_headers.update(extra)
            return AWSResponse(request.url, status, response_headers, _Raw(out))

        return send

    def _answer(self, region: str, url: str, headers: Any, body: bytes) -> tuple[int, bytes, dict[str, str]]:
        """(status, body, extra headers) of one request to `region`; raises botocore's connection errors."""
        raise NotImplementedError

    # ----------------------------------------------------------------------------------------------- time

    def now(self) -> float:
        return self.scheduler.time()

    def advance(self, seconds: float) -> None:
        """Run the simulation for `seconds` of virtual time (inside a concurrent call: wait that long)."""
        self._pass_until_us(self.scheduler.now_us + to_us(seconds))

    def wait_for(self, condition: Callable[[], Any], timeout: float) -> Any:
        """Run event by event (every event due at one instant together) until `condition()` holds or `timeout`
        virtual seconds passed; the condition is checked between instants."""
        scheduler = self.scheduler
        deadline = scheduler.now_us + to_us(timeout)
        while True:
            value = condition()
            if value:
                return value
            upcoming = scheduler.next_event_us()
            if upcoming is None or upcoming > deadline:
                self._pass_until_us(deadline)
                return condition() or None
            self._pass_until_us(upcoming)

    def _pass_until_us(self, when_us: int) -> None:
        """Let virtual time reach `when_us`: the conductor (or a test outside `concurrently`) runs the scheduler; a
        concurrent call parks until then, and the conductor runs it."""
        caller = self.conductor.caller()
        if caller is None:
            self.scheduler.run_until_us(when_us)
            return
        self.scheduler.call_at_us(when_us, self.conductor.wake, caller)
        self.conductor.park()

    def _step(self) -> bool:
        """One step of the simulation for the conductor: run the next event (False: nothing is scheduled)."""
        return self.scheduler.step()

    # ----------------------------------------------------------------------------------------------- concurrency

    def _run_concurrently(self, calls: Sequence[Callable[[], Any]]) -> list[Any]:
        """Every call started at the current virtual instant, in an order drawn from the seed, each on its own
        thread but one at a time (testing/handoff.py)."""
        order = list(range(len(calls)))
        self._order.shuffle(order)
        return self.conductor.run(calls, order)

    # ----------------------------------------------------------------------------------------------- faults

    def _clock(self, region: str) -> Any:
        raise NotImplementedError

    def partition(self, a: str, b: str | None = None, *, one_way: bool = False) -> None:
        """Cut a from b (both ways unless `one_way`: then b stops hearing a); b None: cut a off from everyone."""
        for other in [b] if b is not None else [r for r in self.regions if r != a]:
            self.cluster.network.partition(a, other, one_way=one_way)
            self.history.fault("partition", [a, other, "one-way" if one_way else "both"])

    def heal(self) -> None:
        """End every fault: partitions, link delays and clock skew (back to the topology's)."""
        self.cluster.network.heal()
        for name in self.regions:
            self._clock(name).heal()
        self.history.fault("heal")

    def delay(self, source: str, dest: str, latency_ms: float, jitter_ms: float = 0.0, *, bidirectional: bool = True) -> None:
        self.cluster.network.update_link(
            source, dest, latency_ms=latency_ms, jitter_ms=jitter_ms, bidirectional=bidirectional
        )
        self.history.fault("delay", [source, dest, latency_ms, jitter_ms, "both" if bidirectional else "one-way"])

    def impair(self, source: str, dest: str, *, bidirectional: bool = True, **faults: Any) -> None:
        """Loss, duplication, reordering, a bandwidth cap or a stall on a link until `heal` (harness.IMPAIRMENTS)."""
        faults = check_impairments(faults)
        self.cluster.network.update_link(source, dest, bidirectional=bidirectional, **faults)
        self.history.fault("impair", [source, dest, faults, "both" if bidirectional else "one-way"])

    def skew(self, region: str, seconds: float) -> None:
        """Set the region's wall clock `seconds` ahead of true time (negative: behind)."""
        self._clock(region).set_offset(seconds)
        self.history.fault("skew", seconds, region)

    # ----------------------------------------------------------------------------------------------- replay

    def trace(self) -> str:
        return self.cluster.trace()

    def _final_items(self) -> dict[str, dict[str, dict[str, dict]]]:
        """{region: {table: {key id: item}}} as each region holds them now (read without running anything)."""
        raise NotImplementedError

    def fingerprint(self) -> bytes:
        """Everything a replay must reproduce: the message trace, the history and every region's final items."""
        return b"".join(
            [
                self.trace().encode(),
                self.history.dumps(),
                orjson.dumps(self._final_items(), option=orjson.OPT_SORT_KEYS),
            ]
        )

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()
        if self._collector is not None:
            self._collector.__exit__(None, None, None)
            self._collector = None


class SimHarness(SimulatedHarness):
    """A `mode: mrec` topology as a `SimCluster`."""

    def __init__(self, topology: Topology, seed: int = 0, *, journal: bool = True, **cluster_options: Any) -> None:
        if topology.mode != "mrec":
            raise ValueError(
                f"topology {topology.name!r} is mode: {topology.mode}; SimHarness runs mode: mrec topologies "
                "(simulated_harness() picks the harness for any mode)"
            )
        self.cluster = SimCluster(topology, seed, journal=journal, **cluster_options)
        super().__init__(topology, seed)
        self._sweep_interval = topology.ttl_sweep_interval_s
        self.scheduler.call_later(self._sweep_interval, self._sweep_ttl)

    # ----------------------------------------------------------------------------------------------- clients

    def _answer(self, region: str, url: str, headers: Any, body: bytes) -> tuple[int, bytes, dict[str, str]]:
        from botocore.exceptions import EndpointConnectionError

        state = self.cluster.regions[region]
        if not state.up:
            raise EndpointConnectionError(endpoint_url=url)
        # Local commits reach replication through the engine's after-commit listener (replication/hosted.py).
        status, out, version = wire.answer(state.engine, headers, "", body)
        extra = {VERSION_HEADER: version} if version is not None else {}
        return status, out, extra

    # ----------------------------------------------------------------------------------------------- reading

    def read(self, region: str, table: str, key: dict) -> dict | None:
        state = self.cluster.regions[region]
        if not state.up:
            return None
        return state.engine.handle("GetItem", {"TableName": table, "Key": key, "ConsistentRead": True}).get("Item")

    def items(self, region: str, table: str) -> dict[str, dict]:
        return self.cluster.items(region, table)

    def _up_regions(self) -> list[str]:
        return [name for name in self.regions if self.cluster.regions[name].up]

    def _final_items(self) -> dict[str, dict[str, dict[str, dict]]]:
        return {name: {t: self.cluster.items(name, t) for t in self.cluster.table_names} for name in self._up_regions()}

    # ----------------------------------------------------------------------------------------------- time

    def _quiescent(self) -> bool:
        return self.cluster.quiescent()

    def _sweep_ttl(self) -> None:
        for name in self.regions:
            state = self.cluster.regions[name]
            if not state.up:
                continue
            while True:
                state.engine.sweep_expired(TTL_SWEEP_LIMIT)
                if state.engine.ttl.pass_complete:
                    break
        self.scheduler.call_later(self._sweep_interval, self._sweep_ttl)

    # ----------------------------------------------------------------------------------------------- faults

    def _clock(self, region: str) -> Any:
        return self.cluster.clock(region)

    def crash(self, region: str) -> None:
        self.cluster.crash(region)

    def restart(self, region: str) -> None:
        self.cluster.restart(region)


def simulated_harness(topology: Topology, seed: int = 0, **options: Any) -> SimulatedHarness:
    """The simulated harness of a topology: `SimHarness` for mode mrec, `MrscSimHarness` for mode mrsc."""
    if topology.mode == "mrsc":
        from .simulated_mrsc import MrscSimHarness

        return MrscSimHarness(topology, seed, **options)
    return SimHarness(topology, seed, **options)
