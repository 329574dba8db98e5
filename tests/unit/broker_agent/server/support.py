"""Fakes of the broker runtime for the data-plane app: a ReplicaManager that records what it
was asked and answers simply, fixed metadata and lifecycle state, a counter of producer ids."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI

from chunkraft.api.authentication import Authenticator
from chunkraft.broker_agent.server import create_broker_app
from chunkraft.controller.image import MetadataImage
from chunkraft.error_codes import ApiException
from chunkraft.protocol.acls import (
    AclOperation,
    AclPatternType,
    AclPermissionType,
    AclResourceType,
)
from chunkraft.protocol.data_plane import (
    FetchPartitionResponse,
    FetchRequest,
    FetchResponse,
    FetchTopicResponse,
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderPartitionResult,
    OffsetForLeaderTopicResult,
    ProducePartitionResponse,
    ProduceRequest,
    ProduceResponse,
    ProduceTopicResponse,
    TxnMarkerPartitionResult,
    TxnMarkerResult,
    TxnMarkerTopicResult,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from chunkraft.records import AccessControlEntryRecord
from chunkraft.security.authorizer import Authorizer
from chunkraft.security.credentials import CredentialStore, add_token
from tests.unit.controller.operations.topic_support import apply

_acl_ids = itertools.count(1)
RECORDS = "AAAA"  # what the fake fetch answers in JSON (base64 of three zero bytes)
RECORD_BYTES = b"\0\0\0"  # the same as bytes


def acl(resource_name: str, operation: AclOperation, principal: str = "User:alice", *,
        resource_type: AclResourceType = AclResourceType.TOPIC,
        permission: AclPermissionType = AclPermissionType.ALLOW,
        pattern: AclPatternType = AclPatternType.LITERAL) -> AccessControlEntryRecord:
    return AccessControlEntryRecord(
        id=uuid.UUID(int=next(_acl_ids)), resource_type=resource_type,
        resource_name=resource_name, pattern_type=pattern, principal=principal, host="*",
        operation=operation, permission_type=permission)


def image_with(*records: Any) -> MetadataImage:
    return apply(MetadataImage.EMPTY, *records) if records else MetadataImage.EMPTY


class AsgiClient:
    """A synchronous client of an app in this process (httpx over ASGITransport, one event
    loop per request): starlette's TestClient needs a package this project does not use."""

    def __init__(self, app: FastAPI, base_url: str = "http://broker-0") -> None:
        self.app = app
        self.base_url = base_url

    def request(self, method: str, path: str, **options: Any) -> httpx.Response:
        async def send() -> httpx.Response:
            transport = httpx.ASGITransport(app=self.app)
            async with httpx.AsyncClient(transport=transport, base_url=self.base_url) as http:
                return await http.request(method, path, **options)

        return asyncio.run(send())

    def get(self, path: str, **options: Any) -> httpx.Response:
        return self.request("GET", path, **options)

    def post(self, path: str, **options: Any) -> httpx.Response:
        return self.request("POST", path, **options)


@dataclass
class FakeReplicaManager:
    """Answers every partition with success and records each request it got."""

    calls: list[tuple[str, Any]] = field(default_factory=list)
    roll_outcomes: dict[tuple[str, int], tuple[int, str | None]] = field(default_factory=dict)
    counts: tuple[int, int, int] = (2, 3, 4)
    fail_with: ApiException | None = None

    async def produce(self, request: ProduceRequest) -> ProduceResponse:
        self.calls.append(("produce", request))
        if self.fail_with is not None:
            raise self.fail_with
        return ProduceResponse(topics=tuple(
            ProduceTopicResponse(name=t.name, partitions=tuple(
                ProducePartitionResponse(index=p.index, base_offset=10 * p.index)
                for p in t.partitions)) for t in request.topics))

    async def fetch(self, request: FetchRequest) -> FetchResponse:
        self.calls.append(("fetch", request))
        return FetchResponse(responses=tuple(
            FetchTopicResponse(topic=t.topic, partitions=tuple(
                FetchPartitionResponse(partition=p.partition, high_watermark=5,
                                       records=RECORD_BYTES) for p in t.partitions))
            for t in request.topics))

    def list_offsets(self, request: ListOffsetsRequest) -> ListOffsetsResponse:
        self.calls.append(("list_offsets", request))
        return ListOffsetsResponse(topics=tuple(
            ListOffsetsTopicResponse(name=t.name, partitions=tuple(
                ListOffsetsPartitionResponse(partition_index=p.partition_index, offset=7)
                for p in t.partitions)) for t in request.topics))

    def offsets_for_leader_epoch(
            self, request: OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse:
        self.calls.append(("offsets_for_leader_epoch", request))
        return OffsetForLeaderEpochResponse(topics=tuple(
            OffsetForLeaderTopicResult(topic=t.topic, partitions=tuple(
                OffsetForLeaderPartitionResult(partition=p.partition,
                                               leader_epoch=p.leader_epoch, end_offset=9)
                for p in t.partitions)) for t in request.topics))

    async def write_txn_markers(self, request: WriteTxnMarkersRequest
                                ) -> WriteTxnMarkersResponse:
        self.calls.append(("write_txn_markers", request))
        return WriteTxnMarkersResponse(markers=tuple(
            TxnMarkerResult(producer_id=m.producer_id, topics=tuple(
                TxnMarkerTopicResult(name=t.name, partitions=tuple(
                    TxnMarkerPartitionResult(partition_index=i)
                    for i in t.partition_indexes)) for t in m.topics))
            for m in request.markers))

    async def roll_chunk(self, topic: str, partition: int, broker_ids: tuple[int, ...],
                         leader: int) -> tuple[int, str | None]:
        self.calls.append(("roll_chunk", (topic, partition, broker_ids, leader)))
        return self.roll_outcomes.get((topic, partition), (0, None))

    def status_counts(self) -> tuple[int, int, int]:
        return self.counts

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]


@dataclass
class FakeFollower:
    image: MetadataImage = field(default_factory=lambda: MetadataImage.EMPTY)
    offset: int = 41


@dataclass
class FakeLifecycle:
    broker_epoch: int = 12
    fenced: bool = False
    shutting_down: bool = False


@dataclass
class FakeProducerIds:
    next: int = 1000
    error: ApiException | None = None

    async def next_id(self) -> int:
        if self.error is not None:
            raise self.error
        self.next += 1
        return self.next - 1


@dataclass
class FakeRuntime:
    node_id: int = 0
    cluster_id: str = "MkU3OEVBNTcwNTJENDM2Qg"
    follower: FakeFollower = field(default_factory=FakeFollower)
    lifecycle: FakeLifecycle = field(default_factory=FakeLifecycle)
    replica_manager: FakeReplicaManager = field(default_factory=FakeReplicaManager)
    producer_ids: FakeProducerIds = field(default_factory=FakeProducerIds)
    authenticator: Authenticator | None = None
    authorizer: Authorizer | None = None


@dataclass
class SecuredBroker:
    """An app with bearer tokens for alice, bob (plain users), broker-0 / broker-1 and an
    admin super user; ACLs from ``runtime.follower.image``."""

    runtime: FakeRuntime
    app: FastAPI
    client: AsgiClient
    tokens: dict[str, str]

    def headers(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[who]}"}

    def post(self, path: str, who: str, body: Any) -> httpx.Response:
        return self.client.post(path, json=body, headers=self.headers(who))


def secured_broker(tmp_path: Path, *acls: AccessControlEntryRecord) -> SecuredBroker:
    credentials = tmp_path / "credentials.json"
    tokens = {who: add_token(credentials, f"User:{who}")
              for who in ("alice", "bob", "broker-0", "broker-1", "admin")}
    runtime = FakeRuntime(
        follower=FakeFollower(image=image_with(*acls)),
        authenticator=Authenticator(credentials=CredentialStore(credentials)),
        authorizer=Authorizer(super_users=("User:admin",)))
    app = create_broker_app(runtime)
    return SecuredBroker(runtime, app, AsgiClient(app), tokens)


def cluster_action(principal: str) -> AccessControlEntryRecord:
    return acl("kafka-cluster", AclOperation.CLUSTER_ACTION, principal,
               resource_type=AclResourceType.CLUSTER)
