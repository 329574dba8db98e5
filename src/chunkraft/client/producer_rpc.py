"""The producer's HTTP calls to brokers: produce, init-producer-id and the coordinators.

:class:`BrokerRpc` posts ``chunkraft.protocol`` messages to ``/broker/v1/<path>`` of a broker
URL over one shared ``httpx.AsyncClient`` (a pool of connections per broker, so several
produce requests can be in flight). :meth:`BrokerRpc.coordinator_call` finds the coordinator
of a key (FindCoordinator at any broker), calls it, and on the retriable coordinator errors
(NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS,
CONCURRENT_TRANSACTIONS) or a connection failure finds it again and retries with backoff,
within a deadline.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

import httpx
from pydantic import BaseModel

from chunkraft.client.broker_client import BrokerClientError
from chunkraft.client.producer_batches import ProducerError
from chunkraft.error_codes import Errors
from chunkraft.protocol.batch_frame import ACCEPT_FRAME, MEDIA_TYPE, decode_answer, frame_bytes
from chunkraft.protocol.coordinators import FindCoordinatorRequest, FindCoordinatorResponse
from chunkraft.protocol.data_plane import ProduceRequest

__all__ = ["COORDINATOR_RETRIABLE", "BrokerRpc"]

M = TypeVar("M", bound=BaseModel)

COORDINATOR_RETRIABLE = frozenset({
    Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.CONCURRENT_TRANSACTIONS,
    Errors.REQUEST_TIMED_OUT, Errors.NOT_ENOUGH_REPLICAS, Errors.LEADER_NOT_AVAILABLE,
    Errors.NOT_LEADER_OR_FOLLOWER, Errors.UNKNOWN_TOPIC_OR_PARTITION})
"""Errors after which a coordinator call is retried (the coordinator found again first)."""

_REFIND = frozenset({Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE})


class BrokerRpc:
    """Posts messages to brokers (see the module docstring). Lives on one event loop."""

    def __init__(self, *, token: str | None, verify: ssl.SSLContext | bool,
                 timeout: float, retry_backoff: float,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.retry_backoff = retry_backoff
        self._http = httpx.AsyncClient(
            timeout=timeout, verify=verify, transport=transport,
            headers={"authorization": f"Bearer {token}"} if token else {},
            limits=httpx.Limits(max_connections=200, max_keepalive_connections=50))
        self._coordinators: dict[tuple[int, str], str] = {}

    async def aclose(self) -> None:
        await self._http.aclose()

    async def post(self, url: str, path: str, message: BaseModel, model: type[M]) -> M:
        """One request; :class:`BrokerClientError` if refused as a whole, httpx's errors if
        the broker cannot be reached. A produce goes as a batch frame (its records raw)."""
        if isinstance(message, ProduceRequest):
            content = frame_bytes(message)
            headers = {"content-type": MEDIA_TYPE, "accept": ACCEPT_FRAME}
        else:
            content = type(message).__pydantic_serializer__.to_json(message)
            headers = {"content-type": "application/json"}
        answer = await self._http.post(f"{url}/broker/v1/{path}", content=content,
                                       headers=headers)
        if answer.status_code != 200:
            try:
                body = answer.json()
            except ValueError:
                body = {"message": answer.text[:500]}
            raise BrokerClientError(answer.status_code, body if isinstance(body, dict)
                                    else {"message": str(body)[:500]})
        return decode_answer(answer.content, answer.headers.get("content-type"), model)

    async def find_coordinator(self, key_type: int, key: str, urls: Sequence[str]) -> str:
        """The URL of the coordinator of ``key``, asked of the brokers ``urls`` in turn;
        raises :class:`ProducerError` with the coordinator's error (retriable or not) or
        when no broker answers."""
        failures: list[str] = []
        for url in urls:
            try:
                answer = await self.post(url, "find-coordinator", FindCoordinatorRequest(
                    key_type=key_type, keys=(key,)), FindCoordinatorResponse)
            except (httpx.HTTPError, BrokerClientError) as error:
                if isinstance(error, BrokerClientError) and error.status in (401, 403):
                    raise ProducerError(str(error), error.error) from error
                failures.append(f"{url}: {error}")
                continue
            found = next((c for c in answer.coordinators if c.key == key), None)
            if found is None:
                failures.append(f"{url}: no coordinator in the answer")
                continue
            if found.error_code != 0:
                raise ProducerError(found.error_message or "FindCoordinator failed",
                                    Errors.for_code(found.error_code))
            coordinator = found.url or f"{url.split('://')[0]}://{found.host}:{found.port}"
            self._coordinators[(key_type, key)] = coordinator.rstrip("/")
            return self._coordinators[(key_type, key)]
        raise ProducerError("no broker answered FindCoordinator: " + "; ".join(failures),
                            Errors.COORDINATOR_NOT_AVAILABLE)

    async def coordinator_call(self, key_type: int, key: str, urls: Callable[[], list[str]],
                               path: str, message: BaseModel, model: type[M],
                               error_of: Callable[[M], Errors], deadline: float) -> M:
        """Calls ``path`` on the coordinator of ``key`` until the answer's error (read by
        ``error_of``) is not retriable or ``deadline`` (monotonic) passes; returns the last
        answer (its error may be non-zero: the caller judges it), or raises
        :class:`ProducerError` when no answer came before the deadline."""
        last: str = ""
        while True:
            try:
                url = self._coordinators.get((key_type, key))
                if url is None:
                    url = await self.find_coordinator(key_type, key, urls())
                answer = await self.post(url, path, message, model)
                error = error_of(answer)
                if error not in COORDINATOR_RETRIABLE:
                    return answer
                last = f"{path}: {error.name}"
                if error in _REFIND or error is Errors.COORDINATOR_LOAD_IN_PROGRESS:
                    self._coordinators.pop((key_type, key), None)
            except ProducerError as error:
                if error.error not in COORDINATOR_RETRIABLE:
                    raise
                last = str(error)
            except BrokerClientError as error:
                if error.status in (400, 401, 403, 404, 413):
                    raise ProducerError(f"{path}: {error}", error.error) from error
                last = str(error)
                self._coordinators.pop((key_type, key), None)
            except httpx.HTTPError as error:
                last = f"{path}: {type(error).__name__}: {error}"
                self._coordinators.pop((key_type, key), None)
            if time.monotonic() + self.retry_backoff > deadline:
                raise ProducerError(f"gave up before the deadline; last: {last}",
                                    Errors.REQUEST_TIMED_OUT)
            await asyncio.sleep(self.retry_backoff)
