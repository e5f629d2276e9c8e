"""ExecuteStatement, BatchExecuteStatement and ExecuteTransaction as generators of item operations (sans-I/O).

Theory of operation: `steps(engine, operation, request)` validates the request, parses and plans its statements,
then yields `(operation, request)` pairs of the item API (GetItem, Query, Scan, PutItem, UpdateItem, DeleteItem,
TransactGetItems, TransactWriteItems), one at a time, and receives each one's response (or has its DynamoError
thrown in); its return value is the PartiQL response. Whoever drives it decides how an item operation runs:
- `run_inline` hands each to `Engine.execute` (both through `drive`) (a standalone region, an MREC region: the writes commit and replicate
  as the item operations' own writes do);
- a strong-mode region routes each through its own request path (region/mrsc_requests.py), so a PartiQL write on
  a strong table takes the commit protocol and a consistent SELECT the strong read, exactly as the item API would.

Rules (AWS API Reference: ExecuteStatement, BatchExecuteStatement, ExecuteTransaction, BatchStatementError; and the
Developer Guide's "Running batch operations" / "Performing transactions with PartiQL for DynamoDB"):
- a write answers `{"Items": []}`, or the RETURNING attributes as its one item; an INSERT of an existing key is
  DuplicateItemException, and in a transaction the cancellation reason `DuplicateItem`;
- SELECT pages: `Limit` bounds the items read (across every pinned partition), 1 MB a page; `NextToken` resumes
  where the previous page stopped and is refused for another statement ("NextToken does not match request");
- a batch holds 1 to 25 statements, all reads or all writes; each answers on its own (`Error` with a code from
  BatchStatementError's list), and a read must name a whole primary key. ReplicatedWriteConflictException, which
  that list cannot carry, fails the whole batch as it fails a BatchWriteItem (facts §10.6);
- a transaction holds 1 to 100 statements, all reads (TransactGetItems) or all writes and EXISTS checks
  (TransactWriteItems, with its ClientRequestToken idempotency and its cancellation reasons).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Callable, Generator
from typing import Any

import orjson

from .. import capacity
from ..answer import Answer
from ..errors import (
    ConditionalCheckFailedException,
    DuplicateItemException,
    DynamoError,
    TransactionCanceledException,
    ValidationException,
)
from ..expressions import evaluate_condition, get_path
from ..operations.read_modify_write import RETURN_CONSUMED_CAPACITY, RETURN_VALUES_ON_CCF
from ..validation import AnyValue, Bool, Int, List, Str, Struct, check_request
from .parser import MAX_STATEMENT_CHARS, parse_statement
from .plan import plan_key_read, plan_select, plan_write
from .statements import Exists, Insert, Select, is_read, table_of

Call = tuple[str, dict]
Steps = Generator[Call, dict, dict]

STATEMENT = Str(required=True, min_length=1, max_length=MAX_STATEMENT_CHARS)
PARAMETERS = List(AnyValue(), min_length=1)
STATEMENT_FIELDS = {
    "Statement": STATEMENT,
    "Parameters": PARAMETERS,
    "ConsistentRead": Bool(),
    "NextToken": Str(min_length=1, max_length=32768),
    "ReturnConsumedCapacity": RETURN_CONSUMED_CAPACITY,
    "Limit": Int(minimum=1),
    "ReturnValuesOnConditionCheckFailure": RETURN_VALUES_ON_CCF,
}
MAX_BATCH = 25
BATCH_FIELDS = {
    "Statements": List(
        Struct(
            {
                "Statement": STATEMENT,
                "Parameters": PARAMETERS,
                "ConsistentRead": Bool(),
                "ReturnValuesOnConditionCheckFailure": RETURN_VALUES_ON_CCF,
            }
        ),
        required=True,
        min_length=1,
        max_length=MAX_BATCH,
    ),
    "ReturnConsumedCapacity": RETURN_CONSUMED_CAPACITY,
}
MAX_TRANSACTION = 100
TRANSACTION_FIELDS = {
    "TransactStatements": List(
        Struct(
            {
                "Statement": STATEMENT,
                "Parameters": PARAMETERS,
                "ReturnValuesOnConditionCheckFailure": RETURN_VALUES_ON_CCF,
            }
        ),
        required=True,
        min_length=1,
        max_length=MAX_TRANSACTION,
    ),
    "ClientRequestToken": Str(min_length=1, max_length=36),
    "ReturnConsumedCapacity": RETURN_CONSUMED_CAPACITY,
}

EXISTS_OUTSIDE_TRANSACTION = "EXISTS can only be used in ExecuteTransaction write requests."
BATCH_KEY = "Select statements within BatchExecuteStatement must specify the primary key in the where clause."
TRANSACTION_KEY = "Select statements within ExecuteTransaction must specify the primary key in the where clause."
TRANSACTION_INDEX = "Reads on indices are not supported within transactions."
# The documents say a batch or a transaction cannot mix reads and writes but do not quote the refusal: ours.
MIXED_BATCH = "The entire batch must consist of either read statements or write statements"
MIXED_TRANSACTION = "The entire transaction must consist of either read statements or write statements"
RETURNING_IN_TRANSACTION = "Unsupported clause: RETURNING"
CONFLICT_IN_TRANSACTION = "Unsupported clause: ON CONFLICT"  # a transaction's INSERT cannot be a no-op
INVALID_NEXT_TOKEN = "Invalid NextToken"
NEXT_TOKEN_MISMATCH = "NextToken does not match request"
# BatchStatementError's codes (API Reference), by the error each stands for.
BATCH_ERROR_CODES = {
    "ConditionalCheckFailedException": "ConditionalCheckFailed",
    "ItemCollectionSizeLimitExceededException": "ItemCollectionSizeLimitExceeded",
    "RequestLimitExceeded": "RequestLimitExceeded",
    "ValidationException": "ValidationError",
    "ProvisionedThroughputExceededException": "ProvisionedThroughputExceeded",
    "TransactionConflictException": "TransactionConflict",
    "ThrottlingException": "ThrottlingError",
    "InternalServerError": "InternalServerError",
    "ResourceNotFoundException": "ResourceNotFound",
    "AccessDeniedException": "AccessDenied",
    "DuplicateItemException": "DuplicateItem",
}
TRANSACTION_ACTIONS = {
    "PutItem": "Put",
    "UpdateItem": "Update",
    "DeleteItem": "Delete",
    "ConditionCheck": "ConditionCheck",
}


def steps(engine: Any, operation: str, request: Any) -> Steps:
    """The generator of one PartiQL operation (see the module docstring)."""
    if operation == "ExecuteStatement":
        return execute_statement(engine, request)
    if operation == "BatchExecuteStatement":
        return batch_execute_statement(engine, request)
    return execute_transaction(engine, request)


def drive(generator: Steps, perform: Callable[[str, dict], Generator[Any, Any, dict]]) -> Generator[Any, Any, dict]:
    """Drive `generator`: run each item operation it yields with `perform` (steps of the driver's own kind, whose
    waits pass through), then send the response back, or throw in the DynamoError it raised; the PartiQL response."""
    try:
        call = next(generator)
        while True:
            try:
                response = yield from perform(*call)
            except DynamoError as error:
                call = generator.throw(error)
            else:
                call = generator.send(response)
    except StopIteration as done:
        return done.value


def run_inline(engine: Any, generator: Steps) -> Answer:
    """Drive `generator` with `Engine.execute`: each item operation runs as the engine runs it, at once. The answer
    carries the version of the last item operation (what a single PartiQL write or read wrote or read)."""
    last: list[str | None] = [None]

    def handle(operation: str, request: dict) -> Generator[Any, Any, dict]:
        last[0] = None  # an operation that fails reports no version
        response, last[0] = engine.execute(operation, request)
        return response
        yield  # a generator that never waits

    try:
        next(drive(generator, handle))
    except StopIteration as done:
        return Answer(done.value, last[0])
    raise AssertionError("an item operation run inline waited")


# ------------------------------------------------------------------------------------------------ ExecuteStatement


def execute_statement(engine: Any, request: dict) -> Steps:
    check_request(request, STATEMENT_FIELDS)
    statement = parse_statement(request["Statement"], request.get("Parameters"))
    mode = request.get("ReturnConsumedCapacity")
    if isinstance(statement, Exists):
        raise ValidationException(EXISTS_OUTSIDE_TRANSACTION)
    if isinstance(statement, Select):
        return (yield from _select(engine, request, statement))
    response = yield from _write(engine, statement, mode, request.get("ReturnValuesOnConditionCheckFailure"))
    out: dict[str, Any] = {"Items": [response["Attributes"]] if response.get("Attributes") else []}
    if "ConsumedCapacity" in response:
        out["ConsumedCapacity"] = response["ConsumedCapacity"]
    return out


def _write(engine: Any, statement: Any, mode: str | None, on_ccf: str | None) -> Steps:
    """The item write a PartiQL write statement stands for, and its response: `{}` when INSERT ... ON CONFLICT DO
    NOTHING found the key taken; an INSERT of an existing key otherwise is DuplicateItemException."""
    write = plan_write(engine, statement)
    body = _with_options(write.request, mode, on_ccf, statement)
    try:
        return (yield (write.operation, body))
    except ConditionalCheckFailedException:
        if not isinstance(statement, Insert):
            raise
        if not statement.if_absent:
            raise DuplicateItemException() from None
        return {}  # ON CONFLICT DO NOTHING


def _with_options(body: dict, mode: str | None, on_ccf: str | None, statement: Any) -> dict:
    body = dict(body)
    if mode is not None:
        body["ReturnConsumedCapacity"] = mode
    if on_ccf is not None and not isinstance(statement, Insert):
        body["ReturnValuesOnConditionCheckFailure"] = on_ccf
    return body


def _select(engine: Any, request: dict, select: Select) -> Steps:
    read = plan_select(engine, select, bool(request.get("ConsistentRead")))
    check_labels(select.projection)
    digest = _digest(request)
    index, start_key = _decode_token(request.get("NextToken"), digest, len(read.requests))
    remaining = request.get("Limit")
    mode = request.get("ReturnConsumedCapacity")
    items: list[dict] = []
    consumed: list[dict | None] = []
    resume: tuple[int, dict | None] | None = None
    last_key = None
    for i in range(index, len(read.requests)):
        body = dict(read.requests[i])
        if i == index and start_key is not None:
            body["ExclusiveStartKey"] = start_key
        if remaining is not None:
            body["Limit"] = remaining
        if mode is not None:
            body["ReturnConsumedCapacity"] = mode
        response = yield (read.operation, body)
        consumed.append(response.get("ConsumedCapacity"))
        for item in response.get("Items", ()):
            if read.post_filter is None or evaluate_condition(read.post_filter, item):
                items.append(shape(item, read.projection))
        last_key = response.get("LastEvaluatedKey")
        if remaining is not None:
            remaining -= response["ScannedCount"]
        if last_key is not None:
            resume = (i, last_key)
            break
        if remaining is not None and remaining <= 0:
            if i + 1 < len(read.requests):
                resume = (i + 1, None)
            break
    out: dict[str, Any] = {"Items": items}
    if resume is not None:
        out["NextToken"] = _encode_token(digest, *resume)
        if last_key is not None:
            out["LastEvaluatedKey"] = last_key
    totals = capacity.add_up(consumed)
    if totals:
        out["ConsumedCapacity"] = totals[0]
    return out


def shape(item: dict, projection: tuple | None) -> dict:
    """An item as a SELECT answers it: whole for `*`, else each projected path's value under its label."""
    if projection is None:
        return item
    out = {}
    for path in projection:
        value = get_path(item, path)
        if value is not None:
            out[label(path)] = value
    return out


def label(path: Any) -> str:
    """The name a projected path answers under: the path from its last attribute name on (`a.b[0]` -> `b[0]`)."""
    elements = path.elements
    last = max(i for i, element in enumerate(elements) if isinstance(element, str))
    return str(elements[last]) + "".join(f"[{e}]" for e in elements[last + 1 :])


def check_labels(projection: tuple | None) -> None:
    seen: set[str] = set()
    for path in projection or ():
        name = label(path)
        if name in seen:
            raise ValidationException(f"Duplicate identifiers in select clause: {name}")
        seen.add(name)


def _digest(request: dict) -> str:
    basis = [request["Statement"], request.get("Parameters"), bool(request.get("ConsistentRead"))]
    return hashlib.sha256(orjson.dumps(basis, option=orjson.OPT_SORT_KEYS)).hexdigest()[:32]


def _encode_token(digest: str, index: int, key: dict | None) -> str:
    return base64.urlsafe_b64encode(orjson.dumps({"h": digest, "i": index, "k": key})).decode()


def _decode_token(token: str | None, digest: str, count: int) -> tuple[int, dict | None]:
    if token is None:
        return 0, None
    try:
        data = orjson.loads(base64.urlsafe_b64decode(token.encode()))
    except (binascii.Error, ValueError):
        raise ValidationException(INVALID_NEXT_TOKEN) from None
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("i"), int)
        or not (data.get("k") is None or isinstance(data.get("k"), dict))
    ):
        raise ValidationException(INVALID_NEXT_TOKEN)
    if data.get("h") != digest or not 0 <= data["i"] < count:
        raise ValidationException(NEXT_TOKEN_MISMATCH)
    return data["i"], data["k"]


# ------------------------------------------------------------------------------------------- BatchExecuteStatement


def batch_execute_statement(engine: Any, request: dict) -> Steps:
    check_request(request, BATCH_FIELDS)
    entries = request["Statements"]
    parsed: list[Any] = []
    for entry in entries:
        try:
            parsed.append(parse_statement(entry["Statement"], entry.get("Parameters")))
        except ValidationException as error:
            parsed.append(error)
    kinds = {is_read(statement) for statement in parsed if not isinstance(statement, DynamoError)}
    if len(kinds) > 1:
        raise ValidationException(MIXED_BATCH)
    mode = request.get("ReturnConsumedCapacity")
    if kinds == {True}:
        return (yield from _batch_reads(engine, entries, parsed, mode))
    responses: list[dict] = []
    consumed: list[dict | None] = []
    for entry, statement in zip(entries, parsed, strict=True):
        table = None
        try:
            if isinstance(statement, DynamoError):
                raise statement
            if isinstance(statement, Exists):
                raise ValidationException(EXISTS_OUTSIDE_TRANSACTION)
            table = table_of(statement)
            response = yield from _write(engine, statement, mode, entry.get("ReturnValuesOnConditionCheckFailure"))
            out = {"TableName": table}
            if response.get("Attributes"):
                out["Item"] = response["Attributes"]
            consumed.append(response.get("ConsumedCapacity"))
        except DynamoError as error:
            out = _batch_error(error, table)
        responses.append(out)
    return _batch_result(responses, consumed, mode)


def _batch_error(error: DynamoError, table: str | None) -> dict:
    """A statement's `Error` response; an error BatchStatementError cannot name fails the whole batch."""
    code = BATCH_ERROR_CODES.get(error.type_name)
    if code is None:
        raise error  # ReplicatedWriteConflictException and the like
    failure: dict[str, Any] = {"Code": code, "Message": error.message}
    if error.extra.get("Item") is not None:
        failure["Item"] = error.extra["Item"]
    out: dict[str, Any] = {"Error": failure}
    if table is not None and code != "ResourceNotFound":
        out["TableName"] = table
    return out


def _batch_result(responses: list[dict], consumed: list[dict | None], mode: str | None) -> dict:
    result: dict[str, Any] = {"Responses": responses}
    if capacity.wanted(mode):
        result["ConsumedCapacity"] = capacity.add_up(consumed)
    return result


def _batch_reads(engine: Any, entries: list[dict], parsed: list, mode: str | None) -> Steps:
    """A batch of SELECTs as one BatchGetItem ("BatchExecuteStatement makes use of BatchGetItem"): every statement
    planned and its key checked on its own (its own Error), the keys read together (in a strong-mode region, synced
    in parallel), each answer shaped by its statement. Items are read whole and projected per statement; a table
    read consistently by one statement is read consistently for all of its statements."""
    planned: list[tuple[str, dict, Any, Select] | dict] = []
    wanted: dict[str, dict] = {}
    for entry, statement in zip(entries, parsed, strict=True):
        table = None
        try:
            if isinstance(statement, DynamoError):
                raise statement
            table = statement.table
            body, post = plan_key_read(engine, statement, BATCH_KEY, BATCH_KEY)
            check_labels(statement.projection)
            engine.table(table).key.key_from_request(body["Key"])  # a key of the wrong type: this statement's error
        except DynamoError as error:
            planned.append(_batch_error(error, table))
            continue
        planned.append((table, body["Key"], post, statement))
        spec = wanted.setdefault(table, {"Keys": []})
        if body["Key"] not in spec["Keys"]:
            spec["Keys"].append(body["Key"])
        if entry.get("ConsistentRead"):
            spec["ConsistentRead"] = True
    found: dict[str, list[dict]] = {}
    consumed: list[dict | None] = []
    while wanted:
        batch: dict[str, Any] = {"RequestItems": wanted}
        if mode is not None:
            batch["ReturnConsumedCapacity"] = mode
        response = yield ("BatchGetItem", batch)
        for name, items in response.get("Responses", {}).items():
            found.setdefault(name, []).extend(items)
        consumed.extend(response.get("ConsumedCapacity", ()))
        wanted = response.get("UnprocessedKeys") or {}
    responses = []
    for plan in planned:
        if isinstance(plan, dict):
            responses.append(plan)
            continue
        table, key, post, statement = plan
        out: dict[str, Any] = {"TableName": table}
        item = next((i for i in found.get(table, ()) if all(i.get(n) == v for n, v in key.items())), None)
        if item is not None and (post is None or evaluate_condition(post, item)):
            out["Item"] = shape(item, statement.projection)
        responses.append(out)
    return _batch_result(responses, consumed, mode)


# ---------------------------------------------------------------------------------------------- ExecuteTransaction


def execute_transaction(engine: Any, request: dict) -> Steps:
    check_request(request, TRANSACTION_FIELDS)
    entries = request["TransactStatements"]
    statements = [parse_statement(entry["Statement"], entry.get("Parameters")) for entry in entries]
    reads = [is_read(statement) for statement in statements]
    if any(reads) and not all(reads):
        raise ValidationException(MIXED_TRANSACTION)
    mode = request.get("ReturnConsumedCapacity")
    if all(reads):
        return (yield from _read_transaction(engine, statements, mode))
    actions = []
    inserts = []
    for entry, statement in zip(entries, statements, strict=True):
        if getattr(statement, "returning", None) is not None:
            raise ValidationException(RETURNING_IN_TRANSACTION)
        if isinstance(statement, Insert) and statement.if_absent:
            raise ValidationException(CONFLICT_IN_TRANSACTION)
        write = plan_write(engine, statement)
        body = _with_options(write.request, None, entry.get("ReturnValuesOnConditionCheckFailure"), statement)
        actions.append({TRANSACTION_ACTIONS[write.operation]: body})
        inserts.append(isinstance(statement, Insert))
    transact: dict[str, Any] = {"TransactItems": actions}
    if request.get("ClientRequestToken") is not None:
        transact["ClientRequestToken"] = request["ClientRequestToken"]
    if mode is not None:
        transact["ReturnConsumedCapacity"] = mode
    try:
        response = yield ("TransactWriteItems", transact)
    except TransactionCanceledException as error:
        reasons = [
            {"Code": "DuplicateItem", "Message": DuplicateItemException().message}
            if insert and reason.get("Code") == "ConditionalCheckFailed"
            else reason
            for insert, reason in zip(inserts, error.extra["CancellationReasons"], strict=True)
        ]
        raise TransactionCanceledException(reasons) from None
    out: dict[str, Any] = {}
    if "ConsumedCapacity" in response:
        out["ConsumedCapacity"] = response["ConsumedCapacity"]
    return out


def _read_transaction(engine: Any, statements: list, mode: str | None) -> Steps:
    gets = []
    posts = []
    for statement in statements:
        body, post = plan_key_read(engine, statement, TRANSACTION_KEY, TRANSACTION_INDEX)
        check_labels(statement.projection)
        gets.append({"Get": body})
        posts.append(post)
    transact: dict[str, Any] = {"TransactItems": gets}
    if mode is not None:
        transact["ReturnConsumedCapacity"] = mode
    response = yield ("TransactGetItems", transact)
    answers = []
    for statement, post, answer in zip(statements, posts, response["Responses"], strict=True):
        item = answer.get("Item")
        if item is not None and (post is None or evaluate_condition(post, item)):
            answers.append({"Item": shape(item, statement.projection)})
        else:
            answers.append({})
    out: dict[str, Any] = {"Responses": answers}
    if "ConsumedCapacity" in response:
        out["ConsumedCapacity"] = response["ConsumedCapacity"]
    return out
