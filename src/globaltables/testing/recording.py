"""Recording what kit clients do: every boto3 call becomes an invocation and a completion in a chaos `History`.

Hooks on the client's own events (`before-parameter-build` for the invocation, `after-call` / `after-call-error`
for the completion), so the record is the same in both modes and holds what the test really sent and got: the
request's key, the value it wrote, the version header of the answer, the error code. Single-item operations carry
their key; transactions and batches carry the keys they touch in `value["keys"]`, so a report on one key still
shows them.

Checkable as recorded (chaos/checkers/linearizable.py): a GetItem, Query or Scan is `get` / `query` / `scan` when
it asked for ConsistentRead and `get-eventual` / `query-eventual` / `scan-eventual` when not; a PutItem's value is
its item and an UpdateItem's completion carries the item it produced (its post-image: the recorder asks for
`ReturnValues: ALL_NEW` when the test did not ask for any, and hides the returned attributes from the test again),
so reads compare with both; a condition that only tests whether the item exists is recorded as the history's
`condition` (chaos/conditions.py), so a ConditionalCheckFailed is checked as a read.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

from ..chaos.conditions import register_condition
from ..chaos.history import History, Op, key_id
from ..runtime.transport import VERSION_HEADER

# Operation name -> history `f`.
FUNCTIONS = {
    "PutItem": "put",
    "UpdateItem": "update",
    "DeleteItem": "delete",
    "GetItem": "get",
    "Query": "query",
    "Scan": "scan",
    "TransactWriteItems": "transact-write",
    "TransactGetItems": "transact-get",
    "BatchWriteItem": "batch-write",
    "BatchGetItem": "batch-get",
}

READS = frozenset({"GetItem", "Query", "Scan"})
POST_IMAGE = "globaltables_post_image"  # context flag: the recorder asked for ALL_NEW, the test did not
# PartiQL operations -> the member holding their statements (None: the request's own `Statement`).
PARTIQL = {"ExecuteStatement": None, "BatchExecuteStatement": "Statements", "ExecuteTransaction": "TransactStatements"}

KeyOf = Callable[[str, dict], "dict | None"]  # (table, item) -> the item's key attributes, or None if unknown


def _multi_keys(operation: str, params: dict, key_of: KeyOf) -> list[dict]:
    keys: list[dict] = []
    if operation in ("TransactWriteItems", "TransactGetItems"):
        for entry in params.get("TransactItems") or []:
            for kind, action in entry.items():
                table = action.get("TableName")
                key = action.get("Key") if kind != "Put" else key_of(table, action.get("Item") or {})
                keys.append({"table": table, "key": key, "action": kind})
    elif operation == "BatchWriteItem":
        for table, requests in (params.get("RequestItems") or {}).items():
            for request in requests:
                if "PutRequest" in request:
                    keys.append({"table": table, "key": key_of(table, request["PutRequest"].get("Item") or {}),
                                 "action": "Put"})
                elif "DeleteRequest" in request:
                    keys.append({"table": table, "key": request["DeleteRequest"].get("Key"), "action": "Delete"})
    elif operation == "BatchGetItem":
        for table, request in (params.get("RequestItems") or {}).items():
            keys.extend({"table": table, "key": key, "action": "Get"} for key in request.get("Keys") or [])
    return keys


def condition_of(params: dict, key: dict | None) -> dict | None:
    """The register condition of a request (chaos/conditions.py): an existence test of a key attribute."""
    return register_condition(params.get("ConditionExpression"), params.get("ExpressionAttributeNames"), key or ())


def describe_request(operation: str, params: dict, key_of: KeyOf) -> tuple[str, str | None, Any, Any]:
    """(f, table, key, value) of a request for the history."""
    f = FUNCTIONS.get(operation, operation)
    if operation in READS and not params.get("ConsistentRead"):
        f += "-eventual"
    table = params.get("TableName")
    if operation == "PutItem":
        item = params.get("Item") or {}
        return f, table, key_of(table, item), item
    if operation == "UpdateItem":
        expression = params.get("UpdateExpression") or ""
        names = params.get("ExpressionAttributeNames") or {}
        # Longest placeholder first, so #a1 never clobbers part of #a10.
        for placeholder in sorted(names, key=len, reverse=True):
            expression = expression.replace(placeholder, str(names[placeholder]))
        value = {"update": expression, "values": params.get("ExpressionAttributeValues")}
        if params.get("ConditionExpression"):
            value["condition"] = params["ConditionExpression"]
        return f, table, params.get("Key"), value
    if operation in ("DeleteItem", "GetItem"):
        value = {"condition": params["ConditionExpression"]} if params.get("ConditionExpression") else None
        return f, table, params.get("Key"), value
    if operation in PARTIQL:  # the statements as sent: a report on the run shows what each PartiQL call did
        entries = params.get(PARTIQL[operation])
        statements = [params.get("Statement")] if entries is None else [e.get("Statement") for e in entries]
        return f, None, None, {"statements": statements}
    keys = _multi_keys(operation, params, key_of)
    return f, table, None, {"keys": keys} if keys else None


class Recorder:
    """Attaches to boto3 clients and records their calls into `history` (thread-safe: process mode races threads)."""

    def __init__(self, history: History, key_of: KeyOf) -> None:
        self.history = history
        self.key_of = key_of
        self._lock = threading.Lock()
        self._processes = itertools.count(1)

    def attach(self, client: Any, region: str) -> None:
        events = client.meta.events
        events.register("before-parameter-build.dynamodb", self._invoke(region))
        events.register("after-call.dynamodb", self._complete)
        events.register("after-call-error.dynamodb", self._complete_error)

    def _invoke(self, region: str):
        def invoke(params: dict, model: Any, context: dict, **_: Any) -> None:
            f, table, key, value = describe_request(model.name, params, self.key_of)
            condition = condition_of(params, key) if model.name in ("PutItem", "UpdateItem", "DeleteItem") else None
            context["globaltables_return_values"] = params.get("ReturnValues")
            if model.name == "UpdateItem" and params.get("ReturnValues") in (None, "NONE"):
                params["ReturnValues"] = "ALL_NEW"  # the post-image is the value written (hidden from the test)
                context[POST_IMAGE] = True
            with self._lock:
                # One process per call: a call is one logical client with one outstanding operation.
                context["globaltables_op"] = self.history.invoke(
                    next(self._processes), region, f, table, key, value, condition=condition
                )

        return invoke

    def _complete(self, http_response: Any, parsed: dict, model: Any, context: dict, **_: Any) -> None:
        op: Op | None = context.pop("globaltables_op", None)
        if op is None:
            return
        version = http_response.headers.get(VERSION_HEADER) if http_response is not None else None
        with self._lock:
            if http_response is not None and http_response.status_code >= 300:
                code = (parsed.get("Error") or {}).get("Code") or f"HTTP{http_response.status_code}"
                self.history.error(op, code)
            elif op.f in ("get", "get-eventual"):
                self.history.ok(op, value=parsed.get("Item"), version=version)
            elif op.f == "update" and parsed.get("Attributes") is not None and _all_new(context, parsed):
                self.history.ok(op, value=parsed["Attributes"], version=version)
            else:
                self.history.ok(op, version=version)
        if context.pop(POST_IMAGE, False):
            parsed.pop("Attributes", None)

    def _complete_error(self, exception: Exception, context: dict, **_: Any) -> None:
        op: Op | None = context.pop("globaltables_op", None)
        if op is None:
            return
        with self._lock:
            # A connection error or timeout: the request may or may not have applied.
            self.history.info(op, type(exception).__name__)


def _all_new(context: dict, parsed: dict) -> bool:
    """Whether an UpdateItem's returned Attributes are its whole post-image (ALL_NEW, ours or the test's)."""
    return bool(context.get(POST_IMAGE)) or context.get("globaltables_return_values") == "ALL_NEW"


def touches(op: Op, table: str | None, key: dict) -> bool:
    """Whether a history record concerns the item (`table` None: any table)."""
    wanted = key_id(key)
    if op.key is not None:
        return key_id(op.key) == wanted and (table is None or op.table in (None, table))
    if isinstance(op.value, dict):
        for entry in op.value.get("keys") or ():
            if entry.get("key") is not None and key_id(entry["key"]) == wanted and table in (None, entry.get("table")):
                return True
    return False
