"""``POST /broker/v1/metadata``: the controller's Metadata v13 answer, from the broker's image.

Clients (the producer and the consumer) learn topics, partitions, chunks, leaders and broker
addresses from any broker, so they never need the controllers. The answer is exactly what
``POST /controller/v1/metadata`` answers for the same image
(:func:`chunkraft.api.metadata_answers.metadata_answer`: same bytes, same DESCRIBE filtering
of topics), written from this broker's own image; ``controller_id`` is the controller leader
this broker's metadata follower knows of (-1 if none yet). The broker keeps its own answer and
topic caches (the controller's module-level ones are the controller's).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from chunkraft.api.authentication import principal_of
from chunkraft.api.metadata_answers import AnswerCache, metadata_answer
from chunkraft.api.metadata_json import TopicJsonCache
from chunkraft.broker_agent.server.http import parse_body, post_docs
from chunkraft.protocol.topics import MetadataRequest, MetadataResponse
from chunkraft.records.uuids import kafka_uuid_text

__all__ = ["router"]

router = APIRouter(prefix="/broker/v1", tags=["broker data plane"])

_ANSWERS = AnswerCache(max_entries=8, max_bytes=16 * 1024 * 1024)
_TOPICS = TopicJsonCache(32 * 1024 * 1024)


async def metadata(request: Request) -> Response:
    """Metadata: brokers, then the topics asked for (all for null) the principal may DESCRIBE."""
    parsed = await parse_body(request, MetadataRequest)
    if isinstance(parsed, Response):
        return parsed
    runtime: Any = request.app.state.runtime
    follower = runtime.follower
    leader = getattr(follower, "leader_id", None)
    answer = metadata_answer(
        follower.image, principal_of(request), runtime.authorizer, parsed,
        cluster_id=kafka_uuid_text(runtime.cluster_id),
        controller_id=leader if isinstance(leader, int) else -1,
        answers=_ANSWERS, topics=_TOPICS)
    return Response(content=answer, media_type="application/json")


router.add_api_route("/metadata", metadata, methods=["POST"],
                     summary="Metadata v13 from this broker's image: brokers, topics, "
                     "partitions and their chunks",
                     **post_docs(MetadataRequest, MetadataResponse))
