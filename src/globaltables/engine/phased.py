"""Several independent requests of one item operation, handled phase by phase (`Engine.handle_many`).

Why: a single PutItem runs through two long stretches of code, validation and parsing (`prepare`) and the
read-check-apply-commit (`read_modify_write.execute`); alternating them request by request keeps evicting one from
the processor's caches to make room for the other. A simulator that issues hundreds of client writes at one
virtual instant validates them all first, then executes them in order: about a quarter less time per write
(bench/sim_throughput.py). A region's HTTP front does the same with the requests of one event-loop turn
(region/group_commit.py): the GetItems (or Queries) that arrive together are all checked, then all read, so the
read and the capacity charge after it run with their code and data still in the caches.

Same outcome as one `Engine.handle` call per request, in order: `prepare` (a GetItem's `check`) reads nothing an
item write can change (the table's definition, the request itself), and every read, condition, charge, version and
commit happens in the second phase, request after request. A request that fails, in either phase, gets its error in
its place; the others go on. `contain`: an exception that is not a DynamoError (a bug) becomes that request's
result too, instead of propagating, as a server answers that one request with an internal error and serves the
rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .answer import Answer
from .errors import DynamoError, SerializationException
from .operations import get_item, query
from .operations.read_modify_write import execute
from .operations.write_preparers import PREPARE

if TYPE_CHECKING:
    from .engine import Engine

# The reads with phases: each module's `check` (every check, no read) and `read` (the read of a checked request).
READERS = {"GetItem": get_item, "Query": query}
# Every operation `handle_many` takes (Engine.execute_many, the region's batches: region/group_commit.py).
OPERATIONS = frozenset([*READERS, *PREPARE])

Result = tuple[dict | Exception, str | None]  # (response or error, the version the request read or wrote)


def handle_many(
    engine: Engine, operation: str, requests: list[Any], encoded: bool = False, contain: bool = False
) -> list[Result]:
    """`encoded`: the caller only serialises the responses (GetItem may answer whole items as stored JSON,
    Engine.execute); the item writes answer the same either way."""
    reader = READERS.get(operation)
    prepare = reader.check if reader is not None else PREPARE.get(operation)
    if prepare is None:
        raise ValueError(f"handle_many takes {', '.join(sorted(OPERATIONS))}, not {operation}")
    failures = Exception if contain else DynamoError
    prepared: list[Any] = []
    for request in requests:
        try:
            if not isinstance(request, dict):
                raise SerializationException("Start of structure or map found where not expected")
            prepared.append(prepare(engine, request))
        except failures as error:
            prepared.append(_Failed(error))
    results: list[Result] = []
    throughput = engine.throughput
    for request, ready in zip(requests, prepared, strict=True):
        if type(ready) is _Failed:
            results.append((ready.error, None))
            continue
        try:
            if reader is None:
                results.append(execute(engine, ready))
            else:  # a Query's page is a plain dict: no item version, as Engine.execute wraps it
                answer = reader.read(engine, request, ready, encoded)
                results.append(answer if type(answer) is Answer else Answer(answer))
        except failures as error:
            results.append((error, None))  # a refused request wrote nothing and reports no version
            if throughput is not None and throughput.throttled:  # as Engine.execute counts it
                throughput.take_throttled(operation)
    return results


class _Failed:
    """A request that failed its first phase (a GetItem's check result is a tuple, so the error is wrapped)."""

    __slots__ = ("error",)

    def __init__(self, error: Exception) -> None:
        self.error = error
