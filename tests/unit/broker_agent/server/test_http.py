"""fetch_answer writes exactly the serializer's JSON, splicing the records in."""

from __future__ import annotations

import base64
import json
import os

import pytest

from chunkraft.broker_agent.server.http import fetch_answer
from chunkraft.protocol.data_plane import (
    AbortedTransaction,
    FetchPartitionResponse,
    FetchResponse,
    FetchTopicResponse,
)


def response(*records: str, topic: str = 'odd "name" \\ "records":""') -> FetchResponse:
    return FetchResponse(responses=(
        FetchTopicResponse(topic=topic, partitions=tuple(
            FetchPartitionResponse(
                partition=index, records=text, high_watermark=index, error_message=topic,
                aborted_transactions=(AbortedTransaction(producer_id=1, first_offset=2),))
            for index, text in enumerate(records))),
        FetchTopicResponse(topic="second", partitions=(
            FetchPartitionResponse(partition=0, records=records[0]),))))


@pytest.mark.parametrize("records", [
    (base64.b64encode(os.urandom(9000)).decode(), "", base64.b64encode(b"x").decode()),
    ("AAAA",),  # small: the serializer writes it
    ('not "base64" \\ é' * 1000,),  # never from the broker: falls back, still exact
])
def test_the_answer_is_the_serializers_json(records: tuple[str, ...]) -> None:
    answer = response(*records)
    body = bytes(fetch_answer(answer).body)
    assert body == FetchResponse.__pydantic_serializer__.to_json(answer)
    assert FetchResponse.model_validate(json.loads(body)) == answer
