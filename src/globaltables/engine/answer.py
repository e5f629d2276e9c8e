"""`Answer`: what the engine gives back for one operation — the response, and the item version it read or wrote.

Why a value and not a field of the engine: the version belongs to one answer, so it travels with it (the region's
`x-globaltables-version` header, a simulated client's history) and no caller has to reset, read or save and
restore engine state around a call. Data-plane operations (GetItem, PutItem, UpdateItem, DeleteItem and the
PartiQL statements standing for them) return an `Answer`; every other handler returns its response dict, which
`Engine.execute` wraps with no version.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class Answer(NamedTuple):
    response: dict[str, Any]
    # "<hlc>/<region>" of the item the operation wrote or read, on a global table; None otherwise (a standalone
    # table, a control-plane operation, an item that does not exist).
    version: str | None = None
