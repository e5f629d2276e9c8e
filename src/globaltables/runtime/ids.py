"""Identifiers that must be unique (a table's TableId, ...), from an injected source.

Rules:
1. The cores (engine, replication) never call `uuid.uuid4` or `os.urandom`: a host hands them an `IdSource`, so the
   simulator draws identifiers from its seed and a run replays with the same ids (tests/test_layers.py checks that
   the cores import no `uuid`).
2. `random_ids()` is the region process's source; `seeded_ids(rng)` the simulator's (UUID-shaped, version 4, from the
   stream given); `name_based_id(name)` a stable id for a name (UUID version 5), for identifiers DynamoDB derives
   from what they name rather than draws.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable

IdSource = Callable[[], str]


def random_ids() -> IdSource:
    return lambda: str(uuid.uuid4())


def seeded_ids(rng: random.Random) -> IdSource:
    return lambda: str(uuid.UUID(int=rng.getrandbits(128), version=4))


def name_based_id(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, name))
