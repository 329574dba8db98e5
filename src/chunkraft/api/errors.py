"""Whole-request errors as HTTP statuses with a Confluent-style body.

Per-item errors (one topic of a batch) travel inside a 200 response, as in the Kafka protocol;
only what fails the whole request becomes an HTTP status here. The body is always
``{"error_code": <Kafka code>, "error_name": <Kafka name>, "message": ...}``.
"""

from __future__ import annotations

import re

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException
from starlette.routing import compile_path

from chunkraft.error_codes import ApiException, Errors

__all__ = [
    "ErrorBody",
    "allowed_methods",
    "error_response",
    "http_status_of",
    "install_error_handlers",
    "validation_message",
]

_STATUS: dict[Errors, int] = {
    Errors.INVALID_REQUEST: 400,
    Errors.UNSUPPORTED_VERSION: 400,
    Errors.CLUSTER_AUTHORIZATION_FAILED: 403,
    Errors.TOPIC_AUTHORIZATION_FAILED: 403,
    Errors.UNKNOWN_TOPIC_OR_PARTITION: 404,
    Errors.MESSAGE_TOO_LARGE: 413,
    Errors.NOT_CONTROLLER: 421,
    Errors.REQUEST_TIMED_OUT: 503,
    Errors.LEADER_NOT_AVAILABLE: 503,
    Errors.METADATA_LOG_CORRUPT: 500,
    Errors.UNKNOWN_SERVER_ERROR: 500,
}


class ErrorBody(BaseModel):
    """The body of every whole-request error (Confluent's shape, with Kafka's error name)."""

    error_code: int
    error_name: str
    message: str


def http_status_of(error: Errors) -> int:
    return _STATUS.get(error, 400)


def error_response(error: Errors, message: str | None = None,
                   status: int | None = None) -> JSONResponse:
    return JSONResponse(
        status_code=status or http_status_of(error),
        content={"error_code": error.code, "error_name": error.name,
                 "message": message if message is not None else error.message},
    )


def validation_message(error: ValidationError | RequestValidationError) -> str:
    """A one-line account of every problem pydantic found, naming each field."""
    parts = []
    for problem in error.errors():
        location = ".".join(str(part) for part in problem.get("loc", ()) if part != "body")
        parts.append(f"{location or 'body'}: {problem.get('msg', 'invalid')}")
    return "invalid request: " + "; ".join(parts)


def allowed_methods(app: FastAPI, path: str) -> list[str]:
    """Every method the OpenAPI document declares at ``path`` (HEAD with GET), sorted."""
    table: list[tuple[re.Pattern[str], set[str]]] | None = getattr(app.state, "route_table",
                                                                    None)
    if table is None:
        table = [(compile_path(template)[0], {method.upper() for method in operations})
                 for template, operations in app.openapi().get("paths", {}).items()]
        app.state.route_table = table
    methods = set().union(*(found for pattern, found in table if pattern.match(path)))
    if "GET" in methods:
        methods.add("HEAD")
    return sorted(methods)


def install_error_handlers(app: FastAPI) -> None:
    async def on_api_exception(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ApiException)
        return error_response(exc.error, exc.message)

    async def on_validation(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError | ValidationError)
        return error_response(Errors.INVALID_REQUEST, validation_message(exc), 400)

    async def on_http_exception(request: Request, exc: Exception) -> JSONResponse:
        """The router's own refusals in the ErrorBody shape: 404 for a path no route serves
        (a trailing slash included: never redirected, so no write is ever sent twice), 405
        with ``Allow`` naming every method the path serves."""
        assert isinstance(exc, HTTPException)
        where = f"{request.method} {request.url.path}"
        if exc.status_code == 405:
            allowed = allowed_methods(app, request.url.path)
            answer = error_response(Errors.INVALID_REQUEST, f"{where}: method not allowed; "
                                    f"allowed: {', '.join(allowed)}", 405)
            answer.headers["Allow"] = ", ".join(allowed)
            return answer
        if exc.status_code == 404:
            return error_response(Errors.INVALID_REQUEST, f"{where}: no such route", 404)
        return error_response(Errors.INVALID_REQUEST, str(exc.detail), exc.status_code)

    app.add_exception_handler(HTTPException, on_http_exception)
    app.add_exception_handler(ApiException, on_api_exception)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(ValidationError, on_validation)
