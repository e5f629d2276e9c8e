"""The `workload:` section of a topology file: what load `globaltables run` puts on every region, and the seeded
generators that decide each operation.

Schema (every key but `table` has a default):

    workload:
      table: Orders                   # a table declared in `tables`
      duration_s: 20                  # measured load, after the warm-up
      warmup_s: 1                     # load before the measurement starts (in the history, not in latency stats)
      rate_per_region: 200            # operations per second per region, open loop (intended start times fixed)
      clients_per_region: 64          # most requests in flight per region; waiting for a slot counts as latency
      keys: 1000                      # key space size
      distribution: uniform           # uniform | zipf (with zipf_s) | hotkey (with hot_fraction)
      zipf_s: 1.0                     # zipf: P(key rank r) ~ 1 / r^zipf_s
      hot_fraction: 0.5               # hotkey: the share of operations on key 0; the rest are uniform
      item_bytes: 200                 # padding per written item (bytes of the `pad` attribute)
      mix: {put: 0.4, update: 0.1, get: 0.4, strong_get: 0.1}   # weights, normalised to 1
      regions: [us-east-1, ...]       # regions that receive load (default: every replica)
      write_mode: any                 # any | single | home: where each region's clients send their writes
      write_region: us-east-1         # single: the one region every write goes to (default: the first load region)
      timeout_s: 5                    # a request without an answer after this is an `info` (Timeout)
      lag_probe_interval_s: 0.5       # replication-lag probe writes per region (0: no probe)
      quiesce_timeout_s: 60           # bound on waiting for replication to drain after the load
      sdk_retries: none               # none | legacy | standard | adaptive: retry as botocore's mode would
                                      # (sdk_retries.py); none: one attempt per operation
      contributor_insights: true      # enable Contributor Insights (ACCESSED_AND_THROTTLED_KEYS) on every table and
                                      # GSI of each capacity-modelled region at the start (experiment/capacity.py)

Mix operations: put (PutItem), update (UpdateItem SET), conditional_update (UpdateItem SET ... if the item exists),
get (GetItem, eventually consistent), strong_get (GetItem, ConsistentRead), query (Query on the key's partition),
delete (DeleteItem), append (UpdateItem `SET l = list_append(if_not_exists(l, :empty), :v)` with a one-element
list holding a unique value; chaos/checkers/list_append.py checks the lists). Every write stores a unique `value` so
the checkers can tell which write a replica holds.

Write modes, as AWS's guidance for global tables names them ("write to any Region", "write to one Region", "write
to your Region" by item): `any` — each region's clients write to their own region; `single` — every write goes to
`write_region`, reads stay local; `home` — the writes to key i go to its home region, load region i mod n, so each
item has one writer region. The mode decides where a write is *sent*; the history and the samples record that
region. Changing only the mode keeps the same seeded operations and keys, so a comparison shows what each mode
costs in conflicts and lost writes on one topology.

Validation follows topology.py's rules: every problem is collected and names the field (the topology reader puts
the file in front), e.g. `workload.mix.scan: unknown operation; allowed: put, update, ...`.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..runtime.rng import Rng
from ..runtime.specs import Bool, Choice, Field, Integer, Invalid, ListOf, MapOf, Number, Str, Struct, Value, check
from .sdk_retries import SDK_RETRY_MODES

OPERATIONS = ("put", "update", "conditional_update", "get", "strong_get", "query", "delete", "append")
WRITE_OPERATIONS = frozenset({"put", "update", "conditional_update", "delete", "append"})
DISTRIBUTIONS = ("uniform", "zipf", "hotkey")
WRITE_MODES = ("any", "single", "home")
LIST_APPEND_OPERATIONS = ("append", "get", "strong_get")  # Elle's list-append: appends and whole-list reads
MAX_ITEM_BYTES = 300 * 1024  # under DynamoDB's 400 KB item limit, with room for the key and value


def _operation(name: object) -> object:
    if name not in OPERATIONS:
        raise Invalid(f"unknown operation; allowed: {', '.join(OPERATIONS)}")
    return name


# The fields of `workload:` (the module docstring's schema); the rules that join fields or need the topology are
# in check_workload.
WORKLOAD: dict[str, Field] = {
    "table": Str(
        required=True,
        non_empty=True,
        missing="is required (the name of a table declared in tables)",
        expected="a table name",
    ),
    "duration_s": Number(positive=True),
    "warmup_s": Number(minimum=0),
    "rate_per_region": Number(positive=True),
    "clients_per_region": Integer(positive=True),
    "keys": Integer(positive=True),
    "distribution": Choice(DISTRIBUTIONS),
    "zipf_s": Number(positive=True),
    "hot_fraction": Number(positive=True, maximum=1),
    "item_bytes": Integer(minimum=0, maximum=MAX_ITEM_BYTES),
    "mix": MapOf(
        Number(minimum=0, expected="a weight (a number)"),
        key=Value(_operation),
        non_empty=True,
        expected="a mapping of operation to weight",
    ),
    "regions": ListOf(Field(), non_empty=True, expected="a non-empty list of region names"),
    "write_mode": Choice(WRITE_MODES),
    "write_region": Field(),
    "timeout_s": Number(positive=True),
    "lag_probe_interval_s": Number(minimum=0),
    "quiesce_timeout_s": Number(positive=True),
    "sdk_retries": Choice(SDK_RETRY_MODES),
    "contributor_insights": Bool(),
}


@dataclass(frozen=True)
class Workload:
    table: str
    duration_s: float = 20.0
    warmup_s: float = 1.0
    rate_per_region: float = 100.0
    clients_per_region: int = 64
    keys: int = 1000
    distribution: str = "uniform"
    zipf_s: float = 1.0
    hot_fraction: float = 0.5
    item_bytes: int = 200
    mix: Mapping[str, float] = field(default_factory=lambda: {"put": 0.4, "update": 0.1, "get": 0.4, "strong_get": 0.1})
    regions: tuple[str, ...] | None = None
    write_mode: str = "any"
    write_region: str | None = None
    timeout_s: float = 5.0
    lag_probe_interval_s: float = 0.5
    quiesce_timeout_s: float = 60.0
    sdk_retries: str = "none"
    contributor_insights: bool = True  # experiment/capacity.py rule 1

    def with_overrides(self, **changes: Any) -> Workload:
        import dataclasses

        return dataclasses.replace(self, **changes)

    @property
    def operations(self) -> tuple[str, ...]:
        """The operations this workload runs (positive weight), in OPERATIONS order."""
        return tuple(name for name in OPERATIONS if self.mix.get(name, 0) > 0)

    def write_target(self, client_region: str, key_index: int) -> str:
        """The region a write drawn by `client_region`'s clients for key `key_index` is sent to (write_mode)."""
        if self.write_mode == "single":
            return self.write_region or (self.regions or (client_region,))[0]
        if self.write_mode == "home" and self.regions:
            return self.regions[key_index % len(self.regions)]
        return client_region


DEFAULTS = Workload(table="")


def check_workload(
    raw: Any, table_names: Sequence[str], region_names: Sequence[str], replica_names: Sequence[str] | None = None
) -> list[tuple[str, str]]:
    """Every problem of a `workload:` mapping as (field path, message); empty when it is valid."""
    _, problems = check(raw, Struct(WORKLOAD), "workload")
    if not isinstance(raw, dict):
        return problems

    def bad(path: str, message: str) -> None:
        problems.append((f"workload.{path}", message))

    failed = {path for path, _ in problems}
    replicas = list(replica_names if replica_names is not None else region_names)
    if "workload.table" not in failed and raw["table"] not in table_names:
        declared = ", ".join(table_names) if table_names else "none"
        bad("table", f"no table {raw['table']!r} in tables; declared tables: {declared}")
    distribution = raw.get("distribution", "uniform")
    if "workload.distribution" not in failed:
        if "zipf_s" in raw and distribution != "zipf":
            bad("zipf_s", "only applies to distribution: zipf")
        if "hot_fraction" in raw and distribution != "hotkey":
            bad("hot_fraction", "only applies to distribution: hotkey")
    mix = raw.get("mix")
    if isinstance(mix, dict) and mix:
        if "append" in mix:
            others = sorted(set(mix) - set(LIST_APPEND_OPERATIONS) & set(OPERATIONS))
            if others:
                bad("mix.append", f"a list-append workload takes only {', '.join(LIST_APPEND_OPERATIONS)}; "
                                  f"remove {', '.join(others)} (they would replace the lists)")  # fmt: skip
        weights = [w for w in mix.values() if isinstance(w, (int, float)) and not isinstance(w, bool)]
        if weights and all(w >= 0 for w in weights) and sum(weights) <= 0:
            bad("mix", "the weights add up to 0; give at least one operation a positive weight")
    if "workload.regions" not in failed and "regions" in raw:
        for index, name in enumerate(raw["regions"]):
            if name not in replicas:
                bad(f"regions[{index}]", f"{name!r} is not a replica of this topology; use {', '.join(replicas)}")
    if "write_region" in raw:
        if raw.get("write_mode", "any") != "single":
            bad("write_region", "only applies to write_mode: single")
        elif raw["write_region"] not in replicas:
            bad("write_region", f"{raw['write_region']!r} is not a replica of this topology; use {', '.join(replicas)}")
    return problems


def parse_workload(raw: Mapping[str, Any], replica_names: Sequence[str]) -> Workload:
    """A validated mapping (check_workload found nothing) as a Workload; mix weights normalised to 1."""
    values = dict(raw)
    mix = {name: float(weight) for name, weight in values.pop("mix", DEFAULTS.mix).items()}
    total = sum(mix.values())
    mix = {name: weight / total for name, weight in mix.items() if weight > 0}
    regions = tuple(values.pop("regions", replica_names))
    text = ("table", "distribution", "write_mode", "write_region", "sdk_retries", "contributor_insights")
    numbers = {key: float(value) for key, value in values.items() if key not in text}
    for key in ("clients_per_region", "keys", "item_bytes"):
        if key in numbers:
            numbers[key] = int(numbers[key])
    return Workload(
        table=values["table"],
        distribution=values.get("distribution", "uniform"),
        write_mode=values.get("write_mode", "any"),
        write_region=values.get("write_region"),
        sdk_retries=values.get("sdk_retries", "none"),
        contributor_insights=bool(values.get("contributor_insights", True)),
        mix=mix,
        regions=regions,
        **numbers,
    )


# ------------------------------------------------------------------------------------------------- generators


class KeyChooser:
    """Draws key indexes 0..keys-1 by the workload's distribution from a seeded Rng (key 0 is the hottest)."""

    def __init__(self, workload: Workload, rng: Rng) -> None:
        self.rng = rng
        self.keys = workload.keys
        self.distribution = workload.distribution
        self.hot_fraction = workload.hot_fraction
        self._cdf: list[float] = []
        if self.distribution == "zipf":
            total = 0.0
            for rank in range(1, self.keys + 1):
                total += 1.0 / rank**workload.zipf_s
                self._cdf.append(total)
            self._cdf = [value / total for value in self._cdf]

    def next(self) -> int:
        if self.distribution == "zipf":
            return min(bisect.bisect_left(self._cdf, self.rng.random()), self.keys - 1)
        if self.distribution == "hotkey" and self.rng.random() < self.hot_fraction:
            return 0
        return self.rng.randrange(self.keys)


class OperationChooser:
    """Draws operation names by the mix weights from a seeded Rng."""

    def __init__(self, workload: Workload, rng: Rng) -> None:
        self.rng = rng
        self.names = list(workload.mix)
        cumulative, total = [], 0.0
        for name in self.names:
            total += workload.mix[name]
            cumulative.append(total)
        self.cumulative = [value / total for value in cumulative]

    def next(self) -> str:
        index = bisect.bisect_left(self.cumulative, self.rng.random())
        return self.names[min(index, len(self.names) - 1)]
