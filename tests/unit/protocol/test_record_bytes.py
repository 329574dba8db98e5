"""The ``records`` field: bytes in Python, base64 in JSON, a reference in a frame."""

from __future__ import annotations

import base64
import json

import pytest
from pydantic import ValidationError

from chunkraft.protocol.data_plane import FetchPartitionResponse, ProducePartitionData
from chunkraft.protocol.record_bytes import FramePayload, FrameSink


def test_python_takes_bytes_and_views_and_keeps_views_as_they_are() -> None:
    view = memoryview(b"abcdef")[1:4]
    assert ProducePartitionData(index=0, records=view).records is view
    assert ProducePartitionData(index=0, records=b"abc").records == b"abc"
    assert ProducePartitionData(index=0, records=bytearray(b"abc")).records == b"abc"


@pytest.mark.parametrize("value", ["YWJj", 3, None, [0, 3]])
def test_python_refuses_anything_else(value: object) -> None:
    with pytest.raises(ValidationError, match="records must be bytes"):
        ProducePartitionData(index=0, records=value)  # type: ignore[arg-type]


def test_json_is_standard_base64_both_ways() -> None:
    data = bytes(range(256))
    text = ProducePartitionData(index=0, records=data).model_dump_json()
    assert json.loads(text)["records"] == base64.b64encode(data).decode()
    assert ProducePartitionData.model_validate_json(text).records == data
    assert FetchPartitionResponse(partition=0).model_dump(mode="json")["records"] == ""


@pytest.mark.parametrize("value", ['"not base64!"', '"YWJ"', "[0, 3]", "3"])
def test_json_refuses_what_is_not_base64(value: str) -> None:
    with pytest.raises(ValidationError, match="records"):
        ProducePartitionData.model_validate_json(f'{{"index": 0, "records": {value}}}')


def test_a_sink_collects_the_records_and_writes_references() -> None:
    sink = FrameSink()
    first = ProducePartitionData(index=0, records=b"abc")
    empty = ProducePartitionData(index=1, records=b"")
    assert json.loads(first.model_dump_json(context=sink.context()))["records"] == [0, 3]
    assert json.loads(empty.model_dump_json(context=sink.context()))["records"] == [3, 0]
    assert sink.pieces == [b"abc"] and sink.size == 3


def test_a_payload_resolves_references_to_views() -> None:
    payload = FramePayload(memoryview(b"xxabcxx"))
    parsed = ProducePartitionData.model_validate_json('{"index": 0, "records": [2, 3]}',
                                                      context=payload.context())
    assert isinstance(parsed.records, memoryview) and parsed.records == b"abc"
