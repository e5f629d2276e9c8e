"""The simulated harness: a topology as a `SimCluster` (one process, virtual time, seeded), reached through real
boto3 clients.

Theory of operation: each kit client gets a botocore `before-send` hook that hands the signed HTTP request to the
region's engine through `region/wire.py`'s pure functions — the same checks, dispatch, error bodies and framing
headers (`x-amz-crc32`, `x-globaltables-version`) as the region process — and returns the answer as botocore's
`AWSResponse`, so botocore parses it and raises the same `ClientError`s as against a real region. A request to a
crashed region raises botocore's `EndpointConnectionError`, as a refused connection does. A request takes no
virtual time; `advance`, `wait_for` and the assertions move time by running the scheduler. Retries (only with
`max_attempts > 1`) sleep in virtual time: the backoff botocore computes is run on the scheduler and botocore sleeps
0 real seconds.

Determinism: everything random comes from the cluster's seeded `Rng` forks (the network's jitter, `concurrently`'s
order), and request ids are a counter, so a test replays exactly from its seed: same message trace, same history,
same final items (`fingerprint()`). The TTL sweep runs every `ttl_sweep_interval_s` of virtual time in every region
(in sorted order), as the region process's sweeper does.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

import orjson

from ..chaos.history import History
from ..experiment.topology import Topology
from ..region import wire
from ..region.app import VERSION_HEADER
from ..sim.cluster import SimCluster
from ..sim.loop import to_us
from .harness import Harness

ENDPOINT = "http://{region}.sim.globaltables.invalid"
WRITE_OPERATIONS = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})
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


class SimHarness(Harness):
    mode = "sim"
    time_label = "virtual time"

    def __init__(self, topology: Topology, seed: int = 0, *, journal: bool = True, **cluster_options: Any) -> None:
        if topology.mode != "mrec":
            # sim/mrsc_cluster.py simulates the strong-mode protocol, but not yet behind the wire protocol and
            # boto3 clients this harness offers; strong-mode topologies run as processes.
            raise ValueError(
                f"topology {topology.name!r} is mode: {topology.mode}; the simulated harness runs mode: mrec "
                "topologies only: run it with @pytest.mark.globaltables(modes=('process',))"
            )
        self.cluster = SimCluster(topology, seed, journal=journal, **cluster_options)
        self.scheduler = self.cluster.scheduler
        super().__init__(topology, seed)
        self._order = self.cluster.rng.fork("kit/concurrently")
        self._request_ids = itertools.count(1)
        self._sweep_interval = topology.ttl_sweep_interval_s
        self.scheduler.call_later(self._sweep_interval, self._sweep_ttl)

    def _new_history(self) -> History:
        return self.cluster.history  # on the cluster's observer clock (virtual time); cluster faults land in it too

    # ----------------------------------------------------------------------------------------------- clients

    def _make_client(self, region: str, max_attempts: int) -> Any:
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
        # Swap botocore's retry handler for the same one whose backoff passes in virtual time.
        events.unregister("needs-retry.dynamodb", unique_id="retry-config-dynamodb")
        shim = SimpleNamespace(
            meta=SimpleNamespace(service_model=client.meta.service_model, events=_BackoffInVirtualTime(events, self.advance))
        )
        standard.register_retry_handler(shim, max_attempts=max_attempts)
        return client

    def _sender(self, region: str) -> Callable[..., Any]:
        cluster = self.cluster
        answer, framing, media_type = wire.answer, wire.framing, wire.media_type

        def send(request: Any, **_: Any) -> Any:
            from botocore.awsrequest import AWSResponse, HeadersDict
            from botocore.exceptions import EndpointConnectionError

            state = cluster.regions[region]
            if not state.up:
                raise EndpointConnectionError(endpoint_url=request.url)
            # Header values arrive as bytes or str; the wire functions read text, case-insensitively.
            headers = HeadersDict(
                {name: value.decode() if isinstance(value, bytes) else value for name, value in request.headers.items()}
            )
            body = request.body or b""
            if isinstance(body, str):
                body = body.encode()
            elif not isinstance(body, (bytes, bytearray)):
                body = body.read()
            content_type = media_type(headers.get("Content-Type")) or wire.AMZ_JSON
            engine = state.engine
            engine.response_version = None
            status, out = answer(engine, headers, "", body)
            response_headers = framing(f"SIM{next(self._request_ids):049d}", out, content_type)
            if engine.response_version is not None:
                response_headers[VERSION_HEADER] = engine.response_version
            target = headers.get("X-Amz-Target") or ""
            if status == 200 and target.partition(".")[2] in WRITE_OPERATIONS:
                cluster.after_commit(region)
            return AWSResponse(request.url, status, response_headers, _Raw(out))

        return send

    # ----------------------------------------------------------------------------------------------- reading

    def read(self, region: str, table: str, key: dict) -> dict | None:
        state = self.cluster.regions[region]
        if not state.up:
            return None
        engine = state.engine
        saved = engine.response_version
        try:
            return engine.handle("GetItem", {"TableName": table, "Key": key, "ConsistentRead": True}).get("Item")
        finally:
            engine.response_version = saved

    def items(self, region: str, table: str) -> dict[str, dict]:
        return self.cluster.items(region, table)

    def _up_regions(self) -> list[str]:
        return [name for name in self.regions if self.cluster.regions[name].up]

    # ----------------------------------------------------------------------------------------------- time

    def now(self) -> float:
        return self.scheduler.time()

    def advance(self, seconds: float) -> None:
        """Run the simulation for `seconds` of virtual time."""
        self.scheduler.run_for(seconds)

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
                scheduler.run_until_us(deadline)
                return condition() or None
            scheduler.run_until_us(upcoming)

    def _quiescent(self) -> bool:
        return self.cluster.quiescent()

    def _sweep_ttl(self) -> None:
        for name in self.regions:
            state = self.cluster.regions[name]
            if not state.up:
                continue
            deleted = 0
            while True:
                deleted += state.engine.sweep_expired(TTL_SWEEP_LIMIT)
                if state.engine.ttl.pass_complete:
                    break
            if deleted:
                self.cluster.after_commit(name)
        self.scheduler.call_later(self._sweep_interval, self._sweep_ttl)

    # ----------------------------------------------------------------------------------------------- concurrency

    def _run_concurrently(self, calls: Sequence[Callable[[], Any]]) -> list[Any]:
        """Every call at the current virtual instant, in an order drawn from the seed."""
        order = list(range(len(calls)))
        self._order.shuffle(order)
        results: list[Any] = [None] * len(calls)
        for index in order:
            try:
                results[index] = calls[index]()
            except Exception as error:  # noqa: BLE001 - handed back to the test
                results[index] = error
        return results

    # ----------------------------------------------------------------------------------------------- faults

    def partition(self, a: str, b: str | None = None, *, one_way: bool = False) -> None:
        """Cut a from b (both ways unless `one_way`: then b stops hearing a); b None: cut a off from everyone."""
        for other in [b] if b is not None else [r for r in self.regions if r != a]:
            self.cluster.partition(a, other, one_way=one_way)

    def heal(self) -> None:
        """End every fault: partitions, link delays and clock skew (back to the topology's)."""
        self.cluster.network.heal()
        for name in self.regions:
            self.cluster.clock(name).heal()
        self.history.fault("heal")

    def delay(self, source: str, dest: str, latency_ms: float, jitter_ms: float = 0.0, *, bidirectional: bool = True) -> None:
        self.cluster.network.update_link(
            source, dest, latency_ms=latency_ms, jitter_ms=jitter_ms, bidirectional=bidirectional
        )
        self.history.fault("delay", [source, dest, latency_ms, jitter_ms, "both" if bidirectional else "one-way"])

    def skew(self, region: str, seconds: float) -> None:
        """Set the region's wall clock `seconds` ahead of true time (negative: behind)."""
        self.cluster.clock(region).set_offset(seconds)
        self.history.fault("skew", seconds, region)

    def crash(self, region: str) -> None:
        self.cluster.crash(region)

    def restart(self, region: str) -> None:
        self.cluster.restart(region)

    # ----------------------------------------------------------------------------------------------- replay

    def trace(self) -> str:
        return self.cluster.trace()

    def fingerprint(self) -> bytes:
        """Everything a replay must reproduce: the message trace, the history and every region's final items."""
        states = {name: {t: self.cluster.items(name, t) for t in self.cluster.table_names} for name in self._up_regions()}
        return b"".join(
            [self.trace().encode(), self.history.dumps(), orjson.dumps(states, option=orjson.OPT_SORT_KEYS)]
        )

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()
