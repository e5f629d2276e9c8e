"""ExecuteStatement: PartiQL, run as the item operations its statements stand for (engine/partiql/)."""

from __future__ import annotations

from ..partiql import run_inline, steps


def handle(engine, request: dict) -> dict:
    return run_inline(engine, steps(engine, "ExecuteStatement", request))
