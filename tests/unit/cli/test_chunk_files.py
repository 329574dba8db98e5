"""The JSON files of ``chunkraft chunks`` (chunkraft.cli.chunk_files): the KIP's two examples
exactly, the optional keys, and a clear message for every kind of mistake."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from chunkraft.cli.chunk_files import (
    parse_alter_chunks,
    parse_create_chunks,
    read_alter_chunk_file,
    read_create_chunk_file,
)
from chunkraft.cli.errors import KafkaRefusal
from chunkraft.cli.output import ToolError
from tests.support.kip1114_files import KIP_ALTER, KIP_CREATE


def test_the_kips_create_example_reads_as_admin_form_items(tmp_path: Path) -> None:
    path = tmp_path / "create.json"
    path.write_text(KIP_CREATE)
    assert read_create_chunk_file(path) == [
        {"topic": "topic1", "partition": 0, "replicas": [1, 2, 3]},
        {"topic": "topic2", "partition": 2, "replicas": [2, 9, 12]},
    ]


def test_the_kips_alter_example_reads_as_rest_items(tmp_path: Path) -> None:
    path = tmp_path / "alter.json"
    path.write_text(KIP_ALTER)
    assert read_alter_chunk_file(path) == [
        {"topic": "topic1", "partition": 0, "replicas": [4, 5, 6], "start_offset": 289818},
        {"topic": "topic1", "partition": 0, "replicas": [1, 2, 3], "start_offset": 27784},
    ]


def test_create_items_may_carry_the_leader_and_the_offsets() -> None:
    before = int(time.time() * 1000)
    items = parse_create_chunks({"version": 1, "partitions": [
        {"topic": "t", "partition": 1, "replicas": [2, 3], "leader": 3,
         "startOffset": 100, "prevEndOffset": 104},
        {"topic": "t", "partition": 2, "replicas": [1], "startOffset": 7, "prevStopOffset": 6,
         "prevEndOffset": 9, "startTimestamp": 1234},
    ]})
    assert items[0]["leader"] == 3 and items[0]["start_offset"] == 100
    assert items[0]["prev_stop_offset"] == 99 and items[0]["prev_end_offset"] == 104
    assert before <= items[0]["start_timestamp"] <= int(time.time() * 1000)
    assert items[1] == {"topic": "t", "partition": 2, "replicas": [1], "start_offset": 7,
                        "prev_stop_offset": 6, "prev_end_offset": 9, "start_timestamp": 1234}


def test_alter_items_may_carry_the_chunk_epoch() -> None:
    assert parse_alter_chunks({"chunks": [{"topic": "t", "partition": 0, "startOffset": 0,
                                           "chunkEpoch": 4, "replicas": [1]}]}) == [
        {"topic": "t", "partition": 0, "replicas": [1], "start_offset": 0, "chunk_epoch": 4}]


@pytest.mark.parametrize(("document", "message"), [
    ([], 'expected a JSON object {"partitions": [...]}'),
    ({}, 'no "partitions" list'),
    ({"partitions": {}}, '"partitions" must be a list'),
    ({"partitions": []}, '"partitions" is empty'),
    ({"partitions": [], "chunks": []}, "unknown key 'chunks' at the top"),
    ({"version": 2, "partitions": [{}]}, "unsupported version 2"),
    ({"partitions": [1]}, "partitions[0] must be a JSON object"),
    ({"partitions": [{"topic": "t", "partition": 0}]}, '"replicas" must be a non-empty list'),
    ({"partitions": [{"topic": "", "partition": 0, "replicas": [1]}]},
     '"topic" must be a non-empty string'),
    ({"partitions": [{"topic": "t", "replicas": [1]}]}, 'no "partition"'),
    ({"partitions": [{"topic": "t", "partition": "0", "replicas": [1]}]},
     "\"partition\" must be an integer >= 0, not '0'"),
    ({"partitions": [{"topic": "t", "partition": True, "replicas": [1]}]},
     '"partition" must be an integer >= 0, not True'),
    ({"partitions": [{"topic": "t", "partition": 0, "replicas": [1, 1]}]},
     "lists a broker twice"),
    ({"partitions": [{"topic": "t", "partition": 0, "replicas": [-1]}]},
     "broker ids (integers >= 0), not -1"),
    ({"partitions": [{"topic": "t", "partition": 0, "replicas": [1], "start_offset": 3}]},
     "unknown key 'start_offset'"),
    ({"partitions": [{"topic": "t", "partition": 0, "replicas": [1], "startOffset": 3}]},
     "startOffset given without prevEndOffset"),
    ({"partitions": [{"topic": "t", "partition": 0, "replicas": [1], "startTimestamp": 3}]},
     "startTimestamp given without startOffset"),
])
def test_create_mistakes_name_the_item_and_key(document: Any, message: str) -> None:
    with pytest.raises(ToolError, match=re.escape(message)):
        parse_create_chunks(document, "f.json")


@pytest.mark.parametrize(("document", "message"), [
    ({"partitions": []}, "unknown key 'partitions' at the top"),
    ({"chunks": [{"topic": "t", "partition": 0, "replicas": [1]}]},
     'chunks[0]: no "startOffset"'),
    ({"chunks": [{"topic": "t", "partition": 0, "startOffset": -5, "replicas": [1]}]},
     '"startOffset" must be an integer >= 0'),
    ({"chunks": [{"topic": "t", "partition": 0, "startOffset": 1, "replicas": [1],
                  "leader": 1}]}, "unknown key 'leader'"),
])
def test_alter_mistakes_name_the_item_and_key(document: Any, message: str) -> None:
    with pytest.raises(ToolError, match=re.escape(message)):
        parse_alter_chunks(document, "f.json")


@pytest.mark.parametrize(("version", "message"), [
    ("1", 'unsupported version "1" (a string; expected the integer 1)'),
    (2, "unsupported version 2 (an integer; expected the integer 1)"),
    (1.5, "unsupported version 1.5 (a number with a fraction; expected the integer 1)"),
    (True, "unsupported version true (a boolean; expected the integer 1)"),
    (None, "unsupported version null (null; expected the integer 1)"),
])
def test_a_version_other_than_the_integer_1_names_what_was_given(version: Any,
                                                                 message: str) -> None:
    item = {"topic": "t", "partition": 0, "replicas": [1]}
    with pytest.raises(ToolError, match=re.escape(f"f.json: {message}")):
        parse_create_chunks({"version": version, "partitions": [item]}, "f.json")
    with pytest.raises(ToolError, match=re.escape(f"f.json: {message}")):
        parse_alter_chunks({"version": version, "chunks": [{**item, "startOffset": 0}]},
                           "f.json")


@pytest.mark.parametrize(("fields", "message"), [
    ({"replicas": [1, 2**31]}, '"replicas" holds 2147483648, over the largest broker id, '
     "2147483647"),
    ({"partition": 2**31}, '"partition" is 2147483648, over its largest value 2147483647'),
    ({"leader": 2**31}, '"leader" is 2147483648, over its largest value 2147483647'),
    ({"startOffset": 2**63 - 2**31, "prevEndOffset": 5},
     '"startOffset" is 9223372034707292160, over its largest value 9223372034707292159'),
    ({"startOffset": 10, "prevEndOffset": 2**63},
     '"prevEndOffset" is 9223372036854775808, over its largest value 9223372034707292159'),
    ({"startOffset": 10, "prevEndOffset": 12, "startTimestamp": 2**63},
     '"startTimestamp" is 9223372036854775808, over its largest value 9223372036854775807'),
])
def test_values_the_controller_would_refuse_are_refused_naming_the_file_and_key(
        fields: dict[str, Any], message: str) -> None:
    item = {"topic": "t", "partition": 0, "replicas": [1], **fields}
    with pytest.raises(KafkaRefusal) as refused:
        parse_create_chunks({"partitions": [{"topic": "ok", "partition": 0, "replicas": [1]},
                                            item]}, "cut.json")
    assert refused.value.error_name == "INVALID_REQUEST"
    assert str(refused.value) == f"INVALID_REQUEST: cut.json: partitions[1]: {message}"


def test_the_largest_accepted_values_pass() -> None:
    (item,) = parse_create_chunks({"partitions": [{
        "topic": "t", "partition": 2**31 - 1, "replicas": [2**31 - 1], "leader": 2**31 - 1,
        "startOffset": 2**63 - 1 - 2**31, "prevEndOffset": 2**63 - 1 - 2**31,
        "startTimestamp": 2**63 - 1}]}, "f.json")
    assert item["start_offset"] == 2**63 - 1 - 2**31
    (moved,) = parse_alter_chunks({"chunks": [{
        "topic": "t", "partition": 0, "replicas": [1], "startOffset": 2**63 - 1 - 2**31,
        "chunkEpoch": 2**31 - 1}]}, "f.json")
    assert moved["chunk_epoch"] == 2**31 - 1
    with pytest.raises(KafkaRefusal, match='"chunkEpoch" is 2147483648'):
        parse_alter_chunks({"chunks": [{"topic": "t", "partition": 0, "replicas": [1],
                                        "startOffset": 0, "chunkEpoch": 2**31}]}, "f.json")


def test_too_many_items_are_refused_before_sending() -> None:
    items = [{"topic": "t", "partition": p, "replicas": [1]} for p in range(1001)]
    with pytest.raises(ToolError, match="1001 items; at most 1000"):
        parse_create_chunks({"partitions": items})


def test_a_missing_or_malformed_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match=r"create-chunk JSON file .* does not exist"):
        read_create_chunk_file(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"chunks": [}')
    with pytest.raises(ToolError, match=r"is not valid JSON: Expecting value \(line 1, "
                                        r"column 13\)"):
        read_alter_chunk_file(bad)
    with pytest.raises(ToolError, match=r"alter-chunk JSON file .* is a directory, not a file"):
        read_alter_chunk_file(tmp_path)
    assert json.loads(KIP_CREATE)  # the examples above are JSON as printed
