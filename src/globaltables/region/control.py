"""A region's control API, on the region's own port, protected by the topology's shared secret.

    GET  /control/status   replication status: links (acked / sent / log_end / pending per peer, table and lane),
                           applied positions, HLC statistics, transport counters, grudges, clock offset,
                           replication_lag (per inbound link: count, p50/p99/max ms, 2 % buckets), membership
    POST /control/replicas one step of a replica added or removed, asked by the driving region
                           (region/replica_coordinator.py)
    POST /control/strong   one step of a table made strong (MRSC) through UpdateTable (region/strong_conversion.py)
    GET  /control/apply-decisions   every replicated record this region applied or found lost to a newer version,
                           timed on the machine's monotonic clock (region/apply_decisions.py)
    GET  /control/capacity the capacity metrics under CloudWatch's names and the Contributor Insights top keys, per
                           table and GSI, as JSON (capacity_metrics.capacity_document: what /metrics renders)
    GET  /metrics          Prometheus text: ReplicationLatency, PendingReplicationCount (replication_metrics.py),
                           and the capacity metrics and Contributor Insights top keys (capacity_metrics.py); the
                           only endpoint here without the secret (read-only)
    POST /control/faults   {"heal": true}                         every fault off: no grudges, topology latency,
                                                                  topology clock offset (applied first if given)
                           {"grudges": ["eu-west-1", ...]}        the senders this region refuses to hear (replaces)
                           {"latency": {"eu-west-1": {"latency_ms": 200, "jitter_ms": 5} | null}}
                                                                  outbound delay override per peer (null: topology's)
                           {"clock_offset_ms": 500 | null}        the wall-clock offset under the HLC (null: topology's)
                           {"links": {"eu-west-1": {"distribution": "pareto", "loss": 0.2, "loss_burst": 4,
                                      "duplicate": 0.1, "reorder": 0.1, "reorder_ms": 50, "bandwidth_kbps": 100,
                                      "stalled": true} | null}}    outbound link faults per peer (region.link_faults;
                                                                  replaces that peer's; null: none)
                           {"clock": {"drift_ppm": 200, "bump_ms": -300, "strobe": {"delta_ms": 200,
                                      "period_ms": 100} | null}}  clock faults under the HLC (region.skewed_clock)
                           {"planted": ["ccf-without-confirmation"] | []}  strong mode only: bugs planted in
                                                                  this member for tests that show a checker
                                                                  catches them (replication/mrsc/node.py
                                                                  PLANTED_BUGS); [] removes them
                           {"held_replication": {"Orders": ["eu-west-1"]}}   the peers each table's records are not
                                                                  shipped to (replaces; chaos pause-replication)
    POST /control/peers    {"endpoints": {"eu-west-1": "http://127.0.0.1:8001"}}   where peers listen

Rules: a request without the secret (header `x-globaltables-secret`) is refused with 401 and changes nothing; a
request that names an unknown region, field or a bad value is refused with 400 as a whole (validated first,
applied once). Every answer is the resulting status (faults) or `{"ok": true}` JSON. The chaos controller
extends `faults` with more kinds; each key is one fault kind.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import orjson
from aiohttp import web

from ..replication.mrsc.node import PLANTED_BUGS
from ..runtime.link import settings_field
from ..runtime.specs import Bool, Choice, Field, Invalid, ListOf, MapOf, Number, Struct, Value, check_members, render
from . import capacity_metrics
from .app import metrics_route
from .control_steps import json_response
from .http_transport import LinkDelay
from .replication_host import ReplicationHost


class BadRequest(ValueError):
    pass


def _url(value: Any) -> Any:
    if value is not None and (not isinstance(value, str) or not value.startswith(("http://", "https://"))):
        raise Invalid(f"expected an http:// URL, got {value!r}")
    return value


def fault_spec(peers: Collection[str]) -> dict[str, Field]:
    """The body of POST /control/faults (the module docstring), for a region whose peers are `peers`."""

    def known(name: Any) -> str:
        if name not in peers:
            raise Invalid(f"unknown region {name!r}; peers are {', '.join(sorted(peers))}")
        return name

    peer = Value(known)
    delay = Struct(
        {"latency_ms": Number(minimum=0, default=0.0, parse=float), "jitter_ms": Number(minimum=0, default=0.0, parse=float)},
        noun="field", nullable=True, parse=lambda fields: LinkDelay(fields["latency_ms"], fields["jitter_ms"]),
    )  # fmt: skip
    strobe = Struct(
        {"delta_ms": Number(required=True, parse=float), "period_ms": Number(positive=True, required=True, parse=float)},
        noun="field", nullable=True, parse=lambda fields: (fields["delta_ms"], fields["period_ms"]),
    )  # fmt: skip
    clock = {"drift_ppm": Number(parse=float), "bump_ms": Number(parse=float), "strobe": strobe}
    return {
        "heal": Bool(default=False),
        "grudges": ListOf(peer, expected="a list of region names"),
        "latency": MapOf(delay, key=peer, expected="a mapping of region name to {latency_ms, jitter_ms} or null"),
        "clock_offset_ms": Number(nullable=True, parse=float),
        "links": MapOf(
            settings_field(nullable=True), key=peer, expected="a mapping of region name to link fault fields or null"
        ),
        "clock": Struct(clock, noun="field", default={}),
        "planted": ListOf(Choice(PLANTED_BUGS), expected=f"a list of some of {', '.join(PLANTED_BUGS)}"),
        "held_replication": MapOf(
            ListOf(peer, expected="a list of region names"),
            expected="a mapping of table name to a list of region names",
        ),
    }


def peers_spec(peers: Collection[str]) -> dict[str, Field]:
    """The body of POST /control/peers: {"endpoints": {"<region>": "http://host:port" | null}}."""

    def known(name: Any) -> str:
        if name not in peers:
            raise Invalid(f"unknown region {name!r}; peers are {', '.join(sorted(peers))}")
        return name

    return {"endpoints": MapOf(Value(_url), key=Value(known), required=True)}


def checked(body: dict, spec: dict[str, Field], noun: str = "field") -> dict[str, Any]:
    """The body parsed by `spec`; BadRequest naming every bad field otherwise (validated before anything changes)."""
    parsed, problems = check_members(body, spec, noun=noun)
    if problems:
        raise BadRequest("; ".join(render(problems)))
    return parsed


def routes(host: ReplicationHost) -> list[web.RouteDef]:
    transport = host.transport
    peers = set(transport.peers)

    def guarded(handler):
        async def check(request: web.Request) -> web.StreamResponse:
            if not transport.authenticated(request):
                transport.rejected_requests += 1
                return json_response({"error": "the control API requires the topology's shared secret"}, 401)
            try:
                return await handler(request)
            except BadRequest as error:
                return json_response({"error": str(error)}, 400)

        return check

    async def read_object(request: web.Request) -> dict:
        try:
            body = orjson.loads(await request.read() or b"{}")
        except orjson.JSONDecodeError as error:
            raise BadRequest(f"the body is not JSON: {error}") from None
        if not isinstance(body, dict):
            raise BadRequest("the body must be a JSON object")
        return body

    faults_spec = fault_spec(peers)
    endpoints_spec = peers_spec(peers)

    async def status(_request: web.Request) -> web.Response:
        return json_response({**host.status(), "supervisor_url": getattr(host, "supervisor_url", None)})

    async def faults(request: web.Request) -> web.Response:
        body = await read_object(request)
        parsed = checked(body, faults_spec, noun="fault kind")
        # What the host must be able to do, and what only the moment knows (the global tables), after the shape.
        node = getattr(host, "node", None)
        if "planted" in body and not hasattr(node, "planted"):
            raise BadRequest("planted: only a strong-mode (MRSC) region takes planted bugs")
        held = parsed.get("held_replication")
        if held is not None:
            if node is None or not hasattr(node, "hold"):
                raise BadRequest("held_replication: this region does not replicate asynchronously (MREC only)")
            tables = set(host.engine.replica.global_tables())
            for table in held:
                if table not in tables:
                    raise BadRequest(f"held_replication: {table!r} is not a global table here; "
                                     f"global tables: {', '.join(sorted(tables)) or 'none'}")  # fmt: skip
            held = {table: frozenset(names) for table, names in held.items()}
        heal, grudges, planted = parsed["heal"], parsed.get("grudges"), parsed.get("planted")
        latency, link_faults = parsed.get("latency", {}), parsed.get("links", {})
        offset, clock = parsed.get("clock_offset_ms"), parsed["clock"]
        drift, bump, strobe = clock.get("drift_ppm"), clock.get("bump_ms"), clock.get("strobe")
        if heal:
            host.heal()
        if planted is not None:
            host.node.planted = frozenset(planted)
        if grudges is not None:
            transport.set_grudges(grudges)
        for name, delay in latency.items():
            transport.set_delay(name, delay)
        if "clock_offset_ms" in body:
            host.set_clock_offset_ms(offset)
        for name, link_fault in link_faults.items():
            transport.set_link_fault(name, link_fault)
        if held is not None:
            host.node.hold(held)
            host.wake()
        if drift is not None:
            host.clock.set_drift(drift)
        if bump is not None:
            host.clock.bump(bump / 1000.0)
        if "strobe" in clock:
            if strobe is None:
                host.clock.stop_strobe()
            else:
                host.clock.strobe(strobe[0] / 1000.0, strobe[1] / 1000.0)
        return json_response(host.status())

    async def apply_decisions(_request: web.Request) -> web.Response:
        decisions = getattr(host, "decisions", None)
        if decisions is None:
            return json_response({"region": host.region, "dropped": 0, "decisions": []})
        return json_response(decisions.to_dict(host.region))

    async def capacity(_request: web.Request) -> web.Response:
        return json_response({"region": host.region, **capacity_metrics.capacity_document(host.engine)})

    async def set_peers(request: web.Request) -> web.Response:
        body = await read_object(request)
        host.set_endpoints(checked(body, endpoints_spec)["endpoints"])
        return json_response({"ok": True})

    return [
        metrics_route(lambda: host.prometheus() + capacity_metrics.prometheus_text(host.engine)),
        # Replicas added and removed (MREC only: a strong-mode host has no such route, its membership is fixed).
        *([host.coordinator.route(transport.authenticated)] if hasattr(host, "coordinator") else []),
        # Tables made strong through UpdateTable (strong mode only: region/strong_conversion.py).
        *([host.conversion.route(transport.authenticated)] if getattr(host, "conversion", None) else []),
        web.get("/control/status", guarded(status)),
        web.get("/control/apply-decisions", guarded(apply_decisions)),
        web.get("/control/capacity", guarded(capacity)),
        web.post("/control/faults", guarded(faults)),
        web.post("/control/peers", guarded(set_peers)),
    ]
