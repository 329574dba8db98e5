"""Leadership samples and windows as the benches' samplers take them, for the tests of
``bench/_steady.py`` and of the verdicts that use it."""

from __future__ import annotations

from _steady import WindowLeadership
from chunkraft.local.steady_leader import LeadershipSample, NodeLeadership


def sample(leader: int | None = 1, epoch: int = 3, changes: int = 1, increments: int = 0, *,
           nodes: tuple[int, ...] = (1, 2, 3), incarnation: str = "a") -> LeadershipSample:
    """Every node of ``nodes`` saying the same thing of the leadership."""
    return LeadershipSample({n: NodeLeadership(leader, epoch, changes, increments, incarnation)
                             for n in nodes})


STEADY = WindowLeadership(sample(), sample())
"""A window over which nothing moved."""
MOVED = WindowLeadership(sample(), sample(leader=2, epoch=4, changes=2, increments=1))
"""A window in which the leader moved from node 1 to node 2 (one election)."""
