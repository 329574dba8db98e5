"""Kafka's message definitions, parsed into specs a codec can be generated from.

Where they come from: Kafka declares every request and response once, as a JSON file with
``//`` comments (``validVersions``, ``flexibleVersions``, and per field ``versions``,
``nullableVersions``, ``taggedVersions`` / ``tag``, ``default``, nested ``fields``). kafka-python
3.x, a dependency of chunkraft, ships those files as package data
(``kafka/protocol/schemas/resources``, Kafka 4.x's definitions); they are read from there, never
copied into this project. chunkraft's own messages (KIP-1114's CreateChunks and
AlterChunkAssignments, in a private API-key block) are written in the same format in
``chunkraft_messages/`` beside this module.

A spec is plain data: :class:`MessageSpec` (an API key's request or response, or a header) with
:class:`FieldSpec` trees. ``commonStructs`` are resolved into the fields that use them.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "EXTENSIONS",
    "KAFKA_RESOURCES",
    "OWN_RESOURCES",
    "OWN_TAGS_FROM",
    "FieldSpec",
    "MessageSpec",
    "VersionRange",
    "load_message",
    "message_specs",
    "snake_case",
]

KAFKA_RESOURCES = "kafka.protocol.schemas.resources"
"""The package whose data files are Kafka's message definitions (kafka-python)."""
OWN_RESOURCES = "chunkraft.kafka.schema.chunkraft_messages"
"""chunkraft's own messages, in Kafka's format."""

_COMMENTS = re.compile(r"(?m)^\s*//.*$")
_PRIMITIVES = frozenset({"bool", "int8", "int16", "uint16", "int32", "uint32", "int64",
                         "float64", "string", "bytes", "records", "uuid"})


@dataclass(frozen=True, slots=True)
class VersionRange:
    """Kafka's version syntax: ``"0-12"``, ``"3+"``, ``"5"`` or ``"none"`` (``high`` None
    means no upper bound; an empty range has ``low`` > ``high``)."""

    low: int
    high: int | None

    @classmethod
    def parse(cls, text: str | None) -> VersionRange:
        if text is None or text.strip() == "none":
            return cls(1, 0)
        text = text.strip()
        if text.endswith("+"):
            return cls(int(text[:-1]), None)
        if "-" in text:
            low, high = text.split("-", 1)
            return cls(int(low), int(high))
        return cls(int(text), int(text))

    def __contains__(self, version: object) -> bool:
        return (isinstance(version, int) and version >= self.low
                and (self.high is None or version <= self.high))

    @property
    def empty(self) -> bool:
        return self.high is not None and self.low > self.high


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One field of a message or struct, as its definition declares it.

    ``type`` is Kafka's: a primitive (``int32``, ``string``, ``records``...), ``[]T`` for an
    array of T, or a struct name (then ``fields`` holds its fields). ``key`` is the name a
    decoded message uses for it (snake_case of ``name``)."""

    name: str
    key: str
    type: str
    versions: VersionRange
    nullable: VersionRange
    tagged: VersionRange
    tag: int | None
    default: str | None
    ignorable: bool
    flexible: VersionRange | None
    """The field's own ``flexibleVersions`` (only the header's ClientId has one: ``none``)."""
    fields: tuple[FieldSpec, ...] = ()

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def item_type(self) -> str:
        """The type of one item of an array (the type itself for a non-array)."""
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        """Whether this field (or each of its items) is a struct."""
        return self.item_type not in _PRIMITIVES


@dataclass(frozen=True, slots=True)
class MessageSpec:
    """A request, a response or a header: ``api_key`` is None for headers and data-only
    structs."""

    name: str
    type: str
    api_key: int | None
    valid: VersionRange
    flexible: VersionRange
    fields: tuple[FieldSpec, ...]
    listeners: tuple[str, ...] = ()
    latest_unstable: bool = False
    source: str = field(default="", compare=False)

    @property
    def versions(self) -> range:
        """Every valid version, lowest first."""
        assert self.valid.high is not None, f"{self.name}: validVersions has no upper bound"
        return range(self.valid.low, self.valid.high + 1)


def snake_case(name: str) -> str:
    """Kafka's field name as a Python key: ``TopicId`` -> ``topic_id``, ``IsrNodes`` ->
    ``isr_nodes``, ``ThrottleTimeMs`` -> ``throttle_time_ms``."""
    out = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    out = re.sub(r"(?<=[A-Z])([A-Z][a-z])", r"_\1", out)
    return out.lower()


def _field(raw: dict[str, Any], structs: dict[str, list[dict[str, Any]]]) -> FieldSpec:
    kind = str(raw["type"])
    item = kind[2:] if kind.startswith("[]") else kind
    children = raw.get("fields")
    if children is None and item not in _PRIMITIVES:
        children = structs.get(item)
        if children is None:
            raise ValueError(f"field {raw['name']}: unknown struct type {item}")
    tag = raw.get("tag")
    flexible = raw.get("flexibleVersions")
    return FieldSpec(
        name=str(raw["name"]), key=snake_case(str(raw["name"])), type=kind,
        versions=VersionRange.parse(raw.get("versions")),
        nullable=VersionRange.parse(raw.get("nullableVersions")),
        tagged=VersionRange.parse(raw.get("taggedVersions")),
        tag=None if tag is None else int(tag),
        default=None if raw.get("default") is None else str(raw["default"]),
        ignorable=bool(raw.get("ignorable", False)),
        flexible=None if flexible is None else VersionRange.parse(flexible),
        fields=tuple(_field(child, structs) for child in children or ()))


def parse_message(text: str, source: str = "") -> MessageSpec:
    """A definition's JSON text (with Kafka's ``//`` comments) as a :class:`MessageSpec`."""
    data = json.loads(_COMMENTS.sub("", text))
    structs = {s["name"]: s["fields"] for s in data.get("commonStructs", [])}
    api_key = data.get("apiKey")
    return MessageSpec(
        name=str(data["name"]), type=str(data["type"]),
        api_key=None if api_key is None else int(api_key),
        valid=VersionRange.parse(data.get("validVersions")),
        flexible=VersionRange.parse(data.get("flexibleVersions")),
        fields=tuple(_field(raw, structs) for raw in data.get("fields", [])),
        listeners=tuple(data.get("listeners", ())),
        latest_unstable=bool(data.get("latestVersionUnstable", False)), source=source)


OWN_TAGS_FROM = 10000
"""chunkraft's tagged fields on Kafka's messages have tags from here up (Kafka's are small)."""

EXTENSIONS = "tagged_extensions.json"
"""chunkraft's tagged fields on Kafka's messages (in ``chunkraft_messages/``): a list of
``{"message", "path" (struct fields from the top), "fields"}``, each field in Kafka's syntax."""


def _resources() -> Iterator[tuple[str, Any]]:
    for package in (KAFKA_RESOURCES, OWN_RESOURCES):
        for entry in importlib.resources.files(package).iterdir():
            if entry.name.endswith(".json") and entry.name != EXTENSIONS:
                yield package, entry


def _extended(fields: tuple[FieldSpec, ...], path: list[str],
              added: tuple[FieldSpec, ...], where: str) -> tuple[FieldSpec, ...]:
    """``fields`` with ``added`` appended to the struct at ``path`` (field names)."""
    if not path:
        tags = {f.tag for f in fields if f.tag is not None}
        clash = [f.name for f in added if f.tag in tags]
        low = [f.name for f in added if f.tag is None or f.tag < OWN_TAGS_FROM]
        if low:
            raise ValueError(f"{where}: {', '.join(low)} must be tagged from {OWN_TAGS_FROM}")
        if clash:
            raise ValueError(f"{where}: the tag of {', '.join(clash)} is Kafka's already")
        return fields + added
    for index, candidate in enumerate(fields):
        if candidate.name == path[0]:
            inner = _extended(candidate.fields, path[1:], added, where)
            changed = FieldSpec(**{**_as_dict(candidate), "fields": inner})
            return (*fields[:index], changed, *fields[index + 1:])
    raise ValueError(f"{where}: no field {path[0]}")


def _as_dict(spec: FieldSpec) -> dict[str, Any]:
    return {name: getattr(spec, name) for name in FieldSpec.__slots__}


def _apply_extensions(found: dict[str, MessageSpec]) -> None:
    entry = importlib.resources.files(OWN_RESOURCES).joinpath(EXTENSIONS)
    data = json.loads(_COMMENTS.sub("", entry.read_text(encoding="utf-8")))
    for extension in data["extensions"]:
        name = extension["message"]
        spec = found[name]
        added = tuple(_field(raw, {}) for raw in extension["fields"])
        where = f"{EXTENSIONS}: {name}"
        fields = _extended(spec.fields, list(extension["path"]), added, where)
        found[name] = MessageSpec(spec.name, spec.type, spec.api_key, spec.valid,
                                  spec.flexible, fields, spec.listeners, spec.latest_unstable,
                                  spec.source)


@functools.cache
def message_specs() -> dict[str, MessageSpec]:
    """Every definition, by name (``MetadataRequest``, ``RequestHeader``...); loaded once."""
    found: dict[str, MessageSpec] = {}
    for package, entry in _resources():
        spec = parse_message(entry.read_text(encoding="utf-8"), f"{package}/{entry.name}")
        if spec.name in found:
            raise ValueError(f"{spec.name} is defined twice ({found[spec.name].source}, "
                             f"{spec.source})")
        found[spec.name] = spec
    _apply_extensions(found)
    return found


def load_message(name: str) -> MessageSpec:
    """One definition by name; KeyError naming it if there is none."""
    specs = message_specs()
    if name not in specs:
        raise KeyError(f"no Kafka message definition named {name}")
    return specs[name]
