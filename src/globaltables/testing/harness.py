"""What both harnesses share: kit clients, table handles, `concurrently`, waits and the assertions.

A harness is a running topology seen from a test. Subclasses (`SimHarness`, `ProcessHarness`) supply how to make a
client, read an item without recording it, wait (virtual or real time) and inject faults; everything a test calls
is defined here, with the same meaning in both modes:
  - `client(region)`: a real boto3 DynamoDB client for the region, `max_attempts=1` unless asked otherwise; its
    calls are recorded in `history`.
  - `concurrently(*calls)`: zero-argument callables started "at the same time"; their results in argument order,
    an exception standing in for the result of a call that raised.
  - `advance(seconds)`: let time pass (virtual in simulation, real with processes).
  - `partition`, `heal`, `delay`, `impair`, `skew`, `crash`, `restart`: faults, recorded in the history.
  - `wait_converged()`: every write delivered everywhere and every region holding the same items.
  - `assert_eventually(region, key, predicate, within=...)`: polls the region's copy of the item.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Self

from ..chaos.checkers import linearizable
from ..chaos.checkers.result import INVALID, UNKNOWN, CheckResult
from ..chaos.history import History, key_id
from ..runtime.link import FAULT_FIELDS
from ..topology.model import Topology
from .assertions import Predicate, converged_failure, eventually_failure, plain
from .recording import Recorder

DEFAULT_CONVERGE_TIMEOUT_S = 60.0


class Undecided(AssertionError):
    """A checker could not decide (verdict unknown): neither a pass nor a proven failure; names the open keys."""


# What `impair` can do to a link: the link faults of runtime/link.py (the region processes' links and the simulated
# network's alike) — loss (a fraction; loss_burst: mean burst length), duplicate and reorder (fractions; reorder_ms:
# how far back a reordered message is held), bandwidth_kbps (kilobytes per second) and stalled (hold every message
# until the fault ends, then deliver them in order). Not the delay's shape (distribution, pareto_alpha): how a link's
# jitter is drawn is the topology's to declare, as its delay is, and a test changes a delay with `delay`, not `impair`.
DELAY_SHAPE = ("distribution", "pareto_alpha")
IMPAIRMENTS = tuple(name for name in FAULT_FIELDS if name not in DELAY_SHAPE)


def check_impairments(faults: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(faults) - set(IMPAIRMENTS))
    if unknown or not faults:
        raise TypeError(f"impair takes one or more of {', '.join(IMPAIRMENTS)}; got {', '.join(unknown) or 'none'}")
    return dict(faults)


def to_wire(value: dict) -> dict:
    """Plain Python attributes -> DynamoDB wire form (boto3's serializer; floats become Decimals first)."""
    from decimal import Decimal

    from boto3.dynamodb.types import TypeSerializer

    serializer = TypeSerializer()

    def fix(v: Any) -> Any:
        if isinstance(v, float):
            return Decimal(str(v))
        if isinstance(v, dict):
            return {k: fix(x) for k, x in v.items()}
        if isinstance(v, list):
            return [fix(x) for x in v]
        return v

    return {name: serializer.serialize(fix(v)) for name, v in value.items()}


class Harness:
    mode = "abstract"

    def __init__(self, topology: Topology, seed: int | None) -> None:
        self.topology = topology
        self.seed = seed
        self.regions: tuple[str, ...] = topology.region_names
        self._key_names = {
            spec.name: [entry["AttributeName"] for entry in spec.definition["KeySchema"]] for spec in topology.tables
        }
        self._clients: dict[tuple[str, int], Any] = {}
        self.history = self._new_history()
        self.recorder = Recorder(self.history, self.key_of)

    # ----------------------------------------------------------------------------------------------- subclass API

    def _new_history(self) -> History:
        raise NotImplementedError

    def _make_client(self, region: str, max_attempts: int) -> Any:
        raise NotImplementedError

    def read(self, region: str, table: str, key: dict) -> dict | None:
        """The region's copy of an item (wire form), read locally and not recorded in the history."""
        raise NotImplementedError

    def items(self, region: str, table: str) -> dict[str, dict]:
        raise NotImplementedError

    def now(self) -> float:
        raise NotImplementedError

    def advance(self, seconds: float) -> None:
        raise NotImplementedError

    def wait_for(self, condition: Callable[[], Any], timeout: float) -> Any:
        """Let time pass until `condition()` is truthy (its value) or `timeout` seconds passed (None)."""
        raise NotImplementedError

    def _run_concurrently(self, calls: Sequence[Callable[[], Any]]) -> list[Any]:
        raise NotImplementedError

    def _quiescent(self) -> bool:
        raise NotImplementedError

    def close(self) -> None:
        pass

    # ----------------------------------------------------------------------------------------------- clients

    def key_of(self, table: str | None, item: dict) -> dict | None:
        names = self._key_names.get(table) if table is not None else None
        if names is None:
            return None
        return {name: item[name] for name in names if name in item}

    def client(self, region: str, *, max_attempts: int = 1) -> Any:
        """The kit's boto3 client for `region` (recorded; `max_attempts` as botocore's retry setting)."""
        if region not in self.regions:
            raise KeyError(
                f"no region {region!r} in topology {self.topology.name!r}; regions: {', '.join(self.regions)}"
            )
        client = self._clients.get((region, max_attempts))
        if client is None:
            client = self._make_client(region, max_attempts)
            self.recorder.attach(client, region)
            self._clients[(region, max_attempts)] = client
        return client

    @property
    def clients(self) -> dict[str, Any]:
        return {region: self.client(region) for region in self.regions}

    def table(self, name: str | None = None) -> TableHandle:
        """A handle on one table (default: the topology's first) taking plain Python items and keys."""
        if name is None:
            if not self.topology.tables:
                raise ValueError(f"topology {self.topology.name!r} declares no tables")
            name = self.topology.tables[0].name
        return TableHandle(self, name)

    # ----------------------------------------------------------------------------------------------- concurrency

    def concurrently(self, *calls: Callable[[], Any]) -> list[Any]:
        """Start the calls together; their results in argument order (an exception in place of a failed call's)."""
        if not calls or not all(callable(call) for call in calls):
            raise TypeError("concurrently() takes zero-argument callables, e.g. lambda: client.put_item(...)")
        return self._run_concurrently(calls)

    # ----------------------------------------------------------------------------------------------- waiting

    def wait_converged(self, timeout: float = DEFAULT_CONVERGE_TIMEOUT_S) -> dict[str, dict[str, dict]]:
        """Wait until replication is idle and every region holds the same items; {table: {key: item}}."""
        started = self.now()
        if not self.wait_for(self._quiescent, timeout):
            raise AssertionError(
                converged_failure(
                    ["replication still busy (records not acknowledged)"], self.history, self.seed, timeout
                )
            )
        differences: list[str] = []
        result: dict[str, dict[str, dict]] = {}
        for spec in self.topology.tables:
            states = {region: self.items(region, spec.name) for region in self._up_regions()}
            first_region, first = next(iter(states.items()))
            result[spec.name] = first
            for region, items in states.items():
                if items != first:
                    keys = sorted(set(items) ^ set(first) | {k for k in items if k in first and items[k] != first[k]})
                    for key in keys[:10]:
                        differences.append(
                            f"{spec.name}[{key}]: {first_region}={plain(first.get(key))} {region}={plain(items.get(key))}"
                        )
        if differences:
            raise AssertionError(converged_failure(differences, self.history, self.seed, self.now() - started))
        return result

    def _up_regions(self) -> list[str]:
        return list(self.regions)

    def assert_eventually(
        self, region: str, key: dict, predicate: Predicate, *, within: float = 2.0, table: str | None = None
    ) -> dict | None:
        """Within `within` seconds from now, the region's copy of the item (wire form, None if absent) satisfies
        `predicate`; returns it. On failure: an AssertionError showing every region's copy and the operations on the
        key. `key` in wire form ({"pk": {"S": "a"}}); TableHandle.assert_eventually takes plain keys."""
        table = table or self.table().name
        started = self.now()
        last: list[Any] = [None]

        def check() -> bool:
            last[0] = self.read(region, table, key)
            return bool(predicate(last[0]))

        if self.wait_for(check, within):
            return last[0]
        states = {name: self.read(name, table, key) for name in self._up_regions()}
        raise AssertionError(
            eventually_failure(
                region=region, table=table, key=key, predicate=predicate, within=within, started=started,
                time_label=self.time_label, last=last[0], states=states, history=self.history, seed=self.seed,
            )
        )  # fmt: skip

    time_label = "time"

    # ----------------------------------------------------------------------------------------------- checkers

    def check_linearizable(self, *, budget: int = linearizable.DEFAULT_BUDGET) -> CheckResult:
        """The per-key linearizability checker over what the kit's clients did, as recorded (testing/recording.py:
        strongly consistent GetItems are reads, writes carry the items they produced, existence conditions are
        compare-and-set). For strong (MRSC) topologies; eventually consistent reads are not judged."""
        return linearizable.check(self.history, reads=("get",), budget=budget)

    def assert_linearizable(self, *, budget: int = linearizable.DEFAULT_BUDGET) -> CheckResult:
        """The result when its verdict is valid; AssertionError with the proof (a minimal set of operations no
        order explains) when invalid; `Undecided` (an AssertionError too) naming the keys when unknown."""
        result = self.check_linearizable(budget=budget)
        seed = f" (seed {self.seed})" if self.seed is not None else ""
        if result.verdict == INVALID:
            raise AssertionError(f"{result}{seed}")
        if result.verdict == UNKNOWN:
            raise Undecided(f"{result}{seed}: the search could not decide {', '.join(result.undecided)}")
        return result

    # ----------------------------------------------------------------------------------------------- set-up

    def enable_ttl(self, table: str, attribute: str) -> None:
        """Turn TTL on for `table` in every region (DynamoDB keeps TTL settings in sync on all replicas)."""
        for region in self.regions:
            self.client(region).update_time_to_live(
                TableName=table, TimeToLiveSpecification={"Enabled": True, "AttributeName": attribute}
            )

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ReadsThroughClients:
    """`read` and `items` through an unrecorded boto3 client per region (strongly consistent GetItem and Scan, three
    attempts): for harnesses that see a region's copy through its API, as real processes must, and as strong mode
    needs anyway (a strong read syncs with another member first, so it sees every acknowledged write). A witness
    serves no table data: `read` gives None and it takes no part in `items` and convergence. Subclasses supply
    `_unrecorded_client(region, max_attempts)` and `witnesses`."""

    READER_ATTEMPTS = 3
    witnesses: frozenset[str] = frozenset()

    def _unrecorded_client(self, region: str, max_attempts: int) -> Any:
        raise NotImplementedError

    def _reader(self, region: str) -> Any:
        readers = self.__dict__.setdefault("_readers", {})
        reader = readers.get(region)
        if reader is None:
            reader = readers[region] = self._unrecorded_client(region, self.READER_ATTEMPTS)
        return reader

    def _close_readers(self) -> None:
        for reader in self.__dict__.pop("_readers", {}).values():
            reader.close()

    def read(self, region: str, table: str, key: dict) -> dict | None:
        """A strongly consistent GetItem (in strong mode a strong read, which syncs with another member first); a
        witness holds no table data: None."""
        if region in self.witnesses:
            return None
        return self._reader(region).get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")

    def items(self, region: str, table: str) -> dict[str, dict]:
        result: dict[str, dict] = {}
        request: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
        while True:
            answer = self._reader(region).scan(**request)
            for item in answer["Items"]:
                result[key_id(self.key_of(table, item))] = item  # type: ignore[attr-defined]
            if "LastEvaluatedKey" not in answer:
                break
            request["ExclusiveStartKey"] = answer["LastEvaluatedKey"]
        return dict(sorted(result.items()))


class TableHandle:
    """One table of a harness, with plain-Python items and keys (`{"status": "PAID"}`), through the kit clients."""

    def __init__(self, harness: Harness, name: str) -> None:
        self.harness = harness
        self.name = name

    def put(self, region: str, item: dict, **request: Any) -> dict:
        return self.harness.client(region).put_item(TableName=self.name, Item=to_wire(item), **request)

    def update(
        self,
        region: str,
        key: dict,
        changes: dict,
        *,
        condition: str | None = None,
        values: dict | None = None,
        **request: Any,
    ) -> dict:
        """SET each attribute of `changes`; `condition` may use `#name` for attribute names in `changes` and
        `:value` placeholders given plainly in `values`."""
        names = {f"#a{i}": name for i, name in enumerate(changes)}
        wire_values = to_wire({f":v{i}": value for i, value in enumerate(changes.values())})
        if values:
            wire_values.update(to_wire(values))
        if condition:
            for placeholder, name in names.items():
                condition = condition.replace(f"#{name}", placeholder)
            request["ConditionExpression"] = condition
        expression = "SET " + ", ".join(f"#a{i} = :v{i}" for i in range(len(changes)))
        return self.harness.client(region).update_item(
            TableName=self.name, Key=to_wire(key), UpdateExpression=expression, ExpressionAttributeNames=names,
            ExpressionAttributeValues=wire_values, **request,
        )  # fmt: skip

    def delete(self, region: str, key: dict, **request: Any) -> dict:
        return self.harness.client(region).delete_item(TableName=self.name, Key=to_wire(key), **request)

    def get(self, region: str, key: dict) -> dict | None:
        """A recorded, strongly consistent GetItem in the region; the item as plain Python or None."""
        answer = self.harness.client(region).get_item(TableName=self.name, Key=to_wire(key), ConsistentRead=True)
        return plain(answer["Item"]) if "Item" in answer else None

    def read(self, region: str, key: dict) -> dict | None:
        """The region's copy as plain Python, not recorded (for assertions)."""
        item = self.harness.read(region, self.name, to_wire(key))
        return None if item is None else plain(item)

    def assert_eventually(self, region: str, key: dict, predicate: Predicate, *, within: float = 2.0) -> dict | None:
        item = self.harness.assert_eventually(region, to_wire(key), predicate, within=within, table=self.name)
        return None if item is None else plain(item)

    def __repr__(self) -> str:
        return f"TableHandle({self.name!r}, {self.harness.mode})"
