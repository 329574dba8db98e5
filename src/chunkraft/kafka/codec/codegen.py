"""Generates an encoder and a decoder for each (message spec, version) of Kafka's protocol.

Why generate: a generic loop over field specs pays interpreter dispatch for every field of every
partition; straight-line Python built from the spec alone keeps a Metadata answer of 10,000
partitions in milliseconds while the spec stays the single source of truth (as
``chunkraft.records.codegen`` does for the metadata records).

A decoded message is a plain ``dict`` keyed by each field's snake_case name (``topic_id``),
nested structs are dicts, arrays lists; ``records`` and ``bytes`` are ``bytes`` (record batches
stay bytes end to end); ``uuid`` is :class:`uuid.UUID`; a null is ``None``. Every field of the
version is present after a decode (absent tagged fields take their default). An encoder reads
the same keys and takes a missing key as the field's default.

Wire format (Kafka's protocol guide): integers big-endian; in a non-flexible version a string is
an int16 length (-1: null) then UTF-8, bytes an int32 length (-1: null), an array an int32
count (-1: null); in a flexible version they are compact (unsigned varint length + 1, 0: null)
and every struct ends with a tagged-field section (uvarint count, then per field uvarint tag,
uvarint size, value). Tagged fields are written only when they differ from their default;
unknown tags are skipped on read, as a Kafka server must.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any

from chunkraft.kafka.schema.specs import FieldSpec, MessageSpec
from chunkraft.records.varint import encode_uvarint

__all__ = ["Decoder", "Encoder", "KafkaDecodeError", "build_decoder", "build_encoder",
           "default_value"]

Encoder = Callable[[dict[str, Any]], bytes]
Decoder = Callable[[Any, int, int], tuple[dict[str, Any], int]]
"""``decode(buffer, position, end) -> (message, next position)``."""

_FIXED = {"bool": "?", "int8": "b", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I",
          "int64": "q", "float64": "d"}
_SIZES = {"?": 1, "b": 1, "h": 2, "H": 2, "i": 4, "I": 4, "q": 8, "d": 8}
_NULL_UUID = uuid.UUID(int=0)


class KafkaDecodeError(ValueError):
    """A frame that does not decode as the message it claims to be (truncated, a negative
    length, a varint too long, bad UTF-8); ``position`` is the byte offset."""

    def __init__(self, message: str, position: int) -> None:
        super().__init__(f"{message} (at byte {position})")
        self.position = position


def default_value(spec: FieldSpec) -> Any:
    """The value a field takes when a version lacks it or a tagged field is absent."""
    text = spec.default
    if spec.is_array:
        return None if text == "null" else []
    if spec.is_struct:
        return None if text == "null" else {f.key: default_value(f) for f in spec.fields}
    kind = spec.type
    if text == "null":
        return None
    if kind == "bool":
        return text == "true"
    if kind in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        return 0 if not text else int(text, 0)
    if kind == "float64":
        return 0.0 if not text else float(text)
    if kind == "string":
        return text or ""
    if kind == "uuid":
        return _NULL_UUID
    return b""  # bytes, records


# ------------------------------------------------------------------ runtime helpers


def uvarint(value: int) -> bytes:
    """Kafka's unsigned varint (the records' codec writes the same one)."""
    return encode_uvarint(value)


def read_uvarint(buf: Any, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    start = pos
    while True:
        if pos >= end:
            raise KafkaDecodeError("input ends inside a varint", start)
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise KafkaDecodeError("varint longer than 10 bytes", start)


def _need(pos: int, size: int, end: int) -> None:
    if size < 0 or pos + size > end:
        raise KafkaDecodeError(f"needs {size} bytes, {end - pos} left", pos)


def _text(raw: Any, pos: int) -> str:
    try:
        return bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        raise KafkaDecodeError("a string that is not UTF-8", pos) from None


def _skip_tags(buf: Any, pos: int, end: int) -> int:
    count, pos = read_uvarint(buf, pos, end)
    for _ in range(count):
        _tag, pos = read_uvarint(buf, pos, end)
        size, pos = read_uvarint(buf, pos, end)
        _need(pos, size, end)
        pos += size
    return pos


_RUNTIME: dict[str, Any] = {
    "struct": struct, "uuid": uuid, "uvarint": uvarint, "read_uvarint": read_uvarint,
    "need": _need, "text": _text, "skip_tags": _skip_tags, "KafkaDecodeError": KafkaDecodeError,
    "NULL_UUID": _NULL_UUID,
}


# ------------------------------------------------------------------ the generator


class _Source:
    """Python source being written, with unique local names."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.constants: dict[str, Any] = {}
        self._counter = 0

    def name(self, base: str) -> str:
        self._counter += 1
        return f"{base}{self._counter}"

    def constant(self, value: Any, base: str = "C") -> str:
        name = self.name(f"_{base}")
        self.constants[name] = value
        return name

    def add(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)


def _present(spec: FieldSpec, version: int) -> bool:
    return version in spec.versions


def _is_tagged(spec: FieldSpec, version: int, flexible: bool) -> bool:
    return flexible and spec.tag is not None and version in spec.tagged


def _compact(spec: FieldSpec, flexible: bool) -> bool:
    if spec.flexible is not None:
        return False if spec.flexible.empty else flexible
    return flexible


class _EncoderWriter:
    def __init__(self, src: _Source, version: int, flexible: bool) -> None:
        self.src, self.version, self.flexible = src, version, flexible

    def struct_body(self, fields: tuple[FieldSpec, ...], obj: str, out: str, indent: int) -> None:
        src = self.src
        tagged: list[FieldSpec] = []
        for spec in fields:
            if not _present(spec, self.version):
                continue
            if _is_tagged(spec, self.version, self.flexible):
                tagged.append(spec)
                continue
            value = src.name("v")
            default = src.constant(default_value(spec), "D")
            src.add(indent, f"{value} = {obj}.get({spec.key!r}, {default})")
            self.value(spec, value, out, indent, compact=_compact(spec, self.flexible))
        if not self.flexible:
            return
        if not tagged:
            src.add(indent, f"{out}.append(b'\\x00')")
            return
        parts = src.name("tags")
        src.add(indent, f"{parts} = []")
        for spec in sorted(tagged, key=lambda s: s.tag or 0):
            value = src.name("v")
            default = src.constant(default_value(spec), "D")
            src.add(indent, f"{value} = {obj}.get({spec.key!r}, {default})")
            src.add(indent, f"if {value} != {default}:")
            inner = src.name("t")
            src.add(indent + 1, f"{inner} = []")
            self.value(spec, value, inner, indent + 1, compact=True)
            body = src.name("b")
            src.add(indent + 1, f"{body} = b''.join({inner})")
            src.add(indent + 1, f"{parts}.append(uvarint({spec.tag}) + uvarint(len({body})) "
                                f"+ {body})")
        src.add(indent, f"{out}.append(uvarint(len({parts})))")
        src.add(indent, f"{out}.extend({parts})")

    def value(self, spec: FieldSpec, value: str, out: str, indent: int, *,
              compact: bool) -> None:
        src = self.src
        nullable = self.version in spec.nullable
        if spec.is_array:
            if nullable:
                src.add(indent, f"if {value} is None:")
                null = "uvarint(0)" if compact else src.constant(struct.pack(">i", -1))
                src.add(indent + 1, f"{out}.append({null})")
                src.add(indent, "else:")
                indent += 1
            self.length(f"len({value})", out, indent, compact, wide=True)
            item = spec.item_type
            if item in _FIXED:
                fmt = _FIXED[item]
                src.add(indent, f"{out}.append(struct.pack('>%d{fmt}' % len({value}), "
                                f"*{value}))")
                return
            element = src.name("e")
            src.add(indent, f"for {element} in {value}:")
            if spec.is_struct:
                self.struct_body(spec.fields, element, out, indent + 1)
            else:
                self.primitive(item, element, out, indent + 1, compact=compact,
                               nullable=False)
            return
        if spec.is_struct:
            if nullable:
                src.add(indent, f"if {value} is None:")
                src.add(indent + 1, f"{out}.append(b'\\xff')")
                src.add(indent, "else:")
                src.add(indent + 1, f"{out}.append(b'\\x01')")
                indent += 1
            self.struct_body(spec.fields, value, out, indent)
            return
        self.primitive(spec.type, value, out, indent, compact=compact, nullable=nullable)

    def length(self, length: str, out: str, indent: int, compact: bool, *, wide: bool) -> None:
        if compact:
            self.src.add(indent, f"{out}.append(uvarint({length} + 1))")
        else:
            self.src.add(indent, f"{out}.append(struct.pack('{'>i' if wide else '>h'}', "
                                 f"{length}))")

    def primitive(self, kind: str, value: str, out: str, indent: int, *, compact: bool,
                  nullable: bool) -> None:
        src = self.src
        if kind in _FIXED:
            packer = src.constant(struct.Struct(">" + _FIXED[kind]), "S")
            src.add(indent, f"{out}.append({packer}.pack({value}))")
            return
        if kind == "uuid":
            src.add(indent, f"{out}.append(({value} or NULL_UUID).bytes)")
            return
        if nullable:
            null = "uvarint(0)" if compact else src.constant(
                struct.pack(">h" if kind == "string" else ">i", -1))
            src.add(indent, f"if {value} is None:")
            src.add(indent + 1, f"{out}.append({null})")
            src.add(indent, "else:")
            indent += 1
        raw = src.name("r")
        if kind == "string":
            src.add(indent, f"{raw} = {value}.encode('utf-8')")
        else:
            src.add(indent, f"{raw} = {value}")
        self.length(f"len({raw})", out, indent, compact, wide=kind != "string")
        src.add(indent, f"{out}.append({raw})")


class _DecoderWriter:
    def __init__(self, src: _Source, version: int, flexible: bool) -> None:
        self.src, self.version, self.flexible = src, version, flexible

    def struct_body(self, fields: tuple[FieldSpec, ...], obj: str, indent: int) -> None:
        """Reads a struct's fields at ``pos`` into the dict named ``obj``."""
        src = self.src
        tagged: list[FieldSpec] = []
        for spec in fields:
            if not _present(spec, self.version):
                default = src.constant(default_value(spec), "D")
                src.add(indent, f"{obj}[{spec.key!r}] = {self.copy(spec, default)}")
                continue
            if _is_tagged(spec, self.version, self.flexible):
                tagged.append(spec)
                default = src.constant(default_value(spec), "D")
                src.add(indent, f"{obj}[{spec.key!r}] = {self.copy(spec, default)}")
                continue
            target = src.name("x")
            self.value(spec, target, indent, compact=_compact(spec, self.flexible))
            src.add(indent, f"{obj}[{spec.key!r}] = {target}")
        if not self.flexible:
            return
        if not tagged:
            src.add(indent, "pos = skip_tags(buf, pos, end)")
            return
        count, tag, size, stop = (src.name(n) for n in ("n", "tag", "size", "stop"))
        src.add(indent, f"{count}, pos = read_uvarint(buf, pos, end)")
        src.add(indent, f"for _ in range({count}):")
        src.add(indent + 1, f"{tag}, pos = read_uvarint(buf, pos, end)")
        src.add(indent + 1, f"{size}, pos = read_uvarint(buf, pos, end)")
        src.add(indent + 1, f"need(pos, {size}, end)")
        src.add(indent + 1, f"{stop} = pos + {size}")
        first = True
        for spec in tagged:
            src.add(indent + 1, f"{'if' if first else 'elif'} {tag} == {spec.tag}:")
            first = False
            target = src.name("x")
            saved = src.name("end")
            src.add(indent + 2, f"{saved}, end = end, {stop}")
            self.value(spec, target, indent + 2, compact=True)
            src.add(indent + 2, f"end = {saved}")
            src.add(indent + 2, f"{obj}[{spec.key!r}] = {target}")
        src.add(indent + 1, f"pos = {stop}")  # unknown tags are skipped; known ones end here

    @staticmethod
    def copy(spec: FieldSpec, default: str) -> str:
        """A fresh copy of a mutable default (a list or a struct dict)."""
        if spec.is_array or spec.is_struct:
            return f"copy_default({default})"
        return default

    def length(self, target: str, indent: int, compact: bool, *, wide: bool) -> None:
        """Reads a length into ``target``: -1 for null."""
        src = self.src
        if compact:
            src.add(indent, f"{target}, pos = read_uvarint(buf, pos, end)")
            src.add(indent, f"{target} -= 1")
            return
        fmt, size = (">i", 4) if wide else (">h", 2)
        src.add(indent, f"need(pos, {size}, end)")
        src.add(indent, f"({target},) = struct.unpack_from('{fmt}', buf, pos)")
        src.add(indent, f"pos += {size}")

    def value(self, spec: FieldSpec, target: str, indent: int, *, compact: bool) -> None:
        src = self.src
        nullable = self.version in spec.nullable
        if spec.is_array:
            count = src.name("count")
            self.length(count, indent, compact, wide=True)
            src.add(indent, f"if {count} < 0:")
            if nullable:
                src.add(indent + 1, f"{target} = None")
            else:
                src.add(indent + 1, f"raise KafkaDecodeError('a null {spec.name}', pos)")
            src.add(indent, "else:")
            indent += 1
            item = spec.item_type
            if item in _FIXED:
                fmt = _FIXED[item]
                width = _SIZES[fmt]
                src.add(indent, f"need(pos, {count} * {width}, end)")
                src.add(indent, f"{target} = list(struct.unpack_from('>%d{fmt}' % {count}, "
                                f"buf, pos))")
                src.add(indent, f"pos += {count} * {width}")
                return
            src.add(indent, f"if {count} > end - pos:")
            src.add(indent + 1, f"raise KafkaDecodeError('{spec.name}: more items than bytes "
                                "left', pos)")
            src.add(indent, f"{target} = []")
            element = src.name("e")
            src.add(indent, f"for _ in range({count}):")
            if spec.is_struct:
                src.add(indent + 1, f"{element} = {{}}")
                self.struct_body(spec.fields, element, indent + 1)
            else:
                self.primitive(item, element, indent + 1, compact=compact, nullable=False,
                               name=spec.name)
            src.add(indent + 1, f"{target}.append({element})")
            return
        if spec.is_struct:
            if nullable:
                marker = src.name("m")
                src.add(indent, "need(pos, 1, end)")
                src.add(indent, f"{marker} = buf[pos]")
                src.add(indent, "pos += 1")
                src.add(indent, f"if {marker} == 255:")
                src.add(indent + 1, f"{target} = None")
                src.add(indent, "else:")
                indent += 1
            src.add(indent, f"{target} = {{}}")
            self.struct_body(spec.fields, target, indent)
            return
        self.primitive(spec.type, target, indent, compact=compact, nullable=nullable,
                       name=spec.name)

    def primitive(self, kind: str, target: str, indent: int, *, compact: bool, nullable: bool,
                  name: str) -> None:
        src = self.src
        if kind in _FIXED:
            fmt = _FIXED[kind]
            unpacker = src.constant(struct.Struct(">" + fmt), "S")
            src.add(indent, f"need(pos, {_SIZES[fmt]}, end)")
            src.add(indent, f"({target},) = {unpacker}.unpack_from(buf, pos)")
            src.add(indent, f"pos += {_SIZES[fmt]}")
            return
        if kind == "uuid":
            src.add(indent, "need(pos, 16, end)")
            src.add(indent, f"{target} = uuid.UUID(bytes=bytes(buf[pos:pos + 16]))")
            src.add(indent, "pos += 16")
            return
        size = src.name("size")
        self.length(size, indent, compact, wide=kind != "string")
        src.add(indent, f"if {size} < 0:")
        if nullable:
            src.add(indent + 1, f"{target} = None")
        else:
            src.add(indent + 1, f"raise KafkaDecodeError('a null {name}', pos)")
        src.add(indent, "else:")
        src.add(indent + 1, f"need(pos, {size}, end)")
        if kind == "string":
            src.add(indent + 1, f"{target} = text(buf[pos:pos + {size}], pos)")
        else:
            src.add(indent + 1, f"{target} = bytes(buf[pos:pos + {size}])")
        src.add(indent + 1, f"pos += {size}")


def _copy_default(value: Any) -> Any:
    if isinstance(value, list):
        return [_copy_default(item) for item in value]
    if isinstance(value, dict):
        return {key: _copy_default(item) for key, item in value.items()}
    return value


def _compile(src: _Source, function: str, label: str) -> Any:
    namespace = {**_RUNTIME, **src.constants, "copy_default": _copy_default}
    code = compile("\n".join(src.lines), f"<kafka codec {label}>", "exec")
    exec(code, namespace)  # the source is generated from the spec above, nothing else
    return namespace[function]


def build_encoder(spec: MessageSpec, version: int) -> Encoder:
    """The encoder of ``spec`` at ``version``: message dict -> body bytes."""
    flexible = version in spec.flexible
    src = _Source()
    src.add(0, "def encode(obj):")
    src.add(1, "out = []")
    _EncoderWriter(src, version, flexible).struct_body(spec.fields, "obj", "out", 1)
    src.add(1, "return b''.join(out)")
    encoder: Encoder = _compile(src, "encode", f"{spec.name} v{version} encode")
    return encoder


def build_decoder(spec: MessageSpec, version: int) -> Decoder:
    """The decoder of ``spec`` at ``version``: (buffer, position, end) -> (dict, position)."""
    flexible = version in spec.flexible
    src = _Source()
    src.add(0, "def decode(buf, pos, end):")
    src.add(1, "obj = {}")
    _DecoderWriter(src, version, flexible).struct_body(spec.fields, "obj", 1)
    src.add(1, "return obj, pos")
    decoder: Decoder = _compile(src, "decode", f"{spec.name} v{version} decode")
    return decoder
