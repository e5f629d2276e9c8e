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
    links:                             # one-way delay; absent: 0 ms everywhere
      default: {latency_ms: 40, jitter_ms: 2}
      overrides: [{from: us-east-1, to: ap-southeast-1, latency_ms: 110, jitter_ms: 5, bidirectional: true}]
    tables: [...]                      # CreateTable requests, checked with CreateTable's own rules
    conflict_clock: hlc                # hlc (default) | wall
    ttl_sweep_interval_s: 1.0
    max_clock_offset_ms: 500
    secret_file: path                  # relative to the topology file; absent: $GLOBALTABLES_SECRET, else `up`
                                       # generates one (a secret is never given on a command line)
    credentials:                       # optional: every region verifies request signatures (region/signing.py)
      AKIDEXAMPLE: wJalrXUtnFEMI       #   access key id -> secret (any region)
      AKIDEU: {secret: s3cr3t, regions: [eu-west-1]}   # a key bound to some regions is refused elsewhere
    workload: {...}                    # the load `globaltables run` applies; schema in workload.py

Tables: a table with neither `BillingMode` nor `ProvisionedThroughput` gets `BillingMode: PAY_PER_REQUEST`, so the
issue's minimal definitions are valid CreateTable requests (CreateTable's own default, PROVISIONED, would demand
throughput). Keys CreateTable does not know are refused, so a typo cannot silently drop an index.

Warnings (the file loads, `Topology.warnings` lists them): an MRSC topology whose regions span DynamoDB's region
sets (US, EU, AP — facts §3), or use a region outside them; DynamoDB would refuse such a table.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

import networkx as nx
import yaml

from ..engine.errors import DynamoError
from ..engine.table_validation import CREATE_TABLE_FIELDS, validate_create_table
from ..engine.validation import check_request
from ..runtime.yaml_documents import load_yaml, one_line

Mode = Literal["mrec", "mrsc"]
Role = Literal["replica", "witness"]
MODES = ("mrec", "mrsc")
ROLES = ("replica", "witness")
CONFLICT_CLOCKS = ("hlc", "wall")

DEFAULT_HOST = "127.0.0.1"
DEFAULT_MAX_CLOCK_OFFSET_MS = 500  # CockroachDB's default maximum offset; a skew budget no sane NTP setup exceeds
DEFAULT_TTL_SWEEP_INTERVAL_S = 1.0  # a testbed sweeps often; DynamoDB only promises deletion within days

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
REGION_KEYS = ("name", "host", "advertise", "bind", "port", "endpoint", "role", "clock_offset_ms")
LOOPBACK_NAMES = ("localhost", "::1")
LINKS_KEYS = ("default", "overrides")
LINK_KEYS = ("latency_ms", "jitter_ms")
OVERRIDE_KEYS = ("from", "to", "latency_ms", "jitter_ms", "bidirectional")
TABLE_KEYS = tuple(CREATE_TABLE_FIELDS)


class TopologyError(ValueError):
    """A topology file that cannot be used; `errors` holds one line per problem, each naming file and field."""

    def __init__(self, errors: Iterable[str]) -> None:
        self.errors = tuple(errors)
        super().__init__("\n".join(self.errors))


# ---------------------------------------------------------------------------------------------- the model


def is_loopback(host: str) -> bool:
    """Whether `host` names this machine only (127.0.0.0/8, ::1, localhost): binding it reaches no other host."""
    return host in LOOPBACK_NAMES or bool(re.fullmatch(r"127(?:\.\d{1,3}){3}", host))


@dataclass(frozen=True)
class Region:
    name: str
    host: str = DEFAULT_HOST  # the address peers and clients use (`advertise` in the file is a synonym)
    port: int | None = None  # None: bind port 0 and report the bound port
    role: Role = "replica"
    clock_offset_ms: float = 0  # added to this region's wall clock (skew on purpose)
    bind: str = DEFAULT_HOST  # the address the region listens on; beyond loopback only when the file says so
    endpoint: str | None = None  # the URL of a region started elsewhere; overrides host and port for callers

    @property
    def url(self) -> str | None:
        """Where peers and clients reach this region, when the topology pins it (an endpoint or a fixed port)."""
        if self.endpoint is not None:
            return self.endpoint
        if self.port:
            host = f"[{self.host}]" if ":" in self.host else self.host
            return f"http://{host}:{self.port}"
        return None


@dataclass(frozen=True)
class Link:
    """One-way delay of a directed link: `latency_ms` plus up to `jitter_ms` of jitter."""

    latency_ms: float
    jitter_ms: float = 0


@dataclass(frozen=True)
class LinkOverride:
    source: str  # `from` in the file
    target: str  # `to` in the file
    link: Link
    bidirectional: bool = False


NO_DELAY = Link(0, 0)


@dataclass(frozen=True)
class Links:
    default: Link = NO_DELAY
    overrides: tuple[LinkOverride, ...] = ()


@dataclass(frozen=True)
class TableSpec:
    """A declared table: its CreateTable request (read-only; `request()` gives a fresh mutable copy)."""

    name: str
    definition: Mapping[str, Any]

    def request(self) -> dict[str, Any]:
        return copy.deepcopy(dict(self.definition))


@dataclass(frozen=True)
class Topology:
    name: str
    regions: tuple[Region, ...]
    mode: Mode = "mrec"
    links: Links = Links()
    tables: tuple[TableSpec, ...] = ()
    conflict_clock: Literal["hlc", "wall"] = "hlc"
    ttl_sweep_interval_s: float = DEFAULT_TTL_SWEEP_INTERVAL_S
    max_clock_offset_ms: float = DEFAULT_MAX_CLOCK_OFFSET_MS
    secret_file: Path | None = None  # resolved against the topology file's folder
    # Access key id -> region/signing.py AccessKey (its repr hides the secret); None: signatures are not verified.
    credentials: Mapping[str, Any] | None = field(default=None, compare=False)
    workload: Mapping[str, Any] | None = None  # validated by experiment/workload.py; parse_workload() reads it
    source: Path | None = None  # the file it came from
    warnings: tuple[str, ...] = field(default=(), compare=False)

    # ------------------------------------------------------------------------------------------ lookups

    @property
    def region_names(self) -> tuple[str, ...]:
        return tuple(region.name for region in self.regions)

    def region(self, name: str) -> Region:
        for region in self.regions:
            if region.name == name:
                return region
        raise KeyError(f"no region {name!r} in topology {self.name!r}; regions: {', '.join(self.region_names)}")

    @property
    def replicas(self) -> tuple[Region, ...]:
        return tuple(region for region in self.regions if region.role == "replica")

    def link(self, source: str, target: str) -> Link:
        """The link from `source` to `target`: the last override naming that direction, else the default."""
        self.region(source), self.region(target)
        found = self.links.default
        for override in self.links.overrides:
            if (override.source, override.target) == (source, target) or (
                override.bidirectional and (override.target, override.source) == (source, target)
            ):
                found = override.link
        return found

    # -------------------------------------------------------------------------------------------- graph

    def graph(self) -> nx.DiGraph:
        """Every region a node (with its Region as `region`), every ordered pair an edge with `latency_ms` and
        `jitter_ms` after overrides. A fresh graph each call, so callers may change it."""
        graph = nx.DiGraph(name=self.name)
        for region in self.regions:
            graph.add_node(region.name, region=region)
        for source in self.region_names:
            for target in self.region_names:
                if source != target:
                    link = self.link(source, target)
                    graph.add_edge(source, target, latency_ms=link.latency_ms, jitter_ms=link.jitter_ms)
        return graph

    def latency_matrix(self) -> dict[str, dict[str, float]]:
        """`matrix[source][target]`: one-way latency in ms (0 from a region to itself)."""
        graph = self.graph()
        return {
            source: {target: 0 if source == target else graph.edges[source, target]["latency_ms"] for target in graph}
            for source in graph
        }

    def _surviving(self, grudges: Mapping[str, Iterable[str]] | None) -> nx.DiGraph:
        """The graph without the links a partition cuts: `grudges[receiver]` are the senders it refuses."""
        graph = self.graph()
        for receiver, senders in (grudges or {}).items():
            self.region(receiver)
            for sender in senders:
                self.region(sender)
                if graph.has_edge(sender, receiver):
                    graph.remove_edge(sender, receiver)
        return graph

    def link_up(self, source: str, target: str, grudges: Mapping[str, Iterable[str]] | None = None) -> bool:
        """Whether `target` accepts messages sent directly by `source` (replication never relays)."""
        self.region(source), self.region(target)
        return source == target or source not in set((grudges or {}).get(target, ()))

    def reachable(self, source: str, target: str, grudges: Mapping[str, Iterable[str]] | None = None) -> bool:
        """Whether some path of uncut links leads from `source` to `target` (possibly through other regions)."""
        self.region(source), self.region(target)
        return nx.has_path(self._surviving(grudges), source, target)

    def partition_components(self, grudges: Mapping[str, Iterable[str]] | None = None) -> list[frozenset[str]]:
        """The groups a partition separates: strongly connected components of the uncut links (regions that can
        each reach the other), sorted by their alphabetically first member. One group means nothing is cut off."""
        components = nx.strongly_connected_components(self._surviving(grudges))
        return sorted((frozenset(component) for component in components), key=min)


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


def load_topology(path: str | Path) -> Topology:
    """Read and validate a topology file; TopologyError lists every problem found."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise TopologyError([f"{path}: cannot read the file: {error}"]) from None
    return parse_topology(text, path)


def parse_topology(text: str, source: str | Path = "<topology>") -> Topology:
    """Validate topology YAML given as text; `source` names it in errors (and anchors `secret_file`)."""
    source = Path(source)
    try:
        document = load_yaml(text, _UniqueKeyLoader)
    except yaml.YAMLError as error:
        raise TopologyError([f"{source}: invalid YAML: {one_line(error)}"]) from None
    reader = _Reader(str(source))
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


def type_name(value: Any) -> str:
    """How an error message names the kind of a wrong value ("a string", "null", ...)."""
    if value is None:
        return "null"
    names = {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "a mapping",
    }
    return names.get(type(value), type(value).__name__)


class _Reader:
    """Turns the parsed YAML into a Topology, recording each problem (file and field path) instead of stopping."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.errors: list[str] = []
        self.warnings: list[str] = []

    def error(self, path: str, message: str) -> None:
        self.errors.append(f"{self.file}: {path}: {message}" if path else f"{self.file}: {message}")

    def warn(self, path: str, message: str) -> None:
        self.warnings.append(f"{self.file}: {path}: {message}" if path else f"{self.file}: {message}")

    # ---------------------------------------------------------------------------------------- primitives

    def mapping(self, value: Any, path: str, allowed: tuple[str, ...], required: tuple[str, ...] = ()) -> dict | None:
        if not isinstance(value, dict):
            self.error(path, f"expected a mapping, got {type_name(value)}")
            return None
        for key in value:
            if key not in allowed:
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
            self.error(
                path, f"expected a number, got {_show(value) if isinstance(value, float) else type_name(value)}"
            )
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
        tables = self.tables(raw.get("tables", []))
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
            from ..region.signing import CredentialsError, parse_credentials  # signing.py owns the schema

            try:
                credentials = MappingProxyType(parse_credentials(raw["credentials"], str(self.file)))
            except CredentialsError as error:
                self.errors.append(str(error))  # "<file>: credentials.<key>: <problem>"
        workload = raw.get("workload")
        if workload is not None and not isinstance(workload, dict):
            self.error("workload", f"expected a mapping, got {type_name(workload)}")
            workload = None
        elif workload is not None:
            from .workload import check_workload  # workload.py owns its schema

            declared = [table.name for table in tables]
            replicas = [region.name for region in regions if region.role == "replica"]
            for path, message in check_workload(workload, declared, [region.name for region in regions], replicas):
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

    def tables(self, value: Any) -> tuple[TableSpec, ...]:
        tables: list[TableSpec] = []
        seen: dict[str, int] = {}
        for index, entry in enumerate(self.items(value, "tables") or []):
            path = f"tables[{index}]"
            raw = self.mapping(entry, path, TABLE_KEYS, required=("TableName", "KeySchema", "AttributeDefinitions"))
            if raw is None or not all(key in raw for key in ("TableName", "KeySchema", "AttributeDefinitions")):
                continue
            if any(key not in TABLE_KEYS for key in raw):
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
            if "BillingMode" not in request and "ProvisionedThroughput" not in request:
                request["BillingMode"] = "PAY_PER_REQUEST"
            try:
                check_request(request, CREATE_TABLE_FIELDS)
                validate_create_table(request)
            except DynamoError as error:
                self.error(path, f"CreateTable would refuse this table: {error.type_name}: {error.message}")
                continue
            tables.append(TableSpec(name=name, definition=MappingProxyType(request)))
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
