"""The transaction coordinator's routes: ``POST /broker/v1/find-coordinator``,
``add-partitions-to-txn``, ``add-offsets-to-txn`` and ``end-txn``
(``chunkraft.protocol.coordinators``). InitProducerId with a transactional id is in
:mod:`.routes` (it delegates to the same coordinator).

Authorization, Kafka's: FindCoordinator needs DESCRIBE on the GROUP or TRANSACTIONAL_ID
(TRANSACTIONAL_ID / GROUP_AUTHORIZATION_FAILED per key); AddPartitionsToTxn WRITE on the
transactional id and on each topic (a refused topic fails with TOPIC_AUTHORIZATION_FAILED and
the others with OPERATION_NOT_ATTEMPTED, nothing added); AddOffsetsToTxn WRITE on the
transactional id and READ on the group; EndTxn WRITE on the transactional id. Coordinator
errors (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, CONCURRENT_TRANSACTIONS,
PRODUCER_FENCED, ...) come back in the answer's ``error_code`` with HTTP 200.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import APIRouter, Request, Response

from chunkraft.api.authentication import principal_of
from chunkraft.broker_agent.coordinator.internal_topics import topic_for_key_type
from chunkraft.broker_agent.coordinator.transactions import (
    TransactionCoordinator,
    transaction_coordinator_of,
)
from chunkraft.broker_agent.server.access import transactional_id_allowed
from chunkraft.broker_agent.server.http import json_answer, parse_body, post_docs
from chunkraft.broker_agent.server.ports import BrokerRuntimeLike
from chunkraft.broker_endpoints import broker_url
from chunkraft.error_codes import ApiException, Errors
from chunkraft.protocol.acls import AclOperation, AclResourceType
from chunkraft.protocol.base import Message
from chunkraft.protocol.coordinators import (
    GROUP_KEY,
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnPartitionResult,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnTopicResult,
    Coordinator,
    EndTxnRequest,
    EndTxnResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)

__all__ = ["router"]

router = APIRouter(prefix="/broker/v1", tags=["broker coordinators"])


def _runtime(request: Request) -> BrokerRuntimeLike:
    runtime: BrokerRuntimeLike = request.app.state.runtime
    return runtime


def _coordinator(runtime: BrokerRuntimeLike) -> TransactionCoordinator:
    coordinator = transaction_coordinator_of(runtime.replica_manager)
    if coordinator is None:
        raise ApiException(Errors.COORDINATOR_NOT_AVAILABLE,
                           "this broker runs no transaction coordinator")
    return coordinator


def _txn_refused(request: Request, transactional_id: str) -> ApiException | None:
    runtime = _runtime(request)
    principal = principal_of(request)
    if transactional_id_allowed(runtime.authorizer, runtime.follower.image, principal,
                                transactional_id):
        return None
    return ApiException(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                        f"Principal {principal.name} is not authorized to WRITE transactional "
                        f"id {transactional_id!r}.")


# ------------------------------------------------------------------------- FindCoordinator


async def find_coordinator(request: Request) -> Response:
    """FindCoordinator for groups (0) and transactional ids (1); creates the internal topic
    on first use."""
    parsed = await parse_body(request, FindCoordinatorRequest)
    if isinstance(parsed, Response):
        return parsed
    runtime = _runtime(request)
    principal = principal_of(request)
    image = runtime.follower.image
    authorizer = runtime.authorizer
    is_group = parsed.key_type == GROUP_KEY
    resource = AclResourceType.GROUP if is_group else AclResourceType.TRANSACTIONAL_ID
    refusal = (Errors.GROUP_AUTHORIZATION_FAILED if is_group
               else Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    topic = topic_for_key_type(parsed.key_type)
    coordinator = transaction_coordinator_of(runtime.replica_manager)
    answers: list[Coordinator] = []
    for key in parsed.keys:
        if authorizer is not None and not authorizer.authorize(
                image, principal, AclOperation.DESCRIBE, resource, key):
            answers.append(Coordinator(key=key, error_code=refusal.code, error_message=(
                f"Principal {principal.name} is not authorized to DESCRIBE {resource.name} "
                f"{key!r}.")))
            continue
        if coordinator is None:
            answers.append(Coordinator(key=key, error_code=Errors.COORDINATOR_NOT_AVAILABLE.code,
                                       error_message="this broker runs no coordinator"))
            continue
        location = await coordinator.topics.find(topic, key)
        registration = runtime.follower.image.brokers.get(location.leader)
        url = broker_url(registration) if registration is not None else None
        if not location.found or registration is None or url is None:
            answers.append(Coordinator(key=key, error_code=Errors.COORDINATOR_NOT_AVAILABLE.code,
                                       error_message=f"{topic} has no leader for {key!r} yet"))
            continue
        endpoint = registration.end_points[0] if registration.end_points else None
        answers.append(Coordinator(
            key=key, node_id=location.leader, url=url,
            host=endpoint.host if endpoint is not None else "",
            port=endpoint.port if endpoint is not None else -1))
    return json_answer(FindCoordinatorResponse(coordinators=tuple(answers)))


# ---------------------------------------------------------------------- AddPartitionsToTxn


async def add_partitions_to_txn(request: Request) -> Response:
    """AddPartitionsToTxn: every partition answered with the same outcome (Kafka's)."""
    parsed = await parse_body(request, AddPartitionsToTxnRequest)
    if isinstance(parsed, Response):
        return parsed
    runtime = _runtime(request)
    principal = principal_of(request)
    image = runtime.follower.image
    authorizer = runtime.authorizer

    def answer(codes: Callable[[str, int], tuple[Errors, str | None]]
               ) -> AddPartitionsToTxnResponse:
        results = []
        for topic in parsed.topics:
            partitions = []
            for index in topic.partitions:
                error, message = codes(topic.name, index)
                partitions.append(AddPartitionsToTxnPartitionResult(
                    partition_index=index, error_code=error.code, error_message=message))
            results.append(AddPartitionsToTxnTopicResult(name=topic.name,
                                                         results=tuple(partitions)))
        return AddPartitionsToTxnResponse(results=tuple(results))

    refused = _txn_refused(request, parsed.transactional_id)
    if refused is not None:
        failure = refused
        return json_answer(answer(lambda _t, _p: (failure.error, failure.message)))
    denied = {topic.name for topic in parsed.topics if authorizer is not None
              and not authorizer.authorize(image, principal, AclOperation.WRITE,
                                           AclResourceType.TOPIC, topic.name)}
    unknown: set[tuple[str, int]] = set()
    for topic in parsed.topics:
        image_topic = image.topics.get_by_name(topic.name)
        unknown.update((topic.name, index) for index in topic.partitions
                       if topic.name not in denied and (
                           image_topic is None or image_topic.partition(index) is None))
    if denied or unknown:
        def per_partition(name: str, index: int) -> tuple[Errors, str | None]:
            if name in denied:
                return Errors.TOPIC_AUTHORIZATION_FAILED, (
                    f"Principal {principal.name} is not authorized to WRITE topic {name!r}.")
            if (name, index) in unknown:
                return Errors.UNKNOWN_TOPIC_OR_PARTITION, None
            return Errors.OPERATION_NOT_ATTEMPTED, None
        return json_answer(answer(per_partition))
    try:
        await _coordinator(runtime).add_partitions(
            parsed.transactional_id, parsed.producer_id, parsed.producer_epoch,
            [(topic.name, index) for topic in parsed.topics for index in topic.partitions])
    except ApiException as error:
        failure = error
        return json_answer(answer(lambda _t, _p: (failure.error, failure.message)))
    return json_answer(answer(lambda _t, _p: (Errors.NONE, None)))


# ------------------------------------------------------------------------ AddOffsetsToTxn


async def add_offsets_to_txn(request: Request) -> Response:
    """AddOffsetsToTxn: the group's ``__consumer_offsets`` partition joins the transaction."""
    parsed = await parse_body(request, AddOffsetsToTxnRequest)
    if isinstance(parsed, Response):
        return parsed
    runtime = _runtime(request)
    principal = principal_of(request)
    authorizer = runtime.authorizer
    refused = _txn_refused(request, parsed.transactional_id)
    if refused is None and authorizer is not None and not authorizer.authorize(
            runtime.follower.image, principal, AclOperation.READ, AclResourceType.GROUP,
            parsed.group_id):
        refused = ApiException(Errors.GROUP_AUTHORIZATION_FAILED,
                               f"Principal {principal.name} is not authorized to READ group "
                               f"{parsed.group_id!r}.")
    try:
        if refused is not None:
            raise refused
        await _coordinator(runtime).add_offsets(parsed.transactional_id, parsed.producer_id,
                                                parsed.producer_epoch, parsed.group_id)
    except ApiException as error:
        return json_answer(AddOffsetsToTxnResponse(error_code=error.code,
                                                   error_message=error.message))
    return json_answer(AddOffsetsToTxnResponse())


# --------------------------------------------------------------------------------- EndTxn


async def end_txn(request: Request) -> Response:
    """EndTxn: PREPARE_COMMIT / PREPARE_ABORT is durable when this answers; markers follow."""
    parsed = await parse_body(request, EndTxnRequest)
    if isinstance(parsed, Response):
        return parsed
    runtime = _runtime(request)
    try:
        refused = _txn_refused(request, parsed.transactional_id)
        if refused is not None:
            raise refused
        await _coordinator(runtime).end_txn(parsed.transactional_id, parsed.producer_id,
                                            parsed.producer_epoch, parsed.committed)
    except ApiException as error:
        return json_answer(EndTxnResponse(error_code=error.code, error_message=error.message))
    return json_answer(EndTxnResponse())


def _add(path: str, handler: Callable[[Request], Awaitable[Response]],
         request_model: type[Message], response_model: type[Message], summary: str) -> None:
    router.add_api_route(path, handler, methods=["POST"], summary=summary,
                         **post_docs(request_model, response_model))


_add("/find-coordinator", find_coordinator, FindCoordinatorRequest, FindCoordinatorResponse,
     "FindCoordinator (DESCRIBE on each group / transactional id)")
_add("/add-partitions-to-txn", add_partitions_to_txn, AddPartitionsToTxnRequest,
     AddPartitionsToTxnResponse,
     "AddPartitionsToTxn (WRITE on the transactional id and on each topic)")
_add("/add-offsets-to-txn", add_offsets_to_txn, AddOffsetsToTxnRequest,
     AddOffsetsToTxnResponse, "AddOffsetsToTxn (WRITE on the transactional id, READ on the "
     "group)")
_add("/end-txn", end_txn, EndTxnRequest, EndTxnResponse,
     "EndTxn (WRITE on the transactional id)")
