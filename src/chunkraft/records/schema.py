"""The vocabulary records are declared in: field types, version ranges, field specs and schemas.

A record is a ``typing.NamedTuple`` whose fields carry a :class:`FieldSpec` in ``Annotated``
metadata, decorated with :func:`metadata_record`. That one declaration is the only place a record
is described: the codec, the JSON view, the value checks and the schema lock are derived from the
:class:`RecordSchema` this module builds from it. Names follow Kafka's generator: the Python field
``topic_id`` is Kafka's ``TopicId`` and JSON's ``topicId``.
"""

from __future__ import annotations

import builtins
import enum
import typing
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from chunkraft.errors import SchemaError

__all__ = [
    "CHECK_MINIMUMS",
    "ZERO_UUID",
    "Check",
    "FieldSpec",
    "FieldType",
    "RecordSchema",
    "StructSchema",
    "VersionRange",
    "all_record_schemas",
    "camel_name",
    "kafka_name",
    "metadata_record",
    "record_schema",
    "record_struct",
    "schema_of",
]

ZERO_UUID = uuid.UUID(int=0)


class FieldType(enum.Enum):
    """A wire type; arrays are a separate flag on the spec, so ``[]int32`` is INT32 + array."""

    BOOL = "bool"
    INT8 = "int8"
    INT16 = "int16"
    UINT16 = "uint16"
    INT32 = "int32"
    INT64 = "int64"
    STRING = "string"
    UUID = "uuid"
    STRUCT = "struct"


INT_RANGES: dict[FieldType, tuple[int, int]] = {
    FieldType.INT8: (-(2**7), 2**7 - 1),
    FieldType.INT16: (-(2**15), 2**15 - 1),
    FieldType.UINT16: (0, 2**16 - 1),
    FieldType.INT32: (-(2**31), 2**31 - 1),
    FieldType.INT64: (-(2**63), 2**63 - 1),
}


class Check(enum.Enum):
    """A domain check on an integer value (each element, for arrays), beyond the type's range."""

    NONE = "none"
    BROKER_ID = "brokerId"  # >= 0
    PARTITION_ID = "partitionId"  # >= 0
    EPOCH = "epoch"  # >= -1 (-1: unknown / not set)
    OFFSET = "offset"  # >= -1 (-1: not set)
    TIMESTAMP = "timestamp"  # >= -1 (-1: not set)
    NON_NEGATIVE = "nonNegative"  # >= 0
    TOPIC_ID = "topicId"  # a uuid that is not all zeros
    LEADER = "leader"  # >= -1 (-1: no leader)
    CHANGED_LEADER = "changedLeader"  # >= -2 (-2: unchanged, -1: no leader)


CHECK_MINIMUMS: dict[Check, int] = {
    Check.BROKER_ID: 0,
    Check.PARTITION_ID: 0,
    Check.NON_NEGATIVE: 0,
    Check.EPOCH: -1,
    Check.OFFSET: -1,
    Check.TIMESTAMP: -1,
    Check.LEADER: -1,
    Check.CHANGED_LEADER: -2,
}
"""The smallest legal value of an integer field (or array element) with each Check."""


@dataclass(frozen=True, slots=True)
class VersionRange:
    """An inclusive range of record versions, written as Kafka writes it: ``"0+"`` or ``"1-3"``."""

    low: int
    high: int | None  # None: open ended

    @staticmethod
    def parse(text: str) -> VersionRange:
        text = text.strip()
        try:
            if text.endswith("+"):
                return VersionRange(int(text[:-1]), None)
            if "-" in text:
                low, high = text.split("-", 1)
                return VersionRange(int(low), int(high))
            value = int(text)
        except ValueError as exc:
            raise SchemaError(f"bad version range {text!r}") from exc
        return VersionRange(value, value)

    def __contains__(self, version: object) -> bool:
        if not isinstance(version, int):
            return False
        return version >= self.low and (self.high is None or version <= self.high)

    def __str__(self) -> str:
        if self.high is None:
            return f"{self.low}+"
        return str(self.low) if self.low == self.high else f"{self.low}-{self.high}"


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """How one field is written: type, the versions that carry it, whether it is tagged.

    ``tag`` set means the field is a tagged field (written only when it differs from its default)
    in every version of ``versions``; ``nullable`` names the versions where it may be None.
    ``struct`` is the element class of a struct array. ``name`` and ``default`` are filled in from
    the NamedTuple when the declaration is read.
    """

    type: FieldType
    versions: VersionRange
    about: str
    array: bool = False
    tag: int | None = None
    nullable: VersionRange | None = None
    check: Check = Check.NONE
    struct: builtins.type | None = None  # the field named ``type`` shadows the builtin here
    name: str = ""
    default: Any = None

    @property
    def tagged(self) -> bool:
        return self.tag is not None

    def present_in(self, version: int) -> bool:
        return version in self.versions

    def nullable_in(self, version: int) -> bool:
        return self.nullable is not None and version in self.nullable

    def type_name(self) -> str:
        base = self.type.value
        if self.type is FieldType.STRUCT:
            assert self.struct is not None
            base = self.struct.__name__
        return f"[]{base}" if self.array else base


def _spec_factory(ftype: FieldType, array: bool = False) -> Callable[..., FieldSpec]:
    def make(
        versions: str,
        about: str,
        *,
        tag: int | None = None,
        nullable: str | None = None,
        check: Check = Check.NONE,
    ) -> FieldSpec:
        return FieldSpec(
            type=ftype,
            versions=VersionRange.parse(versions),
            about=about,
            array=array,
            tag=tag,
            nullable=VersionRange.parse(nullable) if nullable else None,
            check=check,
        )

    return make


BOOL = _spec_factory(FieldType.BOOL)
INT8 = _spec_factory(FieldType.INT8)
INT16 = _spec_factory(FieldType.INT16)
UINT16 = _spec_factory(FieldType.UINT16)
INT32 = _spec_factory(FieldType.INT32)
INT64 = _spec_factory(FieldType.INT64)
STRING = _spec_factory(FieldType.STRING)
UUID = _spec_factory(FieldType.UUID)
INT32_ARRAY = _spec_factory(FieldType.INT32, array=True)
UUID_ARRAY = _spec_factory(FieldType.UUID, array=True)
STRING_ARRAY = _spec_factory(FieldType.STRING, array=True)


def STRUCT_ARRAY(
    struct: type,
    versions: str,
    about: str,
    *,
    tag: int | None = None,
    nullable: str | None = None,
) -> FieldSpec:
    """A ``[]Struct`` field whose elements are the given :func:`record_struct` class."""
    if not hasattr(struct, "__chunkraft_struct__"):
        raise SchemaError(f"{struct.__name__} is not declared with @record_struct")
    return FieldSpec(
        type=FieldType.STRUCT,
        versions=VersionRange.parse(versions),
        about=about,
        array=True,
        tag=tag,
        nullable=VersionRange.parse(nullable) if nullable else None,
        struct=struct,
    )


def kafka_name(field_name: str) -> str:
    """``topic_id`` -> ``TopicId``: the field's name in Kafka's schema files."""
    return "".join(part[:1].upper() + part[1:] for part in field_name.split("_"))


def camel_name(field_name: str) -> str:
    """``topic_id`` -> ``topicId``: the field's name in the JSON view."""
    name = kafka_name(field_name)
    return name[:1].lower() + name[1:]


@dataclass(frozen=True)
class StructSchema:
    """The fields of a NamedTuple, in declaration order, with their specs."""

    cls: type
    fields: tuple[FieldSpec, ...]

    @property
    def name(self) -> str:
        return self.cls.__name__

    def fields_in(self, version: int) -> tuple[FieldSpec, ...]:
        return tuple(f for f in self.fields if f.present_in(version))


@dataclass(frozen=True)
class RecordSchema(StructSchema):
    """A metadata record: a struct with an apiKey, its valid versions and a one-line description."""

    api_key: int = -1
    valid_versions: VersionRange = VersionRange(0, 0)
    about: str = ""

    @property
    def versions(self) -> range:
        assert self.valid_versions.high is not None
        return range(self.valid_versions.low, self.valid_versions.high + 1)


_T = TypeVar("_T")

_RECORDS_BY_KEY: dict[int, RecordSchema] = {}
_SCHEMAS_BY_CLASS: dict[type, StructSchema] = {}


def _read_fields(cls: type) -> tuple[FieldSpec, ...]:
    if not (isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields")):
        raise SchemaError(f"{cls.__name__} must be a typing.NamedTuple")
    hints = typing.get_type_hints(cls, include_extras=True)
    defaults: dict[str, Any] = getattr(cls, "_field_defaults", {})
    specs: list[FieldSpec] = []
    tags: set[int] = set()
    for name in cls._fields:
        hint = hints[name]
        metadata = getattr(hint, "__metadata__", ())
        found = [m for m in metadata if isinstance(m, FieldSpec)]
        if len(found) != 1:
            raise SchemaError(f"{cls.__name__}.{name} needs exactly one FieldSpec in Annotated[]")
        if name not in defaults:
            raise SchemaError(f"{cls.__name__}.{name} needs a default")
        spec = found[0]
        if spec.tag is not None:
            if spec.tag in tags:
                raise SchemaError(f"{cls.__name__}.{name}: tag {spec.tag} used twice")
            tags.add(spec.tag)
        default = defaults[name]
        if spec.array and default is not None and not isinstance(default, tuple):
            raise SchemaError(f"{cls.__name__}.{name}: array defaults must be tuples or None")
        if default is None and spec.nullable is None:
            raise SchemaError(f"{cls.__name__}.{name}: default None needs nullable versions")
        specs.append(_with(spec, name=name, default=default))
    return tuple(specs)


def _with(spec: FieldSpec, **changes: Any) -> FieldSpec:
    values = {f: getattr(spec, f) for f in spec.__dataclass_fields__}
    values.update(changes)
    return FieldSpec(**values)


def _type_safe_equality(cls: type) -> None:
    # NamedTuples compare equal to any tuple with the same values, so a TopicRecord could equal a
    # RemoveTopicRecord; records compare by type too.
    def __eq__(self: tuple[Any, ...], other: object) -> bool:
        return type(self) is type(other) and tuple.__eq__(self, other)

    def __ne__(self: tuple[Any, ...], other: object) -> bool:
        return not __eq__(self, other)

    def __hash__(self: tuple[Any, ...]) -> int:
        return hash((type(self).__name__, tuple.__hash__(self)))

    cls.__eq__ = __eq__  # type: ignore[method-assign,assignment]
    cls.__ne__ = __ne__  # type: ignore[method-assign,assignment]
    cls.__hash__ = __hash__  # type: ignore[method-assign,assignment]


def record_struct(cls: type[_T]) -> type[_T]:
    """Declares a NamedTuple used as the element of a struct array inside records."""
    _SCHEMAS_BY_CLASS[cls] = StructSchema(cls=cls, fields=_read_fields(cls))
    cls.__chunkraft_struct__ = True  # type: ignore[attr-defined]
    _type_safe_equality(cls)
    return cls


def metadata_record(
    api_key: int, valid_versions: str, about: str
) -> Callable[[type[_T]], type[_T]]:
    """Declares a NamedTuple as the metadata record with this apiKey and these versions."""

    def register(cls: type[_T]) -> type[_T]:
        versions = VersionRange.parse(valid_versions)
        if versions.high is None:
            raise SchemaError(f"{cls.__name__}: valid versions must be closed, not {versions}")
        if api_key in _RECORDS_BY_KEY:
            other = _RECORDS_BY_KEY[api_key].name
            raise SchemaError(f"apiKey {api_key} declared by both {other} and {cls.__name__}")
        schema = RecordSchema(
            cls=cls,
            fields=_read_fields(cls),
            api_key=api_key,
            valid_versions=versions,
            about=about,
        )
        _RECORDS_BY_KEY[api_key] = schema
        _SCHEMAS_BY_CLASS[cls] = schema
        cls.__chunkraft_struct__ = True  # type: ignore[attr-defined]
        _type_safe_equality(cls)
        return cls

    return register


def schema_of(cls: type) -> StructSchema:
    """The schema declared for a record or struct class."""
    try:
        return _SCHEMAS_BY_CLASS[cls]
    except KeyError:
        raise SchemaError(f"{cls.__name__} is not a declared record or struct") from None


def record_schema(api_key: int) -> RecordSchema | None:
    """The record schema for an apiKey, or None when no record has it."""
    return _RECORDS_BY_KEY.get(api_key)


def all_record_schemas() -> list[RecordSchema]:
    """Every declared record, by apiKey."""
    return [_RECORDS_BY_KEY[k] for k in sorted(_RECORDS_BY_KEY)]
