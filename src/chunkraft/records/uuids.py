"""Kafka's text form of a uuid: 22 characters of URL-safe base64 without padding.

Kafka prints topic ids, incarnation ids and cluster ids this way (``kafka-topics --describe``
shows ``TopicId: 3IPSYUjrQ2OeV-6w_vOjuA``), so chunkraft does too; the usual hex form is accepted
on input as well.
"""

from __future__ import annotations

import base64
import binascii
import re
import uuid

from chunkraft.random_bytes import random_bytes

__all__ = ["kafka_uuid_str", "kafka_uuid_text", "parse_kafka_uuid", "random_kafka_uuid"]

# Kafka decodes with Java's URL-safe decoder, which refuses '+' and '/' (Python's accepts them).
_KAFKA_FORM = re.compile(r"[A-Za-z0-9_-]{22}")


def kafka_uuid_str(value: uuid.UUID) -> str:
    """``uuid.UUID`` -> Kafka's 22-character base64 form."""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def kafka_uuid_text(value: object) -> str:
    """A uuid (a ``uuid.UUID``, or its hex or base64 text) in Kafka's base64 form, as every
    chunkraft answer prints a cluster id; other text as it is."""
    if isinstance(value, uuid.UUID):
        return kafka_uuid_str(value)
    text = str(value)
    try:
        return kafka_uuid_str(parse_kafka_uuid(text))
    except ValueError:
        return text


def parse_kafka_uuid(text: str) -> uuid.UUID:
    """Kafka's base64 form or the canonical hex form -> ``uuid.UUID``; ValueError otherwise."""
    if _KAFKA_FORM.fullmatch(text):
        try:
            raw = base64.urlsafe_b64decode(text + "==")
        except (binascii.Error, ValueError) as exc:
            raise ValueError(f"not a uuid: {text!r}") from exc
        if len(raw) == 16:
            return uuid.UUID(bytes=raw)
    try:
        return uuid.UUID(text)
    except ValueError:
        raise ValueError(f"not a uuid: {text!r}") from None


def random_kafka_uuid() -> uuid.UUID:
    """A random uuid that is neither all zeros nor starts with '-' in text (as Kafka avoids)."""
    while True:
        value = uuid.UUID(bytes=random_bytes(16), version=4)
        if not kafka_uuid_str(value).startswith("-"):
            return value
