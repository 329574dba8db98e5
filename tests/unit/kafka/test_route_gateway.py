"""RouteGateway (chunkraft.kafka.route_gateway): a FastAPI app's POST routes called in-process
as a Kafka session's principal, their 200 answers returned and their error bodies raised as
GatewayError."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import pytest
from fastapi import APIRouter, FastAPI
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from chunkraft.api.authentication import principal_of
from chunkraft.error_codes import ApiException, Errors
from chunkraft.kafka.admin.gateway import GatewayError
from chunkraft.kafka.route_gateway import RouteGateway, error_of
from chunkraft.kafka.server.requests import KafkaSession
from chunkraft.security.principal import Principal

SESSION = KafkaSession("SASL_PLAINTEXT", "SASL_PLAINTEXT", "10.0.0.7",
                       principal=Principal("User:alice", "10.0.0.7"), token="crt_alice")


def run(call: Coroutine[Any, Any, dict[str, Any]]) -> dict[str, Any]:
    return asyncio.run(call)


def app() -> FastAPI:
    application = FastAPI()
    router = APIRouter(prefix="/controller/v1")

    async def echo(request: Request) -> Response:
        principal = principal_of(request)
        return JSONResponse({"body": await request.json(), "principal": principal.name,
                             "principal_host": principal.host,
                             "client": request.client.host if request.client else None,
                             "method": request.method, "path": request.url.path})

    async def refuse(request: Request) -> Response:
        return JSONResponse({"error_code": 31, "error_name": "CLUSTER_AUTHORIZATION_FAILED",
                             "message": "User:alice may not ALTER the cluster"}, 403)

    async def read(request: Request, min_offset: int = 99, wait_ms: int = 5000) -> Response:
        return JSONResponse({"min_offset": min_offset, "wait_ms": wait_ms,
                             "body": await request.json()})

    async def a_list(request: Request) -> Response:
        return JSONResponse([1, 2])

    async def by_code(request: Request) -> Response:
        return JSONResponse({"error_code": 41, "message": "no leader"}, 503)

    async def not_json(request: Request) -> Response:
        return Response(b"", status_code=500)

    router.add_api_route("/echo", echo, methods=["POST"])
    router.add_api_route("/refuse", refuse, methods=["POST"])
    router.add_api_route("/read", read, methods=["POST"])
    router.add_api_route("/list", a_list, methods=["POST"])
    router.add_api_route("/by-code", by_code, methods=["POST"])
    router.add_api_route("/empty", not_json, methods=["POST"])
    router.add_api_route("/get-only", echo, methods=["GET"])
    application.include_router(router)
    return application


@pytest.fixture
def gateway() -> RouteGateway:
    return RouteGateway(app())


def test_a_write_returns_the_routes_answer_as_the_sessions_principal(
        gateway: RouteGateway) -> None:
    answer = run(gateway.write("/controller/v1/echo", {"topics": [{"name": "orders"}]},
                               SESSION))
    assert answer == {"body": {"topics": [{"name": "orders"}]}, "principal": "User:alice",
                      "principal_host": "10.0.0.7", "client": "10.0.0.7", "method": "POST",
                      "path": "/controller/v1/echo"}


def test_a_read_asks_for_the_gateways_last_write(gateway: RouteGateway) -> None:
    # Before any write: the committed image as it is (min_offset -1).
    answer = run(gateway.read("/controller/v1/read", {"resources": []}, SESSION))
    assert answer == {"min_offset": -1, "wait_ms": 5000, "body": {"resources": []}}
    # After a write answered at offset 42, a read waits for this node to apply it.
    gateway.last_offset = 42
    answer = run(gateway.read("/controller/v1/read", {"resources": []}, SESSION))
    assert answer["min_offset"] == 42


def test_an_answers_offset_is_kept_as_the_last_one() -> None:
    application = FastAPI()

    async def written(request: Request) -> Response:
        return JSONResponse({"ok": True}, headers={"X-Metadata-Offset": "17"})

    application.add_api_route("/controller/v1/written", written, methods=["POST"])
    gateway = RouteGateway(application)
    run(gateway.write("/controller/v1/written", {}, SESSION))
    assert gateway.last_offset == 17


def test_a_refusal_becomes_a_gateway_error_with_its_kafka_error(gateway: RouteGateway) -> None:
    with pytest.raises(GatewayError) as caught:
        run(gateway.write("/controller/v1/refuse", {}, SESSION))
    assert caught.value.status == 403
    assert caught.value.error is Errors.CLUSTER_AUTHORIZATION_FAILED
    assert caught.value.message == "User:alice may not ALTER the cluster"


def test_an_error_body_with_only_a_code_is_read_by_code(gateway: RouteGateway) -> None:
    with pytest.raises(GatewayError) as caught:
        run(gateway.write("/controller/v1/by-code", {}, SESSION))
    assert (caught.value.status, caught.value.error, caught.value.message) == (
        503, Errors.NOT_CONTROLLER, "no leader")


def test_an_empty_error_body_is_an_unknown_server_error(gateway: RouteGateway) -> None:
    with pytest.raises(GatewayError) as caught:
        run(gateway.write("/controller/v1/empty", {}, SESSION))
    assert (caught.value.status, caught.value.error) == (500, Errors.UNKNOWN_SERVER_ERROR)


def test_an_answer_that_is_not_an_object_is_refused(gateway: RouteGateway) -> None:
    with pytest.raises(GatewayError) as caught:
        run(gateway.write("/controller/v1/list", {}, SESSION))
    assert (caught.value.status, caught.value.error) == (500, Errors.UNKNOWN_SERVER_ERROR)


@pytest.mark.parametrize("path", ["/controller/v1/nope", "/controller/v1/get-only", "/echo"])
def test_only_post_routes_are_called(gateway: RouteGateway, path: str) -> None:
    with pytest.raises(GatewayError) as caught:
        run(gateway.write(path, {}, SESSION))
    assert caught.value.error is Errors.UNKNOWN_SERVER_ERROR
    assert path in str(caught.value.message)


def test_routes_of_nested_routers_are_found() -> None:
    application = FastAPI()
    outer, inner = APIRouter(prefix="/controller"), APIRouter(prefix="/v2")

    async def ping(request: Request) -> Response:
        return JSONResponse({"pong": principal_of(request).name})

    inner.add_api_route("/ping", ping, methods=["POST"])
    outer.include_router(inner)
    application.include_router(outer)
    answer = run(RouteGateway(application).write("/controller/v2/ping", {}, SESSION))
    assert answer == {"pong": "User:alice"}


def test_a_route_included_with_a_prefix_is_found_at_its_path() -> None:
    # FastAPI answers POST /controller/v1/ping here; so must the gateway.
    application = FastAPI()
    router = APIRouter()

    async def ping(request: Request) -> Response:
        return JSONResponse({"pong": True})

    router.add_api_route("/ping", ping, methods=["POST"])
    application.include_router(router, prefix="/controller/v1")
    assert run(RouteGateway(application).write("/controller/v1/ping", {}, SESSION)) == {
        "pong": True}


@pytest.mark.parametrize(("payload", "error", "message"), [
    ({"error_name": "INVALID_REQUEST", "error_code": 31, "message": "m"},
     Errors.INVALID_REQUEST, "m"),  # the name wins over the code
    ({"error_name": "NO_SUCH_ERROR", "error_code": 31}, Errors.CLUSTER_AUTHORIZATION_FAILED,
     None),
    ({"error_code": 9999, "error_message": "e"}, Errors.UNKNOWN_SERVER_ERROR, "e"),
    ("text", Errors.UNKNOWN_SERVER_ERROR, None),
    (None, Errors.UNKNOWN_SERVER_ERROR, None),
])
def test_error_of_reads_an_error_body(payload: Any, error: Errors, message: str | None) -> None:
    found = error_of(400, payload)
    assert (found.status, found.error, found.message) == (400, error, message)


def test_an_api_exception_raised_by_a_route_is_its_kafka_error() -> None:
    """Over HTTP the app's exception handler turns an ApiException into its error body; a
    route called in-process raises it (the leader refusing an operation while validating it),
    and the gateway answers it the same way instead of failing the connection."""
    application = FastAPI()

    async def raises(request: Request) -> Response:
        raise ApiException(Errors.CLUSTER_AUTHORIZATION_FAILED, "User:carol may not ALTER")

    application.add_api_route("/controller/v1/raises", raises, methods=["POST"])
    with pytest.raises(GatewayError) as caught:
        run(RouteGateway(application).write("/controller/v1/raises", {}, SESSION))
    assert (caught.value.status, caught.value.error, caught.value.message) == (
        403, Errors.CLUSTER_AUTHORIZATION_FAILED, "User:carol may not ALTER")
