"""chunkraft.api.direct_routes: marked POST routes answered without the router, same answers."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.responses import JSONResponse

from chunkraft.api.direct_routes import (
    DIRECT_ROUTE_MARK,
    direct_routes_of,
    install_direct_routes,
)
from chunkraft.api.errors import install_error_handlers
from chunkraft.api.metrics import install_metrics
from chunkraft.error_codes import ApiException, Errors
from tests.unit.api.support import V1, running_node, start_brokers


class _Refused(Exception):
    pass


def _app(calls: list[str]) -> FastAPI:
    """A marked write route, an unmarked one, and an exception handler; DirectRoutes inside
    the metrics middleware, as in the controller's app."""
    app = FastAPI()
    router = APIRouter(prefix="/rpc")

    async def write(request: Request) -> Response:
        calls.append(f"write {request.scope.get('route').path}")  # type: ignore[union-attr]
        body = await request.body()
        if body == b"refuse":
            raise _Refused("no")
        if body == b"crash":
            raise RuntimeError("the handler failed")
        return JSONResponse({"echo": body.decode()}, headers={"x-offset": "7"})

    async def plain(request: Request) -> Response:
        calls.append("plain")
        return JSONResponse({"plain": True})

    setattr(write, DIRECT_ROUTE_MARK, True)
    router.add_api_route("/write", write, methods=["POST"])
    router.add_api_route("/plain", plain, methods=["POST"])
    app.include_router(router)

    async def on_refused(request: Request, error: Exception) -> JSONResponse:
        return JSONResponse({"refused": str(error)}, status_code=409)

    app.add_exception_handler(_Refused, on_refused)
    install_direct_routes(app)
    install_metrics(app)
    return app


async def _post(app: FastAPI, path: str, body: bytes, method: str = "POST") -> httpx.Response:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        return await client.request(method, path, content=body)


def test_only_post_only_routes_with_the_mark_are_direct() -> None:
    routes = direct_routes_of(_app([]).routes)
    assert list(routes) == ["/rpc/write"]


def test_a_marked_route_answers_with_its_own_handler_and_the_routers_label() -> None:
    calls: list[str] = []
    app = _app(calls)
    answer = asyncio.run(_post(app, "/rpc/write", b"hello"))
    assert answer.status_code == 200 and answer.json() == {"echo": "hello"}
    assert answer.headers["x-offset"] == "7"
    assert calls == ["write /rpc/write"]  # scope["route"] set, as the router sets it
    metrics = asyncio.run(_post(app, "/metrics", b"", "GET"))
    assert 'route="/rpc/write"' in metrics.text


def test_an_exception_gets_the_apps_handler_and_one_without_a_handler_is_a_500() -> None:
    app = _app([])
    refused = asyncio.run(_post(app, "/rpc/write", b"refuse"))
    assert refused.status_code == 409 and refused.json() == {"refused": "no"}
    crashed = asyncio.run(_post(app, "/rpc/write", b"crash"))
    assert crashed.status_code == 500


@pytest.mark.parametrize(("method", "path", "status"), [
    ("GET", "/rpc/write", 405),        # another method: FastAPI's answer, as before
    ("POST", "/rpc/plain", 200),       # an unmarked route: through the router
    ("POST", "/rpc/missing", 404),
])
def test_everything_else_goes_through_fastapi(method: str, path: str, status: int) -> None:
    calls: list[str] = []
    answer = asyncio.run(_post(_app(calls), path, b"", method))
    assert answer.status_code == status
    assert not any(call.startswith("write") for call in calls)


def test_the_controllers_write_routes_are_all_direct_and_answer_as_before() -> None:
    async def scenario() -> list[Any]:
        async with running_node() as node:
            await start_brokers(node)
            created = await node.post("create-topics", {"topics": [
                {"name": "direct", "num_partitions": 1, "replication_factor": 3}]})
            again = await node.post("create-topics", {"topics": [
                {"name": "direct", "num_partitions": 1, "replication_factor": 3}]})
            malformed = await node.post("create-topics", {"topics": "not a list"})
            routes = direct_routes_of(node.app.routes)
            return [created, again, malformed, routes]

    created, again, malformed, routes = asyncio.run(scenario())
    assert f"{V1}/create-topics" in routes and f"{V1}/broker-heartbeat" in routes
    assert f"{V1}/metadata" not in routes  # a read route takes query parameters: not direct
    assert created.status_code == 200
    assert created.json()["topics"][0]["error_code"] == 0
    assert int(created.headers["x-metadata-offset"]) > 0
    assert again.json()["topics"][0]["error_code"] == Errors.TOPIC_ALREADY_EXISTS.code
    assert malformed.status_code == 400
    assert malformed.json()["error_code"] == Errors.INVALID_REQUEST.code


def test_an_api_exception_from_a_direct_route_gets_the_kafka_error_body() -> None:
    app = FastAPI()

    async def failing(request: Request) -> Response:
        raise ApiException(Errors.NOT_CONTROLLER, "not me")

    setattr(failing, DIRECT_ROUTE_MARK, True)
    app.add_api_route("/w", failing, methods=["POST"])
    install_error_handlers(app)
    install_direct_routes(app)
    answer = asyncio.run(_post(app, "/w", b""))
    assert answer.status_code == 421
    assert answer.json() == {"error_code": Errors.NOT_CONTROLLER.code,
                             "error_name": "NOT_CONTROLLER", "message": "not me"}
