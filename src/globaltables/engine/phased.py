"""Several independent requests of one item-write operation, handled phase by phase (`Engine.handle_many`).

Why: a single PutItem runs through two long stretches of code, validation and parsing (`prepare`) and the
read-check-apply-commit (`read_modify_write.execute`); alternating them request by request keeps evicting one from
the processor's caches to make room for the other. A simulator that issues hundreds of client writes at one
virtual instant validates them all first, then executes them in order: about a quarter less time per write
(bench/sim_throughput.py).

Same outcome as one `Engine.handle` call per request, in order: `prepare` reads nothing an item write can change
(the table's definition, the request itself), and every read, condition, version and commit happens in `execute`,
request after request. A request that fails, in either phase, gets its error in its place; the others go on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import DynamoError, SerializationException
from .operations.read_modify_write import execute
from .operations.write_preparers import PREPARE

if TYPE_CHECKING:
    from .engine import Engine

Result = tuple[dict | DynamoError, str | None]  # (response or error, the version the request read or wrote)


def handle_many(engine: Engine, operation: str, requests: list[Any]) -> list[Result]:
    prepare = PREPARE.get(operation)
    if prepare is None:
        raise ValueError(f"handle_many takes {', '.join(sorted(PREPARE))}, not {operation}")
    prepared: list[Any] = []
    for request in requests:
        try:
            if not isinstance(request, dict):
                raise SerializationException("Start of structure or map found where not expected")
            prepared.append(prepare(engine, request))
        except DynamoError as error:
            prepared.append(error)
    results: list[Result] = []
    throughput = engine.throughput
    for write in prepared:
        if isinstance(write, DynamoError):
            results.append((write, None))
            continue
        try:
            results.append(execute(engine, write))
        except DynamoError as error:
            results.append((error, None))  # a refused write wrote nothing and reports no version
            if throughput is not None and throughput.throttled:  # as Engine.execute counts it
                throughput.take_throttled(operation)
    return results
