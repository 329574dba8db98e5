"""ControllerRpcClient: calls the controller quorum's RPC surface, safely retried.

Any controller accepts a call (followers forward writes to the leader). The client sends every
write with an ``Idempotency-Key`` and keeps that key across retries, so a call whose outcome
was unknown (the leader died mid-way, a timeout) can be retried on any controller and never
applies twice. It retries connection errors, 421, 502/503/504 and retriable Kafka errors with
bounded backoff, moving to the next controller URL each time.
"""

from __future__ import annotations

import os
import ssl
import time
from typing import Any

import httpx

from chunkraft.error_codes import Errors

__all__ = ["ControllerRpcClient", "ControllerRpcError"]

_RETRIABLE_STATUS = frozenset({421, 502, 503, 504})


class ControllerRpcError(Exception):
    """A call that failed for good: ``status`` and the error body (``error_code``, ``message``)."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        self.status = status
        self.body = body
        self.error = Errors.for_code(int(body.get("error_code", -1)))
        super().__init__(f"HTTP {status} {self.error.name}: {body.get('message', '')}")


class ControllerRpcClient:
    """Synchronous client over a list of controller URLs. Not thread-safe: one per thread.

    ``token`` is sent as ``Authorization: Bearer``; ``verify`` is httpx's (an SSL context with
    the CA, and a client certificate for controllers that require one)."""

    def __init__(self, urls: list[str] | str, *, timeout: float = 30.0,
                 retry_for: float = 30.0, token: str | None = None,
                 verify: ssl.SSLContext | bool = True) -> None:
        if isinstance(urls, str):
            urls = [part.strip() for part in urls.split(",") if part.strip()]
        if not urls:
            raise ValueError("at least one controller URL is needed")
        self.urls = [url.rstrip("/") for url in urls]
        self.retry_for = retry_for
        headers = {"authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.Client(timeout=timeout, headers=headers, verify=verify)
        self._next = 0
        self.last_offset = -1

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> ControllerRpcClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def call(self, path: str, body: dict[str, Any] | None = None, *,
             key: bytes | None = None, params: dict[str, Any] | None = None,
             method: str = "POST") -> dict[str, Any]:
        """The JSON answer of ``path`` (``/controller/v1/...``); raises ControllerRpcError."""
        key = key or os.urandom(16)
        deadline = time.monotonic() + self.retry_for
        backoff = 0.05
        last: Exception | None = None
        while True:
            url = self.urls[self._next % len(self.urls)]
            try:
                answer = self._client.request(
                    method, url + path, json=body, params=params,
                    headers={"Idempotency-Key": key.hex()})
                payload: dict[str, Any] = answer.json()
                if answer.status_code == 200:
                    self.last_offset = int(answer.headers.get("x-metadata-offset", -1))
                    return payload
                last = ControllerRpcError(answer.status_code, payload)
                if answer.status_code not in _RETRIABLE_STATUS:
                    raise last
            except (httpx.HTTPError, ValueError) as error:
                last = error
            self._next += 1
            if time.monotonic() + backoff > deadline:
                if isinstance(last, ControllerRpcError):
                    raise last
                raise ControllerRpcError(503, {"error_code": Errors.NETWORK_EXCEPTION.code,
                                               "message": f"no controller answered: {last}"})
            time.sleep(backoff)
            backoff = min(backoff * 2, 1.0)
