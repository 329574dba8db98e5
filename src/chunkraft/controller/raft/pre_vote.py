"""Pre-vote (Raft thesis, section 9.6; Kafka's KIP-996): ask before raising the term.

pysyncobj starts an election as soon as a node's election timeout runs out: it raises its term
and asks for votes. A node that merely missed the leader for a moment (a controller just
restarted on a busy host, a paused process, a node cut off in a minority) thereby raises the
term of everyone it reaches, and the healthy leader steps down for nothing: 4 of 12 rolling
restarts changed leader twice instead of once.

With pre-vote, a node whose timeout ran out first asks the others whether they *would* vote for
it at its next term (``pre_vote``), changing nothing anywhere. A peer grants it only if it has
not heard from a leader, nor granted a vote, within the minimum election timeout, its own term
is below the one asked for, and the asker's log is at least as up to date as its own; a leader
never grants one. Only with a majority of grants (its own included) does the node start the
real election. So a node the leader still reaches cannot unseat it, and a minority never raises
the term; when the leader is really gone, the other followers stop hearing it too and grant.

A round stands only while nothing has overtaken it: it asks for the term after the node's
current one, and the node has heard no leader and granted no vote since the round began. A
round that a leader, a vote or a new term overtook is dropped, and a grant that arrives for it
later (a stale answer) counts for nothing; so a new leader is never unseated by a round that
started before it, and a won round is checked again on the tick that would elect.

A leadership transfer (TimeoutNow, from the leader itself) skips the pre-vote: the leader asked
for that election, and its followers, still hearing it, would refuse.

:class:`PreVote` holds one node's rounds; :func:`grants` is a peer's decision. Both are plain
logic over numbers, driven by :class:`~chunkraft.controller.raft.durable_syncobj.DurableSyncObj`
in pysyncobj's tick thread.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

__all__ = ["PRE_VOTE", "PRE_VOTE_RESPONSE", "PreVote", "grants", "log_up_to_date"]

PRE_VOTE = "pre_vote"
"""``{"type", "term", "last_log_index", "last_log_term"}``: would you vote for me at ``term``?"""
PRE_VOTE_RESPONSE = "pre_vote_response"
"""``{"type", "term", "granted"}``: the answer for that ``term``."""


def log_up_to_date(last_index: int, last_term: int, my_last_index: int,
                   my_last_term: int) -> bool:
    """Raft's vote test: the asker's log ends in a later term, or in the same term no
    earlier."""
    return last_term > my_last_term or (last_term == my_last_term
                                        and last_index >= my_last_index)


def grants(*, term: int, last_index: int, last_term: int, my_term: int, my_last_index: int,
           my_last_term: int, is_leader: bool, leader_recent: bool) -> bool:
    """Whether a node grants a pre-vote for ``term`` (its own state given as ``my_*``;
    ``leader_recent``: it heard from a leader, or granted a vote, within the minimum election
    timeout)."""
    if is_leader or leader_recent or term <= my_term:
        return False
    return log_up_to_date(last_index, last_term, my_last_index, my_last_term)


@dataclass
class PreVote:
    """One node's pre-vote rounds and its last contact with a leader; not thread-safe
    (pysyncobj's tick thread only). Times are in the Raft clock (``clock.py``).

    A round is for one ``term`` (the node's current term + 1) and collects the ids of the nodes
    that granted it. :meth:`won` is true once a majority of ``voters`` (this node included)
    granted, until :meth:`reset`. :meth:`stands` says whether the round is still the node's
    own: nothing (a leader heard, a vote granted, a new term) has overtaken it.
    """

    rounds: int = 0
    """Rounds started (for tests and status)."""
    term: int | None = None
    granted: set[Hashable] = field(default_factory=set)
    started_at: float = float("-inf")
    deadline: float | None = None
    """The election deadline the node set for this round (its wait for the answers); None when
    no round is open."""
    contact_at: float = float("-inf")
    """When this node last heard from the leader of its term or granted a vote."""
    _won: bool = False

    def note_contact(self, now: float) -> None:
        """A leader of this node's term was heard, or a vote granted, at ``now``."""
        self.contact_at = now

    def contact_within(self, now: float, window: float) -> bool:
        """Whether the last contact is less than ``window`` seconds before ``now``."""
        return now - self.contact_at < window

    def start(self, term: int, me: Hashable, voters: int, now: float) -> bool:
        """Starts a round for ``term`` at ``now``; this node grants itself. True when that
        alone is a majority (a node that is the only voter)."""
        self.rounds += 1
        self.term = term
        self.granted = {me}
        self.started_at = now
        self.deadline = None
        self._won = voters / 2 < 1
        return self._won

    def stands(self, current_term: int) -> bool:
        """Whether a round is open and still this node's next step: it asks for the term after
        ``current_term`` and no leader was heard, nor vote granted, since it started."""
        return (self.term is not None and self.term == current_term + 1
                and self.contact_at < self.started_at)

    def answer(self, term: int, voter: Hashable, granted: bool, voters: int) -> bool:
        """Counts ``voter``'s answer for ``term``; True when it just made the majority. The
        caller checks :meth:`stands` before acting on it."""
        if not granted or term != self.term or self._won:
            return False
        self.granted.add(voter)
        self._won = len(self.granted) > voters / 2
        return self._won

    def won(self) -> bool:
        return self._won

    def reset(self) -> None:
        """Forgets the round (an election started, or the round was overtaken); called on every
        tick of the Raft thread, so it costs one comparison when there is no round."""
        if self.term is None and not self._won:
            return
        self.term = None
        self.granted = set()
        self.started_at = float("-inf")
        self.deadline = None
        self._won = False
