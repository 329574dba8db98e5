"""The guarded HTTP protocol on a real uvicorn server on 127.0.0.1 (short deadlines)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from chunkraft.api.http_guard import ConnectionLimits, uvicorn_options
from chunkraft.api.tls import CertificateHttpToolsProtocol
from chunkraft.local.local_cluster import free_ports

LIMITS = ConnectionLimits(head_timeout_s=0.3, body_timeout_s=0.3, max_connections_per_address=5)


async def app(scope: dict[str, Any], receive: Callable[[], Awaitable[dict[str, Any]]],
              send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
    if scope["type"] != "http":
        return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


def serve(scenario: Callable[[int], Awaitable[None]]) -> None:
    async def main() -> None:
        port = free_ports(1)[0]
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                               log_level="warning", lifespan="off",
                                               **uvicorn_options(LIMITS)))
        task = asyncio.create_task(server.serve())
        for _ in range(100):
            if server.started:
                break
            await asyncio.sleep(0.05)
        try:
            await asyncio.wait_for(scenario(port), 10)
        finally:
            server.should_exit = True
            await task

    asyncio.run(main())


async def closed_within(reader: asyncio.StreamReader, seconds: float) -> bool:
    """True if the server closes the connection (EOF) within ``seconds``."""
    try:
        return await asyncio.wait_for(reader.read(), seconds) == b""
    except TimeoutError:
        return False


async def get(port: int) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    await writer.drain()
    answer = await reader.read()
    writer.close()
    return answer


def test_a_complete_request_is_answered() -> None:
    async def scenario(port: int) -> None:
        assert (await get(port)).endswith(b"ok")

    serve(scenario)


def test_a_head_sent_byte_by_byte_is_cut_at_its_deadline() -> None:
    async def scenario(port: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n")
        await writer.drain()
        assert await closed_within(reader, 2.0)
        writer.close()

    serve(scenario)


def test_a_body_never_sent_is_cut_at_its_deadline() -> None:
    async def scenario(port: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        await writer.drain()
        assert await closed_within(reader, 2.0)
        writer.close()

    serve(scenario)


def test_an_idle_connection_is_kept_while_under_its_deadline() -> None:
    async def scenario(port: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        assert not await closed_within(reader, 0.1)
        writer.write(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        await writer.drain()
        assert (await reader.read()).endswith(b"ok")
        writer.close()

    serve(scenario)


def test_connections_over_the_per_address_bound_are_closed_at_once() -> None:
    async def scenario(port: int) -> None:
        held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(5)]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        assert await closed_within(reader, 0.2)  # well before the head deadline
        writer.close()
        for _, held_writer in held:
            held_writer.close()
        await asyncio.sleep(0.1)
        assert (await get(port)).endswith(b"ok")  # the count went down again

    serve(scenario)


def test_the_guard_goes_on_top_of_the_tls_protocol_and_keeps_its_options() -> None:
    options = uvicorn_options(LIMITS, {"http": CertificateHttpToolsProtocol,
                                       "ssl_certfile": "server.pem"})
    assert issubclass(options["http"], CertificateHttpToolsProtocol)
    assert options["ssl_certfile"] == "server.pem"
    assert issubclass(uvicorn_options(LIMITS)["http"], HttpToolsProtocol)
