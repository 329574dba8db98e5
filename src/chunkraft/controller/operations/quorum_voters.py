"""Adding and removing a voter of the controller quorum: the checks, decided on the leader.

Pure functions of the voters as the leader sees them (:class:`~chunkraft.controller.raft.
membership.Voter`) and the request; the API does the waiting. The rules a Kafka operator knows
from KIP-853, and one it learns from Raft:

- an id or a Raft address that is already a voter is DUPLICATE_VOTER (120), unless it is the
  very same voter (a retry of an add that went through answers as a success);
- removing an id that is not a voter is VOTER_NOT_FOUND (121); the last voter cannot go;
- **a change must never cost the quorum its majority.** A new voter starts empty and is counted
  in the majority at once, so adding one needs a majority of the *new* set among the voters that
  are connected and caught up now; removing one needs a majority of the remaining set among
  them. So a dead controller is removed first, then its replacement added (each step keeps a
  working majority); a healthy one is replaced the other way round.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from chunkraft.controller.image.controllers import ControllersImage
from chunkraft.controller.raft.membership import Voter, check_raft_address, majority
from chunkraft.error_codes import Errors
from chunkraft.records import ControllerRegistrationRecord

__all__ = ["Refusal", "check_add", "check_http_url", "check_remove", "registration_needed"]


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a change is refused: the Kafka error and the message for the operator."""

    error: Errors
    message: str


def check_http_url(url: str) -> str:
    """``url`` if it is an http(s) URL of a host (no path, query or credentials), else
    ValueError."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/") \
            or parts.query or parts.fragment or parts.username or parts.password:
        raise ValueError(f"{url!r} is not a controller's URL (http[s]://host:port)")
    try:
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError:
        raise ValueError(f"{url!r} has a port out of range") from None
    return url.rstrip("/")


def _quorum_after(change: str, voters_after: int, caught_up: int, since: str) -> Refusal | None:
    need = majority(voters_after)
    if caught_up >= need:
        return None
    return Refusal(Errors.INVALID_REQUEST, (
        f"{change} would leave {voters_after} voters, whose majority is {need}, with only "
        f"{caught_up} voters connected and caught up {since}: the quorum would stop committing. "
        "Bring the missing voters back (or remove a dead voter first), then retry"))


def check_add(voters: Sequence[Voter], controller_id: int, address: str,
              url: str) -> Refusal | str | None:
    """None if controller ``controller_id`` at ``address`` may be added now; ``"present"`` if
    it is already a voter at that very address (a retry: nothing to do); else the refusal."""
    try:
        check_raft_address(address)
        check_http_url(url)
    except ValueError as error:
        return Refusal(Errors.INVALID_REQUEST, str(error))
    same_id = [v for v in voters if v.node_id == controller_id]
    same_address = [v for v in voters if v.address == address]
    if same_id and same_address and same_id[0] is same_address[0]:
        return "present"
    if same_id:
        return Refusal(Errors.DUPLICATE_VOTER, f"controller {controller_id} is already a voter, "
                       f"at {same_id[0].address}; remove it first to give it a new address")
    if same_address:
        holder = same_address[0].node_id
        return Refusal(Errors.DUPLICATE_VOTER, f"{address} is already the Raft address of "
                       f"voter {'(unknown id)' if holder is None else holder}")
    caught_up = sum(v.caught_up for v in voters)
    return _quorum_after(f"adding controller {controller_id}", len(voters) + 1, caught_up,
                         "(the new one counts only once it has caught up)")


def check_remove(voters: Sequence[Voter], controller_id: int) -> Refusal | Voter:
    """The voter to remove, or the refusal."""
    targets = [v for v in voters if v.node_id == controller_id]
    if not targets:
        known = ", ".join(str(v.node_id) for v in voters)
        return Refusal(Errors.VOTER_NOT_FOUND,
                       f"controller {controller_id} is not a voter (the voters: {known})")
    if len(voters) == 1:
        return Refusal(Errors.INVALID_REQUEST,
                       f"controller {controller_id} is the only voter; it cannot be removed")
    target = targets[0]
    remaining = [v for v in voters if v is not target]
    refusal = _quorum_after(f"removing controller {controller_id}", len(remaining),
                            sum(v.caught_up for v in remaining), "among the others")
    return refusal if refusal is not None else target


def registration_needed(controllers: ControllersImage, controller_id: int, address: str,
                        url: str) -> bool:
    """Whether the image lacks this exact registration (a retry finds it there)."""
    current: ControllerRegistrationRecord | None = controllers.get(controller_id)
    return current is None or (current.raft_address, current.http_url) != (address, url)
