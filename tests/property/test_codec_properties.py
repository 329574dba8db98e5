"""Properties of the record codec and JSON view, for every declared record at every version.

The strategy is derived from the declarations alone (``all_record_schemas``, ``schema_of`` and the
field specs), so a newly declared record or version is covered without touching this file.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkraft.errors import RecordDecodeError
from chunkraft.records import (
    all_record_schemas,
    decode_record,
    decode_record_from,
    decode_records,
    encode_record,
    record_from_json,
    record_to_json,
    schema_of,
)
from chunkraft.records.codec import FRAME_VERSION
from chunkraft.records.schema import (
    CHECK_MINIMUMS,
    INT_RANGES,
    ZERO_UUID,
    Check,
    FieldSpec,
    FieldType,
    RecordSchema,
    StructSchema,
)

CASES = [
    pytest.param(schema, version, id=f"{schema.name}-v{version}")
    for schema in all_record_schemas()
    for version in schema.versions
]

SETTINGS = settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _item_strategy(spec: FieldSpec, version: int) -> st.SearchStrategy[Any]:
    if spec.type is FieldType.BOOL:
        return st.booleans()
    if spec.type in INT_RANGES:
        low, high = INT_RANGES[spec.type]
        low = max(low, CHECK_MINIMUMS.get(spec.check, low))
        return st.integers(low, high)
    if spec.type is FieldType.STRING:
        return st.text(max_size=12)
    if spec.type is FieldType.UUID:
        ids = st.uuids(allow_nil=True) | st.sampled_from([uuid.UUID(int=1), ZERO_UUID])
        if spec.check is Check.TOPIC_ID:
            return ids.filter(lambda value: value != ZERO_UUID)
        return ids
    if spec.type is FieldType.STRUCT:
        assert spec.struct is not None
        return _struct_strategy(schema_of(spec.struct), version)
    raise AssertionError(spec.type)


def _field_strategy(spec: FieldSpec, version: int) -> st.SearchStrategy[Any]:
    if not spec.present_in(version):
        return st.just(spec.default)
    item = _item_strategy(spec, version)
    values: st.SearchStrategy[Any]
    if spec.array:
        values = st.lists(item, max_size=4).map(tuple)
        if spec.type in INT_RANGES:
            # Now and then an array long enough for a two-byte length (one value repeated:
            # drawing 130 distinct ones would cost more than everything else here).
            values = values | st.builds(_repeated, item, st.integers(126, 130))
    else:
        values = item
    if spec.nullable_in(version):
        values = st.none() | values
    return values


def _repeated(value: int, count: int) -> tuple[int, ...]:
    return (value,) * count


@cache
def _struct_strategy(schema: StructSchema, version: int) -> st.SearchStrategy[Any]:
    fields = {spec.name: _field_strategy(spec, version) for spec in schema.fields}
    cls = schema.cls
    return st.fixed_dictionaries(fields).map(lambda values: cls(**values))


def records(schema: RecordSchema, version: int) -> st.SearchStrategy[Any]:
    """A valid record of ``schema`` as written at ``version`` (other fields at their defaults)."""
    return _struct_strategy(schema, version)


def test_every_record_version_is_covered() -> None:
    names = {case.values[0].name for case in CASES}  # type: ignore[union-attr]
    assert names == {schema.name for schema in all_record_schemas()}
    assert len(CASES) == sum(len(schema.versions) for schema in all_record_schemas())


# ---------------------------------------------------------------- round trips


@pytest.mark.parametrize(("schema", "version"), CASES)
@SETTINGS
@given(data=st.data())
def test_decode_inverts_encode(schema: RecordSchema, version: int, data: st.DataObject) -> None:
    record = data.draw(records(schema, version))
    encoded = encode_record(record, version)
    assert encoded[:3] == bytes([FRAME_VERSION, schema.api_key, version])
    decoded = decode_record(encoded)
    assert decoded == record
    assert type(decoded) is schema.cls
    framed = b"\x00junk" + encoded + b"junk"
    assert decode_record_from(framed, 5, 5 + len(encoded)) == record
    assert decode_record_from(memoryview(framed), 5, 5 + len(encoded)) == record
    assert decode_record(bytearray(encoded)) == record
    assert decode_records([encoded, encoded]) == [record, record]


@pytest.mark.parametrize(("schema", "version"), CASES)
@SETTINGS
@given(data=st.data())
def test_json_view_round_trips(schema: RecordSchema, version: int, data: st.DataObject) -> None:
    record = data.draw(records(schema, version))
    view = record_to_json(record, version)
    assert view["version"] == version and view["type"] == schema.name
    back = record_from_json(json.loads(json.dumps(view)))
    assert back == record
    assert type(back) is schema.cls


# ---------------------------------------------------------------- malformed input


@pytest.mark.parametrize(("schema", "version"), CASES)
@SETTINGS
@given(data=st.data())
def test_every_strict_prefix_fails_to_decode(
    schema: RecordSchema, version: int, data: st.DataObject
) -> None:
    encoded = encode_record(data.draw(records(schema, version)), version)
    lengths: Iterable[int] = range(len(encoded))
    if len(encoded) > 120:
        # Every length near either end, and a sample in between (long arrays are repetitive).
        middle = data.draw(st.sets(st.integers(40, len(encoded) - 41), max_size=40))
        lengths = sorted({*range(40), *middle, *range(len(encoded) - 40, len(encoded))})
    for length in lengths:
        with pytest.raises(RecordDecodeError) as info:
            decode_record(encoded[:length])
        assert 0 <= info.value.position <= length


@pytest.mark.parametrize(("schema", "version"), CASES)
@SETTINGS
@given(data=st.data())
def test_trailing_garbage_fails_to_decode(
    schema: RecordSchema, version: int, data: st.DataObject
) -> None:
    encoded = encode_record(data.draw(records(schema, version)), version)
    garbage = data.draw(st.binary(min_size=1, max_size=40))
    with pytest.raises(RecordDecodeError) as info:
        decode_record(encoded + garbage)
    assert info.value.position == len(encoded)


FRAMES = [
    bytes([FRAME_VERSION, schema.api_key, version])
    for schema in all_record_schemas()
    for version in schema.versions
]


def _decodes_or_fails_cleanly(data: bytes) -> None:
    try:
        record = decode_record(data)
    except RecordDecodeError as error:
        assert 0 <= error.position <= len(data)
        with pytest.raises(RecordDecodeError):
            decode_records([data])
        return
    assert decode_records([data]) == [record]
    # Whatever decodes is a record that encodes again and decodes to itself.
    _, _, version = data[:3]
    assert decode_record(encode_record(record, version)) == record


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=80))
def test_random_bytes_decode_or_raise_a_decode_error(data: bytes) -> None:
    _decodes_or_fails_cleanly(data)


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(FRAMES), st.binary(max_size=120))
def test_random_bodies_decode_or_raise_a_decode_error(frame: bytes, body: bytes) -> None:
    _decodes_or_fails_cleanly(frame + body)


@pytest.mark.parametrize(("schema", "version"), CASES)
@SETTINGS
@given(data=st.data())
def test_corrupted_encodings_decode_or_raise_a_decode_error(
    schema: RecordSchema, version: int, data: st.DataObject
) -> None:
    encoded = bytearray(encode_record(data.draw(records(schema, version)), version))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(3, len(encoded) - 1))
        encoded[at] = data.draw(st.integers(0, 255))
    _decodes_or_fails_cleanly(bytes(encoded))
