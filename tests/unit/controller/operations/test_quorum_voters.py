"""controller/operations/quorum_voters: which voter changes are allowed, and why not."""

from __future__ import annotations

import uuid

import pytest

from chunkraft.controller.image.controllers import ControllersImage, replay_controller_registration
from chunkraft.controller.operations.quorum_voters import (
    Refusal,
    check_add,
    check_http_url,
    check_remove,
    registration_needed,
)
from chunkraft.controller.raft.membership import Voter
from chunkraft.error_codes import Errors
from chunkraft.records import ControllerRegistrationRecord

HEALTHY = [Voter(1, "h1:9093", True, True), Voter(2, "h2:9093", True, True),
           Voter(3, "h3:9093", True, True)]
ONE_DOWN = [Voter(1, "h1:9093", True, True), Voter(2, "h2:9093", True, True),
            Voter(3, "h3:9093", False, False)]


def test_a_healthy_quorum_takes_a_fourth_voter() -> None:
    assert check_add(HEALTHY, 4, "h4:9093", "http://h4:9090") is None


def test_adding_while_a_voter_is_down_would_wait_on_the_empty_one() -> None:
    refusal = check_add(ONE_DOWN, 4, "h4:9093", "http://h4:9090")
    assert isinstance(refusal, Refusal) and refusal.error is Errors.INVALID_REQUEST
    assert "majority is 3, with only 2" in refusal.message
    assert "remove a dead voter first" in refusal.message


def test_the_same_voter_again_is_a_retry_not_an_error() -> None:
    assert check_add(HEALTHY, 2, "h2:9093", "http://h2:9090") == "present"


@pytest.mark.parametrize(("node", "address", "says"), [
    (2, "h9:9093", "controller 2 is already a voter, at h2:9093"),
    (9, "h2:9093", "h2:9093 is already the Raft address of voter 2"),
])
def test_duplicates(node: int, address: str, says: str) -> None:
    refusal = check_add(HEALTHY, node, address, "http://h9:9090")
    assert isinstance(refusal, Refusal) and refusal.error is Errors.DUPLICATE_VOTER
    assert says in refusal.message


@pytest.mark.parametrize(("address", "url"), [("h4", "http://h4:9090"),
                                              ("h4:9093", "ftp://h4:9090"),
                                              ("h4:9093", "http://h4:9090/path")])
def test_malformed_endpoints(address: str, url: str) -> None:
    refusal = check_add(HEALTHY, 4, address, url)
    assert isinstance(refusal, Refusal) and refusal.error is Errors.INVALID_REQUEST


def test_urls() -> None:
    assert check_http_url("https://h4:9090/") == "https://h4:9090"
    for bad in ("http://user:pw@h4:9090", "http://h4:99999", "http://h4:9090?x=1", "h4:9090"):
        with pytest.raises(ValueError):
            check_http_url(bad)


def test_removing_a_dead_voter_keeps_a_majority() -> None:
    assert check_remove(ONE_DOWN, 3) == ONE_DOWN[2]


def test_removing_a_live_voter_while_another_is_down_is_refused() -> None:
    refusal = check_remove(ONE_DOWN, 2)
    assert isinstance(refusal, Refusal) and refusal.error is Errors.INVALID_REQUEST
    assert "majority is 2, with only 1" in refusal.message


def test_unknown_and_last_voters() -> None:
    unknown = check_remove(HEALTHY, 7)
    assert isinstance(unknown, Refusal) and unknown.error is Errors.VOTER_NOT_FOUND
    assert "the voters: 1, 2, 3" in unknown.message
    last = check_remove(HEALTHY[:1], 1)
    assert isinstance(last, Refusal) and "only voter" in last.message


def test_a_registration_is_written_once() -> None:
    record = ControllerRegistrationRecord(controller_id=4, incarnation_id=uuid.uuid4(),
                                          raft_address="h4:9093", http_url="http://h4:9090")
    image = replay_controller_registration(ControllersImage.EMPTY, record)
    assert registration_needed(ControllersImage.EMPTY, 4, "h4:9093", "http://h4:9090")
    assert not registration_needed(image, 4, "h4:9093", "http://h4:9090")
    assert registration_needed(image, 4, "h5:9093", "http://h4:9090")
