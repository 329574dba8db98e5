"""What every v3 route shares: the cluster check, reading an image, links, answers, checks.

Reads answer from this node's committed image (after ``min_offset`` when asked) and say in
``X-Metadata-Offset`` which offset they reflect; a path naming another cluster id is a 404
INCONSISTENT_CLUSTER_ID. Whole-request failures use the ErrorBody of :mod:`chunkraft.api.errors`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from fastapi import Request, Response
from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError

from chunkraft.api.authentication import principal_of
from chunkraft.api.context import ControllerContext
from chunkraft.api.errors import ErrorBody, error_response, http_status_of, validation_message
from chunkraft.api.forwarding import OFFSET_HEADER
from chunkraft.api.limits import count_problem
from chunkraft.api.request_counts import counts_of
from chunkraft.api.rpc import committed_image, read_request_body
from chunkraft.api.v3 import counts as _v3_counts  # noqa: F401  (registers the v3 bodies)
from chunkraft.controller.image import MetadataImage
from chunkraft.controller.operations.topics import validate_topic_name
from chunkraft.error_codes import ApiException, Errors
from chunkraft.protocol.acls import AclOperation, AclResourceType
from chunkraft.security.principal import Principal

__all__ = [
    "ERROR_RESPONSES",
    "Links",
    "NoBody",
    "QueryBool",
    "at_offset",
    "body_schema",
    "check_cluster",
    "check_topic_name",
    "context_of",
    "count_refusal",
    "error_item",
    "item_error_response",
    "json_answer",
    "may_change_topic",
    "may_describe_topic",
    "read_body_as",
    "read_image",
    "topic_forbidden",
]

M = TypeVar("M", bound=BaseModel)


def _query_boolean(value: object) -> object:
    if isinstance(value, str) and value not in ("true", "false"):
        raise ValueError(f"must be true or false, not {value[:20]!r}")
    return value


QueryBool = Annotated[bool, BeforeValidator(_query_boolean)]
"""A boolean query parameter: ``true`` or ``false`` only (FastAPI alone would take ``1``,
``yes`` or ``on``; booleans are booleans on every route)."""


class NoBody(BaseModel):
    """A DELETE takes no body (an empty JSON object is accepted)."""

    model_config = ConfigDict(extra="forbid")


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    "4XX": {"model": ErrorBody, "description": "The whole request failed (400 malformed, 401, "
            "403, 404 unknown resource or cluster, 409, 413 body too large, 415 body not "
            "application/json, 431 headers too large)."},
    "5XX": {"model": ErrorBody, "description": "No leader, or this node has not applied "
            "min_offset in time (503); retry."},
}
"""The error statuses every v3 route declares."""


def context_of(request: Request) -> ControllerContext:
    context: ControllerContext = request.app.state.context
    return context


def check_cluster(context: ControllerContext, cluster_id: str) -> Response | None:
    """A 404 INCONSISTENT_CLUSTER_ID answer unless ``cluster_id`` is the one served."""
    served = context.cluster_id_text
    if cluster_id == served:
        return None
    return error_response(Errors.INCONSISTENT_CLUSTER_ID,
                          f"cluster {cluster_id!r} is not served here; this is cluster "
                          f"{served}", 404)


def check_topic_name(name: str) -> Response | None:
    """A 400 INVALID_TOPIC_EXCEPTION answer for a name Kafka would refuse."""
    try:
        validate_topic_name(name)
    except ApiException as error:
        return error_response(error.error, error.message, 400)
    return None


async def read_image(request: Request, cluster_id: str, min_offset: int, wait_ms: int
                     ) -> MetadataImage | Response:
    """The image a read answers from, or the error answer (unknown cluster, 503 not caught
    up)."""
    refused = check_cluster(context_of(request), cluster_id)
    if refused is not None:
        return refused
    return await committed_image(request, min_offset, wait_ms)


def may_describe_topic(context: ControllerContext, image: MetadataImage, principal: Principal,
                       name: str) -> bool:
    authorizer = context.authorizer
    return authorizer is None or authorizer.authorize(
        image, principal, AclOperation.DESCRIBE, AclResourceType.TOPIC, name)


def topic_forbidden(request: Request, image: MetadataImage, name: str) -> Response | None:
    """A 403 TOPIC_AUTHORIZATION_FAILED answer unless the principal may DESCRIBE ``name``
    (asked before the topic's existence, so a refused principal learns nothing of it)."""
    if may_describe_topic(context_of(request), image, principal_of(request), name):
        return None
    return at_offset(error_response(Errors.TOPIC_AUTHORIZATION_FAILED,
                                    f"not authorized to describe topic {name!r}", 403),
                     image.offset)


def at_offset(answer: Response, offset: int) -> Response:
    """``answer`` saying which metadata offset it reflects (a read's 404 does too: a client
    that reads its own writes learns how far this controller had got)."""
    answer.headers[OFFSET_HEADER] = str(offset)
    return answer


def json_answer(body: Any, offset: int, status: int = 200,
                headers: dict[str, str] | None = None) -> Response:
    """A JSON answer (``body`` already JSON text, or plain values to dump) with
    X-Metadata-Offset."""
    content = body if isinstance(body, str | bytes) else json.dumps(body,
                                                                    separators=(",", ":"))
    return Response(content=content, status_code=status, media_type="application/json",
                    headers={OFFSET_HEADER: str(offset), **(headers or {})})


def error_item(error_code: int, message: str | None) -> dict[str, Any]:
    """The ``error_code`` / ``error_name`` / ``error_message`` of one batch result."""
    error = Errors.for_code(error_code)
    return {"error_code": error_code, "error_name": error.name,
            "error_message": message if error_code else None}


class Links:
    """The URLs and resource names (CRNs) of one cluster's resources, as seen by a request."""

    __slots__ = ("cluster", "crn")

    def __init__(self, request: Request, cluster_id: str) -> None:
        base = str(request.base_url).rstrip("/")
        self.cluster = f"{base}/v3/clusters/{cluster_id}"
        self.crn = f"crn:///kafka={cluster_id}"

    def brokers(self) -> str:
        return f"{self.cluster}/brokers"

    def broker(self, broker_id: int) -> str:
        return f"{self.cluster}/brokers/{broker_id}"

    def topics(self) -> str:
        return f"{self.cluster}/topics"

    def topic(self, name: str) -> str:
        return f"{self.cluster}/topics/{name}"

    def partitions(self, name: str) -> str:
        return f"{self.cluster}/topics/{name}/partitions"

    def partition(self, name: str, partition_id: int) -> str:
        return f"{self.cluster}/topics/{name}/partitions/{partition_id}"

    def acls(self) -> str:
        return f"{self.cluster}/acls"


async def read_body_as(request: Request, cluster_id: str, model: type[M]
                       ) -> tuple[bytes, M] | Response:
    """A write's raw body (for forwarding and the idempotency key) and its parsed form, or the
    error answer: unknown cluster (404), not JSON (415), over ``request.max.body.bytes`` (413),
    malformed (400, naming each problem)."""
    refused = check_cluster(context_of(request), cluster_id)
    if refused is not None:
        return refused
    body = await read_request_body(request)
    if isinstance(body, Response):
        return body
    try:
        return body, model.model_validate_json(body or b"{}")
    except ValidationError as error:
        return error_response(Errors.INVALID_REQUEST, validation_message(error), 400)


def count_refusal(request: Request, body: BaseModel) -> Response | tuple[Errors, str] | None:
    """Whether ``body``'s counts are over the node's limits (:mod:`chunkraft.api.limits`):
    None if not; a 400 answer for too many items (a malformed batch); else the error and
    message (POLICY_VIOLATION) for the route to answer, per item or as a whole."""
    problem = count_problem(counts_of(body), context_of(request).limits)
    if problem is None:
        return None
    error, message = problem
    if error is Errors.INVALID_REQUEST:
        return error_response(error, message, 400)
    return problem


def may_change_topic(context: ControllerContext, image: MetadataImage, principal: Principal,
                     operation: AclOperation) -> Callable[[str], bool]:
    """Whether ``principal`` may perform ``operation`` on a topic, by this node's image: for
    refusing an over-limit request per item without the leader (the leader decides for
    requests it runs)."""
    authorizer = context.authorizer
    if authorizer is None or authorizer.is_super_user(principal):
        return lambda name: True
    if operation is AclOperation.CREATE and authorizer.authorize_cluster(
            image, principal, AclOperation.CREATE):
        return lambda name: True
    return lambda name: authorizer.authorize(image, principal, operation,
                                             AclResourceType.TOPIC, name)


def body_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``openapi_extra`` declaring ``model`` as the JSON request body, its definitions inlined
    (pydantic's ``#/$defs/...`` references would not resolve inside the OpenAPI document)."""
    schema = model.model_json_schema()
    definitions = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                rest = {k: v for k, v in node.items() if k != "$ref"}
                return {**inline(definitions[ref.removeprefix("#/$defs/")]), **inline(rest)}
            return {key: inline(value) for key, value in node.items()}
        if isinstance(node, list):
            return [inline(value) for value in node]
        return node

    return {"requestBody": {"content": {"application/json": {"schema": inline(schema)}},
                            "required": True}}


_TOPIC_STATUS = {
    Errors.TOPIC_ALREADY_EXISTS: 409,
    Errors.UNKNOWN_TOPIC_ID: 404,
    Errors.REQUEST_TIMED_OUT: 503,
}


def item_error_response(error_code: int, message: str | None, offset: int) -> Response:
    """A single-resource write's per-item error as its HTTP status: 409 exists, 404 unknown,
    403 not authorized, 503 timed out, 400 otherwise (invalid, policy); with the offset the
    write was validated at, so a client's next read sees at least what it saw."""
    error = Errors.for_code(error_code)
    status = _TOPIC_STATUS.get(error) or http_status_of(error)
    return at_offset(error_response(error, message, status), offset)
