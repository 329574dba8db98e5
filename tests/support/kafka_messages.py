"""Hypothesis strategies for Kafka messages, built from the message definitions, and
kafka-python's classes by message name (the second codec the tests compare ours with)."""

from __future__ import annotations

import functools
import importlib
import pkgutil
import uuid
from typing import Any

from hypothesis import strategies as st

from chunkraft.kafka.schema.specs import FieldSpec, MessageSpec

_INTS = {"int8": (-(2**7), 2**7 - 1), "int16": (-(2**15), 2**15 - 1), "uint16": (0, 2**16 - 1),
         "int32": (-(2**31), 2**31 - 1), "uint32": (0, 2**32 - 1),
         "int64": (-(2**63), 2**63 - 1)}


def _primitive(kind: str) -> st.SearchStrategy[Any]:
    if kind in _INTS:
        low, high = _INTS[kind]
        return st.integers(low, high)
    if kind == "bool":
        return st.booleans()
    if kind == "float64":
        return st.floats(allow_nan=False)
    if kind == "string":
        return st.text(max_size=8)
    if kind == "uuid":
        return st.uuids().map(lambda u: uuid.UUID(int=u.int))
    return st.binary(max_size=16)  # bytes, records


def field_values(spec: FieldSpec, version: int) -> st.SearchStrategy[Any]:
    """Values of one field at ``version`` (None sometimes where it is nullable)."""
    if spec.is_array:
        item = (struct_values(spec.fields, version) if spec.is_struct
                else _primitive(spec.item_type))
        values: st.SearchStrategy[Any] = st.lists(item, max_size=3)
    elif spec.is_struct:
        values = struct_values(spec.fields, version)
    else:
        values = _primitive(spec.type)
    if version in spec.nullable:
        values = st.none() | values
    return values


def struct_values(fields: tuple[FieldSpec, ...], version: int
                  ) -> st.SearchStrategy[dict[str, Any]]:
    """Whole structs at ``version``: every field the version has."""
    return st.fixed_dictionaries({f.key: field_values(f, version) for f in fields
                                  if version in f.versions})


def messages(spec: MessageSpec, version: int) -> st.SearchStrategy[dict[str, Any]]:
    return struct_values(spec.fields, version)


@functools.cache
def kafka_python_classes() -> dict[str, Any]:
    """kafka-python's message class for each message name it defines."""
    import kafka.protocol
    from kafka.protocol.api_message import ApiMessage

    for module in pkgutil.walk_packages(kafka.protocol.__path__, "kafka.protocol."):
        if any(part in module.name for part in (".old", "benchmark", "generate_stubs")):
            continue
        importlib.import_module(module.name)

    def subclasses(cls: type) -> list[type]:
        found = []
        for sub in cls.__subclasses__():
            found.append(sub)
            found.extend(subclasses(sub))
        return found

    return {cls._json["name"]: cls for cls in subclasses(ApiMessage)  # type: ignore[attr-defined]
            if getattr(cls, "_class_version", None) is None and getattr(cls, "_json", None)}
