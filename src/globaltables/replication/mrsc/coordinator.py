"""The coordinator: runs a region's client writes through the commit protocol (docs/mrsc.md, "Write").

Theory of operation: writes to one item queue (`queues`), so one region's writes to an item are serialized, for at
most half of `write_timeout_ms` each (docs/mrsc.md, decision 2c). A write on an item another Region's proposal holds
here is refused at once with ReplicatedWriteConflictException, never proposed (decision 2a), and so are the writes
queued behind our own proposal when it loses the item to another Region's (decision 2b); after our commit on a
contended item the next write waits `yield_ms`, so the other Regions' writes find it free (decision 3). The head
of a queue starts when the item has no pending proposal here and no pause is due: it is evaluated
against the local committed image (`evaluate(old)` runs the request's condition and update; it is pure, so it runs
again after a stale refusal), persisted as pending, and proposed to both other members. Votes drive `commit.decide`.
A ConditionalCheckFailed found locally is confirmed first (a Sync with another member, strong_read.py), and only a
failure against a confirmed-latest version is answered. Time never aborts a proposal: the client's deadline answers
500 and the proposal goes on being resolved (Propose re-sent, then Status after `resolve_ms`). A member that answered
`conflict` is asked again (Repropose, every `retransmit_ms`): once its lower-ranked racing proposal is gone it
accepts (docs/mrsc.md, "The split vote, resolved"); it even takes the proposal up unasked as soon as its racing one
is decided, before its own next queued write starts (node.py `_take_up`, decision 1). Every abort leaves the
aborted record (store.py).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...engine.errors import ConditionalCheckFailedException, DynamoError
from . import commit
from .messages import ACCEPTS, CONFLICT, OUTRANKED, STALE, Abort, Commit, Propose, Repropose, Status, Vote
from .records import Pending, item_id

IN_DOUBT = "in-doubt"  # completion outcomes besides "ok", "rwce", "error": the host maps them to 500
NOT_STARTED = "timeout"


@dataclass
class WriteOp:
    op_id: Any
    table: str
    key: dict
    evaluate: Callable[[dict | None], dict | None]
    deadline: float
    queued_until: float = float("inf")  # not proposed by then: answered at once (docs/mrsc.md, decision 2c)
    submitted: float = 0.0
    retries: int = 0
    confirmed: bool = False  # a Sync just confirmed the local version is the latest
    confirming: bool = False
    done: bool = False


@dataclass
class Proposal:
    pending: Pending
    op: WriteOp | None
    started: float
    next_send: float
    old: dict | None = None
    answers: dict[str, str] = field(default_factory=dict)
    met: bool = False  # a member's conflict became stale: a racing proposal committed (commit.decide rule 4)
    outranked_at: float | None = None  # when an outranked answer came (commit.decide rule 2)
    recovered: bool = False  # found pending after a restart: resolved by Status only, never proposed again


class Coordinator:
    def __init__(self, node: Any) -> None:
        self.node = node
        self.queues: dict[tuple[str, str], deque[WriteOp]] = {}
        self.proposals: dict[str, Proposal] = {}  # pid -> undecided proposal of ours
        self.active: dict[tuple[str, str], str] = {}  # item -> pid of our undecided proposal
        # Contention (memory only): item -> when another Region's proposal for it was last seen here; and the items
        # whose next queued write waits until a moment, after our commit, for the others' turn (decision 3).
        self.contended: dict[tuple[str, str], float] = {}
        self.yielding: dict[tuple[str, str], tuple[float, str, dict]] = {}
        # Decision 2a's one wait: item -> (the other Region's proposal waited for, until when, table, key); until is
        # -inf once the wait is over (no other write waits for that proposal).
        self.waiting: dict[tuple[str, str], tuple[str, float, str, dict]] = {}

    # ------------------------------------------------------------------------------------------------ inputs

    def submit(self, op: WriteOp, now: float) -> None:
        self.queues.setdefault((op.table, item_id(op.key)), deque()).append(op)
        self.pump(op.table, op.key, now)

    def recover(self, pending: Pending, now: float) -> None:
        """After a restart: our own proposal, found pending, is resolved before anything else on the item."""
        proposal = Proposal(pending, None, now, now, recovered=True)
        self.proposals[pending.pid] = proposal
        self.active[(pending.table, item_id(pending.key))] = pending.pid
        self._send_status(proposal, now)

    def pump(self, table: str, key: dict, now: float) -> None:
        """Start the item's next queued write if nothing is in the way."""
        ident = (table, item_id(key))
        queue = self.queues.get(ident)
        node = self.node
        waited = self.waiting.get(ident)
        if waited is not None:
            held = node.port.pending(table, key)
            if held is None or held.pid != waited[0]:
                del self.waiting[ident]  # the proposal waited for is decided here
        while queue:
            op = queue[0]
            if op.done:
                queue.popleft()
                continue
            held = node.port.pending(table, key)
            if held is not None and held.coordinator != node.region:
                # Another Region's undecided proposal holds the item here: refused at once, never proposed, but
                # for one write while that proposal's Commit may still be on its way (docs/mrsc.md, decision 2a).
                self.refuse_queued(ident, keep=op if self._may_wait_for(ident, held, now) else None)
                return
            if ident in self.active or op.confirming or held is not None:
                return
            until = self.yielding.get(ident)
            if until is not None:
                if now < until[0]:
                    return
                del self.yielding[ident]
            if not self._start(op, now):
                return
        if queue is not None and not queue:
            del self.queues[ident]

    def refuse_queued(self, ident: tuple[str, str], keep: WriteOp | None = None) -> None:
        """Every write queued for the item that has not been proposed, but `keep`, gets
        ReplicatedWriteConflictException: it changed nothing anywhere (docs/mrsc.md, decision 2). Our own undecided
        proposal, if any, goes on."""
        queue = self.queues.pop(ident, None)
        if queue is None:
            return
        pid = self.active.get(ident)
        proposing = self.proposals[pid].op if pid is not None else None
        for op in queue:
            if not op.done and op is not proposing and op is not keep:
                self._finish(op, "rwce", None)
        kept = deque(op for op in (proposing, keep) if op is not None and not op.done)
        if kept:
            self.queues[ident] = kept

    def _may_wait_for(self, ident: tuple[str, str], held: Pending, now: float) -> bool:
        """Whether the head of the item's queue may wait for `held`, another Region's proposal accepted here
        (decision 2a): only while it was accepted here less than `retransmit_ms` ago, and only one write per such
        proposal."""
        waited = self.waiting.get(ident)
        if waited is not None and waited[0] == held.pid:
            return now < waited[1]
        accepted_at = self.node.accepted_at(held.pid)
        until = accepted_at + self.node.config.retransmit_ms / 1000 if accepted_at is not None else float("-inf")
        self.waiting[ident] = (held.pid, until if now < until else float("-inf"), held.table, held.key)
        return now < until

    def note_contention(self, table: str, key: dict, now: float) -> None:
        """Another Region proposed for the item (this member was asked to vote, or refused our proposal for one).
        Noted only while this region has writes for the item (decision 3 needs no more); old notes go at `poll`."""
        ident = (table, item_id(key))
        if ident in self.queues:
            self.contended[ident] = now

    def on_vote(self, src: str, vote: Vote, now: float) -> None:
        proposal = self.proposals.get(vote.pid)
        if proposal is None:
            return
        earlier = proposal.answers.get(src)
        if not commit.replaces(earlier, vote.answer):
            return  # one answer per member; only a conflict is ever followed by another (commit.replaces)
        proposal.answers[src] = vote.answer
        proposal.met = proposal.met or (earlier == CONFLICT and vote.answer == STALE)
        if vote.answer == OUTRANKED and proposal.outranked_at is None:
            proposal.outranked_at = now
        node = self.node
        pending = proposal.pending
        node.note_member_cv(src, pending.table, pending.key, vote.cv)
        if vote.answer not in ACCEPTS:
            self.note_contention(pending.table, pending.key, now)
        if vote.answer not in ACCEPTS and vote.cv > node.port.committed(pending.table, pending.key)[0]:
            node.adopt(pending.table, pending.key, vote.cv, vote.cpid, vote.image, now)
        self._decide(proposal, now)

    def _decide(self, proposal: Proposal, now: float) -> None:
        node = self.node
        pending = proposal.pending
        waited = proposal.outranked_at is not None and now >= proposal.outranked_at + node.config.retransmit_ms / 1000
        outcome = commit.decide(proposal.answers, len(node.others), met=proposal.met, waited=waited)
        if outcome is None:
            return
        del self.proposals[pending.pid]
        ident = (pending.table, item_id(pending.key))
        self.active.pop(ident, None)
        op = proposal.op
        others = node.others
        if outcome == commit.COMMIT:
            node.port.apply(pending.table, pending.key, pending.version, pending.pid, pending.image)
            if op is not None and not op.done:
                self._finish(op, "ok", (proposal.old, pending.image))
            self._yield_after_commit(ident, pending.table, pending.key, now)
            for member in others:
                node.send(member, Commit(pending.pid, pending.table, pending.key, pending.version, pending.image))
        else:
            node.port.abort(pending.pid, pending.table, pending.key, pending.version)
            node.note_aborted(pending.table, pending.key)
            for member in others:
                node.send(member, Abort(pending.pid, pending.table, pending.key))
            if outcome == commit.RWCE:
                # Another Region's write holds the item: the writes queued behind ours would only meet it again
                # (docs/mrsc.md, decision 2b).
                self.refuse_queued(ident)
            if op is not None and not op.done:
                if outcome == commit.RWCE:
                    self._finish(op, "rwce", None)
                else:
                    op.retries += 1
                    op.confirmed = False
                    if op.retries > node.config.max_retries:
                        self._finish(op, "error", None)
        node.item_changed(pending.table, pending.key, now)

    def confirmed(self, op: WriteOp, ok: bool, now: float) -> None:
        """A Sync for `op`'s condition came back: the local version is (ok) or may not be the latest."""
        op.confirming = False
        if ok:
            op.confirmed = True
        elif not op.done:
            self._finish(op, NOT_STARTED, None)
        self.pump(op.table, op.key, now)

    # ------------------------------------------------------------------------------------------------ timing

    def poll(self, now: float) -> None:
        config = self.node.config
        for ident, (until, table, key) in list(self.yielding.items()):
            if now >= until:
                del self.yielding[ident]
                self.pump(table, key, now)
        for ident, (pid, until, table, key) in list(self.waiting.items()):
            if now >= until > float("-inf"):
                self.waiting[ident] = (pid, float("-inf"), table, key)
                self.pump(table, key, now)  # still held: the waiting write gets RWCE
        window = max(config.resolve_ms, config.write_timeout_ms) / 1000
        for ident, seen in list(self.contended.items()):
            if seen < now - window:
                del self.contended[ident]
        for proposal in list(self.proposals.values()):
            if proposal.outranked_at is not None:
                self._decide(proposal, now)  # rule 2's wait for the other member may be over
                if proposal.pending.pid not in self.proposals:
                    continue
            op = proposal.op
            if op is not None and not op.done and now >= op.deadline:
                self._finish(op, IN_DOUBT, None)  # rule 3: the client is answered, the proposal goes on
            if now >= proposal.next_send:
                if proposal.recovered or now - proposal.started >= config.resolve_ms / 1000:
                    self._send_status(proposal, now)
                else:
                    self._send_propose(proposal, now)
        for ident, queue in list(self.queues.items()):
            pid = self.active.get(ident)
            proposing = self.proposals[pid].op if pid is not None else None
            for op in queue:
                if op.done or op.confirming or op is proposing:
                    continue
                if now >= op.deadline:
                    self._finish(op, NOT_STARTED, None)  # never proposed: certainly not applied
                elif now >= op.queued_until:
                    # Waited half its time behind our own proposals (decision 2c): RWCE if another Region's
                    # proposal for the item was seen meanwhile (what kept it waiting), else a definite 500.
                    contended = self.contended.get(ident, float("-inf")) >= op.submitted
                    self._finish(op, "rwce" if contended else NOT_STARTED, None)
            if queue and all(op.done for op in queue):
                del self.queues[ident]

    def next_deadline(self) -> float | None:
        soonest: float | None = None
        grace = self.node.config.retransmit_ms / 1000
        for p in self.proposals.values():
            at = p.next_send
            if p.outranked_at is not None and p.outranked_at + grace < at:
                at = p.outranked_at + grace
            if p.op is not None and not p.op.done and p.op.deadline < at:
                at = p.op.deadline
            if soonest is None or at < soonest:
                soonest = at
        for ident, queue in self.queues.items():
            pid = self.active.get(ident)
            proposing = self.proposals[pid].op if pid is not None else None
            for op in queue:
                if op.done:
                    continue
                at = op.deadline if op.confirming or op is proposing else min(op.deadline, op.queued_until)
                if soonest is None or at < soonest:
                    soonest = at
        for until, _table, _key in self.yielding.values():
            if soonest is None or until < soonest:
                soonest = until
        for _pid, until, _table, _key in self.waiting.values():
            if until > float("-inf") and (soonest is None or until < soonest):
                soonest = until
        return soonest

    # ----------------------------------------------------------------------------------------------- helpers

    def _yield_after_commit(self, ident: tuple[str, str], table: str, key: dict, now: float) -> None:
        """Our proposal for a contended item committed: our next write on it starts `yield_ms` later (decision 3).
        Why: the Commit and our next Propose would reach the other members together, the item would never be free
        there, and each of their writes would meet our proposal and be refused (decision 2): one Region would hold
        the item for as long as its clients keep writing it."""
        config = self.node.config
        seen = self.contended.get(ident)
        if seen is None or seen < now - config.resolve_ms / 1000 or config.yield_ms <= 0:
            return
        self.yielding[ident] = (now + config.yield_ms / 1000, table, key)  # a write queued or submitted meanwhile

    def _start(self, op: WriteOp, now: float) -> bool:
        """Evaluate and propose the head of a queue; False when it must wait (a confirmation Sync is out)."""
        node = self.node
        port = node.port
        cv, _cpid, old = port.committed(op.table, op.key)
        try:
            new = op.evaluate(old)
        except ConditionalCheckFailedException as error:
            if op.confirmed or "ccf-without-confirmation" in node.planted:  # the planted bug skips the Sync
                self._finish(op, "error", error)
                return True
            op.confirming = True
            node.reader.confirm(op, now)
            return False
        except DynamoError as error:
            self._finish(op, "error", error)
            return True
        pending = Pending(port.new_pid(), op.table, op.key, cv + 1, node.region, new)
        port.accept(pending)  # durable before the Propose leaves
        proposal = Proposal(pending, op, now, now, old=old)
        self.proposals[pending.pid] = proposal
        self.active[(op.table, item_id(op.key))] = pending.pid
        self._send_propose(proposal, now)
        return False

    def _send_propose(self, proposal: Proposal, now: float) -> None:
        p = proposal.pending
        for member in self.node.others:
            if member not in proposal.answers:
                self.node.send(member, Propose(p.pid, p.table, p.key, p.version, p.image, p.coordinator))
        self._send_repropose(proposal)
        proposal.next_send = now + self.node.config.retransmit_ms / 1000

    def _send_status(self, proposal: Proposal, now: float) -> None:
        p = proposal.pending
        for member in self.node.others:
            if member not in proposal.answers:
                self.node.send(member, Status(p.pid, p.table, p.key, p.version, p.coordinator))
        self._send_repropose(proposal)
        proposal.next_send = now + self.node.config.retransmit_ms / 1000

    def _send_repropose(self, proposal: Proposal) -> None:
        """Ask again every member that answered `conflict`: its racing proposal may be gone by now."""
        p = proposal.pending
        for member, answer in proposal.answers.items():
            if answer == CONFLICT:
                self.node.send(member, Repropose(p.pid, p.table, p.key, p.version, p.image, p.coordinator))

    def _finish(self, op: WriteOp, outcome: str, detail: Any) -> None:
        op.done = True
        self.node.complete(op.op_id, outcome, detail)


__all__ = ["IN_DOUBT", "NOT_STARTED", "STALE", "Coordinator", "WriteOp"]
