"""The request path of a strong-mode (MRSC) region, without I/O: which requests wait for the commit protocol, and
how each outcome becomes a wire answer (docs/mrsc.md, "The region process").

Theory of operation: `MrscRequests.answer(headers, query_string, raw)` is a generator. It runs the wire checks as
`wire.answer` does, then either answers at once (everything the engine serves locally) or yields a list of `Wait`s:
the node operations the request needs (one `submit_write` per item write of PutItem, UpdateItem, DeleteItem or
BatchWriteItem on a strong table; a `submit_read` per strongly consistent GetItem or BatchGetItem key; one
`submit_range_read` for a strongly consistent Query or Scan). Its host submits every `Wait` of the list together,
collects the outcomes, sends them back in the same order, and finally gets `(status, body)` as the generator's
return value. A PartiQL request (ExecuteStatement, BatchExecuteStatement, ExecuteTransaction) is the item
operations its statements stand for (engine/partiql/), each routed here in turn: an UPDATE on a strong table is an
UpdateItem that waits for the commit protocol. Outcomes are the node's `(outcome, detail)` ("ok", "rwce", "error", "in-doubt", "timeout"); a host
that gives up on an operation (its guard past `timeout_ms`) sends ("in-doubt", None). An exception raised while
submitting is thrown into the generator, which answers it as a 500 like any other bug.

Two hosts drive it, so a strong-mode region answers alike in both: `mrsc_host.MrscHost` (asyncio, real time, the
region process) and the pytest kit's simulated harness (`testing/simulated_mrsc.py`: virtual time, one process).

Answers: a committed write answers as the ordinary operation would (engine/strong_requests.py `respond`); "rwce"
is 409 ReplicatedWriteConflictException (nothing changed, facts §10.1); a ConditionalCheckFailed confirmed against
the latest version is that error; "in-doubt" is 500 (the write may still commit) and "timeout" or exhausted retries
500 (certainly not applied). A BatchWriteItem submits its writes together and fails as a whole with its most
telling failure (facts §10.6). A witness answers data-plane requests with ResourceNotFoundException.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any


from ..engine import partiql, strong_requests, table_arns
from ..engine.engine import PARTIQL_OPERATIONS
from ..engine.errors import (
    DynamoError,
    InternalServerError,
    ReplicatedWriteConflictException,
    ResourceNotFoundException,
    UnknownOperationException,
)
from ..engine.operations import get_item, query
from ..engine.strong_membership import converting
from ..replication.mrsc.config import MrscConfig
from ..runtime.transport import Envelope
from . import wire

log = logging.getLogger("globaltables.mrsc.host")

# What a witness still answers: nothing of these names a table.
WITNESS_OPERATIONS = frozenset({"ListTables", "DescribeLimits", "DescribeEndpoints"})
# A host answers a node operation "in-doubt" this long after the node's own bound (`Wait.timeout_ms`), which always
# answers first; this only guards against a bug leaving a request hanging for ever.
GUARD_S = 1.0
IN_DOUBT = "the write's outcome is not known yet: another Region did not answer in time"
UNAVAILABLE = "this Region cannot reach a quorum of the table's Regions in time"


@dataclass(frozen=True, slots=True)
class Wait:
    """One node operation a request waits for: `submit(op_id, now)` hands it to the node (one of its `submit_*`
    calls; it returns the envelopes to send). `timeout_ms` is the node's own bound for it (the host adds a guard)."""

    submit: Callable[[Any, float], list[Envelope]]
    timeout_ms: float


Outcome = tuple[str, Any]
Steps = Generator[list[Wait], list[Outcome], Any]


class MrscRequests:
    """The request path of one member: its engine (a witness's holds no tables: `witness` True, it serves no table
    data), its node and the MRSC settings. `counts` are the request counters a host reports in its status."""

    def __init__(self, engine: Any, node: Any, config: MrscConfig, *, witness: bool, signing: Any = None) -> None:
        self.engine = engine
        self.signing = signing  # signing.RequestSigning of a region process; None in simulation
        self.node = node
        self.config = config
        self.witness = witness
        self.counts = {"writes": 0, "committed": 0, "rwce": 0, "in_doubt": 0, "strong_reads": 0}

    def answer(
        self, headers: Mapping[str, str], query_string: str, raw: bytes, path: str = "/", signed: bytes | None = None
    ) -> Steps:
        """(status, body) of a DynamoDB request, as the generator's return value (see the module's docstring).
        `signed`: the bytes as sent, which the signature covers (default `raw`). Never raises."""
        try:
            request = wire.decode_body(raw)
            service, operation = wire.split_target(headers.get("X-Amz-Target"))
            wire.authenticate(headers, query_string, raw if signed is None else signed, self.signing, path)
            response = yield from self.handle(service, operation, request)
            return 200, wire.success_body(operation, response)
        except DynamoError as error:
            return wire.error_answer(error)
        except Exception:
            log.exception("internal error answering %s", headers.get("X-Amz-Target"))
            return 500, wire.INTERNAL_ERROR_BODY

    def handle(self, service: str, operation: str, request: Any) -> Steps:
        """The response (a dict) of one checked request, as the generator's return value; raises DynamoError."""
        engine = self.engine
        if self.witness:
            return self._witness(service, operation, request)
        if service != wire.DYNAMODB_SERVICE:
            return engine.handle_streams(operation, request)
        # Table ARNs become names first: whether a request takes the strong path depends on the table it names.
        request, given = table_arns.resolve(engine, operation, request)
        response = yield from self._route(operation, request)
        return table_arns.restore_batch_keys(response, given) if given else response

    def _route(self, operation: str, request: Any) -> Steps:
        engine = self.engine
        if operation in PARTIQL_OPERATIONS:
            return (yield from self._partiql(operation, request))
        if operation in strong_requests.WRITE_OPERATIONS and strong_requests.touches_strong(engine, operation, request):
            return (yield from self._write(operation, request))
        consistent = isinstance(request, dict) and request.get("ConsistentRead") is True
        if consistent and operation == "GetItem" and self._strong(request):
            return (yield from self._strong_get(request))
        if operation == "BatchGetItem" and self._strong_keys(request):
            return (yield from self._strong_batch_get(request))
        if consistent and operation in ("Query", "Scan") and self._strong(request):
            return (yield from self._strong_range(operation, request))
        return engine.handle(operation, request)

    def _partiql(self, operation: str, request: Any) -> Steps:
        """A PartiQL request: each item operation its statements stand for (engine/partiql/run.py) takes this
        path in turn, so a PartiQL write on a strong table waits for the commit protocol (and a conflict is
        ReplicatedWriteConflictException) and a consistent SELECT is a strong read, as their item API forms are."""
        return (yield from partiql.drive(partiql.steps(self.engine, operation, request), self._route))

    # ------------------------------------------------------------------------------------------------ helpers

    def _strong(self, request: dict) -> bool:
        return strong_requests.strong_table(self.engine, request.get("TableName")) is not None

    def _witness(self, service: str, operation: str, request: Any) -> dict:
        if service == wire.DYNAMODB_SERVICE and operation in WITNESS_OPERATIONS:
            return self.engine.handle(operation, request)
        if service != wire.DYNAMODB_SERVICE:
            raise UnknownOperationException(f"{operation} is not served by a witness Region")
        raise ResourceNotFoundException("Requested resource not found")

    def _write(self, operation: str, request: dict) -> Steps:
        engine = self.engine
        node = self.node
        plan = strong_requests.prepare(engine, operation, request)
        rest = engine.handle("BatchWriteItem", plan.rest) if plan.rest is not None else None
        strong_requests.admit(engine, plan)  # this region's capacity, before anything is proposed
        if not plan.writes:  # a batch all of whose strong requests were throttled, answered with the rest's
            return strong_requests.respond(engine, plan, [], rest)
        self.counts["writes"] += 1
        timeout = self.config.write_timeout_ms
        outcomes = yield [
            Wait(lambda op_id, now, w=write: node.submit_write(op_id, w.table, w.key, w.evaluate, now), timeout)
            for write in plan.writes
        ]
        images = []
        failure: DynamoError | None = None
        for outcome, detail in outcomes:
            if outcome == "ok":
                images.append(detail)
                continue
            if outcome == "rwce":
                self.counts["rwce"] += 1
                error: DynamoError = ReplicatedWriteConflictException()
            elif outcome == "error" and isinstance(detail, DynamoError):
                error = detail
            elif outcome == "in-doubt":
                self.counts["in_doubt"] += 1
                error = InternalServerError(IN_DOUBT)
            else:  # "timeout" (never proposed: not applied) or retries exhausted
                error = InternalServerError(UNAVAILABLE)
            # The most telling failure wins: a condition or a conflict is definite, a 500 says less.
            if failure is None or (failure.status == 500 and error.status != 500):
                failure = error
        if failure is not None:
            raise failure
        self.counts["committed"] += 1
        return strong_requests.respond(engine, plan, images, rest)

    def _strong_get(self, request: dict) -> Steps:
        engine = self.engine
        # Every check of the request before the round trip, without reading the item the Sync may replace.
        table, _pk, _sk, key, _paths = get_item.check(engine, request)
        if converting(table):  # empty, and nothing is written anywhere until the conversion is done
            return engine.handle("GetItem", request)
        self.counts["strong_reads"] += 1
        node = self.node
        ((outcome, _detail),) = yield [
            Wait(lambda op_id, now: node.submit_read(op_id, table.name, key, now), self.config.read_timeout_ms)
        ]
        if outcome != "ok":
            raise InternalServerError(UNAVAILABLE)
        return engine.handle("GetItem", request)

    def _strong_range(self, operation: str, request: dict) -> Steps:
        """A strongly consistent Query or Scan: the item collection (Query) or the whole table (Scan, every
        segment) is range-synced with another member first (replication/mrsc/range_read.py), then read locally:
        linearizable per item, not a snapshot across items."""
        engine = self.engine
        engine.check(operation, request)  # every check of the request, before the round trips (nothing charged)
        table = engine.tables[request["TableName"]]
        if converting(table):  # empty, and nothing is written anywhere until the conversion is done
            return engine.handle(operation, request)
        partition = query.partition_of(engine, request) if operation == "Query" else None
        self.counts["strong_reads"] += 1
        node = self.node
        ((outcome, _detail),) = yield [
            Wait(
                lambda op_id, now: node.submit_range_read(op_id, table.name, partition, now),
                self.config.read_timeout_ms,
            )
        ]
        if outcome != "ok":
            raise InternalServerError(UNAVAILABLE)
        return engine.handle(operation, request)

    def _strong_keys(self, request: Any) -> list[tuple[str, dict]]:
        """(table, key) of every strongly consistent read of a BatchGetItem on a strong table (unvalidated: a
        malformed request yields what it can, and the engine's checks refuse it)."""
        items = request.get("RequestItems") if isinstance(request, dict) else None
        if not isinstance(items, dict):
            return []
        out = []
        for name, spec in items.items():
            table = strong_requests.strong_table(self.engine, name)
            if (
                table is None
                or converting(table)
                or not isinstance(spec, dict)
                or spec.get("ConsistentRead") is not True
            ):
                continue
            for key in spec.get("Keys") or ():
                if isinstance(key, dict):
                    out.append((name, key))
        return out

    def _strong_batch_get(self, request: dict) -> Steps:
        """BatchGetItem with ConsistentRead: every key of a strong table synced (in parallel, one Sync each) before
        the whole batch reads locally; linearizable per item, like GetItem (not a snapshot across items)."""
        engine = self.engine
        engine.check("BatchGetItem", request)  # every check of the request, before the round trips (nothing charged)
        reads = []
        for name, raw_key in self._strong_keys(request):
            _pk, _sk, key = engine.tables[name].key.key_from_request(raw_key)
            reads.append((name, key))
        self.counts["strong_reads"] += 1
        node = self.node
        timeout = self.config.read_timeout_ms
        outcomes = yield [
            Wait(lambda op_id, now, t=name, k=key: node.submit_read(op_id, t, k, now), timeout) for name, key in reads
        ]
        if any(outcome != "ok" for outcome, _detail in outcomes):
            raise InternalServerError(UNAVAILABLE)
        return engine.handle("BatchGetItem", request)
