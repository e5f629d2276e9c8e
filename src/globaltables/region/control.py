"""A region's control API, on the region's own port, protected by the topology's shared secret.

    GET  /control/status   replication status: links (acked / sent / log_end / pending per peer, table and lane),
                           applied positions, HLC statistics, transport counters, grudges, clock offset,
                           replication_lag (per inbound link: count, p50/p99/max ms, 2 % buckets), membership
    POST /control/replicas one step of a replica added or removed, asked by the driving region
                           (region/replica_coordinator.py)
    POST /control/strong   one step of a table made strong (MRSC) through UpdateTable (region/strong_conversion.py)
    GET  /control/apply-decisions   every replicated record this region applied or found lost to a newer version,
                           timed on the machine's monotonic clock (region/apply_decisions.py)
    GET  /metrics          Prometheus text: ReplicationLatency, PendingReplicationCount (replication_metrics.py);
                           the only endpoint here without the secret (read-only)
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

import math
from typing import Any

import orjson
from aiohttp import web

from ..replication.mrsc.node import PLANTED_BUGS
from .control_steps import json_response
from .http_transport import LinkDelay
from ..runtime.link import LinkSettings
from .replication_host import ReplicationHost

FAULT_KEYS = ("heal", "grudges", "latency", "clock_offset_ms", "links", "clock", "planted", "held_replication")
CLOCK_KEYS = ("drift_ppm", "bump_ms", "strobe")


class BadRequest(ValueError):
    pass


def _number(value: Any, what: str, minimum: float | None = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise BadRequest(f"{what}: expected a number, got {value!r}")
    if minimum is not None and value < minimum:
        raise BadRequest(f"{what}: must be at least {minimum}, got {value!r}")
    return float(value)


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

    def peer(name: Any, what: str) -> str:
        if name not in peers:
            raise BadRequest(f"{what}: unknown region {name!r}; peers are {', '.join(sorted(peers))}")
        return name

    async def status(_request: web.Request) -> web.Response:
        return json_response({**host.status(), "supervisor_url": getattr(host, "supervisor_url", None)})

    async def faults(request: web.Request) -> web.Response:
        body = await read_object(request)
        unknown = sorted(set(body) - set(FAULT_KEYS))
        if unknown:
            raise BadRequest(f"unknown fault kind(s) {', '.join(unknown)}; use {', '.join(FAULT_KEYS)}")
        # Validate everything before changing anything.
        heal = body.get("heal", False)
        if not isinstance(heal, bool):
            raise BadRequest("heal: expected true or false")
        grudges = None
        if "grudges" in body:
            if not isinstance(body["grudges"], list):
                raise BadRequest("grudges: expected a list of region names")
            grudges = [peer(name, "grudges") for name in body["grudges"]]
        latency: dict[str, LinkDelay | None] = {}
        if "latency" in body:
            if not isinstance(body["latency"], dict):
                raise BadRequest("latency: expected a mapping of region name to {latency_ms, jitter_ms} or null")
            for name, setting in body["latency"].items():
                peer(name, "latency")
                if setting is None:
                    latency[name] = None
                    continue
                if not isinstance(setting, dict) or set(setting) - {"latency_ms", "jitter_ms"}:
                    raise BadRequest(f"latency.{name}: expected {{latency_ms, jitter_ms}}")
                latency[name] = LinkDelay(
                    _number(setting.get("latency_ms", 0), f"latency.{name}.latency_ms"),
                    _number(setting.get("jitter_ms", 0), f"latency.{name}.jitter_ms"),
                )
        offset = None
        if body.get("clock_offset_ms") is not None:
            offset = _number(body["clock_offset_ms"], "clock_offset_ms", minimum=None)
        link_faults: dict[str, LinkSettings | None] = {}
        if "links" in body:
            if not isinstance(body["links"], dict):
                raise BadRequest("links: expected a mapping of region name to link fault fields or null")
            for name, setting in body["links"].items():
                peer(name, "links")
                if setting is not None and not isinstance(setting, dict):
                    raise BadRequest(f"links.{name}: expected an object of link fault fields or null")
                try:
                    link_faults[name] = None if setting is None else LinkSettings.from_dict(setting, f"links.{name}")
                except ValueError as error:
                    raise BadRequest(str(error)) from None
        clock = body.get("clock", {})
        if not isinstance(clock, dict) or set(clock) - set(CLOCK_KEYS):
            raise BadRequest(f"clock: expected an object with some of {', '.join(CLOCK_KEYS)}")
        drift = _number(clock["drift_ppm"], "clock.drift_ppm", minimum=None) if "drift_ppm" in clock else None
        bump = _number(clock["bump_ms"], "clock.bump_ms", minimum=None) if "bump_ms" in clock else None
        strobe = clock.get("strobe")
        if strobe is not None:
            if not isinstance(strobe, dict) or set(strobe) != {"delta_ms", "period_ms"}:
                raise BadRequest("clock.strobe: expected {delta_ms, period_ms} or null")
            strobe = (
                _number(strobe["delta_ms"], "clock.strobe.delta_ms", minimum=None),
                _number(strobe["period_ms"], "clock.strobe.period_ms"),
            )
            if strobe[1] <= 0:
                raise BadRequest("clock.strobe.period_ms: must be positive")
        planted = None
        if "planted" in body:
            planted = body["planted"]
            node = getattr(host, "node", None)
            if not hasattr(node, "planted"):
                raise BadRequest("planted: only a strong-mode (MRSC) region takes planted bugs")
            if not isinstance(planted, list) or any(bug not in PLANTED_BUGS for bug in planted):
                raise BadRequest(f"planted: expected a list of some of {', '.join(PLANTED_BUGS)}")
        held = None
        if "held_replication" in body:
            raw = body["held_replication"]
            node = getattr(host, "node", None)
            if node is None or not hasattr(node, "hold"):
                raise BadRequest("held_replication: this region does not replicate asynchronously (MREC only)")
            if not isinstance(raw, dict):
                raise BadRequest("held_replication: expected a mapping of table name to a list of region names")
            tables = set(host.engine.replica.global_tables())
            held = {}
            for table, names in raw.items():
                if table not in tables:
                    raise BadRequest(f"held_replication: {table!r} is not a global table here; "
                                     f"global tables: {', '.join(sorted(tables)) or 'none'}")  # fmt: skip
                if not isinstance(names, list):
                    raise BadRequest(f"held_replication.{table}: expected a list of region names")
                held[table] = frozenset(peer(name, f"held_replication.{table}") for name in names)
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

    async def set_peers(request: web.Request) -> web.Response:
        body = await read_object(request)
        endpoints = body.get("endpoints")
        if not isinstance(endpoints, dict) or set(body) != {"endpoints"}:
            raise BadRequest('expected {"endpoints": {"<region>": "http://host:port", ...}}')
        for name, url in endpoints.items():
            peer(name, "endpoints")
            if url is not None and (not isinstance(url, str) or not url.startswith(("http://", "https://"))):
                raise BadRequest(f"endpoints.{name}: expected an http:// URL, got {url!r}")
        host.set_endpoints(endpoints)
        return json_response({"ok": True})

    async def metrics(_request: web.Request) -> web.Response:
        # Read-only and bound to 127.0.0.1 like every endpoint; no secret, so a stock Prometheus can scrape it.
        return web.Response(
            body=host.prometheus().encode(), headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"}
        )

    return [
        web.get("/metrics", metrics),
        # Replicas added and removed (MREC only: a strong-mode host has no such route, its membership is fixed).
        *([host.coordinator.route(transport.authenticated)] if hasattr(host, "coordinator") else []),
        # Tables made strong through UpdateTable (strong mode only: region/strong_conversion.py).
        *([host.conversion.route(transport.authenticated)] if getattr(host, "conversion", None) else []),
        web.get("/control/status", guarded(status)),
        web.get("/control/apply-decisions", guarded(apply_decisions)),
        web.post("/control/faults", guarded(faults)),
        web.post("/control/peers", guarded(set_peers)),
    ]
