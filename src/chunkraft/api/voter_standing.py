"""Whether this controller is a voter: a node left out of the quorum stops answering reads.

A voter that is removed (``chunkraft quorum remove-controller``) while its process still runs
hears nothing more: the leader drops it from the configuration before it could send it the
change, and the voters connect only to voters. So it keeps its image as it was, and would
answer every read from it for as long as it runs. The same holds for a node formatted to join
that has not been added yet (its image is empty).

So a node that has not been ready (:mod:`chunkraft.api.readiness`) for :data:`UNREADY_SECONDS`
asks the other controllers' ``GET /readyz`` (no credentials needed: readiness, the leader, the
voter ids) every :data:`PROBE_SECONDS`. (Not ready, rather than "no leader": a removed voter is
out of touch with a majority, but with pre-vote it never starts an election, so it still names
its old leader.) When a ready controller names a leader and voters that leave this node out,
this node is *not a voter*: reads and the metadata stream answer 503 NOT_CONTROLLER naming the
voters, so admin clients and brokers move on to a controller whose image still changes.
The standing clears the moment this node is ready again (it was added back), or a ready
controller counts it among the voters.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping

import httpx

__all__ = ["PROBE_SECONDS", "UNREADY_SECONDS", "VoterStanding"]

logger = logging.getLogger(__name__)

UNREADY_SECONDS = 5.0
"""How long a node is not ready before it asks whether it is still a voter: longer than an
election takes, so a node never asks during an ordinary change of leader."""
PROBE_SECONDS = 2.0
"""How often it asks (and how often it looks at whether a leader is known)."""
PROBE_TIMEOUT_SECONDS = 1.0
"""One ``/readyz`` of another controller: a controller that does not answer is skipped."""


class VoterStanding:
    """This node's standing in the quorum as the other controllers see it.

    Contract: :meth:`refusal` is None unless a ready controller that knows a leader reported
    voters without this node, after this node had not been ready for :data:`UNREADY_SECONDS`;
    it is None again as soon as :meth:`observe` sees this node ready, or a ready controller
    reports voters that include it.
    Only the event loop's task (:meth:`run`) changes it; handlers read it.
    """

    def __init__(self, node_id: int, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.node_id = node_id
        self.monotonic = monotonic
        self.ready_at = monotonic()
        self.excluded: tuple[int, tuple[int, ...]] | None = None
        """(the controller that reported it, the voters it named) while this node is out."""

    def refusal(self) -> str | None:
        """Why this node must not answer reads, or None."""
        if self.excluded is None:
            return None
        reporter, voters = self.excluded
        return (f"controller {self.node_id} is not a voter of the quorum (controller "
                f"{reporter} names the voters {', '.join(map(str, voters))}): its metadata no "
                "longer changes; ask another controller")

    def observe(self, ready: bool) -> bool:
        """Notes whether this node is ready now (leaving its standing out of it); True when it
        is time to ask the others."""
        now = self.monotonic()
        if ready:
            if self.excluded is not None:
                logger.info("controller %d is ready again: a voter", self.node_id)
            self.excluded = None
            self.ready_at = now
            return False
        return now - self.ready_at >= UNREADY_SECONDS

    def judge(self, reporter: int, answer: Mapping[str, object]) -> bool:
        """Takes one controller's ``/readyz`` answer; True when it shows this node is out."""
        voters = answer.get("voter_ids")
        if answer.get("ready") is not True or answer.get("leader_id") is None \
                or not isinstance(voters, list) or not voters \
                or not all(isinstance(voter, int) for voter in voters):
            return False
        if self.node_id in voters:
            self.excluded = None
            return False
        if self.excluded is None:
            logger.warning("controller %d is not a voter: controller %d names the voters %s; "
                           "reads answer 503 until it is a voter again", self.node_id,
                           reporter, voters)
        self.excluded = (reporter, tuple(sorted(voters)))
        return True

    async def probe(self, client: httpx.AsyncClient, peers: Mapping[int, str]) -> None:
        """Asks each other controller's ``/readyz`` until one shows whether this node is out."""
        for node_id, url in sorted(peers.items()):
            if node_id == self.node_id:
                continue
            try:
                answer = await client.get(f"{url}/readyz", timeout=PROBE_TIMEOUT_SECONDS)
                body = answer.json()
            except (httpx.HTTPError, ValueError):
                continue
            if isinstance(body, dict) and body.get("ready") is True:
                self.judge(node_id, body)
                return  # a ready controller's word settles it, either way

    async def run(self, ready: Callable[[], bool], client: Callable[[], httpx.AsyncClient],
                  peers: Callable[[], Mapping[int, str]]) -> None:
        """Looks every :data:`PROBE_SECONDS` until cancelled (``client()`` only when it asks)."""
        while True:
            await asyncio.sleep(PROBE_SECONDS)
            if self.observe(ready()):
                await self.probe(client(), peers())
