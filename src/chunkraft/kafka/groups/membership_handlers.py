"""JoinGroup 0-9, SyncGroup 0-5, Heartbeat 0-4 and LeaveGroup 0-5 on a broker: Kafka's classic
group protocol on the broker's group coordinator.

A Kafka member's protocols and the leader's assignments are opaque bytes the coordinator keeps
for it (:class:`~chunkraft.broker_agent.coordinator.groups.membership.Protocols`), so every
assignor a client brings (range, round robin, sticky, cooperative sticky) works unchanged.
Authorization: READ on the group, GROUP_AUTHORIZATION_FAILED otherwise. Bounds: the session
timeout must lie within Kafka's default ``group.min.session.timeout.ms`` and
``group.max.session.timeout.ms`` (INVALID_SESSION_TIMEOUT), a member brings at most
:data:`MAX_PROTOCOLS` protocols. Not served: static membership (KIP-345): a group instance id
is kept and shown, but a member that rejoins with it is a new member, and the old one leaves
when its session times out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chunkraft.broker_agent.coordinator.groups.coordinator import GroupCoordinator
from chunkraft.broker_agent.coordinator.groups.membership import GroupState, Protocols
from chunkraft.error_codes import Errors
from chunkraft.kafka.groups.access import group_allowed, group_refusal
from chunkraft.kafka.server.requests import ApiHandler, KafkaRequest
from chunkraft.protocol.acls import AclOperation
from chunkraft.protocol.coordinators import JoinGroupRequest, SyncGroupRequest

__all__ = ["HEARTBEAT_KEY", "JOIN_GROUP_KEY", "LEAVE_GROUP_KEY", "MAX_PROTOCOLS",
           "MAX_SESSION_TIMEOUT_MS", "MIN_SESSION_TIMEOUT_MS", "SYNC_GROUP_KEY",
           "membership_handlers"]

JOIN_GROUP_KEY, HEARTBEAT_KEY, LEAVE_GROUP_KEY, SYNC_GROUP_KEY = 11, 12, 13, 14
MIN_SESSION_TIMEOUT_MS = 6_000
MAX_SESSION_TIMEOUT_MS = 1_800_000
MAX_PROTOCOLS = 64
_COORDINATOR_ERRORS = frozenset({Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE,
                                 Errors.COORDINATOR_LOAD_IN_PROGRESS})


def _join_answer(error: Errors, member_id: str, version: int) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": error.code, "generation_id": -1,
            "protocol_type": None, "protocol_name": None if version >= 7 else "",
            "leader": "", "skip_assignment": False, "member_id": member_id, "members": []}


def _sync_answer(error: Errors, assignment: bytes = b"", protocol_type: str | None = None,
                 protocol_name: str | None = None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": error.code, "protocol_type": protocol_type,
            "protocol_name": protocol_name, "assignment": assignment}


def membership_handlers(runtime: Any, coordinator: Callable[[], GroupCoordinator]
                        ) -> list[ApiHandler]:
    """The four membership APIs over ``coordinator()`` (the broker's group coordinator);
    they must run on the broker's main loop, where the coordinator runs."""

    def refused(request: KafkaRequest, group_id: str) -> Errors | None:
        if group_allowed(runtime, request.principal, AclOperation.READ, group_id):
            return None
        return group_refusal(request.principal, AclOperation.READ, group_id)[0]

    async def join(request: KafkaRequest) -> dict[str, Any]:
        body, version = request.body, request.version
        group_id, member_id = body["group_id"], body["member_id"]
        if not group_id:
            return _join_answer(Errors.INVALID_GROUP_ID, member_id, version)
        error = refused(request, group_id)
        if error is not None:
            return _join_answer(error, member_id, version)
        session = body["session_timeout_ms"]
        rebalance = body.get("rebalance_timeout_ms", -1) if version >= 1 else session
        if not MIN_SESSION_TIMEOUT_MS <= session <= MAX_SESSION_TIMEOUT_MS:
            return _join_answer(Errors.INVALID_SESSION_TIMEOUT, member_id, version)
        protocols = body["protocols"]
        if len(protocols) > MAX_PROTOCOLS:
            return _join_answer(Errors.INVALID_REQUEST, member_id, version)
        brought = Protocols(
            body["protocol_type"], tuple((p["name"], bytes(p["metadata"])) for p in protocols),
            request.header.client_id or "", request.session.peer_host,
            body.get("group_instance_id"))
        active = coordinator()
        answer = await active.join_group(JoinGroupRequest.model_construct(
            group_id=group_id, session_timeout_ms=session,
            rebalance_timeout_ms=rebalance if rebalance > 0 else session,
            member_id=member_id, topics=()), brought)
        if answer.error_code:
            return _join_answer(Errors.for_code(answer.error_code), answer.member_id, version)
        group = active.groups.get(group_id)
        if group is None or group.generation_id != answer.generation_id:
            # A newer rebalance began before this answer left: join again.
            return _join_answer(Errors.REBALANCE_IN_PROGRESS, answer.member_id, version)
        members = [{"member_id": member, "group_instance_id": instance, "metadata": metadata}
                   for member, instance, metadata in group.generation_members
                   ] if answer.member_id == answer.leader else []
        return {"throttle_time_ms": 0, "error_code": 0, "generation_id": answer.generation_id,
                "protocol_type": group.protocol_type, "protocol_name": group.protocol_name,
                "leader": answer.leader, "skip_assignment": False,
                "member_id": answer.member_id, "members": members}

    async def sync(request: KafkaRequest) -> dict[str, Any]:
        body = request.body
        group_id, member_id = body["group_id"], body["member_id"]
        error = refused(request, group_id)
        if error is not None:
            return _sync_answer(error)
        active = coordinator()
        group = active.groups.get(group_id)
        asked_type, asked_name = body.get("protocol_type"), body.get("protocol_name")
        if group is not None and ((asked_type is not None and asked_type != group.protocol_type)
                                  or (asked_name is not None
                                      and asked_name != group.protocol_name)):
            return _sync_answer(Errors.INCONSISTENT_GROUP_PROTOCOL)
        opaque = {a["member_id"]: bytes(a["assignment"]) for a in body["assignments"]}
        answer = await active.sync_group(SyncGroupRequest.model_construct(
            group_id=group_id, generation_id=body["generation_id"], member_id=member_id,
            assignments=()), opaque)
        if answer.error_code:
            return _sync_answer(Errors.for_code(answer.error_code))
        group = active.groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        if (group is None or member is None or group.state is not GroupState.STABLE
                or group.generation_id != body["generation_id"]):
            return _sync_answer(Errors.REBALANCE_IN_PROGRESS)
        return _sync_answer(Errors.NONE, member.assignment_bytes, group.protocol_type,
                            group.protocol_name)

    async def heartbeat(request: KafkaRequest) -> dict[str, Any]:
        body = request.body
        error = refused(request, body["group_id"])
        if error is None:
            answer = await coordinator().heartbeat(body["group_id"], body["generation_id"],
                                                   body["member_id"])
            error = Errors.for_code(answer.error_code)
        return {"throttle_time_ms": 0, "error_code": error.code}

    async def leave(request: KafkaRequest) -> dict[str, Any]:
        body, version = request.body, request.version
        group_id = body["group_id"]
        leaving = ([{"member_id": body["member_id"], "group_instance_id": None}]
                   if version < 3 else body["members"])
        error = refused(request, group_id)
        if error is not None:
            return {"throttle_time_ms": 0, "error_code": error.code, "members": []}
        active = coordinator()
        results = []
        top = Errors.NONE
        for member in leaving:
            answer = await active.leave_group(group_id, member["member_id"])
            outcome = Errors.for_code(answer.error_code)
            if outcome in _COORDINATOR_ERRORS:
                top = outcome
            results.append({"member_id": member["member_id"],
                            "group_instance_id": member.get("group_instance_id"),
                            "error_code": outcome.code})
        if version < 3 and top is Errors.NONE:
            top = Errors.for_code(results[0]["error_code"])
        return {"throttle_time_ms": 0, "error_code": top.code,
                "members": [] if top is not Errors.NONE else results}

    return [ApiHandler(JOIN_GROUP_KEY, 0, 9, join), ApiHandler(SYNC_GROUP_KEY, 0, 5, sync),
            ApiHandler(HEARTBEAT_KEY, 0, 4, heartbeat), ApiHandler(LEAVE_GROUP_KEY, 0, 5, leave)]
