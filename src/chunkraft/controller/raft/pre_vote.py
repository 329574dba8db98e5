"""Pre-vote (Raft thesis, section 9.6; Kafka's KIP-996): ask before raising the term.

pysyncobj starts an election as soon as a node's election timeout runs out: it raises its term
and asks for votes. A node that merely missed the leader for a moment (a controller just
restarted on a busy host, a paused process, a node cut off in a minority) thereby raises the
term of everyone it reaches, and the healthy leader steps down for nothing: 4 of 12 rolling
restarts changed leader twice instead of once.

With pre-vote, a node whose timeout ran out first asks the others whether they *would* vote for
it at its next term (``pre_vote``), changing nothing anywhere. A peer grants it only if it has
not heard from a leader within its own election timeout (it is a candidate, or a follower whose
deadline has passed) and the asker's log is at least as up to date as its own; a leader never
grants one. Only with a majority of grants (its own included) does the node start the real
election. So a node the leader still reaches cannot unseat it, and a minority never raises the
term; when the leader is really gone, the other followers' timeouts have run out too and they
grant.

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
           my_last_term: int, is_leader: bool, heard_from_leader: bool) -> bool:
    """Whether a node grants a pre-vote for ``term`` (its own state given as ``my_*``)."""
    if is_leader or heard_from_leader or term <= my_term:
        return False
    return log_up_to_date(last_index, last_term, my_last_index, my_last_term)


@dataclass
class PreVote:
    """One node's pre-vote rounds; not thread-safe (pysyncobj's tick thread only).

    A round is for one ``term`` (the node's current term + 1) and collects the ids of the
    nodes that granted it. :meth:`won` is true once a majority of ``voters`` (this node
    included) granted, until :meth:`reset`.
    """

    rounds: int = 0
    """Rounds started (for tests and status)."""
    term: int | None = None
    granted: set[Hashable] = field(default_factory=set)
    deadline: float | None = None
    """The election deadline the node set when it started this round (not a leader's)."""
    _won: bool = False

    def start(self, term: int, me: Hashable, voters: int) -> bool:
        """Starts a round for ``term``; this node grants itself. True when that alone is a
        majority (a node that is the only voter)."""
        self.rounds += 1
        self.term = term
        self.granted = {me}
        self._won = voters / 2 < 1
        return self._won

    def answer(self, term: int, voter: Hashable, granted: bool, voters: int) -> bool:
        """Counts ``voter``'s answer for ``term``; True when it just made the majority."""
        if not granted or term != self.term or self._won:
            return False
        self.granted.add(voter)
        self._won = len(self.granted) > voters / 2
        return self._won

    def won(self) -> bool:
        return self._won

    def reset(self) -> None:
        """Forgets the round (an election started, or a leader was heard); called on every
        tick of the Raft thread, so it costs one comparison when there is no round."""
        if self.term is None and not self._won:
            return
        self.term = None
        self.granted = set()
        self.deadline = None
        self._won = False
