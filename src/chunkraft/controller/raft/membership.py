"""QuorumMembership: adding and removing voters while the quorum serves (KIP-853's role).

pysyncobj changes its cluster one server at a time: a membership command is a log entry that
takes effect on each node as soon as it is appended (Raft's single-server change), and the
leader refuses a second one until the first has committed. Those entries travel in the journal
like ours; :func:`membership_command` writes them as ``[operation, "host:port"]`` (strings only,
so the journal check can read them without unpickling any class) and the journal check accepts
exactly that shape (``journal_check.py``).

Which controller has which Raft address is not Raft's business: a voter configured statically
(``controller.quorum.voters``) is known to every node's configuration, and one added later by a
ControllerRegistrationRecord in the metadata image (:class:`VoterDirectory`).

A node formatted to join (``chunkraft controller format --no-initial-controllers``) starts with
a ``joining`` marker in its Raft directory: until it hears from a leader it never starts an
election (it is not a voter yet, and a term it raised would unseat the leader when it is added).
"""

from __future__ import annotations

import logging
import pickle
import re
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chunkraft.controller.image.controllers import ControllersImage
from chunkraft.controller.raft.callbacks import settle
from chunkraft.records.files._fsync import fsync_directory

__all__ = [
    "JOINING_MARKER",
    "MEMBERSHIP_COMMAND_TYPE",
    "OPERATIONS",
    "QuorumMembership",
    "Voter",
    "VoterDirectory",
    "check_raft_address",
    "majority",
    "mark_joining",
    "membership_command",
    "peer_progress",
]

logger = logging.getLogger(__name__)

MEMBERSHIP_COMMAND_TYPE = 2
"""pysyncobj's ``_COMMAND_TYPE.MEMBERSHIP``: the first byte of a membership entry."""
JOINING_MARKER = "joining"
"""The file, in a node's Raft directory, that says it was formatted to join a running quorum."""
OPERATIONS = ("add", "rem")
CAUGHT_UP_ENTRIES = 1000
"""A follower this close to the commit index counts as caught up: under load a healthy one is
a few entries behind, one that needs the leader's dump is far behind."""
_ADDRESS = re.compile(
    r"^(?P<host>[A-Za-z0-9._-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\]):(?P<port>\d{1,5})$")


def check_raft_address(address: str) -> str:
    """``address`` if it is ``host:port`` with a port in 1..65535, else ValueError."""
    match = _ADDRESS.match(address)
    if match is None or not 0 < int(match["port"]) < 65536:
        raise ValueError(f"{address!r} is not a Raft address (host:port, port 1-65535)")
    return address


def membership_command(operation: str, address: str) -> bytes:
    """The command (without its type byte) that adds (``add``) or removes (``rem``) the voter
    at ``address``: pysyncobj's two-item form, strings only."""
    if operation not in OPERATIONS:
        raise ValueError(f"unknown membership operation {operation!r}")
    return pickle.dumps([operation, check_raft_address(address)], protocol=2)


def majority(voters: int) -> int:
    """How many of ``voters`` make a quorum."""
    return voters // 2 + 1


def mark_joining(raft_dir: Path) -> None:
    """Writes the joining marker into ``raft_dir`` (durably)."""
    raft_dir.mkdir(parents=True, exist_ok=True)
    marker = raft_dir / JOINING_MARKER
    marker.write_text("formatted to join a running quorum; removed once a leader is heard\n",
                      encoding="utf-8")
    fsync_directory(raft_dir)


@dataclass(frozen=True, slots=True)
class Voter:
    """One voter as the leader sees it: its id (None if no configuration or registration
    names its address), its Raft address, and whether it is connected and caught up."""

    node_id: int | None
    address: str
    connected: bool
    caught_up: bool


class VoterDirectory:
    """Raft address <-> controller id and id -> HTTP URL, from the static configuration
    overlaid by the image's controller registrations (a registration wins: it is newer)."""

    def __init__(self, static_addresses: Mapping[int, str], static_urls: Mapping[int, str],
                 registrations: Callable[[], ControllersImage]) -> None:
        self._static_ids = {address: node for node, address in static_addresses.items()}
        self._static_addresses = dict(static_addresses)
        self._static_urls = dict(static_urls)
        self._registrations = registrations

    def id_of(self, address: str) -> int | None:
        registered = self._registrations().by_raft_address(address)
        if registered is not None:
            return registered.controller_id
        node = self._static_ids.get(address)
        if node is not None and self._registrations().get(node) is None:
            return node
        return None

    def address_of(self, node_id: int) -> str | None:
        registered = self._registrations().get(node_id)
        if registered is not None:
            return registered.raft_address
        return self._static_addresses.get(node_id)

    def url_of(self, node_id: int) -> str | None:
        registered = self._registrations().get(node_id)
        if registered is not None:
            return registered.http_url
        return self._static_urls.get(node_id)

    def urls(self) -> dict[int, str]:
        """Every controller's HTTP URL this node knows, by id."""
        merged = dict(self._static_urls)
        merged.update({r.controller_id: r.http_url for r in self._registrations()})
        return merged


def peer_progress(status: Mapping[str, Any], address: str, *, leader: bool
                  ) -> tuple[bool, int | None]:
    """``(connected, match index)`` of peer ``address`` in pysyncobj's ``getStatus()``; the
    match index only on the leader (None elsewhere: a follower tracks no peer's log)."""
    connected = status.get(f"partner_node_status_server_{address}") == 2
    match = status.get(f"match_idx_server_{address}") if leader else None
    return connected, None if match is None else int(match)


class QuorumMembership:
    """The voters of one node's SyncObj, and changes to them. Thread-safe: changes are queued
    to pysyncobj's tick thread (its command queue, or :meth:`hand_over_leadership`'s one-shot
    action); reads copy sets the tick thread replaces whole or mutates under the GIL."""

    def __init__(self, syncobj: Any, self_address: str, directory: VoterDirectory) -> None:
        self._syncobj = syncobj
        self.self_address = self_address
        self.directory = directory
        self._actions: list[Callable[[], None]] = []
        self._actions_lock = threading.Lock()

    def addresses(self) -> list[str]:
        """This node's view of the voters' Raft addresses (its own included), sorted."""
        others = {str(getattr(node, "address", node)) for node in self._syncobj.otherNodes}
        return sorted(others | {self.self_address})

    def voters(self) -> list[Voter]:
        """Every voter, with connection and progress as this node (the leader) sees them."""
        status = self._syncobj.getStatus()
        leader = int(status["state"]) == 2
        commit = int(status["commit_idx"])
        result = []
        for address in self.addresses():
            node_id = self.directory.id_of(address)
            if address == self.self_address:
                result.append(Voter(node_id, address, True, True))
                continue
            connected, match = peer_progress(status, address, leader=leader)
            caught_up = connected and match is not None and match >= commit - CAUGHT_UP_ENTRIES
            result.append(Voter(node_id, address, connected, caught_up))
        return sorted(result, key=lambda voter: (voter.node_id is None, voter.node_id or 0,
                                                 voter.address))

    def add(self, address: str) -> Future[None]:
        return self._change("add", address)

    def remove(self, address: str) -> Future[None]:
        return self._change("rem", address)

    def _change(self, operation: str, address: str) -> Future[None]:
        future: Future[None] = Future()
        command = membership_command(operation, address)

        def callback(result: Any, error: int) -> None:
            settle(future, None, error)

        self._syncobj._applyCommand(command, callback, MEMBERSHIP_COMMAND_TYPE)
        return future

    def hand_over_leadership(self) -> None:
        """Asks the most caught-up connected follower to start an election now (Raft's
        TimeoutNow), from the tick thread; the answer is the next leader, not a result."""
        def transfer() -> None:
            self._syncobj.transferLeadership()

        with self._actions_lock:
            self._actions.append(transfer)

    def run_actions(self) -> None:
        """Runs the queued one-shot actions; called by the tick thread after each tick."""
        if not self._actions:
            return
        with self._actions_lock:
            actions, self._actions = self._actions, []
        for action in actions:
            try:
                action()
            except Exception:  # never take the tick thread down
                logger.exception("a quorum membership action failed")
