"""Value checks derived from the declarations, plus the few rules that span fields.

:func:`validate_record` checks that every field has the declared type and fits its wire type,
that ids, epochs, offsets and uuids are in their domain (``Check`` on the spec), and the
cross-field rules below. The controller validates every record it is about to commit, so
nothing out of range ever reaches the log.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any

from chunkraft.errors import RecordValidationError
from chunkraft.records.broker_records import BrokerRegistrationChangeRecord
from chunkraft.records.chunk_records import ChunkChangeRecord, ChunkRecord
from chunkraft.records.codec import latest_version
from chunkraft.records.schema import (
    CHECK_MINIMUMS,
    INT_RANGES,
    ZERO_UUID,
    Check,
    FieldSpec,
    FieldType,
    StructSchema,
    schema_of,
)
from chunkraft.records.topic_records import PartitionChangeRecord, PartitionRecord, TopicRecord

__all__ = ["LEGAL_TOPIC_NAME", "MAX_TOPIC_NAME_LENGTH", "validate_record"]

MAX_TOPIC_NAME_LENGTH = 249
LEGAL_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")



def _check_item(schema: StructSchema, spec: FieldSpec, value: Any, version: int) -> None:
    def fail(message: str) -> RecordValidationError:
        return RecordValidationError(schema.name, spec.name, message)

    ftype = spec.type
    if ftype is FieldType.BOOL:
        if not isinstance(value, bool):
            raise fail(f"expected a bool, got {value!r}")
    elif ftype in INT_RANGES:
        if not isinstance(value, int) or isinstance(value, bool):
            raise fail(f"expected an integer, got {value!r}")
        low, high = INT_RANGES[ftype]
        if not low <= value <= high:
            raise fail(f"{value} does not fit in {ftype.value}")
        minimum = CHECK_MINIMUMS.get(spec.check)
        if minimum is not None and value < minimum:
            raise fail(f"{value} is below the minimum {minimum} for a {spec.check.value}")
    elif ftype is FieldType.STRING:
        if not isinstance(value, str):
            raise fail(f"expected a string, got {value!r}")
        if len(value.encode()) > 0x7FFF:
            raise fail("string longer than 32767 bytes")
    elif ftype is FieldType.UUID:
        if not isinstance(value, uuid.UUID):
            raise fail(f"expected a uuid, got {value!r}")
        if spec.check is Check.TOPIC_ID and value == ZERO_UUID:
            raise fail("the zero uuid is not a valid id")
    elif ftype is FieldType.STRUCT:
        assert spec.struct is not None
        if type(value) is not spec.struct:
            raise fail(f"expected a {spec.struct.__name__}, got {value!r}")
        _check_fields(schema_of(spec.struct), value, version)


def _check_fields(schema: StructSchema, obj: Any, version: int) -> None:
    for spec in schema.fields:
        value = getattr(obj, spec.name)
        if not spec.present_in(version):
            if value != spec.default:
                raise RecordValidationError(
                    schema.name, spec.name, f"not in version {version}, must keep its default"
                )
            continue
        if value is None:
            if not spec.nullable_in(version):
                raise RecordValidationError(schema.name, spec.name, "must not be null")
            continue
        if spec.array:
            if not isinstance(value, tuple):
                raise RecordValidationError(
                    schema.name, spec.name, f"expected a tuple, got {type(value).__name__}"
                )
            for item in value:
                _check_item(schema, spec, item, version)
        else:
            _check_item(schema, spec, value, version)


def _fail(record: Any, field: str, message: str) -> RecordValidationError:
    return RecordValidationError(type(record).__name__, field, message)


def _distinct(record: Any, field: str, values: tuple[int, ...] | None) -> None:
    if values is not None and len(set(values)) != len(values):
        raise _fail(record, field, f"duplicate broker ids in {list(values)}")


def _subset(record: Any, field: str, values: tuple[int, ...] | None, of: tuple[int, ...]) -> None:
    if values is not None and not set(values) <= set(of):
        extra = sorted(set(values) - set(of))
        raise _fail(record, field, f"{extra} not among the replicas {list(of)}")


def _replica_sets(record: Any) -> None:
    for field in ("replicas", "isr", "removing_replicas", "adding_replicas"):
        _distinct(record, field, getattr(record, field))
    replicas = record.replicas
    if replicas is not None:
        for field in ("isr", "removing_replicas", "adding_replicas"):
            _subset(record, field, getattr(record, field), replicas)
        directories = record.directories
        if directories and len(directories) != len(replicas):
            raise _fail(record, "directories", "needs one entry per replica, or none")


def _topic(record: TopicRecord) -> None:
    name = record.name
    if not name or name in (".", ".."):
        raise _fail(record, "name", f"{name!r} is not a legal topic name")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise _fail(record, "name", f"longer than {MAX_TOPIC_NAME_LENGTH} characters")
    if not LEGAL_TOPIC_NAME.fullmatch(name):
        raise _fail(record, "name", f"{name!r} may only contain ASCII letters, digits, . _ -")


def _partition(record: PartitionRecord) -> None:
    _replica_sets(record)
    if not record.replicas:
        raise _fail(record, "replicas", "a partition needs at least one replica")
    if record.leader != -1 and record.leader not in record.replicas:
        raise _fail(record, "leader", f"{record.leader} is not a replica")


def _partition_change(record: PartitionChangeRecord) -> None:
    _replica_sets(record)
    if record.replicas is not None and not record.replicas:
        raise _fail(record, "replicas", "a partition needs at least one replica")


def _chunk(record: ChunkRecord) -> None:
    _replica_sets(record)
    if record.chunk_epoch != record.epoch:
        raise _fail(record, "epoch", "ChunkEpoch and Epoch must be equal")
    if not record.replicas:
        raise _fail(record, "replicas", "an inactive chunk needs at least one replica")
    if not 0 <= record.start_offset <= record.stop_offset <= record.end_offset:
        raise _fail(
            record,
            "stop_offset",
            "offsets must satisfy 0 <= start <= stop <= end, got "
            f"{record.start_offset}, {record.stop_offset}, {record.end_offset}",
        )


def _chunk_change(record: ChunkChangeRecord) -> None:
    _replica_sets(record)
    if record.start_offset < 0:
        raise _fail(record, "start_offset", "must name a chunk (>= 0)")
    if not record.replicas and (record.isr or record.adding_replicas or record.removing_replicas):
        raise _fail(record, "replicas", "a removed chunk keeps no ISR, adding or removing replicas")


def _registration_change(record: BrokerRegistrationChangeRecord) -> None:
    if record.fenced not in (-1, 0, 1):
        raise _fail(record, "fenced", "must be -1 (unfence), 0 (unchanged) or 1 (fence)")
    if record.in_controlled_shutdown not in (0, 1):
        raise _fail(record, "in_controlled_shutdown", "must be 0 (unchanged) or 1")


_RULES: dict[type, Callable[[Any], None]] = {
    TopicRecord: _topic,
    PartitionRecord: _partition,
    PartitionChangeRecord: _partition_change,
    ChunkRecord: _chunk,
    ChunkChangeRecord: _chunk_change,
    BrokerRegistrationChangeRecord: _registration_change,
}


def validate_record(record: Any, version: int | None = None) -> None:
    """Raises :class:`RecordValidationError` naming the first field out of its domain."""
    cls = type(record)
    schema = schema_of(cls)
    if version is None:
        version = latest_version(cls)
    _check_fields(schema, record, version)
    rule = _RULES.get(cls)
    if rule is not None:
        rule(record)
