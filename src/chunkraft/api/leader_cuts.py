"""Asking a partition's leader broker to cut its active chunk (the KIP's admin form).

An operator names the partition and the new replicas but no offsets: only the leader broker can
read the last stable offset and the high watermark, so the controller asks it
(``POST <broker URL>/broker/v1/create-chunks``); the broker pauses appends, reads LSO / HW and
sends CreateChunks with the offsets to the controller, then answers with the outcome. A broker
that cannot be asked, or does not answer in time, leaves the item LEADER_NOT_AVAILABLE
(retriable), with a message naming the broker and what went wrong.

The broker's URL is its registered listener named ``HTTP`` or ``HTTPS`` (any case), else its
first listener, spoken as plain HTTP. The caller's own ``Authorization`` header goes with the
question, so the broker authorizes the cut as the admin who asked for it (ALTER on the topic).
"""

from __future__ import annotations

import asyncio
import ssl
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from chunkraft.broker_endpoints import broker_url
from chunkraft.cluster_timeouts import cluster_timeout
from chunkraft.controller.image import MetadataImage
from chunkraft.error_codes import Errors
from chunkraft.records import RegisterBrokerRecord

__all__ = ["BROKER_CUT_PATH", "BROKER_TIMEOUT", "CutRequest", "ask_leaders"]

BROKER_CUT_PATH = "/broker/v1/create-chunks"
BROKER_TIMEOUT = cluster_timeout(10.0)
"""A cut is a pause, two offset reads and one controller write: seconds at most."""


@dataclass(frozen=True)
class CutRequest:
    """One partition to cut: new replicas (leader first unless ``leader`` says otherwise)."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    leader: int


Outcome = tuple[int, str | None]
"""An item's error code and message."""


def _unavailable(message: str) -> Outcome:
    return Errors.LEADER_NOT_AVAILABLE.code, message


async def ask_leaders(image: MetadataImage, cuts: Sequence[CutRequest],
                      timeout: httpx.Timeout = BROKER_TIMEOUT, *,
                      authorization: str | None = None,
                      verify: ssl.SSLContext | bool = True) -> list[Outcome]:
    """Each cut's outcome, in order: the leader broker's answer, or LEADER_NOT_AVAILABLE.

    ``authorization`` (the caller's header) is forwarded to the brokers; ``verify`` checks
    brokers that serve HTTPS."""
    outcomes: list[Outcome | None] = [None] * len(cuts)
    by_broker: dict[int, list[int]] = defaultdict(list)
    for index, cut in enumerate(cuts):
        label = f"{cut.topic}-{cut.partition}"
        topic = image.topics.get_by_name(cut.topic)
        partition = topic.partition(cut.partition) if topic is not None else None
        if partition is None:
            outcomes[index] = (Errors.UNKNOWN_TOPIC_OR_PARTITION.code,
                               f"Partition {label} does not exist.")
            continue
        leader = partition.leader
        registration = image.brokers.get(leader) if leader >= 0 else None
        if registration is None:
            outcomes[index] = _unavailable(
                f"{label} has no leader" if leader < 0
                else f"the leader of {label}, broker {leader}, is not registered")
        elif registration.fenced:
            outcomes[index] = _unavailable(f"the leader of {label}, broker {leader}, is fenced")
        elif broker_url(registration) is None:
            outcomes[index] = _unavailable(
                f"the leader of {label}, broker {leader}, registered no listener")
        else:
            by_broker[leader].append(index)
    headers = {"authorization": authorization} if authorization else {}
    async with httpx.AsyncClient(timeout=timeout, headers=headers, verify=verify) as client:
        answers = await asyncio.gather(*(
            _ask(client, broker_id, broker_url(_registered(image, broker_id)) or "",
                 [cuts[i] for i in indexes])
            for broker_id, indexes in by_broker.items()))
    for indexes, answer in zip(by_broker.values(), answers, strict=True):
        for index, outcome in zip(indexes, answer, strict=True):
            outcomes[index] = outcome
    return [outcome if outcome is not None else _unavailable("not asked") for outcome in outcomes]


def _registered(image: MetadataImage, broker_id: int) -> RegisterBrokerRecord:
    registration = image.brokers.get(broker_id)
    assert registration is not None
    return registration


async def _ask(client: httpx.AsyncClient, broker_id: int, url: str,
               cuts: list[CutRequest]) -> list[Outcome]:
    topics: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for cut in cuts:
        topics[cut.topic].append({"partition_index": cut.partition,
                                  "broker_ids": list(cut.replicas), "leader": cut.leader})
    body = {"topics": [{"name": name, "partitions": parts} for name, parts in topics.items()]}
    where = f"broker {broker_id} at {url}"
    try:
        answer = await client.post(url + BROKER_CUT_PATH, json=body)
    except httpx.HTTPError as error:
        reason = str(error) or type(error).__name__
        return [_unavailable(f"{where} did not answer ({type(error).__name__}: {reason})")
                for _ in cuts]
    if answer.status_code != 200:
        text = answer.text[:200]
        return [_unavailable(f"{where} answered HTTP {answer.status_code}: {text}")
                for _ in cuts]
    try:
        results = _results(answer.json())
    except (ValueError, TypeError, KeyError, AttributeError):
        return [_unavailable(f"{where} answered with a body that is not a CreateChunks "
                             "response") for _ in cuts]
    return [results.get((cut.topic, cut.partition))
            or _unavailable(f"{where} answered without a result for {cut.topic}-{cut.partition}")
            for cut in cuts]


def _results(payload: Any) -> dict[tuple[str, int], Outcome]:
    """The per-partition outcomes of a CreateChunks response (``topics`` -> ``partitions``)."""
    results: dict[tuple[str, int], Outcome] = {}
    for topic in payload["topics"]:
        for partition in topic["partitions"]:
            code = partition.get("error_code", 0)
            message = partition.get("error_message")
            if not isinstance(code, int) or not (message is None or isinstance(message, str)):
                raise ValueError("malformed result")
            results[(str(topic["name"]), int(partition["partition_index"]))] = (code, message)
    return results
