"""GroupClient: a consumer's calls to its group coordinator (FindCoordinator, OffsetCommit,
OffsetFetch, JoinGroup, SyncGroup, Heartbeat, LeaveGroup over ``/broker/v1/<name>``).

The coordinator of a group is the broker leading the group's ``__consumer_offsets``
partition; any broker answers FindCoordinator. NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE and
COORDINATOR_LOAD_IN_PROGRESS (and a coordinator that does not answer) make the client find the
coordinator again and retry, a bounded number of times with a backoff; other errors are the
caller's (membership errors such as REBALANCE_IN_PROGRESS mean "join again").
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

import httpx
from pydantic import BaseModel

from chunkraft.client.broker_client import BrokerClientError
from chunkraft.error_codes import Errors
from chunkraft.protocol.coordinators import (
    GROUP_KEY,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)

__all__ = ["COORDINATOR_ERRORS", "GroupClient", "GroupError"]

M = TypeVar("M", bound=BaseModel)

COORDINATOR_ERRORS = frozenset({Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE,
                                Errors.COORDINATOR_LOAD_IN_PROGRESS})
"""Errors after which the coordinator is looked up again and the call retried."""

MAX_ATTEMPTS = 30
BACKOFF_S = (0.05, 0.1, 0.2, 0.3, 0.5)


class GroupError(Exception):
    """A group call that failed with a Kafka error (``error``) after its retries."""

    def __init__(self, error: Errors, message: str | None = None) -> None:
        self.error = error
        super().__init__(f"{error.name}: {message or error.message}")


def _error_of(answer: BaseModel) -> Errors:
    code = getattr(answer, "error_code", 0)
    if code:
        return Errors.for_code(int(code))
    for topic in getattr(answer, "topics", ()) or ():
        for partition in getattr(topic, "partitions", ()):
            code = getattr(partition, "error_code", 0)
            if code and Errors.for_code(int(code)) in COORDINATOR_ERRORS:
                return Errors.for_code(int(code))
    return Errors.NONE


class GroupClient:
    """Calls to the coordinator of ``group_id``; ``brokers()`` gives the broker URLs to ask
    FindCoordinator (tried in turn). Not thread-safe: one per consumer."""

    def __init__(self, group_id: str, brokers: Callable[[], Sequence[str]], *,
                 token: str | None = None, verify: ssl.SSLContext | bool = True,
                 timeout: float = 30.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.group_id = group_id
        self._brokers = brokers
        headers = {"authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(timeout=timeout, verify=verify, headers=headers,
                                  transport=transport)
        self._coordinator: str | None = None

    def close(self) -> None:
        self._http.close()

    def _post(self, url: str, path: str, message: BaseModel, model: type[M]) -> M:
        answer = self._http.post(url.rstrip("/") + "/broker/v1/" + path,
                                 content=type(message).__pydantic_serializer__.to_json(message),
                                 headers={"content-type": "application/json"})
        if answer.status_code != 200:
            try:
                body = answer.json()
            except ValueError:
                body = {"message": answer.text[:500]}
            raise BrokerClientError(answer.status_code,
                                    body if isinstance(body, dict) else {"message": str(body)})
        return model.model_validate_json(answer.content)

    def find_coordinator(self) -> str:
        """The coordinator's URL (asked of each known broker until one answers)."""
        request = FindCoordinatorRequest(key_type=GROUP_KEY, keys=(self.group_id,))
        last: Exception | None = None
        for url in self._brokers():
            try:
                answer = self._post(url, "find-coordinator", request, FindCoordinatorResponse)
            except httpx.TransportError as error:
                last = error
                continue
            (found,) = answer.coordinators
            if found.error_code:
                raise GroupError(Errors.for_code(found.error_code), found.error_message)
            self._coordinator = found.url or f"http://{found.host}:{found.port}"
            return self._coordinator
        raise GroupError(Errors.COORDINATOR_NOT_AVAILABLE, f"no broker answered: {last}")

    def call(self, path: str, message: BaseModel, model: type[M]) -> M:
        """``message`` to the coordinator; retried after coordinator errors. The answer may
        still carry other errors (the caller's to read)."""
        last = Errors.COORDINATOR_NOT_AVAILABLE
        for attempt in range(MAX_ATTEMPTS):
            try:
                url = self._coordinator or self.find_coordinator()
                answer = self._post(url, path, message, model)
            except GroupError as error:
                if error.error not in COORDINATOR_ERRORS:
                    raise
                last = error.error
            except httpx.TransportError:
                last = Errors.COORDINATOR_NOT_AVAILABLE
            else:
                failed = _error_of(answer)
                if failed not in COORDINATOR_ERRORS:
                    return answer
                last = failed
            self._coordinator = None
            time.sleep(BACKOFF_S[min(attempt, len(BACKOFF_S) - 1)])
        raise GroupError(last, f"{path} for group {self.group_id} failed {MAX_ATTEMPTS} times")

    def offset_commit(self, request: OffsetCommitRequest) -> OffsetCommitResponse:
        return self.call("offset-commit", request, OffsetCommitResponse)

    def offset_fetch(self, request: OffsetFetchRequest) -> OffsetFetchResponse:
        return self.call("offset-fetch", request, OffsetFetchResponse)

    def join_group(self, request: JoinGroupRequest) -> JoinGroupResponse:
        return self.call("join-group", request, JoinGroupResponse)

    def sync_group(self, request: SyncGroupRequest) -> SyncGroupResponse:
        return self.call("sync-group", request, SyncGroupResponse)

    def heartbeat(self, request: HeartbeatRequest) -> HeartbeatResponse:
        return self.call("heartbeat", request, HeartbeatResponse)

    def leave_group(self, request: LeaveGroupRequest) -> LeaveGroupResponse:
        return self.call("leave-group", request, LeaveGroupResponse)
