"""ControllerChannel: a broker's asynchronous calls to the controller quorum.

The async sibling of :class:`chunkraft.client.controller_rpc.ControllerRpcClient`, with the same
rules: any controller accepts a call (followers forward writes to the leader); every call carries
an ``Idempotency-Key`` that stays the same across its retries, so a call whose outcome was unknown
(the leader died mid-way, a timeout) can be sent again to another controller and never applies
twice; connection errors, 421 and 502/503/504 are retried on the next controller with bounded
backoff until ``retry_for`` seconds have passed, then :class:`ControllerRpcError` is raised.
A controller that answered is kept for the next call (it is usually the leader, or one that
forwards well), so a healthy quorum costs one request per call.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import time
from typing import Any

import httpx

from chunkraft.client.controller_rpc import ControllerRpcError
from chunkraft.cluster_timeouts import cluster_timeout
from chunkraft.error_codes import Errors

__all__ = ["RETRIABLE_STATUS", "ControllerChannel", "ControllerRpcError"]

RETRIABLE_STATUS = frozenset({421, 502, 503, 504})
_FIRST_BACKOFF = 0.02
_MAX_BACKOFF = 0.5


class ControllerChannel:
    """Calls ``/controller/v1/...`` on a list of controller URLs; one per broker process.

    Use from one event loop (the broker's); concurrent calls are fine (httpx pools connections).
    ``token`` is sent as ``Authorization: Bearer``; ``verify`` is httpx's. ``timeout`` bounds one
    HTTP exchange, ``retry_for`` a whole call with its retries. ``transport`` replaces the
    network in tests (``httpx.MockTransport``).
    """

    def __init__(self, urls: list[str] | tuple[str, ...], *, token: str | None = None,
                 timeout: float = 10.0, retry_for: float = 30.0,
                 verify: ssl.SSLContext | bool = True,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        if not urls:
            raise ValueError("at least one controller URL is needed")
        self.urls = [url.rstrip("/") for url in urls]
        self.retry_for = retry_for
        self.headers = {"authorization": f"Bearer {token}"} if token else {}
        limits = httpx.Limits(max_connections=16, max_keepalive_connections=8)
        self.client = httpx.AsyncClient(timeout=cluster_timeout(timeout), headers=self.headers,
                                        verify=verify, limits=limits, transport=transport)
        self._preferred = 0
        self._followers: list[ControllerChannel] = []
        self.last_offset = -1
        """The ``X-Metadata-Offset`` of the last successful answer."""
        self.calls = 0
        self.retries = 0

    @property
    def preferred_url(self) -> str:
        """The controller the next call goes to first."""
        return self.urls[self._preferred % len(self.urls)]

    def prefer(self, url: str) -> None:
        """Sends the next call to ``url`` first (one of :attr:`urls`; others are ignored): the
        metadata follower names the leader, which saves followers a forwarding hop."""
        if url in self.urls:
            self._preferred = self.urls.index(url)
        for other in self._followers:
            other.prefer(url)

    def share_preference(self, other: ControllerChannel) -> None:
        """From now on :meth:`prefer` also points ``other`` at that controller: the heartbeat
        channel (on its own thread) follows the leader the metadata follower found. Safe across
        threads: the preference is one int store, and a race only changes which controller a
        call tries first."""
        self._followers.append(other)

    def rotate(self) -> str:
        """Moves to the next controller URL and returns it."""
        self._preferred = (self._preferred + 1) % len(self.urls)
        return self.preferred_url

    async def call(self, path: str, body: dict[str, Any] | None = None, *,
                   method: str = "POST", params: dict[str, Any] | None = None,
                   retry_for: float | None = None,
                   headers: dict[str, str] | None = None) -> dict[str, Any]:
        """The JSON answer of ``path`` (``/controller/v1/...``), a 200's body.

        Raises ControllerRpcError for a non-retriable HTTP error (its status and error body),
        or when no controller answered within ``retry_for`` (default: the channel's): then the
        status is the last one seen (503 NETWORK_EXCEPTION if none answered at all).
        Cancellation propagates at once. ``headers`` are added to the channel's own (an
        ``authorization`` of the caller's replaces the broker's token).
        """
        key = os.urandom(16).hex()
        deadline = time.monotonic() + (self.retry_for if retry_for is None else retry_for)
        backoff = _FIRST_BACKOFF
        last: Exception | None = None
        self.calls += 1
        for _ in range(1_000_000):  # bounded by the deadline; the count is a backstop
            url = self.preferred_url
            try:
                answer = await self.client.request(method, url + path, json=body, params=params,
                                                   headers={**(headers or {}),
                                                            "Idempotency-Key": key})
                payload: dict[str, Any] = answer.json()
                if answer.status_code == 200:
                    offset = answer.headers.get("x-metadata-offset")
                    if offset is not None:
                        self.last_offset = int(offset)
                    return payload
                last = ControllerRpcError(answer.status_code, payload)
                if answer.status_code not in RETRIABLE_STATUS:
                    raise last
            except (httpx.HTTPError, ValueError) as error:
                last = error
            self.rotate()
            self.retries += 1
            if time.monotonic() + backoff > deadline:
                break
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, _MAX_BACKOFF)
        if isinstance(last, ControllerRpcError):
            raise last
        raise ControllerRpcError(503, {"error_code": Errors.NETWORK_EXCEPTION.code,
                                       "message": f"no controller answered: {last!r}"})

    async def aclose(self) -> None:
        await self.client.aclose()
