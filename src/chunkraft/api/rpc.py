"""The routes of the controller's RPC surface: one POST per operation.

A write route parses its body with the operation's request model (400 with every problem named
otherwise), forwards it to the leader when this node is not the leader, and otherwise runs the
operation through :meth:`QuorumController.write`. A read route answers from this node's
committed image, after waiting for ``min_offset`` if the caller asks to read its own writes.
Every answer says in ``X-Metadata-Offset`` which metadata offset it reflects.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, ValidationError

from chunkraft.api.context import ControllerContext
from chunkraft.api.errors import error_response, validation_message
from chunkraft.api.forwarding import (
    FORWARDED_HEADER,
    IDEMPOTENCY_HEADER,
    OFFSET_HEADER,
    forward_to_leader,
)
from chunkraft.controller.image import MetadataImage
from chunkraft.controller.raft.entry import IDEMPOTENCY_KEY_SIZE
from chunkraft.controller.result import Operation
from chunkraft.error_codes import ApiException, Errors

__all__ = ["MAX_BODY_BYTES", "add_read_route", "add_write_route", "idempotency_key_of"]

MAX_BODY_BYTES = 8 * 1024 * 1024
MAX_READ_WAIT = 30.0

Req = TypeVar("Req", bound=BaseModel)
Resp = TypeVar("Resp", bound=BaseModel)

OperationFactory = Callable[[ControllerContext, Req], Operation[Resp]]
"""Binds a parsed request (and the node's context) into an operation on an image."""


def idempotency_key_of(request: Request, body: bytes) -> bytes:
    """The 16-byte idempotency key of this write, or a fresh one if the client sent none.

    A client's ``Idempotency-Key`` names one request: the key is derived from it together with
    the route and the body, so a retry (same key, route and body, on any node) finds the first
    outcome, while the same key sent with another request is another write and never gets that
    request's answer. A request a node forwards carries the key that node derived (hex, with
    ``X-Chunkraft-Forwarded``); the leader takes it as it is.
    """
    given = request.headers.get(IDEMPOTENCY_HEADER)
    if not given:
        return os.urandom(IDEMPOTENCY_KEY_SIZE)
    if request.headers.get(FORWARDED_HEADER):
        try:
            raw = bytes.fromhex(given)
            if len(raw) == IDEMPOTENCY_KEY_SIZE and any(raw):
                return raw
        except ValueError:
            pass
    digest = hashlib.sha256()
    for part in (request.url.path.encode(), given.encode(), body):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.digest()[:IDEMPOTENCY_KEY_SIZE]


async def _read_body(request: Request) -> bytes | Response:
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > MAX_BODY_BYTES:
        return error_response(Errors.MESSAGE_TOO_LARGE,
                              f"the body is {length} bytes, over the limit of {MAX_BODY_BYTES}",
                              413)
    body = await request.body()
    if len(body) > MAX_BODY_BYTES:
        return error_response(Errors.MESSAGE_TOO_LARGE,
                              f"the body is over the limit of {MAX_BODY_BYTES} bytes", 413)
    return body


def _parse(model: type[Req], body: bytes) -> Req | Response:
    try:
        return model.model_validate_json(body or b"{}")
    except ValidationError as error:
        return error_response(Errors.INVALID_REQUEST, validation_message(error), 400)


def _json(response: BaseModel, offset: int) -> Response:
    return Response(content=response.model_dump_json(), media_type="application/json",
                    headers={OFFSET_HEADER: str(offset)})


def add_write_route(
    router: APIRouter,
    path: str,
    request_model: type[Req],
    response_model: type[Resp],
    make_operation: OperationFactory[Req, Resp],
    *,
    summary: str,
) -> None:
    """Adds ``POST path`` running ``make_operation`` on the leader."""

    async def handler(request: Request) -> Response:
        context: ControllerContext = request.app.state.context
        body = await _read_body(request)
        if isinstance(body, Response):
            return body
        parsed = _parse(request_model, body)
        if isinstance(parsed, Response):
            return parsed
        key = idempotency_key_of(request, body)
        if not context.controller.is_leader():
            return await forward_to_leader(context, request, body, key)
        try:
            result = await context.controller.write(
                make_operation(context, parsed), response_model, idempotency_key=key)
        except ApiException as error:
            if error.error is Errors.NOT_CONTROLLER:  # lost leadership on the way
                return await forward_to_leader(context, request, body, key)
            raise
        if result.response_json is not None:
            return Response(content=result.response_json, media_type="application/json",
                            headers={OFFSET_HEADER: str(result.offset)})
        return _json(result.response, result.offset)

    router.add_api_route(path, handler, methods=["POST"], summary=summary,
                         response_model=None, openapi_extra=_body_schema(request_model))


def add_read_route(
    router: APIRouter,
    path: str,
    request_model: type[Req],
    response_model: type[Resp],
    read: Callable[[ControllerContext, MetadataImage, Req], Resp],
    *,
    summary: str,
) -> None:
    """Adds ``POST path?min_offset=N`` answering from this node's committed image."""

    async def handler(request: Request, min_offset: int = -1, wait_ms: int = 5000) -> Response:
        context: ControllerContext = request.app.state.context
        body = await _read_body(request)
        if isinstance(body, Response):
            return body
        parsed = _parse(request_model, body)
        if isinstance(parsed, Response):
            return parsed
        if min_offset >= 0 and not await context.controller.wait_for_offset(
                min_offset, min(max(wait_ms, 0) / 1000, MAX_READ_WAIT)):
            return error_response(
                Errors.REQUEST_TIMED_OUT,
                f"this controller has applied offset {context.controller.image.offset}, not yet "
                f"{min_offset}; retry or ask another controller", 503)
        image = context.controller.image
        return _json(read(context, image, parsed), image.offset)

    router.add_api_route(path, handler, methods=["POST"], summary=summary, response_model=None,
                         openapi_extra=_body_schema(request_model))


def _body_schema(model: type[BaseModel]) -> dict[str, Any]:
    return {"requestBody": {"content": {"application/json": {
        "schema": model.model_json_schema()}},
        "required": True}}
