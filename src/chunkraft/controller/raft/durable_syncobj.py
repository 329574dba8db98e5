"""DurableSyncObj: pysyncobj's SyncObj that acknowledges and commits only what is on disk.

pysyncobj 0.3.17 sends a follower's acknowledgement (``next_node_idx``) right after it appends
the entries to its mmap'ed journal, and a leader counts itself toward the commit of an entry
as soon as it has appended it; neither is on disk then (its GitHub issue #84). A power loss of a
majority can therefore lose an entry the leader counted as committed. Raft (and etcd) make the
entries durable first.

This subclass, used with ``durable_journal.DurableJournal``:

- holds every ``next_node_idx`` a follower sends while its journal has unsynced writes (and
  every later one behind it, so the leader sees them in order), and sends them at the start of
  the next tick right after one fdatasync: one sync per tick covers every AppendEntries that
  tick received (group commit);
- syncs the journal at the start of every tick, before pysyncobj's commit loop counts the
  leader's own entries, and right after a new leader appends its no-op (a one-node cluster
  could otherwise commit it in the same tick);
- on the leader, also syncs right after the tick appended proposals and sent them: the leader's
  fdatasync then runs while the followers receive, append and sync the same entries, instead of
  after their acknowledgements arrive (the sync at the start of the next tick finds nothing
  left to do).

It also drops, and logs, every message carrying a term outside 0..MAX_EPOCH (``term_range.py``;
one flipped byte makes such a term) before pysyncobj reads it: such a term is never adopted,
voted for or appended. And a node at term MAX_EPOCH never campaigns, since its candidate term
would be MAX_EPOCH + 1: its election deadline is held back while it is not the leader, and once
that deadline has passed (no leader heard from for an election timeout)
:attr:`DurableSyncObj.campaign_refused` is true and one error is logged. It can still follow a
leader of term MAX_EPOCH; it can never elect one.

Before raising its term for an election, a node asks for pre-votes (``pre_vote.py``): a node
the leader still reaches, or one in a minority, never raises the term, so a follower that
restarts or pauses does not unseat a healthy leader. A leadership transfer skips it. Every time
compared with pysyncobj's (its election deadline above all) is read from pysyncobj's own clock
(``clock.py``), never from ``time.monotonic()``.

Term and vote need nothing here: ``DurableJournal.setCurrentTerm`` stores them durably before
it returns, and pysyncobj sends its RequestVote, vote and AppendEntries only after that call.

Runs in pysyncobj's tick thread; nothing here is for other threads.
"""

from __future__ import annotations

import logging
import pickle
import queue
from collections.abc import Callable
from typing import Any

from pysyncobj import _RAFT_STATE, SyncObj
from pysyncobj.syncobj import FAIL_REASON

from chunkraft.controller.raft.clock import raft_clock
from chunkraft.controller.raft.entry import MAX_EPOCH
from chunkraft.controller.raft.pre_vote import PRE_VOTE, PRE_VOTE_RESPONSE, PreVote, grants
from chunkraft.controller.raft.term_range import out_of_range_term

__all__ = ["DurableSyncObj"]

logger = logging.getLogger(__name__)

_REFUSAL_LOG_INTERVAL = 1.0  # seconds: a peer repeating a bad term must not flood the log
_MAX_FAILED_PER_TICK = 100_000  # bounded: the queue is pysyncobj's commandsQueueSize at most


class DurableSyncObj(SyncObj):  # type: ignore[misc]
    """A SyncObj whose journal writes are durable before they are acknowledged or committed.

    Only the leader appends proposals: a command queued on a node that is not the leader fails
    NOT_LEADER and one another node forwards is dropped (pysyncobj would forward them).

    Its journal must offer ``sync()`` and ``unsynced`` (``DurableJournal``, possibly inside
    ``ConflictOnlyJournal``); with pysyncobj's in-memory journal it behaves like a SyncObj.
    """

    _SyncObj__raftElectionDeadline: float  # pysyncobj's, by its mangled name
    _SyncObj__raftLeader: Any
    _SyncObj__raftState: Any
    _SyncObj__raftCurrentTerm: int
    _SyncObj__votedForNodeId: Any
    joining = False
    """Formatted to join a running quorum and no leader heard from yet: no elections."""
    _on_joined: Callable[[], None] | None = None

    def __init__(self, *args: Any, joining: bool = False,
                 on_joined: Callable[[], None] | None = None, pre_vote: bool = True,
                 **kwargs: Any) -> None:
        # Before SyncObj.__init__, which may start the tick thread.
        self.joining = joining
        self.pre_vote_enabled = pre_vote
        self.pre_vote = PreVote()
        """This node's pre-vote rounds (``pre_vote.py``)."""
        self._on_joined = on_joined
        self._held_acks: list[tuple[Any, bool, int, bool]] = []
        self.acks_held = 0
        """Acknowledgements that waited for a sync (for tests and status)."""
        self.messages_refused = 0
        """Raft messages dropped for a term outside 0..MAX_EPOCH (for tests and status)."""
        self._refusal_logged_at = float("-inf")
        self.commands_refused = 0
        """Commands failed NOT_LEADER or forwarded ones dropped (see _checkCommandsToApply)."""
        self.campaign_refused = False
        """True while this node is at term MAX_EPOCH with no leader heard from for an election
        timeout: it would have started an election past the epoch range (read by any thread)."""
        self._election_due = float("inf")
        self._campaign_refusal_logged = False
        super().__init__(*args, **kwargs)

    def _onTick(self, timeToWait: float = 0.0) -> None:
        self._sync_journal_and_release_acks()
        self._hold_elections_while_joining()
        self._hold_elections_at_the_last_epoch()
        self._pre_vote_before_electing()
        super()._onTick(timeToWait)

    def _pre_vote_before_electing(self) -> None:
        """When pysyncobj would start an election this tick, asks for pre-votes first and holds
        the election back until a majority granted (see ``pre_vote.py``)."""
        if not self.pre_vote_enabled:
            return
        self_node = self._SyncObj__selfNode
        if self._SyncObj__raftState == _RAFT_STATE.LEADER or self_node is None:
            self.pre_vote.reset()
            return
        now = raft_clock()
        if self.pre_vote.term is not None and not self.pre_vote.stands(
                self._SyncObj__raftCurrentTerm):
            self._drop_overtaken_round(now)
        deadline = self._SyncObj__raftElectionDeadline
        if deadline > now:
            return  # pysyncobj does not elect this tick
        if self._SyncObj__transferInProgress or self.pre_vote.won():
            # The leader asked for this election, or a majority agreed to a round that still
            # stands (checked just above): pysyncobj elects in this tick.
            if self.pre_vote.won():
                logger.info("pre-vote for term %d granted by a majority (%s): starting an "
                            "election", self.pre_vote.term, _ids(self.pre_vote.granted))
            self.pre_vote.reset()
            return
        if not self._SyncObj__connectedToAnyone():
            return  # pysyncobj does not elect either
        others = self._SyncObj__otherNodes
        term = self._SyncObj__raftCurrentTerm + 1
        if self.pre_vote.start(term, self_node.id, len(others) + 1, now):
            return  # the only voter: elect now
        # The round's wait for answers: when it passes unwon, the next round starts.
        self.pre_vote.deadline = now + self._SyncObj__generateRaftTimeout()
        self._SyncObj__raftElectionDeadline = self.pre_vote.deadline
        request = {"type": PRE_VOTE, "term": term,
                   "last_log_index": self._SyncObj__getCurrentLogIndex(),
                   "last_log_term": self._SyncObj__getCurrentLogTerm()}
        for node in others:
            self._SyncObj__transport.send(node, request)

    def _drop_overtaken_round(self, now: float) -> None:
        """Forgets a round that a leader, a granted vote or a new term overtook. If the
        election deadline is still the one the round set (a won round sets 0, "elect now"),
        nothing of pysyncobj's moved it since: a full election timeout starts again."""
        if self._SyncObj__raftElectionDeadline == self.pre_vote.deadline:
            self._SyncObj__raftElectionDeadline = now + self._SyncObj__generateRaftTimeout()
        self.pre_vote.reset()

    def _answer_pre_vote(self, node: Any, message: dict[str, Any]) -> None:
        """A peer's pre-vote request (answered, nothing changed here) or answer (counted)."""
        if message.get("type") == PRE_VOTE_RESPONSE:
            voters = len(self._SyncObj__otherNodes) + 1
            term = message.get("term")
            if (isinstance(term, int)
                    and self._SyncObj__raftState != _RAFT_STATE.LEADER
                    and self.pre_vote.stands(self._SyncObj__raftCurrentTerm)
                    and self.pre_vote.answer(term, getattr(node, "id", node),
                                             message.get("granted") is True, voters)):
                self.pre_vote.deadline = 0.0
                self._SyncObj__raftElectionDeadline = 0.0  # elect on the next tick
            return
        if self._SyncObj__selfNode is None:
            return
        state = self._SyncObj__raftState
        recent = self.pre_vote.contact_within(raft_clock(), self._SyncObj__conf.raftMinTimeout)
        try:
            granted = grants(term=int(message["term"]),
                             last_index=int(message["last_log_index"]),
                             last_term=int(message["last_log_term"]),
                             my_term=self._SyncObj__raftCurrentTerm,
                             my_last_index=self._SyncObj__getCurrentLogIndex(),
                             my_last_term=self._SyncObj__getCurrentLogTerm(),
                             is_leader=state == _RAFT_STATE.LEADER, leader_recent=recent)
        except (KeyError, TypeError, ValueError):
            return  # a malformed request from an authenticated peer: not answered
        self._SyncObj__transport.send(node, {"type": PRE_VOTE_RESPONSE,
                                             "term": message["term"], "granted": granted})

    def _note_leader_contact(self, node: Any, message: dict[str, Any], voted_before: Any) -> None:
        """After pysyncobj handled a message: an AppendEntries it accepted (the sender is now
        this node's leader) or a vote it granted is a contact that refuses pre-votes for the
        minimum election timeout and overtakes an open round."""
        kind = message.get("type")
        if kind == "append_entries":
            if (self._SyncObj__raftLeader == node
                    and message.get("term") == self._SyncObj__raftCurrentTerm):
                self.pre_vote.note_contact(raft_clock())
        elif kind == "request_vote":
            voted = self._SyncObj__votedForNodeId
            if voted is not None and voted != voted_before:
                self.pre_vote.note_contact(raft_clock())

    def _hold_elections_while_joining(self) -> None:
        """A node that is not a voter yet must not campaign: its elections cannot succeed (no
        voter knows it), and the term each one raises would unseat the leader as soon as the
        leader adds it. Once a leader has been heard, it is a node like the others."""
        if not self.joining:
            return
        if self._SyncObj__raftLeader is not None:
            self.joining = False
            if self._on_joined is not None:
                self._on_joined()
            return
        self._SyncObj__raftElectionDeadline = float("inf")

    def _hold_elections_at_the_last_epoch(self) -> None:
        """At term MAX_EPOCH, keeps pysyncobj's election deadline out of reach (it would raise
        the term past every epoch) and notes when that deadline has passed."""
        if (self._SyncObj__raftCurrentTerm < MAX_EPOCH
                or self._SyncObj__raftState == _RAFT_STATE.LEADER):
            self.campaign_refused = False
            return
        deadline = self._SyncObj__raftElectionDeadline
        if deadline != float("inf"):
            # pysyncobj set it (at start, or on a leader's message, a vote or a TimeoutNow):
            # keep when it falls due, and move it where pysyncobj never reaches it.
            self._election_due = deadline
            self._SyncObj__raftElectionDeadline = float("inf")
        self.campaign_refused = raft_clock() >= self._election_due
        if self.campaign_refused and not self._campaign_refusal_logged:
            self._campaign_refusal_logged = True
            logger.error(
                "not starting an election: this node's Raft term is %d, the largest epoch an "
                "int32 can hold, and a candidate would need term %d. It can still follow a "
                "leader of term %d but no election can ever succeed past it; the quorum needs "
                "operator action (a new cluster, or restored Raft directories). Not ready until "
                "a leader is heard from", self._SyncObj__raftCurrentTerm, MAX_EPOCH + 1,
                MAX_EPOCH)

    def _sync_journal_and_release_acks(self) -> None:
        # If the sync raises (a failing disk), the acks stay held and pysyncobj's tick loop logs
        # and retries: this node then stops acknowledging, as it must.
        sync = getattr(self._SyncObj__raftLog, "sync", None)
        if sync is not None:
            sync()
        held, self._held_acks = self._held_acks, []
        for node, reset, next_index, success in held:
            SyncObj._SyncObj__sendNextNodeIdx(self, node, reset=reset, nextNodeIdx=next_index,
                                              success=success)

    def _journal_unsynced(self) -> bool:
        journal = self._SyncObj__raftLog
        # len() settles ConflictOnlyJournal's pending truncation, so it is written (and counted
        # as unsynced) before we decide, and synced before the acknowledgement leaves.
        len(journal)
        return bool(getattr(journal, "unsynced", False))

    # pysyncobj's private method (SyncObj.__sendNextNodeIdx), overridden by its mangled name.
    def _SyncObj__sendNextNodeIdx(self, node: Any, reset: bool = False,
                                  nextNodeIdx: int | None = None, success: bool = False) -> None:
        if nextNodeIdx is None:
            # pysyncobj's default, taken now: the log may grow before the ack is released.
            nextNodeIdx = self._SyncObj__getCurrentLogIndex() + 1
        if self._held_acks or self._journal_unsynced():
            self._held_acks.append((node, reset, nextNodeIdx, success))
            self.acks_held += 1
            return
        SyncObj._SyncObj__sendNextNodeIdx(self, node, reset=reset, nextNodeIdx=nextNodeIdx,
                                          success=success)

    def _checkCommandsToApply(self) -> None:
        # pysyncobj hands the commands queued on a node that is not the leader to the leader
        # ('apply_command'), which appends them in its own term. chunkraft proposes only what
        # its leader validated on the leader's image, chained by expected offsets; a command
        # queued on a node that lost leadership (a paused old leader, say) carries its stale
        # view, and a forwarded barrier (which takes an offset anywhere) landed in the middle
        # of the new leader's chain, where it filled exactly the gap a refused batch left, so
        # the next batch applied on a state it was not validated against (found by the
        # nemesis campaign). So a node that is not the leader fails what it has queued, NOT_LEADER.
        if not self._isLeader():
            self.commands_refused += self._fail_queued_commands()
            return
        super()._checkCommandsToApply()
        if self._journal_unsynced():
            # The proposals just appended went out to the followers already: sync now, in
            # parallel with theirs (see the module docstring).
            self._SyncObj__raftLog.sync()

    def _fail_queued_commands(self) -> int:
        commands = self._SyncObj__commandsQueue
        failed = 0
        for _ in range(_MAX_FAILED_PER_TICK):
            try:
                _command, callback = commands.get_nowait()
            except queue.Empty:
                break
            failed += 1
            if callable(callback):  # a tuple is another node's forwarded command: dropped
                callback(None, FAIL_REASON.NOT_LEADER)
        return failed

    # pysyncobj's private method (SyncObj.__onMessageReceived); its transport callback is bound
    # by the mangled name in SyncObj.__init__, so this override sees every message first.
    def _SyncObj__onMessageReceived(self, node: Any, message: Any) -> None:
        if message.get("type") == "apply_command":
            # Another node forwarding its queued command (see _checkCommandsToApply): never
            # appended here, whatever version sent it; the sender's proposal times out.
            self.commands_refused += 1
            return
        why = out_of_range_term(message, self._completed_entries(message))
        if why is not None:
            self.messages_refused += 1
            now = raft_clock()
            if now - self._refusal_logged_at >= _REFUSAL_LOG_INTERVAL:
                self._refusal_logged_at = now
                logger.error("dropped a Raft %s message from %s: %s (%d dropped so far); a term "
                             "no epoch can hold is never adopted", message.get("type"),
                             getattr(node, "address", node), why, self.messages_refused)
            return
        kind = message.get("type")
        if kind in (PRE_VOTE, PRE_VOTE_RESPONSE):
            self._answer_pre_vote(node, message)  # pysyncobj knows neither type
            return
        voted_before = self._SyncObj__votedForNodeId
        SyncObj._SyncObj__onMessageReceived(self, node, message)
        self._note_leader_contact(node, message, voted_before)

    def _completed_entries(self, message: Any) -> list[Any]:
        """The entry a final piece of a large AppendEntries completes (pysyncobj reassembles it
        itself, after our check), so its term is checked too; [] for any other message."""
        if not (isinstance(message, dict) and message.get("transmission") == "finish"):
            return []
        try:
            # The same bytes pysyncobj unpickles next, from the same authenticated peer.
            return [pickle.loads(self._SyncObj__recvTransmission + message["data"])]
        except Exception:
            return []  # pysyncobj's own handling of a broken transmission applies

    def _SyncObj__onBecomeLeader(self) -> None:
        SyncObj._SyncObj__onBecomeLeader(self)
        sync = getattr(self._SyncObj__raftLog, "sync", None)
        if sync is not None:
            sync()


def _ids(nodes: set[Any]) -> str:
    return ", ".join(sorted(str(node) for node in nodes))
