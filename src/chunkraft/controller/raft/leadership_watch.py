"""LeadershipWatch: how often the leader and the term moved, as one node saw them.

A steady quorum elects once and keeps its leader; every later change of leader or rise of the
term is an event an operator (and every test or bench that assumes a steady state) wants to
count. The Raft thread calls :meth:`LeadershipWatch.observe` on each tick with the node's term
and the leader it knows; the counts are read from any thread (ints and floats, read whole under
the GIL).
"""

from __future__ import annotations

import secrets
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
    - :attr:`term_increments`: by how much this node's term rose since it first knew a leader
      (the term of that leader is the base: a node that restarts or joins adopts the quorum's
      term without any election, and that is not counted; 0 in a quorum steady since then).
    - :meth:`leader_for`: seconds since the current leader (node and term) was first seen;
      None while no leader is known.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.incarnation = secrets.token_hex(8)
        """Random, one per watch (so per process): tells a restarted node's counts apart."""
        self.leadership_changes = 0
        self.term_increments = 0
        self._term: int | None = None
        self._leader: tuple[Hashable, int] | None = None
        self._leader_known = False
        self._leader_since: float | None = None

    def observe(self, term: int, leader: Hashable | None) -> bool:
        """The node's term and the leader it knows now (None: none known); True when that is
        a leadership change."""
        if self._term is None:
            if leader is None:
                return False  # no base before the first leader
            self._term = term
        elif term > self._term:
            self.term_increments += term - self._term
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
