"""The open-loop load generator: an asyncio client of the DynamoDB wire protocol that records a History.

Theory of operation
- Open loop (no coordinated omission): operation i of a region is *intended* to start at `start + i / rate`. The
  scheduler sleeps until that instant and launches it as its own task whatever earlier operations are doing; the
  latency of an operation is measured from its intended start to its answer. A stalled region therefore shows up as
  growing latency (and timeouts), not as fewer requests. `clients_per_region` caps requests in flight; the wait for
  a free slot is part of the measured latency.
- No SDK: one aiohttp POST per attempt (boto3 would cost ~0.5 ms of CPU per call and hide its retries). By default
  no retries, so every attempt is exactly one history operation; with `sdk_retries: legacy|standard|adaptive` an
  operation retries as that botocore mode would (sdk_retries.py): one history operation, its outcome the last
  attempt's, its latency from the intended start to the last answer.
- Throttles: every throttled attempt (ProvisionedThroughputExceeded, ThrottlingException, RequestLimitExceeded) is
  kept with the `ThrottlingReasons` of its answer (`throttles`), retried or not, for results.json's counts per
  reason and the report's throttles over time.
- Each in-flight operation is a history process (`<region>/<n>`); a process is reused after a definite completion
  and retired after an `info` one (Jepsen's rule: its request may still be in flight).
- Classification (chaos/history.py): 2xx → ok (writes carry the `x-globaltables-version` header); errors in
  chaos.history.DEFINITE_ERRORS (ConditionalCheckFailed, Validation, ReplicatedWriteConflict, ...) → fail;
  timeouts, 5xx and connection errors → info.
- History names: put / update / delete / get / strong_get / query; a conditional_update is recorded as `update`
  (it is a write for the checkers) with the history condition {"exists": true} (its `attribute_exists(value)`:
  every item written has `value`), so a ConditionalCheckFailed is checked as a read; its latency and errors are
  under `conditional_update`. A list-append workload (`append` in the mix) records `append` (value: the one
  element appended) and its reads as `read` / `strong_read` with the list read (`l`, or null when there is no
  item), as Elle's list-append histories name them.
- Write modes (workload.py): a write drawn by region R's clients is sent to `Workload.write_target(R, key)`; the
  history and the samples name the region it was sent to.
- Seeds: each region draws keys and operations from `rng.fork("workload/<region>")`, so `--seed` fixes what is asked
  (and when), not how the answers interleave.
- Replication lag probe: every `lag_probe_interval_s` each region writes its own probe key and every other replica
  polls it (eventually consistent GetItem every PROBE_POLL_S) until the version is at least the one written. The lag
  of link A->B is the time from A's acknowledgement to the sending of B's first read that returned it (resolution
  PROBE_POLL_S). Probe writes and reads are history operations like any other. (A simulated run keeps this schedule
  and definition but sends only the polls that can end a watch: docs/results.md, "The lag probe in virtual time".)
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import orjson

from ..chaos.history import DEFINITE_ERRORS, History
from ..region.signing import client_headers, key_for
from ..runtime.clock import SystemClock
from ..runtime.rng import Rng
from ..runtime.transport import VERSION_HEADER
from .sdk_retries import THROTTLES, SdkClient
from .workload import WRITE_OPERATIONS, KeyChooser, OperationChooser, Workload

TARGET_PREFIX = "DynamoDB_20120810."
PROBE_POLL_S = 0.005
PROBE_GIVE_UP_S = 30.0
HISTORY_NAMES = {"conditional_update": "update"}
HISTORY_CONDITIONS = {"conditional_update": {"exists": True}}
LIST_HISTORY_NAMES = {"get": "read", "strong_get": "strong_read"}  # reads of a list-append workload
LIST_ATTRIBUTE = "l"


@dataclass
class Sample:
    """One answered or failed attempt, for latency and throughput statistics."""

    region: str
    op: str
    intended: float  # monotonic seconds
    done: float
    outcome: str  # ok | fail | info
    error: str | None
    measured: bool  # False during the warm-up (and for the lag probe)
    probe: bool = False  # a replication-lag probe request, not workload


@dataclass
class ThrottleSample:
    """One throttled attempt: where, when, the error and the reasons its answer gave (`reason` strings such as
    TableWriteProvisionedThroughputExceeded)."""

    region: str
    op: str
    at: float  # monotonic seconds of the answer
    error: str
    reasons: tuple[str, ...]
    probe: bool = False


def throttling_reasons(body: Any) -> tuple[str, ...]:
    """The `reason` of each ThrottlingReasons entry of an error answer (`throttlingReasons` in ThrottlingException,
    as the service model spells it)."""
    if not isinstance(body, dict):
        return ()
    entries = body.get("ThrottlingReasons", body.get("throttlingReasons"))
    if not isinstance(entries, list):
        return ()
    return tuple(str(entry["reason"]) for entry in entries if isinstance(entry, dict) and "reason" in entry)


@dataclass
class LagSample:
    source: str
    target: str
    at: float  # monotonic seconds of the acknowledgement at the source
    lag_s: float


class KeyCodec:
    """Key index -> the table's DynamoDB key (hash, and range when the table has one)."""

    def __init__(self, key_schema: list[dict], attribute_types: dict[str, str]) -> None:
        self.hash_name = next(k["AttributeName"] for k in key_schema if k["KeyType"] == "HASH")
        self.range_name = next((k["AttributeName"] for k in key_schema if k["KeyType"] == "RANGE"), None)
        self.types = attribute_types

    def _value(self, name: str, text: str, number: int) -> dict:
        kind = self.types[name]
        if kind == "N":
            return {"N": str(number)}
        if kind == "B":
            return {"B": base64.b64encode(text.encode()).decode()}
        return {"S": text}

    def key(self, index: int) -> dict:
        key = {self.hash_name: self._value(self.hash_name, f"k{index:06d}", index)}
        if self.range_name is not None:
            key[self.range_name] = self._value(self.range_name, "item", 0)
        return key

    def probe_key(self, region_index: int, region: str) -> dict:
        key = {self.hash_name: self._value(self.hash_name, f"{PROBE_KEY_PREFIX}{region}", -1 - region_index)}
        if self.range_name is not None:
            key[self.range_name] = self._value(self.range_name, "item", 0)
        return key


PROBE_KEY_PREFIX = "__lag__"


def is_probe_key(key: Any) -> bool:
    """Whether a history key is a lag probe's (`KeyCodec.probe_key`): its hash value starts with PROBE_KEY_PREFIX
    (string and binary keys) or is negative (number keys; workload keys count from 0)."""
    if not isinstance(key, dict):
        return False
    for value in key.values():
        if not isinstance(value, dict):
            continue
        if "S" in value and str(value["S"]).startswith(PROBE_KEY_PREFIX):
            return True
        if "N" in value and str(value["N"]).startswith("-"):
            return True
        if "B" in value:
            try:
                if base64.b64decode(value["B"]).startswith(PROBE_KEY_PREFIX.encode()):
                    return True
            except ValueError:
                pass
    return False


def version_order(version: str) -> tuple[str, str]:
    """`<hlc>/<region>` as a comparable tuple (the HLC text sorts like the timestamp)."""
    hlc, _, region = version.rpartition("/")
    return hlc, region


def signed_headers(
    endpoint: str, region: str, operation: str, body: bytes, now: float, credentials: Mapping[str, Any] | None = None
) -> dict[str, str]:
    """The headers of one DynamoDB request from the project's own clients: target, media type, and a signature
    for `region` at `now` (region/signing.py `client_headers`)."""
    target = TARGET_PREFIX + operation
    key = key_for(credentials, region)
    headers = client_headers(region, now, key, body, urlsplit(endpoint).netloc, target)
    headers["X-Amz-Target"] = target
    headers["Content-Type"] = "application/x-amz-json-1.0"
    return headers


def list_elements(item: dict) -> list | None:
    """The unique values of a list-append item's `l` attribute (None: the item has no list)."""
    raw = item.get(LIST_ATTRIBUTE)
    if not isinstance(raw, dict) or "L" not in raw:
        return None
    return [element.get("S") for element in raw["L"] if isinstance(element, dict)]


class Answer:
    __slots__ = ("body", "error", "outcome", "version")

    def __init__(self, outcome: str, body: Any = None, version: str | None = None, error: str | None = None):
        self.outcome, self.body, self.version, self.error = outcome, body, version, error


class LoadGenerator:
    def __init__(
        self,
        workload: Workload,
        endpoints: dict[str, str],
        table_definition: dict,
        rng: Rng,
        history: History | None = None,
        clock: SystemClock | None = None,
        credentials: Mapping[str, Any] | None = None,
    ) -> None:
        self.workload = workload
        self.endpoints = endpoints
        # Requests are signed for their region and the current time (region/signing.py checks both), with a key
        # of the topology's when the regions verify signatures.
        self.credentials = credentials
        self.regions = [name for name in (workload.regions or endpoints) if name in endpoints]
        self.probe_targets = list(endpoints)  # every replica is polled by the probe
        self.clock = clock or SystemClock()
        self.history = history if history is not None else History(self.clock)
        types = {a["AttributeName"]: a["AttributeType"] for a in table_definition["AttributeDefinitions"]}
        self.codec = KeyCodec(table_definition["KeySchema"], types)
        self.table = workload.table
        self.rng = rng
        self.samples: list[Sample] = []
        self.lag: list[LagSample] = []
        self.pad = "x" * workload.item_bytes
        self._free: dict[str, list[str]] = {region: [] for region in endpoints}
        self._next_process: dict[str, int] = {region: 0 for region in endpoints}
        self._sequence = 0
        self.lists = "append" in workload.mix  # a list-append workload: reads record the list
        self.session: aiohttp.ClientSession | None = None
        self.sent = 0
        self.completed = 0
        self.errors = 0
        self.stop_probes = asyncio.Event()
        self.throttles: list[ThrottleSample] = []
        self.retries = 0  # attempts after the first, made by the SDK retry mode
        # One SDK client per region requests go to, each with its retry quota and limiter (sdk_retries.py).
        self._clients = {
            region: SdkClient(workload.sdk_retries, rng.fork(f"retries/{region}")) for region in endpoints
        }
        # Requests in flight per region they are sent to (write modes route some regions' writes elsewhere).
        self._slots = {region: asyncio.Semaphore(workload.clients_per_region) for region in endpoints}

    # ------------------------------------------------------------------------------------------ wire

    async def call(self, region: str, operation: str, body: dict) -> Answer:
        assert self.session is not None
        data = orjson.dumps(body)
        now = self.clock.wall_time()
        headers = signed_headers(self.endpoints[region], region, operation, data, now, self.credentials)
        try:
            async with self.session.post(
                self.endpoints[region] + "/",
                data=data,
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=self.workload.timeout_s),
            ) as response:
                raw = await response.read()
                version = response.headers.get(VERSION_HEADER)
                status = response.status
        except TimeoutError:
            return Answer("info", error="Timeout")
        except (aiohttp.ClientError, OSError):
            return Answer("info", error="ConnectionError")
        try:
            parsed = orjson.loads(raw) if raw else {}
        except orjson.JSONDecodeError:
            parsed = {}
        if status == 200:
            return Answer("ok", parsed, version)
        error = str(parsed.get("__type", "")).rpartition("#")[2] or f"HTTP{status}"
        outcome = "fail" if status < 500 and error in DEFINITE_ERRORS else "info"
        return Answer(outcome, parsed, version, error)

    # ---------------------------------------------------------------------------------------- processes

    def _acquire_process(self, region: str) -> str:
        free = self._free[region]
        if free:
            return free.pop()
        self._next_process[region] += 1
        return f"{region}/{self._next_process[region]}"

    def _release_process(self, region: str, process: str, outcome: str) -> None:
        if outcome != "info":  # an info request may still be in flight: never reuse its process
            self._free[region].append(process)

    def _unique_value(self, region: str) -> str:
        self._sequence += 1
        return f"{region}:{self._sequence}"

    # -------------------------------------------------------------------------------------- operations

    def request(self, op: str, key: dict, value: str | None) -> tuple[str, dict]:
        table = self.table
        if op == "put":
            item = {**key, "value": {"S": value}, "pad": {"S": self.pad}}
            return "PutItem", {"TableName": table, "Item": item}
        if op in ("update", "conditional_update"):
            body = {
                "TableName": table,
                "Key": key,
                "UpdateExpression": "SET #v = :v, #p = :p",
                "ExpressionAttributeNames": {"#v": "value", "#p": "pad"},
                "ExpressionAttributeValues": {":v": {"S": value}, ":p": {"S": self.pad}},
            }
            if op == "conditional_update":
                body["ConditionExpression"] = "attribute_exists(#v)"
            return "UpdateItem", body
        if op == "append":
            return "UpdateItem", {
                "TableName": table,
                "Key": key,
                "UpdateExpression": "SET #l = list_append(if_not_exists(#l, :empty), :v)",
                "ExpressionAttributeNames": {"#l": LIST_ATTRIBUTE},
                "ExpressionAttributeValues": {":v": {"L": [{"S": value}]}, ":empty": {"L": []}},
            }
        if op == "delete":
            return "DeleteItem", {"TableName": table, "Key": key}
        if op in ("get", "strong_get"):
            return "GetItem", {"TableName": table, "Key": key, "ConsistentRead": op == "strong_get"}
        if op == "query":
            name = self.codec.hash_name
            return "Query", {
                "TableName": table,
                "KeyConditionExpression": "#h = :h",
                "ExpressionAttributeNames": {"#h": name},
                "ExpressionAttributeValues": {":h": key[name]},
            }
        raise ValueError(f"unknown operation {op!r}")

    def read_value(self, op: str, body: Any, lists: bool = False) -> Any:
        if not isinstance(body, dict):
            return None
        if lists:
            item = body.get("Item")
            return None if item is None else list_elements(item)
        if op == "query":
            items = body.get("Items") or []
            return [item.get("value", {}).get("S") for item in items] if items else None
        item = body.get("Item")
        return None if item is None else item.get("value", {}).get("S")

    async def execute(
        self,
        region: str,
        op: str,
        key: dict,
        intended: float,
        measured: bool,
        slots: asyncio.Semaphore,
        probe: bool = False,
    ) -> Answer:
        async with slots:
            is_write = op in WRITE_OPERATIONS
            value = self._unique_value(region) if is_write and op != "delete" else None
            process = self._acquire_process(region)
            lists = self.lists and not probe  # the lag probe's reads are register reads in any workload
            name = (LIST_HISTORY_NAMES if lists else HISTORY_NAMES).get(op, op)
            invocation = self.history.invoke(
                process, region, name, self.table, key, value, condition=HISTORY_CONDITIONS.get(op),
            )  # fmt: skip
            self.sent += 1
            operation, body = self.request(op, key, value)
            answer = await self.attempts(region, op, operation, body, probe)
            done = self.clock.monotonic()
            if answer.outcome == "ok":
                read = None if is_write else self.read_value(op, answer.body, lists)
                self.history.ok(invocation, value=read, version=answer.version)
            else:
                self.errors += not probe
                self.history.complete(invocation, answer.outcome, error=answer.error)
            self._release_process(region, process, answer.outcome)
            self.completed += 1
            self.samples.append(Sample(region, op, intended, done, answer.outcome, answer.error, measured, probe))
            return answer

    async def attempts(self, region: str, op: str, operation: str, body: dict, probe: bool) -> Answer:
        """One operation's attempts, as the workload's SDK retry mode makes them; the last answer."""
        attempt = 0
        while True:
            attempt += 1
            wait = self.send_delay(region)
            if wait > 0:
                await asyncio.sleep(wait)
            answer = await self.call(region, operation, body)
            delay = self.attempt_answered(region, op, attempt, answer, probe)
            if delay is None:
                return answer
            await asyncio.sleep(delay)

    # The SDK side of one attempt, shared with the simulated run's clients (simulated_run.py), which wait on
    # virtual time where `attempts` sleeps: the same counts, the same retry decisions from the same seeded draws.

    def send_delay(self, region: str) -> float:
        """Seconds to wait before an attempt to `region` (the adaptive mode's limiter; 0 in the other modes)."""
        return self._clients[region].send_delay(self.clock.monotonic())

    def attempt_answered(self, region: str, op: str, attempt: int, answer: Answer, probe: bool) -> float | None:
        """Attempt number `attempt` (1-based) of an operation answered: a throttle is kept with its reasons, the
        region's SDK client told; the seconds until the next attempt, or None when the operation ends here."""
        client = self._clients[region]
        now = self.clock.monotonic()
        if answer.error in THROTTLES:
            reasons = throttling_reasons(answer.body)
            self.throttles.append(ThrottleSample(region, op, now, answer.error, reasons, probe))
        client.answered(now, answer.error, answer.outcome, attempt > 1)
        delay = client.retry_delay(attempt, answer.error, answer.outcome)
        if delay is not None:
            # The workload's retries: the lag probe's are not counted, as its throttles are not (results.json
            # throttles).
            self.retries += not probe
        return delay

    # ------------------------------------------------------------------------------------------ driving

    async def drive(self, region: str, start: float, measure_from: float, stop: float) -> None:
        """Launch this region's operations at their intended times from `start` until `stop`; wait for them."""
        region_rng = self.rng.fork(f"workload/{region}")
        keys = KeyChooser(self.workload, region_rng.fork("keys"))
        ops = OperationChooser(self.workload, region_rng.fork("ops"))
        slots_of = self._slots
        interval = 1.0 / self.workload.rate_per_region
        index = 0
        async with asyncio.TaskGroup() as requests:  # every operation of this region's phase, awaited at its end
            while True:
                intended = start + index * interval
                if intended >= stop:
                    break
                delay = intended - self.clock.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                op, index_of_key = ops.next(), keys.next()
                key = self.codec.key(index_of_key)
                target = self.workload.write_target(region, index_of_key) if op in WRITE_OPERATIONS else region
                requests.create_task(
                    self.execute(target, op, key, intended, intended >= measure_from, slots_of[target])
                )
                index += 1

    async def probe(self, region_index: int, source: str) -> None:
        """Write the source's probe key periodically; measure when each other replica first returns it."""
        interval = self.workload.lag_probe_interval_s
        key = self.codec.probe_key(region_index, source)
        slots = asyncio.Semaphore(1)
        while not self.stop_probes.is_set():
            began = self.clock.monotonic()
            answer = await self.execute(source, "put", key, began, False, slots, probe=True)
            acked = self.clock.monotonic()
            if answer.outcome == "ok" and answer.version:
                wanted = version_order(answer.version)
                targets = [target for target in self.probe_targets if target != source]
                await asyncio.gather(*(self._watch(source, target, key, wanted, acked) for target in targets))
            remaining = began + interval - self.clock.monotonic()
            if remaining > 0:
                try:
                    await asyncio.wait_for(self.stop_probes.wait(), remaining)
                except TimeoutError:
                    pass

    async def _watch(self, source: str, target: str, key: dict, wanted: tuple[str, str], acked: float) -> None:
        slots = asyncio.Semaphore(1)
        deadline = acked + PROBE_GIVE_UP_S
        while self.clock.monotonic() < deadline:
            sent = self.clock.monotonic()
            answer = await self.execute(target, "get", key, sent, False, slots, probe=True)
            if answer.outcome == "ok" and answer.version and version_order(answer.version) >= wanted:
                self.lag.append(LagSample(source, target, acked, max(0.0, sent - acked)))
                return
            await asyncio.sleep(PROBE_POLL_S)

    async def run(
        self, warmup_s: float, duration_s: float, on_start: Callable[[float], None] | None = None
    ) -> tuple[float, float]:
        """Warm up, then load for `duration_s`; (measure start, measure end) in monotonic seconds."""
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=connector) as session:
            self.session = session
            start = self.clock.monotonic() + 0.05
            measure_from = start + warmup_s
            stop = measure_from + duration_s
            if on_start is not None:
                on_start(measure_from)
            # The phase's group: the lag probes, which stop once every region's load is done, and the drivers.
            async with asyncio.TaskGroup() as phase:
                if self.workload.lag_probe_interval_s > 0 and len(self.endpoints) > 1:
                    for index, region in enumerate(self.endpoints):
                        if region in self.regions:
                            phase.create_task(self.probe(index, region))
                await asyncio.gather(*(self.drive(region, start, measure_from, stop) for region in self.regions))
                self.stop_probes.set()
            self.session = None
        return measure_from, stop
