"""Topology files (`topologies/*.yaml`): which regions run, how they are linked, and which tables they hold.

A topology is loaded with `yaml.safe_load` semantics (plus: a key repeated in one mapping is an error, where YAML
would silently keep the last) and validated into frozen dataclasses. Validation collects every problem in the file
before failing; each message names the file and the field path and says what is allowed, e.g.

    topologies/x.yaml: regions[2].role: 'witness' is only allowed when mode is mrsc

Schema (MRSC rules from dynamodb-facts §3):

    name: three-region-mrec            # required
    mode: mrec                         # mrec (default) | mrsc
    regions:                           # required, unique AWS-style names
      - {name: us-east-1, host: 127.0.0.1, port: 0, role: replica, clock_offset_ms: 0}
      # placement (docs/beyond-one-machine.md): `host` (or its synonym `advertise`) is the address peers and
      # clients use; `bind` the address the region listens on (default 127.0.0.1; a non-loopback `host` needs
      # an explicit `bind`); `endpoint` the URL of a region started elsewhere (instead of host and port)
      - {name: eu-west-1, advertise: 10.0.0.2, bind: 0.0.0.0, port: 8000}
      # capacity: modelled (default: tables throttle as DynamoDB's do) | unlimited (never throttles); the region
      # process's --capacity (docs/capacity.md)
    links:                             # one-way delay; absent: 0 ms everywhere
      default: {latency_ms: 40, jitter_ms: 2}
      overrides: [{from: us-east-1, to: ap-southeast-1, latency_ms: 110, jitter_ms: 5, bidirectional: true}]
    tables: [...]                      # CreateTable requests, checked with CreateTable's own rules; capacity
                                       # members field by field, and per-replica read settings (`Replicas`,
                                       # CloudFormation's ReplicaSpecification): capacity.py
    conflict_clock: hlc                # hlc (default) | wall
    ttl_sweep_interval_s: 1.0
    max_clock_offset_ms: 500
    secret_file: path                  # relative to the topology file; absent: $GLOBALTABLES_SECRET, else `up`
                                       # generates one (a secret is never given on a command line)
    credentials:                       # optional: every region verifies request signatures (region/signing.py)
      AKIDEXAMPLE: wJalrXUtnFEMI       #   access key id -> secret (any region)
      AKIDEU: {secret: s3cr3t, regions: [eu-west-1]}   # a key bound to some regions is refused elsewhere
    workload: {...}                    # the load `globaltables run` applies; schema in workload.py

Checks whose rules live in higher layers are handed in as `Checks` (this package sits below the engine):
CreateTable's own rules for each table, the workload's schema. `experiment.topology.load_topology` is the loader
with every check; without them a table is only checked for its shape (names, key schema, attribute definitions).

Tables: a table with neither `BillingMode` nor `ProvisionedThroughput` gets `BillingMode: PAY_PER_REQUEST`, so the
issue's minimal definitions are valid CreateTable requests (CreateTable's own default, PROVISIONED, would demand
throughput). With the CreateTable check, keys CreateTable does not know are refused, so a typo cannot silently drop an index.

Warnings (the file loads, `Topology.warnings` lists them): an MRSC topology whose regions span DynamoDB's region
sets (US, EU, AP — facts §3), or use a region outside them; DynamoDB would refuse such a table.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from ..runtime.specs import type_name
from ..runtime.yaml_documents import load_yaml, one_line
from . import capacity
from .credentials import CredentialsError, parse_credentials
from .model import (
    CAPACITY_OPTIONS,
    CONFLICT_CLOCKS,
    DEFAULT_HOST,
    DEFAULT_MAX_CLOCK_OFFSET_MS,
    DEFAULT_TTL_SWEEP_INTERVAL_S,
    MODES,
    NO_DELAY,
    ROLES,
    Link,
    LinkOverride,
    Links,
    Region,
    TableSpec,
    Topology,
    is_loopback,
)

# Two letters, one or more words, a number: us-east-1, ap-southeast-2, us-gov-west-1, il-central-1.
AWS_REGION_NAME = re.compile(r"[a-z]{2}(?:-[a-z]+)+-[0-9]{1,2}")

# DynamoDB's MRSC region sets (facts §3): an MRSC table cannot span two of them.
MRSC_REGION_SETS = {
    "US": frozenset({"us-east-1", "us-east-2", "us-west-2"}),
    "EU": frozenset({"eu-west-1", "eu-west-2", "eu-west-3", "eu-central-1"}),
    "AP": frozenset({"ap-northeast-1", "ap-northeast-2", "ap-northeast-3"}),
}

TOP_LEVEL_KEYS = (
    "name",
    "mode",
    "regions",
    "links",
    "tables",
    "conflict_clock",
    "ttl_sweep_interval_s",
    "max_clock_offset_ms",
    "secret_file",
    "credentials",
    "workload",
)
REGION_KEYS = ("name", "host", "advertise", "bind", "port", "endpoint", "role", "clock_offset_ms", "capacity")
LOOPBACK_NAMES = ("localhost", "::1")
LINKS_KEYS = ("default", "overrides")
LINK_KEYS = ("latency_ms", "jitter_ms")
OVERRIDE_KEYS = ("from", "to", "latency_ms", "jitter_ms", "bidirectional")
TABLE_REQUIRED = ("TableName", "KeySchema", "AttributeDefinitions")


class TopologyError(ValueError):
    """A topology file that cannot be used; `errors` holds one line per problem, each naming file and field."""

    def __init__(self, errors: Iterable[str]) -> None:
        self.errors = tuple(errors)
        super().__init__("\n".join(self.errors))


# (workload, declared table names, region names, replica names) -> (field path under `workload`, message) pairs.
WorkloadCheck = Callable[[Mapping[str, Any], Sequence[str], Sequence[str], Sequence[str]], Iterable[tuple[str, str]]]


@dataclass(frozen=True)
class Checks:
    """The checks of a topology's sections whose rules live above this package, handed in by the caller.

    `table_fields`: the keys a table entry may have (CreateTable's request fields; None: any key). `table`: given a
    table's CreateTable request, what CreateTable would refuse ("<error type>: <message>"), else None.
    `workload`: the workload section's problems."""

    table_fields: Collection[str] | None = None
    table: Callable[[dict[str, Any]], str | None] | None = None
    workload: WorkloadCheck | None = None


SHAPE_ONLY = Checks()


# ---------------------------------------------------------------------------------------------- YAML loading


class _UniqueKeyLoader(yaml.SafeLoader):
    """safe_load, except that a key repeated in one mapping is an error rather than silently overwritten."""


def _construct_unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    loader.flatten_mapping(node)
    seen: dict[Any, yaml.Node] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping",
                node.start_mark,
                f"found duplicate key {key!r}",
                key_node.start_mark,
            )
        seen[key] = key_node
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping)


def load_topology(path: str | Path, checks: Checks = SHAPE_ONLY) -> Topology:
    """Read and validate a topology file; TopologyError lists every problem found."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise TopologyError([f"{path}: cannot read the file: {error}"]) from None
    return parse_topology(text, path, checks)


def parse_topology(text: str, source: str | Path = "<topology>", checks: Checks = SHAPE_ONLY) -> Topology:
    """Validate topology YAML given as text; `source` names it in errors (and anchors `secret_file`)."""
    source = Path(source)
    try:
        document = load_yaml(text, _UniqueKeyLoader)
    except yaml.YAMLError as error:
        raise TopologyError([f"{source}: invalid YAML: {one_line(error)}"]) from None
    reader = _Reader(str(source), checks)
    topology = reader.topology(document, source)
    if reader.errors:
        raise TopologyError(reader.errors)
    return topology


# ------------------------------------------------------------------------------------------------ validation


def _show(value: Any) -> str:
    """A value as the user wrote it, near enough: strings quoted, collections in YAML flow style."""
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, (list, dict)):
        return yaml.safe_dump(value, default_flow_style=True).strip()
    return str(value).lower() if isinstance(value, bool) else str(value)


class _Reader:
    """Turns the parsed YAML into a Topology, recording each problem (file and field path) instead of stopping."""

    def __init__(self, file: str, checks: Checks = SHAPE_ONLY) -> None:
        self.file = file
        self.checks = checks
        self.errors: list[str] = []
        self.warnings: list[str] = []

    def error(self, path: str, message: str) -> None:
        self.errors.append(f"{self.file}: {path}: {message}" if path else f"{self.file}: {message}")

    def warn(self, path: str, message: str) -> None:
        self.warnings.append(f"{self.file}: {path}: {message}" if path else f"{self.file}: {message}")

    # ---------------------------------------------------------------------------------------- primitives

    def mapping(
        self, value: Any, path: str, allowed: tuple[str, ...] | None, required: tuple[str, ...] = ()
    ) -> dict | None:
        """`value` as a mapping, its unknown keys (None `allowed`: every key is known) and missing ones reported."""
        if not isinstance(value, dict):
            self.error(path, f"expected a mapping, got {type_name(value)}")
            return None
        for key in value:
            if allowed is not None and key not in allowed:
                where = f"{path}.{key}" if path else str(key)
                self.error(where, f"unknown key; allowed keys are {', '.join(allowed)}")
        for key in required:
            if key not in value:
                self.error(f"{path}.{key}" if path else key, "is required")
        return value

    def string(self, value: Any, path: str, choices: tuple[str, ...] | None = None) -> str | None:
        if not isinstance(value, str) or not value:
            what = "an empty string" if value == "" else type_name(value)
            expected = f"one of {', '.join(choices)}" if choices else "a non-empty string"
            self.error(path, f"expected {expected}, got {what}")
            return None
        if choices is not None and value not in choices:
            self.error(path, f"{value!r} is not allowed; use one of {', '.join(choices)}")
            return None
        return value

    def number(self, value: Any, path: str, *, minimum: float | None = 0, positive: bool = False) -> float | None:
        # YAML booleans are ints in Python; a `true` latency is a mistake, not 1 ms.
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            self.error(path, f"expected a number, got {_show(value) if isinstance(value, float) else type_name(value)}")
            return None
        if positive and value <= 0:
            self.error(path, f"must be greater than 0, got {value}")
            return None
        if minimum is not None and value < minimum:
            self.error(path, f"must be at least {minimum}, got {value}")
            return None
        return value

    def boolean(self, value: Any, path: str) -> bool | None:
        if not isinstance(value, bool):
            self.error(path, f"expected true or false, got {type_name(value)}")
            return None
        return value

    def items(self, value: Any, path: str, *, non_empty: bool = False) -> list | None:
        if not isinstance(value, list):
            self.error(path, f"expected a list, got {type_name(value)}")
            return None
        if non_empty and not value:
            self.error(path, "must list at least one entry")
            return None
        return value

    # ------------------------------------------------------------------------------------------- sections

    def topology(self, document: Any, source: Path) -> Topology:
        raw = self.mapping(document, "", TOP_LEVEL_KEYS, required=("name", "regions"))
        if raw is None:
            return Topology(name="", regions=())
        name = self.string(raw.get("name"), "name") if "name" in raw else None
        mode = self.string(raw.get("mode", "mrec"), "mode", MODES) or "mrec"
        regions = self.regions(raw.get("regions"), mode) if "regions" in raw else ()
        names = {region.name for region in regions}
        links = self.links(raw.get("links", {}), names)
        tables = self.tables(raw.get("tables", []), [region.name for region in regions if region.role == "replica"])
        conflict_clock = self.string(raw.get("conflict_clock", "hlc"), "conflict_clock", CONFLICT_CLOCKS) or "hlc"
        ttl_sweep = raw.get("ttl_sweep_interval_s", DEFAULT_TTL_SWEEP_INTERVAL_S)
        ttl_sweep = self.number(ttl_sweep, "ttl_sweep_interval_s", positive=True)
        max_offset = self.number(raw.get("max_clock_offset_ms", DEFAULT_MAX_CLOCK_OFFSET_MS), "max_clock_offset_ms")
        secret_file = None
        if raw.get("secret_file") is not None:
            secret = self.string(raw["secret_file"], "secret_file")
            secret_file = source.parent / Path(secret).expanduser() if secret else None
        credentials = None
        if raw.get("credentials") is not None:
            try:
                credentials = MappingProxyType(parse_credentials(raw["credentials"], str(self.file)))
            except CredentialsError as error:
                self.errors.append(str(error))  # "<file>: credentials.<key>: <problem>"
        workload = raw.get("workload")
        if workload is not None and not isinstance(workload, dict):
            self.error("workload", f"expected a mapping, got {type_name(workload)}")
            workload = None
        elif workload is not None and self.checks.workload is not None:
            declared = [table.name for table in tables]
            replicas = [region.name for region in regions if region.role == "replica"]
            for path, message in self.checks.workload(
                workload, declared, [region.name for region in regions], replicas
            ):
                self.error(path, message)
        if mode == "mrsc" and regions:
            self.mrsc_rules(regions)
        if mode == "mrsc":
            # What a strong-mode table cannot have (facts §3): the region would refuse to make it strong.
            for index, table in enumerate(tables):
                if table.definition.get("LocalSecondaryIndexes"):
                    self.error(f"tables[{index}].LocalSecondaryIndexes", "not supported when mode is mrsc")
                if (table.definition.get("StreamSpecification") or {}).get("StreamEnabled"):
                    self.error(f"tables[{index}].StreamSpecification", "streams are not supported when mode is mrsc")
        return Topology(
            name=name or "",
            mode=mode,  # type: ignore[arg-type]
            regions=regions,
            links=links,
            tables=tables,
            conflict_clock=conflict_clock,  # type: ignore[arg-type]
            ttl_sweep_interval_s=ttl_sweep if ttl_sweep is not None else DEFAULT_TTL_SWEEP_INTERVAL_S,
            max_clock_offset_ms=max_offset if max_offset is not None else DEFAULT_MAX_CLOCK_OFFSET_MS,
            secret_file=secret_file,
            credentials=credentials,
            workload=MappingProxyType(copy.deepcopy(workload)) if workload is not None else None,
            source=source,
            warnings=tuple(self.warnings),
        )

    def regions(self, value: Any, mode: str) -> tuple[Region, ...]:
        entries = self.items(value, "regions", non_empty=True)
        if entries is None:
            return ()
        regions: list[Region] = []
        seen: dict[str, int] = {}
        for index, entry in enumerate(entries):
            path = f"regions[{index}]"
            raw = self.mapping(entry, path, REGION_KEYS, required=("name",))
            if raw is None or "name" not in raw:
                continue
            name = self.string(raw["name"], f"{path}.name")
            if name is not None and not AWS_REGION_NAME.fullmatch(name):
                self.error(f"{path}.name", f"{name!r} does not look like an AWS region name such as us-east-1")
                name = None
            if name is not None and name in seen:
                self.error(f"{path}.name", f"duplicate region {name!r} (already regions[{seen[name]}])")
                name = None
            host, bind, port, endpoint = self.placement(raw, path)
            role = self.string(raw.get("role", "replica"), f"{path}.role", ROLES)
            if role == "witness" and mode != "mrsc":
                self.error(f"{path}.role", "'witness' is only allowed when mode is mrsc")
            offset = self.number(raw.get("clock_offset_ms", 0), f"{path}.clock_offset_ms", minimum=None)
            region_capacity = self.string(raw.get("capacity", "modelled"), f"{path}.capacity", CAPACITY_OPTIONS)
            if name is None:
                continue
            seen[name] = index
            regions.append(
                Region(
                    name=name,
                    host=host,
                    bind=bind,
                    endpoint=endpoint,
                    port=port,
                    role=role or "replica",  # type: ignore[arg-type]
                    clock_offset_ms=offset or 0,
                    capacity=region_capacity or "modelled",
                )
            )
        return tuple(regions)

    def placement(self, raw: dict, path: str) -> tuple[str, str, int | None, str | None]:
        """(host, bind, port, endpoint) of one region entry. Binding beyond loopback is explicit: a region
        advertised at another host's address must say where it binds (`bind: 0.0.0.0`, or that address)."""
        if "host" in raw and "advertise" in raw:
            self.error(f"{path}.advertise", "give host or advertise (synonyms), not both")
        key = "advertise" if "advertise" in raw else "host"
        host = self.string(raw.get(key, DEFAULT_HOST), f"{path}.{key}") or DEFAULT_HOST
        if "bind" in raw:
            bind = self.string(raw["bind"], f"{path}.bind") or DEFAULT_HOST
        elif is_loopback(host):
            bind = host
        else:
            bind = DEFAULT_HOST
            if "endpoint" not in raw:
                self.error(
                    f"{path}.bind",
                    f"the region is advertised at {host!r}, which is not a loopback address, so it must say where "
                    "it listens: set bind (e.g. 0.0.0.0, or that address); a region binds 127.0.0.1 unless its "
                    "topology says otherwise",
                )
        port = raw.get("port")
        if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535):
            self.error(f"{path}.port", f"expected a port number 0..65535 (0 picks a free port), got {_show(port)}")
            port = None
        endpoint = None
        if "endpoint" in raw:
            endpoint = self.string(raw["endpoint"], f"{path}.endpoint")
            if endpoint is not None and not re.fullmatch(r"https?://[^/\s:]+(?::\d{1,5})?/?", endpoint):
                self.error(f"{path}.endpoint", f"expected a URL such as http://10.0.0.2:8000, got {endpoint!r}")
                endpoint = None
            endpoint = endpoint.rstrip("/") if endpoint else None
        return host, bind, port, endpoint

    def mrsc_rules(self, regions: tuple[Region, ...]) -> None:
        """Facts §3: exactly three regions, three replicas or two replicas plus one witness, one region set."""
        if len(regions) != 3:
            self.error(
                "regions",
                f"mode mrsc needs exactly three regions (three replicas, or two replicas and one witness); "
                f"got {len(regions)}",
            )
            return
        witnesses = [region.name for region in regions if region.role == "witness"]
        if len(witnesses) > 1:
            self.error(
                "regions",
                f"mode mrsc allows at most one witness (three replicas, or two replicas and one witness); "
                f"got {len(witnesses)}: {', '.join(witnesses)}",
            )
        sets_used = {}
        for region in regions:
            found = [label for label, members in MRSC_REGION_SETS.items() if region.name in members]
            if found:
                sets_used.setdefault(found[0], []).append(region.name)
            else:
                known = "; ".join(
                    f"{label}: {', '.join(sorted(members))}" for label, members in MRSC_REGION_SETS.items()
                )
                self.warn(
                    "regions",
                    f"{region.name} is in none of DynamoDB's MRSC region sets ({known}); DynamoDB would refuse "
                    "this table",
                )
        if len(sets_used) > 1:
            spans = "; ".join(f"{label}: {', '.join(names)}" for label, names in sets_used.items())
            self.warn("regions", f"an MRSC table cannot span DynamoDB region sets, but this one does ({spans})")

    def link(self, raw: dict, path: str, default_jitter: float = 0) -> Link | None:
        latency = self.number(raw["latency_ms"], f"{path}.latency_ms") if "latency_ms" in raw else None
        jitter = self.number(raw["jitter_ms"], f"{path}.jitter_ms") if "jitter_ms" in raw else default_jitter
        if latency is None or jitter is None:
            return None
        return Link(latency_ms=latency, jitter_ms=jitter)

    def links(self, value: Any, names: set[str]) -> Links:
        raw = self.mapping(value, "links", LINKS_KEYS)
        if raw is None:
            return Links()
        default = NO_DELAY
        if "default" in raw:
            raw_default = self.mapping(raw["default"], "links.default", LINK_KEYS, required=("latency_ms",))
            if raw_default is not None:
                default = self.link(raw_default, "links.default") or default
        overrides: list[LinkOverride] = []
        claimed: dict[tuple[str, str], str] = {}
        for index, entry in enumerate(self.items(raw.get("overrides", []), "links.overrides") or []):
            path = f"links.overrides[{index}]"
            item = self.mapping(entry, path, OVERRIDE_KEYS, required=("from", "to", "latency_ms"))
            if item is None:
                continue
            ends = []
            for key in ("from", "to"):
                end = self.string(item.get(key), f"{path}.{key}") if key in item else None
                if end is not None and end not in names:
                    known = ", ".join(sorted(names)) or "none"
                    self.error(f"{path}.{key}", f"unknown region {end!r}; regions are {known}")
                    end = None
                ends.append(end)
            bidirectional = self.boolean(item.get("bidirectional", False), f"{path}.bidirectional")
            link = self.link(item, path, default_jitter=default.jitter_ms)
            source, target = ends
            if source is not None and source == target:
                self.error(path, f"'from' and 'to' are both {source!r}; a link joins two different regions")
                continue
            if source is None or target is None or link is None or bidirectional is None:
                continue
            directions = [(source, target), (target, source)] if bidirectional else [(source, target)]
            for direction in directions:
                if direction in claimed:
                    self.error(
                        path, f"the link {direction[0]} -> {direction[1]} is already set by {claimed[direction]}"
                    )
                claimed[direction] = path
            overrides.append(LinkOverride(source=source, target=target, link=link, bidirectional=bidirectional))
        return Links(default=default, overrides=tuple(overrides))

    def tables(self, value: Any, replicas: Sequence[str] = ()) -> tuple[TableSpec, ...]:
        tables: list[TableSpec] = []
        seen: dict[str, int] = {}
        for index, entry in enumerate(self.items(value, "tables") or []):
            path = f"tables[{index}]"
            fields = self.checks.table_fields
            allowed = (*fields, "Replicas") if fields is not None else None
            raw = self.mapping(entry, path, allowed, required=TABLE_REQUIRED)
            if raw is None or not all(key in raw for key in TABLE_REQUIRED):
                continue
            if allowed is not None and any(key not in allowed for key in raw):
                continue
            name = self.string(raw["TableName"], f"{path}.TableName")
            shapes_ok = self.key_shapes(raw, path)
            if name is None or not shapes_ok:
                continue
            if name in seen:
                self.error(f"{path}.TableName", f"duplicate table {name!r} (already tables[{seen[name]}])")
                continue
            seen[name] = index
            request = copy.deepcopy(raw)
            replica_specs = request.pop("Replicas", None)
            if "BillingMode" not in request and "ProvisionedThroughput" not in request:
                request["BillingMode"] = "PAY_PER_REQUEST"
            before = len(self.errors)
            capacity.check_table(request, path, self.error)
            overrides = {}
            if replica_specs is not None:
                overrides = capacity.check_replicas(replica_specs, f"{path}.Replicas", request, replicas, self.error)
            if len(self.errors) > before:
                continue  # named field by field; CreateTable's message would only repeat it for the whole table
            refusal = self.checks.table(request) if self.checks.table is not None else None
            if refusal is None:
                for region, replica in overrides.items():  # what each region will run must be valid too
                    refusal = self.checks.table(capacity.apply_overrides(copy.deepcopy(request), replica)) if (
                        self.checks.table is not None
                    ) else None
                    if refusal is not None:
                        refusal = f"{refusal} (with the settings of replica {region})"
                        break
            if refusal is not None:
                self.error(path, f"CreateTable would refuse this table: {refusal}")
                continue
            tables.append(
                TableSpec(
                    name=name,
                    definition=MappingProxyType(request),
                    replicas=MappingProxyType({region: MappingProxyType(r) for region, r in overrides.items()}),
                )
            )
        return tuple(tables)

    def key_shapes(self, raw: dict, path: str) -> bool:
        """The structural checks CreateTable's messages would not point at the right field for."""
        ok = True
        for key, members in (
            ("KeySchema", ("AttributeName", "KeyType")),
            ("AttributeDefinitions", ("AttributeName", "AttributeType")),
        ):
            entries = self.items(raw[key], f"{path}.{key}", non_empty=True)
            if entries is None:
                ok = False
                continue
            for index, entry in enumerate(entries):
                element = self.mapping(entry, f"{path}.{key}[{index}]", members, required=members)
                if element is None or set(element) != set(members):
                    ok = False
                    continue
                for member in members:
                    if self.string(element[member], f"{path}.{key}[{index}].{member}") is None:
                        ok = False
        return ok
