"""The JSON files of ``chunkraft chunks``, exactly as KIP-1114's examples write them.

Create-chunk file (one item per partition whose active chunk is cut)::

    {"partitions": [{"topic": "topic1", "partition": 0, "replicas": [1, 2, 3]},
                    {"topic": "topic2", "partition": 2, "replicas": [2, 9, 12]}]}

An item may also give ``leader`` and the offsets its leader read (``startOffset`` and
``prevEndOffset``, with ``prevStopOffset`` defaulting to ``startOffset - 1`` and
``startTimestamp`` to now): such an item goes straight to the controller's CreateChunks, which
is what an operator does when no broker runs. Without offsets (the KIP's form) the controller
asks the partition's leader broker to cut.

Alter-chunk file (one item per inactive chunk to move)::

    {"chunks": [{"topic": "topic1", "partition": 0, "startOffset": 289818,
                 "replicas": [4, 5, 6]}]}

with an optional ``chunkEpoch`` (the move is refused if the chunk's epoch changed since).

Both files may carry ``"version": 1`` at the top (the JSON integer 1, as in Kafka's
reassignment files): the only version there is; any other value, or ``"1"`` as a string, is
refused, naming what was given.

The readers turn a file into REST v3 items (snake_case) and refuse anything else with a message
naming the file, the item and the key: an unknown key, a wrong type, a missing field, an empty
list, a value out of what the controller accepts (a partition or broker id over 2^31 - 1, an
offset over 2^63 - 1 - 2^31, ...), checked here first so that even a ``--dry-run`` names the
file and the key. The file itself is read by
:func:`chunkraft.cli.input_files.read_input_json` (size, encoding and nesting bounds: no file
gives a traceback).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from chunkraft.cli.errors import KafkaRefusal
from chunkraft.cli.input_files import read_input_json
from chunkraft.cli.output import ToolError

__all__ = [
    "MAX_ITEMS",
    "parse_alter_chunks",
    "parse_create_chunks",
    "read_alter_chunk_file",
    "read_create_chunk_file",
]

MAX_ITEMS = 1000
"""Items one request may carry (the REST API's batch bound)."""
INT32_MAX = 2**31 - 1
"""The largest partition id, broker id, leader and chunk epoch (Kafka's INT32)."""
INT64_MAX = 2**63 - 1
MAX_CHUNK_OFFSET = 2**63 - 1 - 2**31
"""The largest chunk offset the controller accepts (docs/api.md, Limits: room for one whole
record batch before the log end passes INT64)."""
_MAXIMUM = {"leader": INT32_MAX, "prevStopOffset": MAX_CHUNK_OFFSET,
            "prevEndOffset": MAX_CHUNK_OFFSET, "startOffset": MAX_CHUNK_OFFSET,
            "startTimestamp": INT64_MAX, "chunkEpoch": INT32_MAX, "partition": INT32_MAX}

_CREATE_OPTIONAL = {"leader": "leader", "prevStopOffset": "prev_stop_offset",
                    "prevEndOffset": "prev_end_offset", "startOffset": "start_offset",
                    "startTimestamp": "start_timestamp"}
_ALTER_OPTIONAL = {"chunkEpoch": "chunk_epoch"}


def read_create_chunk_file(path: str | Path) -> list[dict[str, Any]]:
    """The REST ``chunks:create`` items of a create-chunk JSON file; ToolError if unusable."""
    return parse_create_chunks(read_input_json(path, "create-chunk JSON file"), str(path))


def read_alter_chunk_file(path: str | Path) -> list[dict[str, Any]]:
    """The REST ``chunks:alter-assignments`` items of an alter-chunk JSON file."""
    return parse_alter_chunks(read_input_json(path, "alter-chunk JSON file"), str(path))


def parse_create_chunks(document: Any, source: str = "the file") -> list[dict[str, Any]]:
    """A create-chunk document (already parsed JSON) -> REST items."""
    items = _items(document, "partitions", source)
    result = []
    for index, raw in enumerate(items):
        where = f"{source}: partitions[{index}]"
        item = _common(raw, where, set(_CREATE_OPTIONAL))
        for key, field in _CREATE_OPTIONAL.items():
            if key in raw:
                item[field] = _integer(raw, key, where, minimum=-1 if key == "leader" else 0)
        given = [key for key in ("prevStopOffset", "prevEndOffset", "startOffset",
                                 "startTimestamp") if key in raw]
        if given:
            for key in ("startOffset", "prevEndOffset"):
                if key not in raw:
                    raise ToolError(f"{where}: {', '.join(given)} given without {key} (an "
                                    "item names startOffset and prevEndOffset together, or "
                                    "no offsets at all)")
            item.setdefault("prev_stop_offset", item["start_offset"] - 1)
            item.setdefault("start_timestamp", int(time.time() * 1000))
        result.append(item)
    return result


def parse_alter_chunks(document: Any, source: str = "the file") -> list[dict[str, Any]]:
    """An alter-chunk document (already parsed JSON) -> REST items."""
    items = _items(document, "chunks", source)
    result = []
    for index, raw in enumerate(items):
        where = f"{source}: chunks[{index}]"
        item = _common(raw, where, {"startOffset", *_ALTER_OPTIONAL})
        if "startOffset" not in raw:
            raise ToolError(f"{where}: no \"startOffset\" (the start offset of the chunk "
                            "to move)")
        item["start_offset"] = _integer(raw, "startOffset", where, minimum=0)
        if "chunkEpoch" in raw:
            item["chunk_epoch"] = _integer(raw, "chunkEpoch", where, minimum=-1)
        result.append(item)
    return result


def _items(document: Any, key: str, source: str) -> list[dict[str, Any]]:
    if not isinstance(document, dict):
        raise ToolError(f'{source}: expected a JSON object {{"{key}": [...]}}')
    unknown = sorted(set(document) - {key, "version"})
    if unknown:
        raise ToolError(f"{source}: unknown key {', '.join(map(repr, unknown))} at the top "
                        f'(expected "{key}")')
    if "version" in document and not (_is_int(document["version"])
                                       and document["version"] == 1):
        version = document["version"]
        raise ToolError(f"{source}: unsupported version {json.dumps(version)} "
                        f"({_json_type(version)}; expected the integer 1)")
    items = document.get(key)
    if not isinstance(items, list):
        raise ToolError(f'{source}: "{key}" must be a list' if key in document
                        else f'{source}: no "{key}" list')
    if not items:
        raise ToolError(f'{source}: "{key}" is empty: nothing to do')
    if len(items) > MAX_ITEMS:
        raise KafkaRefusal("INVALID_REQUEST", f'{source}: "{key}" has {len(items)} items; '
                           f"at most {MAX_ITEMS} per request (split the file)")
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise ToolError(f"{source}: {key}[{index}] must be a JSON object")
    return items


def _common(raw: dict[str, Any], where: str, optional: set[str]) -> dict[str, Any]:
    """``topic``, ``partition`` and ``replicas``, which every item of both files has."""
    unknown = sorted(set(raw) - {"topic", "partition", "replicas", *optional})
    if unknown:
        raise ToolError(f"{where}: unknown key {', '.join(map(repr, unknown))} (known: "
                        + ", ".join(sorted({"topic", "partition", "replicas", *optional}))
                        + ")")
    topic = raw.get("topic")
    if not isinstance(topic, str) or not topic:
        raise ToolError(f'{where}: "topic" must be a non-empty string')
    if "partition" not in raw:
        raise ToolError(f'{where}: no "partition"')
    partition = _integer(raw, "partition", where, minimum=0)
    replicas = raw.get("replicas")
    if not isinstance(replicas, list):
        raise ToolError(f'{where}: "replicas" must be a non-empty list of broker ids')
    # From here the item is a request a controller would refuse: its error name, as it would.
    if not replicas:
        raise KafkaRefusal("INVALID_REPLICA_ASSIGNMENT",
                           f'{where}: "replicas" must be a non-empty list of broker ids')
    brokers = []
    for broker in replicas:
        if not _is_int(broker) or broker < 0:
            raise KafkaRefusal("INVALID_REPLICA_ASSIGNMENT",
                               f'{where}: "replicas" must hold broker ids (integers >= 0), '
                               f"not {broker!r}")
        if broker > INT32_MAX:
            raise KafkaRefusal("INVALID_REQUEST", f'{where}: "replicas" holds {broker}, over '
                               f"the largest broker id, {INT32_MAX}")
        brokers.append(broker)
    if len(set(brokers)) != len(brokers):
        raise KafkaRefusal("INVALID_REPLICA_ASSIGNMENT",
                           f'{where}: "replicas" lists a broker twice: {brokers}')
    return {"topic": topic, "partition": partition, "replicas": brokers}


def _integer(raw: dict[str, Any], key: str, where: str, *, minimum: int) -> int:
    value = raw[key]
    if not _is_int(value) or value < minimum:
        raise ToolError(f'{where}: "{key}" must be an integer >= {minimum}, not {value!r}')
    maximum = _MAXIMUM[key]
    if value > maximum:
        # The controller would refuse the whole request (400 INVALID_REQUEST); say so here,
        # naming the file and the key, before anything is sent.
        raise KafkaRefusal("INVALID_REQUEST",
                           f'{where}: "{key}" is {value}, over its largest value {maximum}')
    result: int = value
    return result


def _json_type(value: Any) -> str:
    """``value``'s JSON type, as a user reads it: "a string", "an integer"..."""
    if isinstance(value, bool):
        return "a boolean"
    if _is_int(value):
        return "an integer"
    if isinstance(value, float):
        return "a number with a fraction"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    return "a list" if isinstance(value, list) else "an object"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
