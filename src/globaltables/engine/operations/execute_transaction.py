"""ExecuteTransaction: PartiQL, run as the item operations its statements stand for (engine/partiql/)."""

from __future__ import annotations

from ..answer import Answer
from ..partiql import run_inline, steps


def handle(engine, request: dict) -> Answer:
    return run_inline(engine, steps(engine, "ExecuteTransaction", request))
