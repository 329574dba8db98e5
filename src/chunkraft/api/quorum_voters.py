"""Adding and removing controllers while the quorum serves (``kafka-metadata-quorum
add-controller / remove-controller`` of KIP-853).

``POST /controller/v1/quorum/voters`` adds a voter, ``DELETE /controller/v1/quorum/voters/{id}``
removes one; both need ALTER on the cluster and run on the leader (a follower forwards them).
Adding first commits the new controller's ControllerRegistrationRecord (so every node can name
it and forward to it), then the Raft membership change; each step is idempotent, so a retry
after an unknown outcome finishes the job. The checks are in
:mod:`chunkraft.controller.operations.quorum_voters`. Removing the leader itself first hands
leadership to a caught-up follower and answers 503 NOT_CONTROLLER: the client's retry reaches
the new leader, which removes the old one.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Path, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, ValidationError

from chunkraft.api.access import cluster_refusal
from chunkraft.api.authentication import principal_of
from chunkraft.api.context import ControllerContext
from chunkraft.api.errors import ErrorBody, error_response, validation_message
from chunkraft.api.forwarding import OFFSET_HEADER, forward_to_leader
from chunkraft.api.rpc import idempotency_key_of, read_request_body
from chunkraft.controller.image import MetadataImage
from chunkraft.controller.operations.quorum_voters import (
    Refusal,
    check_add,
    check_http_url,
    check_remove,
    registration_needed,
)
from chunkraft.controller.raft.log import ProposalError
from chunkraft.controller.raft.membership import QuorumMembership
from chunkraft.controller.raft.process_log import RemoteMembership
from chunkraft.controller.result import ControllerResult
from chunkraft.error_codes import ApiException, Errors
from chunkraft.protocol.acls import AclOperation
from chunkraft.random_bytes import random_bytes
from chunkraft.records import ControllerRegistrationRecord

__all__ = ["AddControllerRequest", "VoterChangeResponse", "router"]

router = APIRouter(prefix="/controller/v1", tags=["quorum"])

MEMBERSHIP_TIMEOUT = 15.0
"""How long the leader waits for a membership change to commit before answering 503."""
MAX_CONTROLLER_ID = 2**31 - 1


class AddControllerRequest(BaseModel):
    """The controller to add: its id, Raft listener and HTTP listener."""

    controller_id: int = Field(ge=0, le=MAX_CONTROLLER_ID)
    raft_address: str = Field(min_length=3, max_length=260, pattern=r"^\S+:\d{1,5}$",
                              description="host:port of its Raft listener")
    http_url: str = Field(min_length=8, max_length=2048, pattern=r"^https?://\S+$",
                          description="its HTTP listener, e.g. https://host:9090")


class VoterModel(BaseModel):
    """One voter as the leader sees it."""

    node_id: int | None
    address: str
    connected: bool
    caught_up: bool


class VoterChangeResponse(BaseModel):
    """The change made (or found already made) and the voters after it."""

    error_code: int = 0
    controller_id: int
    raft_address: str
    voters: list[VoterModel]


class _Registered(BaseModel):
    controller_id: int


Membership = QuorumMembership | RemoteMembership
"""The voters of this node's Raft node: in this process, or in its Raft process."""

_RESPONSES: dict[int | str, dict[str, Any]] = {
    "4XX": {"model": ErrorBody, "description": "Bad request (400), no ALTER on the cluster "
            "(403), DUPLICATE_VOTER / VOTER_NOT_FOUND, or a change that would cost the quorum "
            "its majority (400)."},
    "5XX": {"model": ErrorBody, "description": "No leader, leadership handed over, or the "
            "change did not commit in time (503): retry with the same Idempotency-Key."}}


def _membership(context: ControllerContext) -> Membership | None:
    membership = getattr(context.controller.raft, "membership", None)
    return membership if isinstance(membership, QuorumMembership | RemoteMembership) else None


def _refused(refusal: Refusal) -> JSONResponse:
    status = 404 if refusal.error is Errors.VOTER_NOT_FOUND else 400
    return error_response(refusal.error, refusal.message, status)


def _answer(context: ControllerContext, membership: Membership, controller_id: int,
            address: str) -> Response:
    body = VoterChangeResponse(
        controller_id=controller_id, raft_address=address,
        voters=[VoterModel(node_id=v.node_id, address=v.address, connected=v.connected,
                           caught_up=v.caught_up) for v in membership.voters()])
    return Response(content=body.model_dump_json(), media_type="application/json",
                    headers={OFFSET_HEADER: str(context.controller.image.offset)})


async def _await_change(change: Any, what: str) -> Response | None:
    """None once the membership change committed, else the 503 to answer."""
    try:
        await asyncio.wait_for(asyncio.wrap_future(change), MEMBERSHIP_TIMEOUT)
    except TimeoutError:
        return error_response(Errors.REQUEST_TIMED_OUT, f"{what} did not commit within "
                              f"{MEMBERSHIP_TIMEOUT:g} s; its outcome is unknown: retry", 503)
    except ProposalError as error:
        if error.reason in ("NOT_LEADER", "LEADER_CHANGED", "MISSING_LEADER", "DISCARDED"):
            return error_response(Errors.NOT_CONTROLLER, f"{what}: leadership changed "
                                  f"({error.reason}); retry", 503)
        return error_response(Errors.REQUEST_TIMED_OUT, f"{what} was refused by Raft for now "
                              f"({error.reason}: another membership change has not committed "
                              "yet, or a new leader has not committed its first entry); retry",
                              503)
    return None


async def _prologue(request: Request, body: bytes) -> Response | Membership:
    """The refusal (403, 400) or forwarding answer, or the membership to change here."""
    context: ControllerContext = request.app.state.context
    refusal = cluster_refusal(context, principal_of(request), AclOperation.ALTER)
    if refusal is not None:
        return refusal
    if not context.controller.is_leader():
        return await forward_to_leader(context, request, body, idempotency_key_of(request, body))
    membership = _membership(context)
    if membership is None:
        return error_response(Errors.UNSUPPORTED_VERSION, "this controller's log is not a Raft "
                              "quorum; it has no voters to change", 400)
    return membership


@router.post("/quorum/voters", summary="Add a controller to the quorum (ALTER on the cluster)",
             response_model=VoterChangeResponse, responses=_RESPONSES,
             openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
                 "schema": AddControllerRequest.model_json_schema()}}}})
async def add_controller(request: Request) -> Response:
    context: ControllerContext = request.app.state.context
    body = await read_request_body(request)
    if isinstance(body, Response):
        return body
    try:
        parsed = AddControllerRequest.model_validate_json(body or b"{}")
    except ValidationError as error:
        return error_response(Errors.INVALID_REQUEST, validation_message(error), 400)
    # The URL's finer rules (no path, a port in range) once the caller may add at all: what
    # the schema cannot say is refused only to those who may ask.
    refusal = cluster_refusal(context, principal_of(request), AclOperation.ALTER)
    if refusal is not None:
        return refusal
    try:
        url = check_http_url(parsed.http_url)
    except ValueError as error:
        return error_response(Errors.INVALID_REQUEST, str(error), 400)
    membership = await _prologue(request, body)
    if isinstance(membership, Response):
        return membership
    controller_id, address = parsed.controller_id, parsed.raft_address
    verdict = check_add(membership.voters(), controller_id, address, url)
    if isinstance(verdict, Refusal):
        return _refused(verdict)
    record = ControllerRegistrationRecord(
        controller_id=controller_id, incarnation_id=uuid.UUID(bytes=random_bytes(16), version=4),
        raft_address=address, http_url=url)

    def register(image: MetadataImage) -> ControllerResult[_Registered]:
        answer = _Registered(controller_id=controller_id)
        if not registration_needed(image.controllers, controller_id, address, url):
            return ControllerResult.of(answer)
        return ControllerResult.of(answer, [record])

    try:
        await context.controller.write(register, _Registered,
                                       idempotency_key=idempotency_key_of(request, body))
    except ApiException as error:
        return error_response(error.error, error.message,
                              503 if error.error.retriable else None)
    if verdict != "present":
        failed = await _await_change(membership.add(address),
                                     f"adding controller {controller_id} at {address}")
        if failed is not None:
            return failed
    return _answer(context, membership, controller_id, address)


@router.delete("/quorum/voters/{controller_id}",
               summary="Remove a controller from the quorum (ALTER on the cluster)",
               response_model=VoterChangeResponse, responses=_RESPONSES)
async def remove_controller(
        request: Request,
        controller_id: Annotated[int, Path(ge=0, le=MAX_CONTROLLER_ID)]) -> Response:
    context: ControllerContext = request.app.state.context
    membership = await _prologue(request, b"")
    if isinstance(membership, Response):
        return membership
    verdict = check_remove(membership.voters(), controller_id)
    if isinstance(verdict, Refusal):
        return _refused(verdict)
    if verdict.address == membership.self_address:
        membership.hand_over_leadership()
        return error_response(Errors.NOT_CONTROLLER, (
            f"controller {controller_id} is the leader: it is handing leadership to a caught-up "
            "follower so that it can be removed; retry (the new leader removes it)"), 503)
    failed = await _await_change(membership.remove(verdict.address),
                                 f"removing controller {controller_id} ({verdict.address})")
    if failed is not None:
        return failed
    return _answer(context, membership, controller_id, verdict.address)
