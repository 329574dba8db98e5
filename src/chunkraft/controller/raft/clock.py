"""The Raft clock: the clock pysyncobj takes its own timestamps with.

pysyncobj 0.3.17 reads ``CLOCK_MONOTONIC_RAW`` (its ``pysyncobj.monotonic``), not
``time.monotonic()`` (``CLOCK_MONOTONIC``). Both count from boot, but the second is slewed by NTP
and the first is not, so they drift apart: 0.244 s on a machine of this project's kind, more than
the 0.2 s minimum election timeout. Any time chunkraft compares with, or stores into, one of
pysyncobj's fields (the election deadline, a peer's last response, a connection's last read) must
come from this clock. When pre-vote compared pysyncobj's deadline with ``time.monotonic()``, a
follower that had just heard the leader saw its deadline 0.244 s in the past and asked for
pre-votes, its peers (reading the same wrong clock) granted them, and an idle quorum changed
leader about twice a second.
"""

from __future__ import annotations

import pysyncobj.syncobj

__all__ = ["raft_clock"]


def raft_clock() -> float:
    """Now, in pysyncobj's clock (seconds, monotonic).

    Read through ``pysyncobj.syncobj`` at each call, so it is always the clock that SyncObj itself
    uses, whatever pysyncobj picks on this platform (and a test may shift it)."""
    return float(pysyncobj.syncobj.monotonicTime())
