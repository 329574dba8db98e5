"""ListGroups 0-4, DescribeGroups 0-5 and DeleteGroups 0-2 on a broker, over its group
coordinator (:mod:`chunkraft.broker_agent.coordinator.groups.group_admin`).

As Kafka: ListGroups answers the groups this broker coordinates (an admin client asks every
broker) that the principal may DESCRIBE, or all of them with DESCRIBE on the cluster;
ListGroups 4's state filter is applied. DescribeGroups needs DESCRIBE on each group, and
DeleteGroups DELETE (GROUP_AUTHORIZATION_FAILED per group otherwise). At most
:data:`MAX_GROUPS` groups per request.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chunkraft.broker_agent.coordinator.groups.coordinator import GroupCoordinator
from chunkraft.broker_agent.coordinator.groups.group_admin import (
    delete_group,
    describe_group,
    list_groups,
)
from chunkraft.error_codes import Errors
from chunkraft.kafka.groups.access import authorized_operations, group_allowed
from chunkraft.kafka.server.requests import ApiHandler, KafkaRequest
from chunkraft.protocol.acls import AclOperation, AclResourceType

__all__ = ["DELETE_GROUPS_KEY", "DESCRIBE_GROUPS_KEY", "LIST_GROUPS_KEY", "MAX_GROUPS",
           "group_admin_handlers"]

LIST_GROUPS_KEY, DESCRIBE_GROUPS_KEY, DELETE_GROUPS_KEY = 16, 15, 42
MAX_GROUPS = 1000


def group_admin_handlers(runtime: Any, coordinator: Callable[[], GroupCoordinator]
                         ) -> list[ApiHandler]:
    """The three group admin APIs over ``coordinator()``; they run on the broker's main
    loop."""

    def cluster_describe(request: KafkaRequest) -> bool:
        authorizer = runtime.authorizer
        return authorizer is None or bool(authorizer.authorize(
            runtime.follower.image, request.principal, AclOperation.DESCRIBE,
            AclResourceType.CLUSTER, "kafka-cluster"))

    async def list_(request: KafkaRequest) -> dict[str, Any]:
        states = {s.lower() for s in request.body.get("states_filter") or []}
        everything = cluster_describe(request)
        groups = [{"group_id": g.group_id, "protocol_type": g.protocol_type,
                   "group_state": g.state, "group_type": "classic"}
                  for g in list_groups(coordinator())
                  if (not states or g.state.lower() in states)
                  and (everything or group_allowed(runtime, request.principal,
                                                   AclOperation.DESCRIBE, g.group_id))]
        return {"throttle_time_ms": 0, "error_code": 0, "groups": groups}

    async def describe(request: KafkaRequest) -> dict[str, Any]:
        body = request.body
        wanted: list[str] = body["groups"]
        requested = bool(body.get("include_authorized_operations", False))
        out = []
        for group_id in wanted:
            if len(wanted) > MAX_GROUPS:
                out.append(_described_error(group_id, Errors.INVALID_REQUEST))
                continue
            if not group_allowed(runtime, request.principal, AclOperation.DESCRIBE, group_id):
                out.append(_described_error(group_id, Errors.GROUP_AUTHORIZATION_FAILED))
                continue
            group = await describe_group(coordinator(), group_id)
            if group.error is not Errors.NONE:
                out.append(_described_error(group_id, group.error))
                continue
            out.append({
                "error_code": 0, "error_message": None, "group_id": group_id,
                "group_state": group.state, "protocol_type": group.protocol_type,
                "protocol_data": group.protocol, "members": [
                    {"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                     "client_id": m.client_id, "client_host": m.client_host,
                     "member_metadata": m.metadata, "member_assignment": m.assignment}
                    for m in group.members],
                "authorized_operations": authorized_operations(
                    runtime, request.principal, group_id, requested)})
        return {"throttle_time_ms": 0, "groups": out}

    async def delete(request: KafkaRequest) -> dict[str, Any]:
        names: list[str] = request.body["groups_names"]
        results = []
        for group_id in names:
            if len(names) > MAX_GROUPS:
                error = Errors.INVALID_REQUEST
            elif not group_allowed(runtime, request.principal, AclOperation.DELETE, group_id):
                error = Errors.GROUP_AUTHORIZATION_FAILED
            else:
                error = await delete_group(coordinator(), group_id)
            results.append({"group_id": group_id, "error_code": error.code})
        return {"throttle_time_ms": 0, "results": results}

    return [ApiHandler(LIST_GROUPS_KEY, 0, 4, list_),
            ApiHandler(DESCRIBE_GROUPS_KEY, 0, 5, describe),
            ApiHandler(DELETE_GROUPS_KEY, 0, 2, delete)]


def _described_error(group_id: str, error: Errors) -> dict[str, Any]:
    return {"error_code": error.code, "error_message": error.message, "group_id": group_id,
            "group_state": "", "protocol_type": "", "protocol_data": "", "members": [],
            "authorized_operations": -(2**31)}
