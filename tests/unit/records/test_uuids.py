"""Kafka's text form of uuids (chunkraft.records.uuids)."""

from __future__ import annotations

import uuid

import pytest

from chunkraft.records.uuids import (
    kafka_uuid_str,
    kafka_uuid_text,
    parse_kafka_uuid,
    random_kafka_uuid,
)

# Kafka prints Uuid.ZERO_UUID as "AAAAAAAAAAAAAAAAAAAAAA" and Uuid.METADATA_TOPIC_ID (1) as
# "AAAAAAAAAAAAAAAAAAAAAQ".
KNOWN = [
    (uuid.UUID(int=0), "AAAAAAAAAAAAAAAAAAAAAA"),
    (uuid.UUID(int=1), "AAAAAAAAAAAAAAAAAAAAAQ"),
    (uuid.UUID(bytes=bytes(range(16))), "AAECAwQFBgcICQoLDA0ODw"),
    (uuid.UUID(bytes=b"\xfb\xff" * 8), "-__7__v_-__7__v_-__7_w"),
]


@pytest.mark.parametrize(("value", "text"), KNOWN)
def test_known_text_forms(value: uuid.UUID, text: str) -> None:
    assert kafka_uuid_str(value) == text
    assert parse_kafka_uuid(text) == value


def test_text_form_is_22_url_safe_characters() -> None:
    for _ in range(200):
        text = kafka_uuid_str(uuid.uuid4())
        assert len(text) == 22
        assert set(text) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def test_round_trip() -> None:
    for _ in range(200):
        value = uuid.uuid4()
        assert parse_kafka_uuid(kafka_uuid_str(value)) == value


def test_hex_form_is_accepted() -> None:
    value = uuid.UUID("3dc4f1d4-39a2-4d1b-8e3c-ff0a6b0e9a11")
    assert parse_kafka_uuid(str(value)) == value
    assert parse_kafka_uuid(value.hex) == value


@pytest.mark.parametrize(
    "text",
    [
        "",
        "AAAA",
        "AAAAAAAAAAAAAAAAAAAAA",  # 21 characters
        "AAAAAAAAAAAAAAAAAAAAAAA",  # 23 characters
        "AAAAAAAAAAAAAAAAAAAAAA==",  # padded
        "AAAAAAAAAAAAAAAAAAAAA+",  # standard base64, which Kafka's URL-safe decoder refuses
        "AAAAAAAAAAAAAAAAAAAAA/",
        "AAAAAAAAAAAAAAAAAAAA A",
        "AAAAAAAAAAAAAAAAAAAA.A",
        "not-a-uuid",
        "3dc4f1d4-39a2-4d1b-8e3c-ff0a6b0e9a1",  # one hex digit short
    ],
)
def test_bad_text_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError, match="not a uuid"):
        parse_kafka_uuid(text)


def test_random_uuids_avoid_zero_and_a_leading_dash() -> None:
    values = [random_kafka_uuid() for _ in range(500)]
    assert len(set(values)) == 500
    for value in values:
        assert value != uuid.UUID(int=0)
        assert not kafka_uuid_str(value).startswith("-")


def test_kafka_uuid_text_prints_every_form_of_a_uuid_as_kafka_does() -> None:
    value = uuid.UUID("5b7f9c3e-0d1a-4c2b-9e8f-112233445566")
    kafka = kafka_uuid_str(value)
    assert kafka_uuid_text(value) == kafka
    assert kafka_uuid_text(str(value)) == kafka
    assert kafka_uuid_text(kafka) == kafka
    assert kafka_uuid_text("not a uuid") == "not a uuid"
