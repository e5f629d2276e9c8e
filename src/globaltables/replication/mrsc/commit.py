"""The coordinator's per-proposal commit state machine, as a table (docs/mrsc.md, "Coordinator state machine").

Rule 1: the coordinator has accepted its own proposal before anything is sent, so ONE vote `accept` from either
other member commits it (coordinator + that member are a majority of three).
Rule 2: it aborts only when both other members refused it; a refusal is durable at the voter, so an aborted proposal
can never gain a vote later. Only two `conflict` refusals make ReplicatedWriteConflictException; any other pair of
refusals aborts and retries against the newer version (a retry is safe: the abort is definite).
Rule 3: time never decides: a timeout answers the client 500 and leaves the state as it is.

`TABLE[(state, answer)] = (next state, outcome)`; outcome is None while undecided.
"""

from __future__ import annotations

from .messages import ACCEPT, CONFLICT, FENCED, STALE

WAITING, ONE_CONFLICT, ONE_REFUSED, COMMITTED, ABORTED = (
    "waiting", "one-conflict", "one-refused", "committed", "aborted",
)  # fmt: skip
COMMIT, RWCE, RETRY = "commit", "rwce", "retry"  # outcomes

TABLE: dict[tuple[str, str], tuple[str, str | None]] = {
    (WAITING, ACCEPT): (COMMITTED, COMMIT),  # rule 1
    (WAITING, CONFLICT): (ONE_CONFLICT, None),  # rule 2
    (WAITING, STALE): (ONE_REFUSED, None),  # rule 3 (the host adopts the newer image)
    (WAITING, FENCED): (ONE_REFUSED, None),  # rule 4
    (ONE_CONFLICT, ACCEPT): (COMMITTED, COMMIT),  # rule 5
    (ONE_CONFLICT, CONFLICT): (ABORTED, RWCE),  # rule 6
    (ONE_CONFLICT, STALE): (ABORTED, RETRY),  # rule 7
    (ONE_CONFLICT, FENCED): (ABORTED, RETRY),  # rule 7
    (ONE_REFUSED, ACCEPT): (COMMITTED, COMMIT),  # rule 8
    (ONE_REFUSED, CONFLICT): (ABORTED, RETRY),  # rule 9
    (ONE_REFUSED, STALE): (ABORTED, RETRY),  # rule 9
    (ONE_REFUSED, FENCED): (ABORTED, RETRY),  # rule 9
}
DECIDED = frozenset({COMMITTED, ABORTED})


def step(state: str, answer: str) -> tuple[str, str | None]:
    """The next state and the outcome (None: undecided) after one member's answer; decided states stay put."""
    if state in DECIDED:
        return state, None
    return TABLE[(state, answer)]
