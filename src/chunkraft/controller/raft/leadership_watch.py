"""LeadershipWatch: how often the leader and the term moved, as one node saw them.

A steady quorum elects once and keeps its leader; every later change of leader or rise of the
term is an event an operator (and every test or bench that assumes a steady state) wants to
count. The Raft thread calls :meth:`LeadershipWatch.observe` on each tick with the node's term
and the leader it knows; the counts are read from any thread (ints and floats, read whole under
the GIL).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable

__all__ = ["LeadershipWatch"]


class LeadershipWatch:
    """Counts leadership changes and term increments seen by one node.

    - :attr:`leadership_changes`: times the leader this node knows became a leader it did not
      know before: another node, or the same node at a higher term (the first election counts
      too, so an idle quorum shows 1). A moment with no leader known (an election in progress)
      is not a change by itself; the leader that comes out of it is one unless it is the same
      node at the same term.
    - :attr:`term_increments`: by how much this node's term rose since the watch began (the
      term it started with is the base).
    - :meth:`leader_for`: seconds since the current leader (node and term) was first seen;
      None while no leader is known.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.leadership_changes = 0
        self.term_increments = 0
        self._term: int | None = None
        self._leader: tuple[Hashable, int] | None = None
        self._leader_known = False
        self._leader_since: float | None = None

    def observe(self, term: int, leader: Hashable | None) -> bool:
        """The node's term and the leader it knows now (None: none known); True when that is
        a leadership change."""
        if self._term is not None and term > self._term:
            self.term_increments += term - self._term
        if self._term is None or term > self._term:
            self._term = term
        if leader is None:
            self._leader_known = False
            return False
        self._leader_known = True
        current = (leader, term)
        if current == self._leader:
            return False
        self._leader = current
        self.leadership_changes += 1
        self._leader_since = self._clock()
        return True

    def leader_for(self) -> float | None:
        """Seconds the leader known now has led (as first seen here); None without one."""
        if not self._leader_known or self._leader_since is None:
            return None
        return max(self._clock() - self._leader_since, 0.0)
