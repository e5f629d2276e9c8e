"""`MrscNode`: one member of a strong-mode global table — coordinator, acceptor and strong reader — with no I/O.

Theory of operation: like replication/node.py's RegionNode, a host owns the clock and the transport and drives the
node with `start(now)` (after a (re)start: resolves what the store holds pending), `submit_write`, `submit_read`,
`on_message(envelope, now)` and `poll(now)` at `next_deadline()`. Every call returns the envelopes to send;
completed client operations are collected with `take_completions()` as (op id, outcome, detail): outcome "ok"
(detail: (old, new) for a write), "rwce", "error" (detail: the engine error, e.g. ConditionalCheckFailed, or None
when retries ran out), "in-doubt" (500, the write may still commit) or "timeout" (500, certainly not applied).
`others` lists the other two members, nearest first (the host knows the latencies).

Durability (docs/mrsc.md): every state change goes through the port (store.py) before the message or the
completion that implies it is emitted; the node's own memory (queues, votes collected, timers) may be lost in a crash.

Deciding (docs/mrsc.md, "Who decides"): a proposal is decided by its coordinator; a proposal of another member
accepted here is applied on its Commit (or Settled, committed), dropped on its Abort (or Settled, aborted), or, when
its coordinator does not answer, committed by the majority recovery once the third member's vote proves the
coordinator cannot have aborted it (`_poll_recovery`, `_recovery_vote`). Racing proposals are ranked (`rank`); a
higher-ranked one refused here as `conflict` is taken up as soon as the item is free again, before this member's
own next write on it starts (`_take_up`, docs/mrsc.md decision 1), so contention on one item cannot livelock.

Clean-up (docs/mrsc.md, "Clean-up"): a vote on another member's proposal is dropped once its coordinator says it has
decided it (Outcome/Settled, asked after `resolve_ms`), so a lost Commit or Abort leaves no record behind; the
witness drops an image once both replicas are known to hold its version (a Commit from the coordinator, a replica's
Held, or the answer to a Sync the witness sends for images it has kept longer than `resolve_ms`). What the node
remembers about that is memory only: lost in a crash, it only delays clean-up.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ...engine.errors import DynamoError
from ...runtime.transport import Envelope
from . import member
from .config import MrscConfig
from .coordinator import Coordinator, WriteOp
from .messages import (
    ACCEPT,
    ACCEPT_AGAIN,
    ACCEPTS,
    CONFLICT,
    FENCED,
    STALE,
    Abort,
    Commit,
    Held,
    Message,
    MessageError,
    Outcome,
    Propose,
    RangeSynced,
    Repropose,
    Settled,
    Status,
    Sync,
    Synced,
    SyncRange,
    Vote,
    decode,
    encode,
    kind_of,
)
from .range_read import RangeReader, range_synced
from .records import Pending, item_id
from .strong_read import StrongReader, synced

logger = logging.getLogger(__name__)

CHANNEL = "mrsc"
# Bugs a test may plant in a member (the pytest kit and `POST /control/faults {"planted": [...]}`), to show that the
# checkers catch what they would do. "ccf-without-confirmation": a ConditionalCheckFailed is answered from the local
# copy without the Sync that confirms it is the latest version (docs/mrsc.md, "ConditionalCheckFailed").
PLANTED_BUGS = ("ccf-without-confirmation",)
# Bugs only Python code plants (experiment/simulated_run.py PlantedBugs, for the simulator's sweeps): no control
# request takes them. "accept-after-conflict": a voter that refused a proposal as `conflict` accepts it at once
# (accept-again) although it still holds the proposal it refused for (member.py), so two racing writes both commit.
ACCEPT_AFTER_CONFLICT = "accept-after-conflict"
SIMULATION_PLANTED_BUGS = (ACCEPT_AFTER_CONFLICT,)


class MrscNode:
    def __init__(self, region: str, others: list[str], port: member.StrongPort, config: MrscConfig | None = None):
        if region in others or len(others) != 2:
            raise ValueError(f"an MRSC member needs exactly two other members, not {others!r}")
        self.region = region
        self.others = tuple(others)
        self.port = port
        self.config = config or MrscConfig()
        self.coordinator = Coordinator(self)
        self.reader = StrongReader(self)
        self.range_reader = RangeReader(self)
        self.members = tuple(sorted((region, *others)))  # for ranks: every member sorts the same names
        # Recovery of proposals accepted here and not yet decided: pid -> (next ask, asks so far, table, key).
        self._recover: dict[str, tuple[float, int, str, dict]] = {}
        # Aborted records' clean-up: (table, item id) -> {other member: greatest commit version seen in its votes},
        # for the items this coordinator keeps aborted records of (memory only: a crash merely delays it).
        self._member_cv: dict[tuple[str, str], dict[str, int]] = {}
        # Vote clean-up: pid -> (next ask, asks so far, table, key) of votes on other members' proposals.
        self._vote_due: dict[str, tuple[float, int, str, dict]] = {}
        # Proposals refused here as `conflict` (they outrank the one held here): (table, item id) -> {pid: (the
        # proposal, as its Repropose, when last asked)}; taken up when the item is free again (`_take_up`). Memory
        # only: after a crash the coordinator's next Repropose finds the item free, as before.
        self._refused: dict[tuple[str, str], dict[str, tuple[Repropose, float]]] = {}
        # Witness trimming: (table, item id) -> {replica: commit version it is known to hold}; the sweep's timer,
        # its rounds without progress, and its outstanding Syncs (rid -> (table, key)).
        self._holders: dict[tuple[str, str], dict[str, int]] = {}
        self._sweep_at: float | None = None
        self._idle_sweeps = 0
        self._trim_asks: dict[int, tuple[str, dict]] = {}
        self._trim_rid = 0
        self._out: list[Envelope] = []
        self._completions: list[tuple[Any, str, Any]] = []
        self._msg_id = 0
        self.dropped_messages = 0
        # Planted bugs (PLANTED_BUGS), for tests that show a checker catches them; empty in every real run.
        self.planted: frozenset[str] = frozenset()

    # ------------------------------------------------------------------------------------------------ inputs

    def start(self, now: float) -> list[Envelope]:
        """Recovery: our own pending proposals are resolved at once; others' commit after `resolve_ms`."""
        for pending in self.port.all_pending():
            if pending.coordinator == self.region:
                self.coordinator.recover(pending, now)
            else:
                self._hold(pending.pid, pending.table, pending.key, now)
        for pid, table, key, _answer in self.port.all_votes():
            if _coordinator_of(pid) in self.others:
                self._vote_due[pid] = (now + self.config.resolve_ms / 1000, 0, table, key)
        if not self.port.witness:
            for table, key in self.port.aborted_items():
                self.note_aborted(table, key)
        if self.port.witness and self.port.untrimmed():
            self._sweep_at = now + self.config.resolve_ms / 1000
        return self._flush()

    def submit_write(
        self, op_id: Any, table: str, key: dict, evaluate: Callable[[dict | None], dict | None], now: float
    ) -> list[Envelope]:
        timeout = self.config.write_timeout_ms / 1000
        self.coordinator.submit(WriteOp(op_id, table, key, evaluate, now + timeout, now + timeout / 2, now), now)
        return self._flush()

    def submit_read(self, op_id: Any, table: str, key: dict, now: float) -> list[Envelope]:
        """A strong read: when it completes "ok", the host reads the key locally."""
        self.reader.read(op_id, table, key, now)
        return self._flush()

    def submit_range_read(self, op_id: Any, table: str, partition: dict | None, now: float) -> list[Envelope]:
        """A strong Query (`partition`: {partition key name: value}) or Scan (None: the whole table): when it
        completes "ok", the host reads locally (range_read.py)."""
        self.range_reader.read(op_id, table, partition, now)
        return self._flush()

    def on_message(self, envelope: Envelope, now: float) -> list[Envelope]:
        if envelope.src not in self.others:
            return self._drop(envelope, f"not a member: {envelope.src!r}")
        try:
            message = decode(envelope.body)  # type: ignore[arg-type]
        except (MessageError, TypeError) as error:
            return self._drop(envelope, str(error))
        kind = type(message)
        port = self.port
        table = getattr(message, "table", None)
        if table is not None and not port.holds(table):
            # Not (yet) a member for this table (a conversion still under way): no answer, as if unreachable.
            return self._drop(envelope, f"no strong table {table!r} here")
        if kind is Propose or kind is Status or kind is Repropose:
            self.coordinator.note_contention(message.table, message.key, now)
            vote, accepted = member.answer(port, message, _pending_of, self.rank)
            if vote.answer == CONFLICT and kind is Propose and ACCEPT_AFTER_CONFLICT in self.planted:
                # The planted bug: the refusal goes out, and is taken back at once as if a Repropose had come.
                self.send(envelope.src, vote)
                again = Repropose(message.pid, message.table, message.key, message.version, message.image,
                                  message.coordinator)  # fmt: skip
                vote, accepted = member.answer(port, again, _pending_of, self.rank, planted=True)
            if accepted:
                self._hold(message.pid, message.table, message.key, now)
                # Writes queued here for the item (behind a condition's confirmation) now meet another Region's
                # proposal: refused at once (docs/mrsc.md, decision 2a).
                self.coordinator.pump(message.table, message.key, now)
            elif vote.answer == CONFLICT and kind is not Status:
                self._refuse_for_now(message, now)
            if vote.answer != STALE and message.pid not in self._vote_due:  # a vote recorded here: clean it up later
                self._vote_due[message.pid] = (now + self.config.resolve_ms / 1000, 0, message.table, message.key)
            self.send(envelope.src, vote)
        elif kind is Vote:
            if message.pid in self.coordinator.proposals:
                self.coordinator.on_vote(envelope.src, message, now)
            elif message.pid in self._recover:
                self._recovery_vote(message, now)
        elif kind is Commit:
            port.apply(message.table, message.key, message.version, message.pid, message.image)
            self._recover.pop(message.pid, None)
            self._vote_due.pop(message.pid, None)
            # The coordinator applied it before sending Commit: it holds this version.
            self._committed_here(message.table, message.key, now, holder=(envelope.src, message.version))
            self.item_changed(message.table, message.key, now)
        elif kind is Abort:
            held = port.pending(message.table, message.key)
            if held is not None and held.pid == message.pid:
                # Its coordinator decided to abort it (it alone decides): drop it, raising the settled mark.
                port.abandon(message.pid, message.table, message.key)
                self.item_changed(message.table, message.key, now)
            else:
                port.drop_vote(message.pid)
            self._recover.pop(message.pid, None)
            self._vote_due.pop(message.pid, None)
        elif kind is Held:
            if port.witness:
                self._note_holder(envelope.src, message.table, message.key, message.cv, now)
        elif kind is Outcome:
            held = port.pending(message.table, message.key)
            if message.pid not in self.coordinator.proposals and (held is None or held.pid != message.pid):
                # Decided here (applied, or aborted with its aborted record), durably: we never ask about it again.
                committed = not port.aborted(message.pid)
                self.send(envelope.src, Settled(message.pid, message.table, message.key, committed))
        elif kind is Settled:
            self._settled(message, now)
        elif kind is Sync:
            self.send(envelope.src, synced(port, message.rid, message.table, message.key))
        elif kind is Synced:
            asked = self._trim_asks.pop(message.rid, None)
            if asked is not None:
                self._note_holder(envelope.src, asked[0], asked[1], message.cv, now)
            else:
                self.reader.on_synced(envelope.src, message, now)
        elif kind is SyncRange:
            try:
                answer = range_synced(port, message)
            except (KeyError, TypeError, ValueError, DynamoError) as error:  # a partition not of this table's key
                return self._drop(envelope, f"bad range: {error!r}")
            self.send(envelope.src, answer)
        elif kind is RangeSynced:
            self.range_reader.on_synced(envelope.src, message, now)
        return self._flush()

    def poll(self, now: float) -> list[Envelope]:
        self._poll_recovery(now)
        self._poll_votes(now)
        if self._sweep_at is not None and now >= self._sweep_at:
            self._sweep(now)
        self.coordinator.poll(now)
        self.reader.poll(now)
        self.range_reader.poll(now)
        return self._flush()

    def next_deadline(self) -> float | None:
        # Asked after every message and host call: the earliest time, found without building lists.
        soonest = self._sweep_at
        for entries in (self._recover, self._vote_due):
            for due, _n, _t, _k in entries.values():
                if soonest is None or due < soonest:
                    soonest = due
        for at in (self.coordinator.next_deadline(), self.reader.next_deadline(), self.range_reader.next_deadline()):
            if at is not None and (soonest is None or at < soonest):
                soonest = at
        return soonest

    def take_completions(self) -> list[tuple[Any, str, Any]]:
        done, self._completions = self._completions, []
        return done

    # ------------------------------------------------------------------------------------ used by the parts

    def send(self, dest: str, message: Message) -> None:
        self._msg_id += 1
        self._out.append(Envelope(self.region, dest, kind_of(message), self._msg_id, None, encode(message), CHANNEL))

    def complete(self, op_id: Any, outcome: str, detail: Any) -> None:
        self._completions.append((op_id, outcome, detail))

    def adopt(self, table: str, key: dict, cv: int, cpid: str, image: dict | None, now: float) -> None:
        """A newer committed image learned from another member (a refusal or a Sync answer)."""
        if self.port.apply(table, key, cv, cpid, image, drop_vote=False):
            self._committed_here(table, key, now)
            self.item_changed(table, key, now)

    def note_aborted(self, table: str, key: dict) -> None:
        """The item has aborted records here: watch the other members' versions of it (`note_member_cv`)."""
        self._member_cv.setdefault((table, item_id(key)), {})

    def note_member_cv(self, member: str, table: str, key: dict, cv: int) -> None:
        """A vote showed `member` durably holding version `cv` of the item; once both others hold a version, the
        aborted records at or below it can go (store.py `forget_aborted`)."""
        ident = (table, item_id(key))
        seen = self._member_cv.get(ident)
        if seen is None:
            return
        seen[member] = max(cv, seen.get(member, 0))
        if len(seen) == len(self.others) and not self.port.forget_aborted(table, key, min(seen.values())):
            del self._member_cv[ident]

    def item_changed(self, table: str, key: dict, now: float) -> None:
        # A refused higher-ranked proposal is taken up before our own next write may start (docs/mrsc.md,
        # decision 1): the pump then finds the item pending and waits for that proposal's decision.
        self._take_up(table, key, now)
        self.coordinator.pump(table, key, now)

    def status(self) -> dict[str, Any]:
        return {
            "region": self.region,
            "proposals": len(self.coordinator.proposals),
            "queued": sum(len(q) for q in self.coordinator.queues.values()),
            "held": len(self._recover),
            "votes_to_clean": len(self._vote_due),
            "reads": len(self.reader.rounds),
            "range_reads": len(self.range_reader.rounds),
            "dropped_messages": self.dropped_messages,
        }

    # ----------------------------------------------------------------------------------------------- helpers

    def _committed_here(self, table: str, key: dict, now: float, holder: tuple[str, int] | None = None) -> None:
        """A committed version was applied here (or was already held). A replica tells the other members (the
        witness among them; a replica ignores Held) which version it holds; the witness notes that the Commit's
        sender holds its version."""
        if not self.port.witness:
            cv = self.port.committed(table, key)[0]
            for other in self.others:
                if holder is None or other != holder[0]:
                    self.send(other, Held(table, key, cv))
            return
        if holder is not None:
            self._note_holder(holder[0], table, key, holder[1], now)
        if self._sweep_at is None:
            self._sweep_at = now + self.config.resolve_ms / 1000
            self._idle_sweeps = 0

    def _note_holder(self, replica: str, table: str, key: dict, cv: int, now: float) -> None:
        """Witness: `replica` durably holds version `cv` (or newer) of the item; trim once both replicas do."""
        ident = (table, item_id(key))
        holders = self._holders.setdefault(ident, {})
        holders[replica] = max(cv, holders.get(replica, 0))
        if len(holders) < len(self.others):
            return
        held = min(holders.values())
        if held >= self.port.committed(table, key)[0]:
            self.port.trim(table, key, held)
            del self._holders[ident]
            self._idle_sweeps = 0

    def _sweep(self, now: float) -> None:
        """Witness: ask the replicas not known to hold an image's version whether they do (a lost Held or
        Commit). Rounds back off and stop after 8 without progress (a replica down for long); the next commit
        here starts them again, and a restart too."""
        kept = self.port.untrimmed()
        self._trim_asks.clear()
        for table, key, cv in kept:
            holders = self._holders.get((table, item_id(key)), {})
            for replica in self.others:
                if holders.get(replica, 0) < cv:
                    self._trim_rid += 1
                    self._trim_asks[self._trim_rid] = (table, key)
                    self.send(replica, Sync(self._trim_rid, table, key))
        self._idle_sweeps += 1
        if not kept or self._idle_sweeps > 8:
            self._sweep_at = None
        else:
            self._sweep_at = now + self.config.resolve_ms / 1000 * 2 ** min(self._idle_sweeps - 1, 4)

    def _poll_votes(self, now: float) -> None:
        """Ask the coordinator of every vote held here for `resolve_ms` whether it has decided the proposal; back
        off, and stop after 8 asks (the record then waits for the next restart)."""
        for pid, (due, asks, table, key) in list(self._vote_due.items()):
            if now < due:
                continue
            if self.port.vote(pid) is None or asks >= 8:
                del self._vote_due[pid]
                continue
            self.send(_coordinator_of(pid), Outcome(pid, table, key))
            self._vote_due[pid] = (now + self.config.resolve_ms / 1000 * 2 ** min(asks, 4), asks + 1, table, key)

    def _settled(self, message: Settled, now: float) -> None:
        """The coordinator has decided the proposal: our vote on it can go. If we still hold it pending we
        accepted it: apply it (committed) or drop it (aborted), with the vote, in one step."""
        self._vote_due.pop(message.pid, None)
        held = self.port.pending(message.table, message.key)
        if held is not None and held.pid == message.pid:
            self._recover.pop(message.pid, None)
            if message.committed:
                self.port.apply(message.table, message.key, held.version, held.pid, held.image)
                self._committed_here(message.table, message.key, now)
            else:
                self.port.abandon(message.pid, message.table, message.key)
            self.item_changed(message.table, message.key, now)
        elif self.port.vote(message.pid) is not None:
            self.port.drop_vote(message.pid)

    def _refuse_for_now(self, message: Propose | Repropose, now: float) -> None:
        """`message`'s proposal was refused as `conflict`: remember it, to take it up once the item is free."""
        refused = self._refused.setdefault((message.table, item_id(message.key)), {})
        again = message if type(message) is Repropose else Repropose(
            message.pid, message.table, message.key, message.version, message.image, message.coordinator
        )  # fmt: skip
        refused[message.pid] = (again, now)

    def _take_up(self, table: str, key: dict, now: float) -> None:
        """The item is free here (no proposal held, none of ours undecided): answer the highest-ranked proposal
        refused here as `conflict` as its next Repropose would be answered — accepted (accept-again) unless it
        was decided or outdated meanwhile — and send the vote at once (docs/mrsc.md, decision 1).

        Why: a member refuses a higher-ranked proposal P as `conflict` only because it holds a lower-ranked one,
        which is then aborted (its coordinator meets P, rule 2) or committed. Were the member to start its next
        queued write on the item in the same step, P's next Repropose would meet a fresh lower-ranked proposal and
        another `conflict`, for as long as the member's clients keep writing the item: under steady contention on
        one item no write ever committed. Taking P up first means the highest-ranked live proposal always gathers
        its acceptance. Only a proposal asked about within the last two `retransmit_ms` is taken up: its
        coordinator re-sends Repropose every `retransmit_ms` while P is undecided, so an older ask means P was
        decided (its Commit or Abort under way) or its coordinator is cut off, and holding P would only keep the
        item waiting for it. Safe because the answer is exactly what that Repropose would get at this moment
        (member.py rule 1), and a Repropose may be delivered at any moment."""
        ident = (table, item_id(key))
        refused = self._refused.get(ident)
        if refused is None or ident in self.coordinator.active or self.port.pending(table, key) is not None:
            return  # still held (or ours undecided): its decision calls item_changed again
        del self._refused[ident]
        recent = now - 2 * self.config.retransmit_ms / 1000
        # Left out: an old ask, or a vote that changed or went with the proposal's decision. Among the rest the
        # highest rank; on a tie (one coordinator's retry at the same version) the latest asked.
        live = [
            (self.rank(message.version, message.coordinator), asked, message)
            for pid, (message, asked) in refused.items()
            if asked >= recent and self.port.vote(pid) == CONFLICT
        ]
        if not live:
            return
        best = max(live, key=lambda entry: entry[:2])[2]
        vote, accepted = member.answer(self.port, best, _pending_of, self.rank)
        if accepted:
            self._hold(best.pid, table, key, now)
        if vote.answer != CONFLICT:
            self.send(best.coordinator, vote)

    def rank(self, version: int, coordinator: str) -> tuple[int, int]:
        """A proposal's rank among racing ones (docs/mrsc.md, "Racing proposals"): its version, then the
        coordinator's turn at that version (a different member wins a tie at each version)."""
        index = self.members.index(coordinator) if coordinator in self.members else -1
        return version, (index + version) % len(self.members)

    def accepted_at(self, pid: str) -> float | None:
        """When another member's proposal `pid` was accepted here, if it is held here and was accepted less than
        `resolve_ms` ago (None otherwise: also after a restart)."""
        entry = self._recover.get(pid)
        if entry is None or entry[1] > 0:
            return None
        return entry[0] - self.config.resolve_ms / 1000

    def _hold(self, pid: str, table: str, key: dict, now: float) -> None:
        """A proposal of another member accepted here: recovered after `resolve_ms` unless decided by then."""
        self._recover[pid] = (now + self.config.resolve_ms / 1000, 0, table, key)

    def _poll_recovery(self, now: float) -> None:
        """Every `resolve_ms` (backing off to 4×): ask the coordinator how it decided (Outcome) and the third
        member what it voted (Status); the answer may decide (`_recovery_vote`)."""
        for pid, (due, asks, table, key) in list(self._recover.items()):
            if now < due:
                continue
            held = self.port.pending(table, key)
            if held is None or held.pid != pid:
                del self._recover[pid]
                continue
            third = [m for m in self.others if m != held.coordinator]
            for other in third:
                self.send(other, Status(pid, table, key, held.version, held.coordinator))
            if held.coordinator in self.others:
                self.send(held.coordinator, Outcome(pid, table, key))
            self._recover[pid] = (now + self.config.resolve_ms / 1000 * 2 ** min(asks, 2), asks + 1, table, key)

    def _recovery_vote(self, vote: Vote, now: float) -> None:
        """The third member's vote on a proposal we accepted (docs/mrsc.md, "Recovery and resolution"): commit
        it when that vote proves its coordinator cannot have aborted it; otherwise leave it to the coordinator."""
        _due, _asks, table, key = self._recover[vote.pid]
        held = self.port.pending(table, key)
        if held is None or held.pid != vote.pid:
            self._recover.pop(vote.pid, None)
            return
        own = self.port.vote(vote.pid)
        proves = (own == ACCEPT and vote.answer in (*ACCEPTS, FENCED)) or (own == ACCEPT_AGAIN and vote.answer == ACCEPT)
        if proves:
            del self._recover[vote.pid]
            # The vote stays, so a late Status from the coordinator is still answered as before.
            self.port.apply(table, key, held.version, vote.pid, held.image, drop_vote=False)
            self._committed_here(table, key, now)
            self.item_changed(table, key, now)
        elif vote.answer == STALE and vote.cv > self.port.committed(table, key)[0]:
            self.adopt(table, key, vote.cv, vote.cpid, vote.image, now)

    def _flush(self) -> list[Envelope]:
        out, self._out = self._out, []
        return out

    def _drop(self, envelope: Envelope, reason: str) -> list[Envelope]:
        self.dropped_messages += 1
        logger.warning("mrsc message %r dropped: %s", envelope, reason)
        return []


def _coordinator_of(pid: str) -> str:
    """Proposal ids are "<region>-<epoch>-<n>" (records.py)."""
    return pid.rsplit("-", 2)[0]


def _pending_of(message: Propose) -> Pending:
    return Pending(message.pid, message.table, message.key, message.version, message.coordinator, message.image)


__all__ = ["CHANNEL", "PLANTED_BUGS", "MrscNode", "item_id"]
