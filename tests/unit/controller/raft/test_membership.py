"""controller/raft/membership: the membership command's shape, addresses, majorities, the
joining marker, the id/URL directory, and QuorumMembership over a stand-in SyncObj."""

from __future__ import annotations

import pickle
import uuid
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from pysyncobj import FAIL_REASON

from chunkraft.controller.image.controllers import ControllersImage, replay_controller_registration
from chunkraft.controller.raft.log import ProposalError
from chunkraft.controller.raft.membership import (
    JOINING_MARKER,
    MEMBERSHIP_COMMAND_TYPE,
    QuorumMembership,
    VoterDirectory,
    check_raft_address,
    majority,
    mark_joining,
    membership_command,
)
from chunkraft.records import ControllerRegistrationRecord


def test_the_command_is_two_strings_pysyncobj_reads_as_a_change() -> None:
    command = membership_command("add", "10.0.0.4:9093")
    assert pickle.loads(command) == ["add", "10.0.0.4:9093"]
    assert MEMBERSHIP_COMMAND_TYPE == 2  # pysyncobj's _COMMAND_TYPE.MEMBERSHIP
    with pytest.raises(ValueError, match="unknown membership operation"):
        membership_command("swap", "10.0.0.4:9093")


@pytest.mark.parametrize("address", ["h:1", "host.example:65535", "[::1]:9093", "10.1.2.3:80"])
def test_raft_addresses(address: str) -> None:
    assert check_raft_address(address) == address


@pytest.mark.parametrize("address", ["host", "host:0", "host:65536", ":9093", "a b:1",
                                     "host:port"])
def test_bad_raft_addresses(address: str) -> None:
    with pytest.raises(ValueError, match="not a Raft address"):
        check_raft_address(address)


def test_majorities() -> None:
    assert [majority(n) for n in (1, 2, 3, 4, 5)] == [1, 2, 2, 3, 3]


def test_the_joining_marker_is_a_file_in_the_raft_dir(tmp_path: Path) -> None:
    mark_joining(tmp_path / "raft")
    assert (tmp_path / "raft" / JOINING_MARKER).is_file()


def _directory(image: ControllersImage) -> VoterDirectory:
    return VoterDirectory({1: "h1:9093", 2: "h2:9093"}, {1: "http://h1:9090"}, lambda: image)


def test_the_directory_overlays_registrations_on_the_configuration() -> None:
    image = ControllersImage.EMPTY
    directory = _directory(image)
    assert directory.id_of("h1:9093") == 1 and directory.id_of("h9:9093") is None
    assert directory.address_of(2) == "h2:9093" and directory.url_of(2) is None
    moved = ControllerRegistrationRecord(controller_id=1, incarnation_id=uuid.uuid4(),
                                         raft_address="h7:9093", http_url="http://h7:9090")
    directory = _directory(replay_controller_registration(image, moved))
    assert directory.id_of("h7:9093") == 1
    assert directory.id_of("h1:9093") is None  # controller 1 is registered elsewhere now
    assert directory.address_of(1) == "h7:9093" and directory.url_of(1) == "http://h7:9090"
    assert directory.urls() == {1: "http://h7:9090"}


class FakeSyncObj:
    """What QuorumMembership uses of a SyncObj."""

    def __init__(self, others: set[str], status: dict[str, Any]) -> None:
        self.otherNodes = others
        self.status = status
        self.commands: list[tuple[bytes, Any, int]] = []
        self.transfers = 0

    def getStatus(self) -> dict[str, Any]:
        return self.status

    def _applyCommand(self, command: bytes, callback: Any, command_type: int) -> None:
        self.commands.append((command, callback, command_type))

    def transferLeadership(self) -> None:
        self.transfers += 1


def _membership(syncobj: FakeSyncObj) -> QuorumMembership:
    return QuorumMembership(syncobj, "h1:9093", _directory(ControllersImage.EMPTY))


def test_voters_as_the_leader_sees_them() -> None:
    syncobj = FakeSyncObj({"h2:9093", "h3:9093"}, {
        "state": 2, "commit_idx": 5000,
        "partner_node_status_server_h2:9093": 2, "match_idx_server_h2:9093": 4990,
        "partner_node_status_server_h3:9093": 2, "match_idx_server_h3:9093": 100})
    membership = _membership(syncobj)
    assert membership.addresses() == ["h1:9093", "h2:9093", "h3:9093"]
    voters = membership.voters()
    assert [(v.node_id, v.address, v.connected, v.caught_up) for v in voters] == [
        (1, "h1:9093", True, True), (2, "h2:9093", True, True),
        (None, "h3:9093", True, False)]  # far behind: it needs the dump


def test_a_change_settles_its_future_from_pysyncobjs_callback() -> None:
    syncobj = FakeSyncObj({"h2:9093"}, {"state": 2, "commit_idx": 0})
    membership = _membership(syncobj)
    added: Future[None] = membership.add("h4:9093")
    removed: Future[None] = membership.remove("h2:9093")
    (add_command, add_done, add_type), (rem_command, rem_done, rem_type) = syncobj.commands
    assert pickle.loads(add_command) == ["add", "h4:9093"] and add_type == 2
    assert pickle.loads(rem_command) == ["rem", "h2:9093"] and rem_type == 2
    add_done(None, FAIL_REASON.SUCCESS)
    rem_done(None, FAIL_REASON.REQUEST_DENIED)
    assert added.result(0) is None
    with pytest.raises(ProposalError, match="REQUEST_DENIED"):
        removed.result(0)


def test_a_handover_runs_in_the_tick_thread_once() -> None:
    syncobj = FakeSyncObj(set(), {"state": 2, "commit_idx": 0})
    membership = _membership(syncobj)
    membership.hand_over_leadership()
    assert syncobj.transfers == 0  # only queued
    membership.run_actions()
    membership.run_actions()
    assert syncobj.transfers == 1


def test_a_dump_names_its_members_by_id_when_it_is_loaded() -> None:
    """RaftNode._others_in_dump: this node is left out even at an old address, and a voter
    whose address the configuration moved is taken at its new address."""
    from types import SimpleNamespace

    from chunkraft.controller.raft.dump import DumpHeader
    from chunkraft.controller.raft.node import RaftNode

    directory = VoterDirectory({1: "h1:9093", 2: "h2-new:9093", 3: "h3:9093"}, {},
                               lambda: ControllersImage.EMPTY)
    node = SimpleNamespace(settings=SimpleNamespace(address="h1-new:9093"), node_id=1,
                           directory=directory)
    header = DumpHeader(cluster_id=uuid.uuid4(), offset=1, epoch=1, last_entry=(b"", 2, 1),
                        previous_entry=(b"", 1, 1), keys=(), snapshot_start=0,
                        members=("h1:9093", "h2:9093", "h3:9093", "h9:9093"),
                        member_ids={"h1:9093": 1, "h2:9093": 2})
    others = RaftNode._others_in_dump(node, header)  # type: ignore[arg-type]
    assert others == ["h2-new:9093", "h3:9093", "h9:9093"]
