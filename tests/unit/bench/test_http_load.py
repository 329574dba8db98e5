"""The load client sends each system's own headers and nothing from the environment."""

from __future__ import annotations

import asyncio
import json
import pickle
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from multiprocessing import get_context
from typing import ClassVar

import httpx
import pytest

from _http_load import LoadResult, Workload, _run_tasks, worker

TOKEN = "crt_chunkraft_admin_token"


def recorded(workload: Workload, seconds: float = 0.2) -> tuple[LoadResult, list[httpx.Request]]:
    """Runs ``workload`` with 2 tasks for ``seconds`` against a transport that answers
    every request with 200 ``{}``; returns the result and the requests sent."""
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={})

    now = time.time()
    result = asyncio.run(_run_tasks(workload, [0, 1], 2, now, now + seconds,
                                    transport=httpx.MockTransport(answer)))
    return result, seen


def test_an_etcd_workload_carries_no_chunkraft_token_even_with_it_in_the_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHUNKRAFT_TOKEN", TOKEN)
    result, seen = recorded(Workload("etcd-put", ("http://127.0.0.1:2379",), "e"))
    assert seen and result.ops > 0 and result.errors == 0
    for request in seen:
        assert "authorization" not in request.headers
        assert TOKEN not in str(request.headers.raw)
        assert request.url.path == "/v3/kv/put"


def test_a_chunkraft_workload_carries_exactly_its_own_token(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHUNKRAFT_TOKEN", "crt_some_other_token")
    own = (("authorization", f"Bearer {TOKEN}"),)
    _result, seen = recorded(Workload("create-topic", ("http://127.0.0.1:1",), "s",
                                      headers=own))
    assert seen
    assert {request.headers["authorization"] for request in seen} == {f"Bearer {TOKEN}"}


def test_a_workload_with_headers_crosses_to_a_client_process() -> None:
    workload = Workload("raw-put", ("http://a",), "r", headers=(("x-system", "raw"),))
    assert pickle.loads(pickle.dumps(workload)) == workload


class _Recorder(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: ClassVar[list[dict[str, str]]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        type(self).seen.append({k.lower(): v for k, v in self.headers.items()})
        body = json.dumps({"header": {}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return None


@pytest.fixture
def server() -> Iterator[tuple[str, list[dict[str, str]]]]:
    _Recorder.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", _Recorder.seen
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def _client_process(workload: Workload) -> LoadResult:
    """What a client process runs: a short measured window 2 s after it is up. The worker makes
    its HTTP clients first (a TLS context each: a quarter of a second or more on a busy host);
    a window that opened at once had closed before the first request on a loaded CI machine
    (0 operations). The requests of the warm-up second before the window count for the header
    check too."""
    start = time.time() + 2.0
    return worker(workload, [0], 1, start, start + 0.5)


def test_a_client_process_that_inherits_the_token_does_not_send_it_to_etcd(
        monkeypatch: pytest.MonkeyPatch, server: tuple[str, list[dict[str, str]]]) -> None:
    url, seen = server
    monkeypatch.setenv("CHUNKRAFT_TOKEN", TOKEN)  # inherited by the spawned client process
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        result = pool.submit(_client_process, Workload("etcd-put", (url,), "e")).result(60)
    assert result.ops > 0 and result.errors == 0
    assert seen and all("authorization" not in headers for headers in seen)
