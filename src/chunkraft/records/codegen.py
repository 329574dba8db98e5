"""Generates a specialised encoder and decoder for each (record or struct, version).

Why generate: a generic loop over field specs pays interpreter dispatch for every field of every
record; straight-line code with one ``struct`` call per run of fixed-width fields decodes a
PartitionRecord in under 4 µs (bench/RESULTS.md), which is what replaying millions of records
needs. The generated code is plain Python built from the declaration alone,
so the declaration stays the single source of truth.

Wire format of a body (Kafka's flexible versions): fields in declaration order; integers
big-endian; bool one byte; uuid 16 bytes; compact string / array = unsigned varint (length + 1)
then the items, 0 meaning null; then the tagged-field section: uvarint count, then per field
uvarint tag, uvarint size, value. Tagged fields are written only when they differ from their
default; unknown tags are skipped on read, as Kafka does, so newer writers stay readable.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any

from chunkraft.errors import RecordDecodeError
from chunkraft.records.schema import Check, FieldSpec, FieldType, StructSchema, schema_of
from chunkraft.records.varint import MAX_UVARINT_BYTES, decode_uvarint, encode_uvarint

__all__ = ["Decoder", "Encoder", "build_decoder", "build_encoder", "read_uvarint", "uvarint"]

Encoder = Callable[[Any], bytes]
Decoder = Callable[[Any, int, int], tuple[Any, int]]

_FIXED_FORMATS: dict[FieldType, str] = {
    FieldType.BOOL: "?",
    FieldType.INT8: "b",
    FieldType.INT16: "h",
    FieldType.UINT16: "H",
    FieldType.INT32: "i",
    FieldType.INT64: "q",
    FieldType.UUID: "16s",
}
_INT_TYPES = (FieldType.INT8, FieldType.INT16, FieldType.INT32, FieldType.INT64)
_ITEM_SIZES = {"?": 1, "b": 1, "h": 2, "H": 2, "i": 4, "q": 8, "16s": 16}

uvarint = encode_uvarint


def read_uvarint(buf: Any, pos: int) -> tuple[int, int]:
    """Reads an unsigned varint at ``pos``; returns (value, next position)."""
    found = decode_uvarint(buf, pos, len(buf))
    if found is None:
        if len(buf) - pos >= MAX_UVARINT_BYTES:
            raise RecordDecodeError(f"varint longer than {MAX_UVARINT_BYTES} bytes", pos)
        raise RecordDecodeError("input ends inside a varint", pos)
    return found


class _PackedArrays(dict[int, struct.Struct]):
    """One ``struct.Struct`` per item count, so an array packs or unpacks in one C call.

    A dict subclass: lookups of known counts stay in C; ``__missing__`` builds new ones.
    """

    def __init__(self, fmt: str, with_length_prefix: bool) -> None:
        super().__init__()
        self._fmt = fmt
        self._head = "B" if with_length_prefix else ""

    def __missing__(self, count: int) -> struct.Struct:
        found = struct.Struct(f">{self._head}{count}{self._fmt}")
        if count < 1024:
            self[count] = found
        return found


_UUID_CACHE: dict[bytes, uuid.UUID] = {}
_UUID_CACHE_LIMIT = 1 << 16


def _uuid_from(raw: Any) -> uuid.UUID:
    # Topic ids repeat in every partition and chunk record: reuse the UUID objects (saves time
    # and memory when millions of records name the same topics). The key is always bytes (a
    # no-op for bytes): a bytearray slice is unhashable, and a memoryview key would pin the
    # whole buffer it views (an mmap could then never be closed).
    key = bytes(raw)
    found = _UUID_CACHE.get(key)
    if found is None:
        if len(_UUID_CACHE) >= _UUID_CACHE_LIMIT:
            _UUID_CACHE.clear()
        found = _UUID_CACHE[key] = uuid.UUID(bytes=key)
    return found


# Distinct replica lists are bounded by the combinations of brokers a cluster uses, so this
# table stays small while saving two tuples per partition or chunk record held in an image.
_ID_TUPLES: dict[tuple[int, ...], tuple[int, ...]] = {}


class _Namespace:
    """Collects the helper objects that generated source refers to by name."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {
            "uvarint": uvarint,
            "read_uvarint": read_uvarint,
            "uuid_from": _uuid_from,
            "uuid_cached": _UUID_CACHE.get,
            "Err": RecordDecodeError,
            "struct_error": struct.error,
            "tuple_new": tuple.__new__,
            "intern_ids": _ID_TUPLES.setdefault,
        }
        self._count = 0

    def add(self, value: Any, hint: str) -> str:
        self._count += 1
        name = f"_{hint}{self._count}"
        self.values[name] = value
        return name


def _runs(fields: list[FieldSpec]) -> list[list[FieldSpec]]:
    """Groups consecutive fixed-width scalar fields so each group is one struct call."""
    groups: list[list[FieldSpec]] = []
    for spec in fields:
        fixed = not spec.array and spec.type in _FIXED_FORMATS
        if fixed and groups and groups[-1][0].type in _FIXED_FORMATS and not groups[-1][0].array:
            groups[-1].append(spec)
        else:
            groups.append([spec])
    return groups


def _is_fixed(spec: FieldSpec) -> bool:
    return not spec.array and spec.type in _FIXED_FORMATS


# ---------------------------------------------------------------- encoding


def _encode_value_lines(spec: FieldSpec, var: str, version: int, ns: _Namespace) -> list[str]:
    """Lines that append the encoding of one non-fixed field held in ``var`` to ``parts``."""
    nullable = spec.nullable_in(version)
    lines: list[str] = []
    if spec.array:
        # A None in a non-nullable array fails in len() below and is reported by the caller.
        lines.append(f"if {var} is None:" if nullable else "if False:")
        lines.append("    a(b'\\x00')")
        lines.append("else:")
        if spec.type in (FieldType.INT32, FieldType.INT16, FieldType.INT64, FieldType.INT8):
            fmt = _FIXED_FORMATS[spec.type]
            packed = ns.add(_PackedArrays(fmt, with_length_prefix=True), "arr")
            plain = ns.add(_PackedArrays(fmt, with_length_prefix=False), "arr")
            lines += [
                f"    n = len({var})",
                "    if n == 0:",
                "        a(b'\\x01')",
                "    elif n < 127:",
                f"        a({packed}[n].pack(n + 1, *{var}))",
                "    else:",
                f"        a(uvarint(n + 1)); a({plain}[n].pack(*{var}))",
            ]
        elif spec.type is FieldType.UUID:
            lines += [
                f"    n = len({var})",
                "    if n == 0:",
                "        a(b'\\x01')",
                "    else:",
                "        a(uvarint(n + 1))",
                f"        for item in {var}: a(item.bytes)",
            ]
        elif spec.type is FieldType.STRING:
            lines += [
                f"    a(uvarint(len({var}) + 1))",
                f"    for item in {var}:",
                "        raw = item.encode()",
                "        a(uvarint(len(raw) + 1)); a(raw)",
            ]
        elif spec.type is FieldType.STRUCT:
            assert spec.struct is not None
            enc = ns.add(build_encoder(schema_of(spec.struct), version), "enc")
            lines += [
                f"    a(uvarint(len({var}) + 1))",
                f"    for item in {var}: a({enc}(item))",
            ]
        else:
            raise AssertionError(spec.type)
        return lines
    if spec.type is FieldType.STRING:
        lines.append(f"if {var} is None:")
        if nullable:
            lines.append("    a(b'\\x00')")
        else:
            lines.append(f"    raise ValueError('{spec.name} is not nullable in v{version}')")
        lines += ["else:", f"    raw = {var}.encode()", "    a(uvarint(len(raw) + 1)); a(raw)"]
        return lines
    raise AssertionError(spec.type)


def _encode_fixed_lines(group: list[FieldSpec], ns: _Namespace) -> list[str]:
    fmt = ">" + "".join(_FIXED_FORMATS[s.type] for s in group)
    packer = ns.add(struct.Struct(fmt), "s")
    args = ", ".join(
        f"f_{s.name}.bytes" if s.type is FieldType.UUID else f"f_{s.name}" for s in group
    )
    return [f"a({packer}.pack({args}))"]


def _default_test(spec: FieldSpec, var: str, ns: _Namespace) -> str:
    """An expression true when ``var`` differs from the field's default (so it must be written)."""
    if spec.default is None:
        return f"{var} is not None"
    if spec.default == ():
        # Not plain truthiness: None (or any other wrong value) must be written, and fail there.
        return f"{var} != ()"
    return f"{var} != {_literal(spec.default, ns)}"


def build_encoder(schema: StructSchema, version: int, prefix: bytes = b"") -> Encoder:
    """Returns ``encode(obj) -> bytes`` writing ``prefix`` then ``schema``'s body at ``version``."""
    ns = _Namespace()
    present = schema.fields_in(version)
    absent = [f for f in schema.fields if not f.present_in(version)]
    untagged = [f for f in present if not f.tagged]
    tagged = sorted((f for f in present if f.tagged), key=lambda f: f.tag or 0)
    # "f_a, f_b, " unpacks and packs a tuple of any length, including none (NoOpRecord).
    names = "".join(f"f_{f.name}, " for f in schema.fields)
    first = ns.add(prefix, "prefix") if prefix else ""
    body = [f"({names}) = obj", f"parts = [{first}]", "a = parts.append"]
    for spec in absent:
        test = _default_test(spec, f"f_{spec.name}", ns)
        body += [
            f"if {test}:",
            f"    raise ValueError('{spec.name} is not in version {version} of {schema.name}')",
        ]
    for group in _runs(untagged):
        if _is_fixed(group[0]):
            body += _encode_fixed_lines(group, ns)
        else:
            body += _encode_value_lines(group[0], f"f_{group[0].name}", version, ns)
    body.append("tags = []")
    for spec in tagged:
        var = f"f_{spec.name}"
        header = uvarint(spec.tag or 0)
        body.append(f"if {_default_test(spec, var, ns)}:")
        if _is_fixed(spec):
            fmt = ">" + _FIXED_FORMATS[spec.type]
            packer = ns.add(struct.Struct(fmt), "s")
            tag_prefix = ns.add(header + uvarint(struct.calcsize(fmt)), "tag")
            value = f"{var}.bytes" if spec.type is FieldType.UUID else var
            body.append(f"    tags.append({tag_prefix} + {packer}.pack({value}))")
            continue
        body.append("    sub = []; a = sub.append")
        inner = _encode_value_lines(spec, var, version, ns)
        body += ["    " + line for line in inner]
        body.append("    raw = b''.join(sub)")
        body.append(f"    tags.append({ns.add(header, 'tag')} + uvarint(len(raw)) + raw)")
    body.append("parts.append(uvarint(len(tags))); parts.extend(tags)")
    body.append("return b''.join(parts)")
    source = "def encode(obj):\n" + "\n".join("    " + line for line in body) + "\n"
    exec(compile(source, f"<encoder {schema.name} v{version}>", "exec"), ns.values)
    fn: Encoder = ns.values["encode"]
    return fn


# ---------------------------------------------------------------- decoding


def _decode_value_lines(spec: FieldSpec, var: str, version: int, ns: _Namespace) -> list[str]:
    """Lines that read one non-fixed field at ``pos`` into ``var``, advancing ``pos``."""
    general = _decode_value_general(spec, var, version, ns)
    if not spec.array:
        return general
    # Fast paths for the common shapes: an empty array, and a short array of integers.
    lines = ["n = buf[pos]", "if n == 1:", f"    {var} = (); pos += 1"]
    if spec.type in _INT_TYPES:
        fmt = _FIXED_FORMATS[spec.type]
        plain = ns.add(_PackedArrays(fmt, with_length_prefix=False), "arr")
        size = _ITEM_SIZES[fmt]
        lines += [
            "elif 1 < n < 128:",
            "    n -= 1",
            f"    {var} = {plain}[n].unpack_from(buf, pos + 1); pos += 1 + {size} * n",
        ]
        if spec.check is Check.BROKER_ID:
            lines.append(f"    {var} = intern_ids({var}, {var})")
    lines.append("else:")
    return lines + ["    " + line for line in general]


def _decode_value_general(spec: FieldSpec, var: str, version: int, ns: _Namespace) -> list[str]:
    nullable = spec.nullable_in(version)
    lines = [
        "n = buf[pos]; pos += 1",
        "if n & 0x80: n, pos = read_uvarint(buf, pos - 1)",
        "if n == 0:",
    ]
    if nullable:
        lines.append(f"    {var} = None")
    else:
        lines.append(f"    raise Err('{spec.name}: null in a non-nullable field', pos - 1)")
    lines += ["else:", "    n -= 1"]
    if spec.array:
        # Fixed-width arrays need no length guard: unpack_from fails on short input, and the
        # caller checks that the record ends exactly at ``end``.
        if spec.type not in _INT_TYPES:
            # Every item takes at least one byte, a uuid sixteen.
            need = "16 * n" if spec.type is FieldType.UUID else "n"
            lines.append(
                f"    if {need} > end - pos: raise Err('{spec.name}: array of ' "
                "+ str(n) + ' items runs past the end', pos)"
            )
        if spec.type in _INT_TYPES:
            fmt = _FIXED_FORMATS[spec.type]
            plain = ns.add(_PackedArrays(fmt, with_length_prefix=False), "arr")
            size = _ITEM_SIZES[fmt]
            lines += [f"    {var} = {plain}[n].unpack_from(buf, pos)", f"    pos += {size} * n"]
            if spec.check is Check.BROKER_ID:
                # Replica lists repeat across millions of partitions and chunks: share them.
                lines.append(f"    {var} = intern_ids({var}, {var})")
        elif spec.type is FieldType.UUID:
            lines += [
                f"    if n == 0: {var} = ()",
                "    else:",
                "        items = []",
                "        for _ in range(n):",
                "            items.append(uuid_from(buf[pos:pos + 16])); pos += 16",
                f"        {var} = tuple(items)",
            ]
        elif spec.type is FieldType.STRING:
            lines += [
                "    items = []",
                "    for _ in range(n):",
                "        m, pos = read_uvarint(buf, pos)",
                "        if m == 0:",
                f"            raise Err('{spec.name}: null string in array', pos - 1)",
                "        m -= 1",
                "        if m > end - pos:",
                f"            raise Err('{spec.name}: string runs past the end', pos)",
                "        items.append(str(buf[pos:pos + m], 'utf-8')); pos += m",
                f"    {var} = tuple(items)",
            ]
        elif spec.type is FieldType.STRUCT:
            assert spec.struct is not None
            dec = ns.add(build_decoder(schema_of(spec.struct), version), "dec")
            lines += [
                "    items = []",
                "    for _ in range(n):",
                f"        item, pos = {dec}(buf, pos, end)",
                "        items.append(item)",
                f"    {var} = tuple(items)",
            ]
        else:
            raise AssertionError(spec.type)
        return lines
    if spec.type is FieldType.STRING:
        lines += [
            f"    if n > end - pos: raise Err('{spec.name}: string runs past the end', pos)",
            f"    {var} = str(buf[pos:pos + n], 'utf-8'); pos += n",
        ]
        return lines
    raise AssertionError(spec.type)


def _decode_fixed_lines(group: list[FieldSpec], ns: _Namespace) -> list[str]:
    fmt = ">" + "".join(_FIXED_FORMATS[s.type] for s in group)
    unpacker = struct.Struct(fmt)
    name = ns.add(unpacker, "s")
    targets = ", ".join(f"f_{s.name}" for s in group)
    lines = [f"({targets},) = {name}.unpack_from(buf, pos); pos += {unpacker.size}"]
    for spec in group:
        if spec.type is FieldType.UUID:
            var = f"f_{spec.name}"
            lines.append(f"{var} = uuid_cached({var}) or uuid_from({var})")
    return lines


def _literal(value: Any, ns: _Namespace) -> str:
    """Source text for a default: a literal where possible (faster than a global lookup)."""
    if value is None or isinstance(value, bool | int) or value == ():
        return repr(value)
    return ns.add(value, "d")


def build_decoder(schema: StructSchema, version: int) -> Decoder:
    """Returns ``decode(buf, pos, end) -> (obj, pos)`` reading ``schema``'s body at ``version``."""
    ns = _Namespace()
    cls = ns.add(schema.cls, "cls")
    present = schema.fields_in(version)
    untagged = [f for f in present if not f.tagged]
    tagged = sorted((f for f in present if f.tagged), key=lambda f: f.tag or 0)
    body: list[str] = ["try:"]
    inner: list[str] = []
    for spec in schema.fields:
        if spec.tagged or not spec.present_in(version):
            inner.append(f"f_{spec.name} = {_literal(spec.default, ns)}")
    for group in _runs(untagged):
        if _is_fixed(group[0]):
            inner += _decode_fixed_lines(group, ns)
        else:
            inner += _decode_value_lines(group[0], f"f_{group[0].name}", version, ns)
    inner += [
        "count = buf[pos]; pos += 1",
        "if count & 0x80: count, pos = read_uvarint(buf, pos - 1)",
    ]
    inner += [
        "last_tag = -1",
        "for _ in range(count):",
        "    tag_start = pos",
        "    tag = buf[pos]",
        "    if tag & 0x80: tag, pos = read_uvarint(buf, pos)",
        "    else: pos += 1",
        "    size = buf[pos]",
        "    if size & 0x80: size, pos = read_uvarint(buf, pos)",
        "    else: pos += 1",
        "    if tag <= last_tag:",
        "        raise Err('tagged fields out of order', tag_start)",
        "    last_tag = tag",
        "    field_end = pos + size",
        "    if field_end > end:",
        "        raise Err('tagged field ' + str(tag) + ' runs past the end', pos)",
    ]
    keyword = "if"
    for spec in tagged:
        inner.append(f"    {keyword} tag == {spec.tag}:")
        keyword = "elif"
        if _is_fixed(spec):
            lines = _decode_fixed_lines([spec], ns)
        else:
            lines = _decode_value_lines(spec, f"f_{spec.name}", version, ns)
        inner += ["        " + line for line in lines]
        inner.append(
            "        if pos != field_end: raise Err("
            f"'tagged field {spec.name} has size ' + str(size) + ' but its value does not', pos)"
        )
    if tagged:
        inner.append("    else:")
        inner.append("        pos = field_end")
    else:
        inner.append("    pos = field_end")
    names = "".join(f"f_{f.name}, " for f in schema.fields)
    inner.append(f"return tuple_new({cls}, ({names})), pos")
    body += ["    " + line for line in inner]
    body += [
        "except (struct_error, IndexError):",
        f"    raise Err('{schema.name} v{version}: input ends inside the record', pos) from None",
        "except UnicodeDecodeError:",
        f"    raise Err('{schema.name} v{version}: string is not UTF-8', pos) from None",
    ]
    source = "def decode(buf, pos, end):\n" + "\n".join("    " + line for line in body) + "\n"
    exec(compile(source, f"<decoder {schema.name} v{version}>", "exec"), ns.values)
    fn: Decoder = ns.values["decode"]
    return fn
