"""The JSON view of records, derived from the declarations (Kafka's camelCase field names).

``record_to_json`` gives ``{"type": "ChunkRecord", "version": 0, "data": {...}}`` with only the
fields of that version; uuids use Kafka's base64 text. Like the binary encoder it refuses a
version the record does not have, and a field outside the version that holds other than its
default (which the view would silently drop). ``record_from_json`` reverses it and rejects
unknown types, unknown or missing-in-version fields and wrongly typed values; ranges are left to
:func:`~chunkraft.records.validation.validate_record`.
"""

from __future__ import annotations

from typing import Any

from chunkraft.errors import RecordEncodeError, RecordValidationError
from chunkraft.records.codec import latest_version
from chunkraft.records.schema import (
    FieldSpec,
    FieldType,
    RecordSchema,
    StructSchema,
    all_record_schemas,
    camel_name,
    schema_of,
)
from chunkraft.records.uuids import kafka_uuid_str, parse_kafka_uuid

__all__ = ["record_from_json", "record_to_json", "struct_to_json"]


def _value_to_json(spec: FieldSpec, value: Any, version: int) -> Any:
    if value is None:
        return None
    if spec.array:
        return [_item_to_json(spec, item, version) for item in value]
    return _item_to_json(spec, value, version)


def _item_to_json(spec: FieldSpec, item: Any, version: int) -> Any:
    if spec.type is FieldType.UUID:
        return kafka_uuid_str(item)
    if spec.type is FieldType.STRUCT:
        return struct_to_json(item, version)
    return item


def struct_to_json(obj: Any, version: int) -> dict[str, Any]:
    """The ``data`` part of the JSON view: the fields of ``version``, camelCase."""
    schema = schema_of(type(obj))
    for spec in schema.fields:
        if not spec.present_in(version) and getattr(obj, spec.name) != spec.default:
            raise RecordEncodeError(
                f"{schema.name}.{spec.name} is not in version {version} and is not its default"
            )
    return {
        camel_name(spec.name): _value_to_json(spec, getattr(obj, spec.name), version)
        for spec in schema.fields_in(version)
    }


def record_to_json(record: Any, version: int | None = None) -> dict[str, Any]:
    """``{"type": ..., "version": ..., "data": {...}}`` for one record."""
    if version is None:
        version = latest_version(type(record))
    schema = schema_of(type(record))
    if not isinstance(schema, RecordSchema):
        raise RecordEncodeError(f"{schema.name} is a struct, not a metadata record")
    if version not in schema.versions:
        raise RecordEncodeError(
            f"{schema.name} has no version {version} (valid: {schema.valid_versions})"
        )
    return {
        "type": type(record).__name__,
        "version": version,
        "data": struct_to_json(record, version),
    }


def _fail(schema: StructSchema, field: str, message: str) -> RecordValidationError:
    return RecordValidationError(schema.name, field, message)


def _item_from_json(schema: StructSchema, spec: FieldSpec, raw: Any, version: int) -> Any:
    if spec.type is FieldType.UUID:
        if not isinstance(raw, str):
            raise _fail(schema, spec.name, f"expected a uuid string, got {raw!r}")
        try:
            return parse_kafka_uuid(raw)
        except ValueError as exc:
            raise _fail(schema, spec.name, str(exc)) from None
    if spec.type is FieldType.STRUCT:
        assert spec.struct is not None
        if not isinstance(raw, dict):
            raise _fail(schema, spec.name, f"expected an object, got {raw!r}")
        return _struct_from_json(schema_of(spec.struct), raw, version)
    if spec.type is FieldType.STRING:
        if not isinstance(raw, str):
            raise _fail(schema, spec.name, f"expected a string, got {raw!r}")
        return raw
    if spec.type is FieldType.BOOL:
        if not isinstance(raw, bool):
            raise _fail(schema, spec.name, f"expected true or false, got {raw!r}")
        return raw
    if not isinstance(raw, int) or isinstance(raw, bool):
        raise _fail(schema, spec.name, f"expected an integer, got {raw!r}")
    return raw


def _struct_from_json(schema: StructSchema, data: dict[str, Any], version: int) -> Any:
    specs = {camel_name(spec.name): spec for spec in schema.fields_in(version)}
    unknown = sorted(set(data) - set(specs))
    if unknown:
        raise _fail(schema, unknown[0], f"not a field of version {version}")
    values: dict[str, Any] = {}
    for key, raw in data.items():
        spec = specs[key]
        if raw is None:
            if not spec.nullable_in(version):
                raise _fail(schema, spec.name, "null is not allowed")
            values[spec.name] = None
        elif spec.array:
            if not isinstance(raw, list):
                raise _fail(schema, spec.name, f"expected a list, got {raw!r}")
            values[spec.name] = tuple(_item_from_json(schema, spec, r, version) for r in raw)
        else:
            values[spec.name] = _item_from_json(schema, spec, raw, version)
    return schema.cls(**values)


_BY_NAME: dict[str, RecordSchema] = {}


def record_from_json(obj: dict[str, Any]) -> Any:
    """Reverses :func:`record_to_json`; missing fields take their defaults."""
    if not _BY_NAME:
        _BY_NAME.update({s.name: s for s in all_record_schemas()})
    type_name = obj.get("type")
    schema = _BY_NAME.get(type_name) if isinstance(type_name, str) else None
    if schema is None:
        raise RecordValidationError("Record", "type", f"unknown record type {type_name!r}")
    version = obj.get("version", latest_version(schema.cls))
    if not isinstance(version, int) or isinstance(version, bool) or version not in schema.versions:
        raise _fail(schema, "version", f"unknown version {version!r}")
    data = obj.get("data", {})
    if not isinstance(data, dict):
        raise _fail(schema, "data", "expected an object")
    return _struct_from_json(schema, data, version)


