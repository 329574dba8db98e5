"""The group coordinator's routes: ``POST /broker/v1/{offset-commit, txn-offset-commit,
offset-fetch, join-group, sync-group, heartbeat, leave-group}``.

Authorization as Kafka's ``KafkaApis``: OffsetCommit needs READ on the group
(GROUP_AUTHORIZATION_FAILED on every partition otherwise) and READ on each topic
(TOPIC_AUTHORIZATION_FAILED per partition); TxnOffsetCommit also WRITE on the transactional id;
OffsetFetch DESCRIBE on the group (top-level GROUP_AUTHORIZATION_FAILED) and DESCRIBE per topic
(topics refused are answered TOPIC_AUTHORIZATION_FAILED, or left out of an "all topics"
answer); JoinGroup, SyncGroup, Heartbeat and LeaveGroup READ on the group. A topic the image
does not know is answered UNKNOWN_TOPIC_OR_PARTITION on commits. Handlers translate only; the
work is :class:`~chunkraft.broker_agent.coordinator.groups.GroupCoordinator`'s (the one the
broker process built, or one built on first use).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, Request, Response

from chunkraft.api.authentication import principal_of
from chunkraft.broker_agent.coordinator.groups.coordinator import (
    GroupCoordinator,
    group_coordinator_of,
)
from chunkraft.broker_agent.server.access import allowed_topics, transactional_id_allowed
from chunkraft.broker_agent.server.http import json_answer, parse_body, post_docs
from chunkraft.broker_agent.server.ports import BrokerRuntimeLike
from chunkraft.error_codes import Errors
from chunkraft.protocol.acls import AclOperation, AclResourceType
from chunkraft.protocol.base import Message
from chunkraft.protocol.coordinators import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitPartitionResult,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitTopic,
    OffsetCommitTopicResult,
    OffsetFetchPartition,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchTopic,
    SyncGroupRequest,
    SyncGroupResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from chunkraft.security.principal import Principal

__all__ = ["app_group_coordinator", "group_coordinator", "router"]

router = APIRouter(prefix="/broker/v1", tags=["broker group coordinator"])


def _runtime(request: Request) -> BrokerRuntimeLike:
    runtime: BrokerRuntimeLike = request.app.state.runtime
    return runtime


def group_coordinator(request: Request) -> GroupCoordinator:
    """The broker's group coordinator, as :func:`app_group_coordinator` finds it."""
    return app_group_coordinator(request.app)


def app_group_coordinator(app: Any) -> GroupCoordinator:
    """The group coordinator of the broker app ``app``: ``app.state.group_coordinator`` if set
    (tests), else the one the broker process built for its ReplicaManager, else one built and
    started now. The Kafka listener's group APIs use the same one."""
    state = app.state
    coordinator: GroupCoordinator | None = getattr(state, "group_coordinator", None)
    if coordinator is not None:
        return coordinator
    runtime: BrokerRuntimeLike = state.runtime
    coordinator = group_coordinator_of(runtime.replica_manager)
    if coordinator is None:
        coordinator = GroupCoordinator(runtime.replica_manager, lambda: runtime.follower.image)
        state.group_coordinator = coordinator
    coordinator.start()
    return coordinator


def _group_allowed(request: Request, principal: Principal, operation: AclOperation,
                   group_id: str) -> bool:
    runtime = _runtime(request)
    authorizer = runtime.authorizer
    return authorizer is None or authorizer.authorize(
        runtime.follower.image, principal, operation, AclResourceType.GROUP, group_id)


def _error_results(topics: tuple[OffsetCommitTopic, ...], error: Errors, message: str | None
                   ) -> tuple[OffsetCommitTopicResult, ...]:
    return tuple(OffsetCommitTopicResult(name=t.name, partitions=tuple(
        OffsetCommitPartitionResult(partition_index=p.partition_index, error_code=error.code,
                                    error_message=message) for p in t.partitions))
        for t in topics)


async def _commit(request: Request, group_id: str, generation_id: int, member_id: str,
                  topics: tuple[OffsetCommitTopic, ...], *, transactional_id: str | None = None,
                  producer_id: int = -1, producer_epoch: int = -1
                  ) -> tuple[OffsetCommitTopicResult, ...]:
    """The per-partition answers of an OffsetCommit or TxnOffsetCommit."""
    runtime = _runtime(request)
    principal = principal_of(request)
    image = runtime.follower.image
    if transactional_id is not None and not transactional_id_allowed(
            runtime.authorizer, image, principal, transactional_id):
        return _error_results(topics, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                              f"Principal {principal.name} is not authorized to WRITE "
                              f"transactional id {transactional_id!r}.")
    if not _group_allowed(request, principal, AclOperation.READ, group_id):
        return _error_results(topics, Errors.GROUP_AUTHORIZATION_FAILED,
                              f"Principal {principal.name} is not authorized to READ group "
                              f"{group_id!r}.")
    allowed = allowed_topics(runtime.authorizer, image, principal, AclOperation.READ,
                             (t.name for t in topics))
    refused: dict[tuple[str, int], tuple[Errors, str]] = {}
    kept: list[OffsetCommitTopic] = []
    for topic in topics:
        image_topic = image.topics.get_by_name(topic.name)
        if topic.name not in allowed:
            for p in topic.partitions:
                refused[(topic.name, p.partition_index)] = (
                    Errors.TOPIC_AUTHORIZATION_FAILED,
                    f"Principal {principal.name} is not authorized to READ topic "
                    f"{topic.name!r}.")
            continue
        good = []
        for p in topic.partitions:
            if image_topic is None or image_topic.partition(p.partition_index) is None:
                refused[(topic.name, p.partition_index)] = (
                    Errors.UNKNOWN_TOPIC_OR_PARTITION,
                    f"unknown topic or partition {topic.name}-{p.partition_index}")
            else:
                good.append(p)
        if good:
            kept.append(OffsetCommitTopic(name=topic.name, partitions=tuple(good)))
    outcomes: dict[tuple[str, int], Errors] = {}
    if kept:
        _, outcomes = await group_coordinator(request).commit_offsets(
            group_id, generation_id, member_id, kept, producer_id=producer_id,
            producer_epoch=producer_epoch, transactional_id=transactional_id)
    results = []
    for topic in topics:
        partitions = []
        for p in topic.partitions:
            tp = (topic.name, p.partition_index)
            error, message = refused.get(tp) or (outcomes.get(tp, Errors.NONE), None)
            partitions.append(OffsetCommitPartitionResult(
                partition_index=p.partition_index, error_code=error.code,
                error_message=message if message is not None
                else (error.message if error.code else None)))
        results.append(OffsetCommitTopicResult(name=topic.name, partitions=tuple(partitions)))
    return tuple(results)


async def offset_commit(request: Request) -> Response:
    """OffsetCommit: READ on the group and per topic."""
    parsed = await parse_body(request, OffsetCommitRequest)
    if isinstance(parsed, Response):
        return parsed
    results = await _commit(request, parsed.group_id, parsed.generation_id, parsed.member_id,
                            parsed.topics)
    return json_answer(OffsetCommitResponse(topics=results))


async def txn_offset_commit(request: Request) -> Response:
    """TxnOffsetCommit: WRITE on the transactional id, READ on the group and per topic."""
    parsed = await parse_body(request, TxnOffsetCommitRequest)
    if isinstance(parsed, Response):
        return parsed
    results = await _commit(request, parsed.group_id, parsed.generation_id, parsed.member_id,
                            parsed.topics, transactional_id=parsed.transactional_id,
                            producer_id=parsed.producer_id,
                            producer_epoch=parsed.producer_epoch)
    return json_answer(TxnOffsetCommitResponse(topics=results))


async def offset_fetch(request: Request) -> Response:
    """OffsetFetch: DESCRIBE on the group and per topic."""
    parsed = await parse_body(request, OffsetFetchRequest)
    if isinstance(parsed, Response):
        return parsed
    runtime = _runtime(request)
    principal = principal_of(request)
    if not _group_allowed(request, principal, AclOperation.DESCRIBE, parsed.group_id):
        error = Errors.GROUP_AUTHORIZATION_FAILED
        return json_answer(OffsetFetchResponse(
            error_code=error.code, error_message=f"Principal {principal.name} is not "
            f"authorized to DESCRIBE group {parsed.group_id!r}."))
    image = runtime.follower.image

    def may_describe(name: str) -> bool:
        return bool(allowed_topics(runtime.authorizer, image, principal,
                                   AclOperation.DESCRIBE, (name,)))

    asked = parsed.topics
    kept = None if asked is None else tuple(t for t in asked if may_describe(t.name))
    error, answered = await group_coordinator(request).fetch_offsets(
        parsed.group_id, kept, require_stable=parsed.require_stable, may_describe=may_describe)
    if error is not Errors.NONE:
        return json_answer(OffsetFetchResponse(error_code=error.code,
                                               error_message=error.message))
    if asked is None:
        return json_answer(OffsetFetchResponse(topics=answered))
    by_name = {t.name: t for t in answered}
    refused = Errors.TOPIC_AUTHORIZATION_FAILED
    topics = []
    for t in asked:
        if t.name in by_name:
            topics.append(by_name[t.name])
            continue
        message = f"Principal {principal.name} is not authorized to DESCRIBE topic {t.name!r}."
        topics.append(OffsetFetchTopic(name=t.name, partitions=tuple(
            OffsetFetchPartition(partition_index=p, error_code=refused.code,
                                 error_message=message) for p in t.partition_indexes)))
    return json_answer(OffsetFetchResponse(topics=tuple(topics)))


def _group_refusal(request: Request, group_id: str) -> tuple[Errors, str] | None:
    principal = principal_of(request)
    if _group_allowed(request, principal, AclOperation.READ, group_id):
        return None
    return (Errors.GROUP_AUTHORIZATION_FAILED,
            f"Principal {principal.name} is not authorized to READ group {group_id!r}.")


async def join_group(request: Request) -> Response:
    """JoinGroup: READ on the group; answers when the new generation forms."""
    parsed = await parse_body(request, JoinGroupRequest)
    if isinstance(parsed, Response):
        return parsed
    refusal = _group_refusal(request, parsed.group_id)
    if refusal is not None:
        return json_answer(JoinGroupResponse(error_code=refusal[0].code,
                                             error_message=refusal[1],
                                             member_id=parsed.member_id))
    return json_answer(await group_coordinator(request).join_group(parsed))


async def sync_group(request: Request) -> Response:
    """SyncGroup: READ on the group; answers with this member's assignment."""
    parsed = await parse_body(request, SyncGroupRequest)
    if isinstance(parsed, Response):
        return parsed
    refusal = _group_refusal(request, parsed.group_id)
    if refusal is not None:
        return json_answer(SyncGroupResponse(error_code=refusal[0].code,
                                             error_message=refusal[1]))
    return json_answer(await group_coordinator(request).sync_group(parsed))


async def heartbeat(request: Request) -> Response:
    """Heartbeat: READ on the group."""
    parsed = await parse_body(request, HeartbeatRequest)
    if isinstance(parsed, Response):
        return parsed
    refusal = _group_refusal(request, parsed.group_id)
    if refusal is not None:
        return json_answer(HeartbeatResponse(error_code=refusal[0].code,
                                             error_message=refusal[1]))
    return json_answer(await group_coordinator(request).heartbeat(
        parsed.group_id, parsed.generation_id, parsed.member_id))


async def leave_group(request: Request) -> Response:
    """LeaveGroup: READ on the group."""
    parsed = await parse_body(request, LeaveGroupRequest)
    if isinstance(parsed, Response):
        return parsed
    refusal = _group_refusal(request, parsed.group_id)
    if refusal is not None:
        return json_answer(LeaveGroupResponse(error_code=refusal[0].code,
                                              error_message=refusal[1]))
    return json_answer(await group_coordinator(request).leave_group(parsed.group_id,
                                                                    parsed.member_id))


def _add(path: str, handler: Callable[[Request], Awaitable[Response]],
         request_model: type[Message], response_model: type[Message], summary: str) -> None:
    router.add_api_route(path, handler, methods=["POST"], summary=summary,
                         **post_docs(request_model, response_model))


_add("/offset-commit", offset_commit, OffsetCommitRequest, OffsetCommitResponse,
     "OffsetCommit, with range offsets (READ on the group and per topic)")
_add("/txn-offset-commit", txn_offset_commit, TxnOffsetCommitRequest, TxnOffsetCommitResponse,
     "TxnOffsetCommit (WRITE on the transactional id, READ on the group and per topic)")
_add("/offset-fetch", offset_fetch, OffsetFetchRequest, OffsetFetchResponse,
     "OffsetFetch, with range offsets (DESCRIBE on the group and per topic)")
_add("/join-group", join_group, JoinGroupRequest, JoinGroupResponse, "JoinGroup (READ on the "
     "group)")
_add("/sync-group", sync_group, SyncGroupRequest, SyncGroupResponse, "SyncGroup (READ on the "
     "group)")
_add("/heartbeat", heartbeat, HeartbeatRequest, HeartbeatResponse, "Heartbeat (READ on the "
     "group)")
_add("/leave-group", leave_group, LeaveGroupRequest, LeaveGroupResponse,
     "LeaveGroup (READ on the group)")
