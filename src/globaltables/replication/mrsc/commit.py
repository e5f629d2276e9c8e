"""The coordinator's decision on one proposal, from the other members' latest answers (docs/mrsc.md,
"Coordinator decision").

Rule 1: the coordinator has accepted its own proposal before anything is sent, so ONE acceptance (`accept`, or
`accept-again` after a Repropose) from either other member commits it (coordinator + that member are a majority of
three); the coordinator decides, and only it (or the majority recovery of docs/mrsc.md) ever commits the proposal.
Rule 2: `outranked` (the member holds a racing proposal ranked higher) aborts with ReplicatedWriteConflictException
once the other member refused too, or `retransmit_ms` after the outranked answer came without the other member's
(`waited`): an acceptance from a reachable third member still commits (the earlier arrival wins there, facts §10.7),
and a cut-off one does not keep the higher-ranked write waiting.
Rule 3: `conflict` (the member holds a lower-ranked racing proposal, which its own coordinator will abort) is
waited out: the member is asked again (Repropose) until it accepts or says `stale`. Two conflicts still wait.
Rule 4: two refusals of which one is `stale`, `fenced` or `settled` abort, and the write is retried against the
newer version (a retry is safe: the abort is definite) — unless a member's `conflict` became `stale`: the racing
proposal it held committed, so the write met a conflicting one and gets ReplicatedWriteConflictException (`met`).
Rule 5: time never decides: a timeout answers the client 500 and leaves the proposal to be resolved.
Answers are never replaced, except a `conflict` by the same member's `accept-again`, `stale` or `outranked`
(`replaces`).
"""

from __future__ import annotations

from collections.abc import Mapping

from .messages import ACCEPTS, CONFLICT, OUTRANKED, STALE

COMMIT, RWCE, RETRY = "commit", "rwce", "retry"  # outcomes


def decide(answers: Mapping[str, str], members: int = 2, *, met: bool = False, waited: bool = False) -> str | None:
    """The outcome (None: undecided) given each other member's latest answer; `met`: a conflict became stale;
    `waited`: `retransmit_ms` passed since an outranked answer."""
    values = list(answers.values())
    if any(answer in ACCEPTS for answer in values):  # rule 1
        return COMMIT
    if OUTRANKED in values and (len(values) == members or waited):  # rule 2
        return RWCE
    if len(values) == members and not all(answer == CONFLICT for answer in values):  # rules 3, 4
        return RWCE if met else RETRY
    return None


def replaces(earlier: str | None, answer: str) -> bool:
    """Whether a member's new answer counts instead of its earlier one."""
    return earlier is None or (earlier == CONFLICT and (answer in ACCEPTS or answer in (STALE, OUTRANKED)))
