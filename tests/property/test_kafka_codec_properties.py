"""The Kafka codec (chunkraft.kafka.codec) on every request and response of every version:
encode -> decode gives the message back, and kafka-python's own codec, built from the same
definitions by other people, reads our bytes and writes the very same bytes back."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkraft.kafka.codec.messages import api_specs, decode, encode
from chunkraft.kafka.schema.specs import MessageSpec, message_specs
from tests.support.kafka_messages import kafka_python_classes, messages

CASES = sorted(
    (spec.name, version)
    for api in api_specs().values() for spec in (api.request, api.response)
    for version in spec.versions)


def _spec(name: str) -> MessageSpec:
    return message_specs()[name]


@pytest.mark.parametrize(("name", "version"), CASES, ids=[f"{n}-v{v}" for n, v in CASES])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_message_round_trips_and_kafka_python_writes_the_same_bytes(
        name: str, version: int, data: st.DataObject) -> None:
    message: dict[str, Any] = data.draw(messages(_spec(name), version))
    wire = encode(name, version, message)
    assert encode(name, version, decode(name, version, wire)) == wire
    theirs = kafka_python_classes().get(name)
    if theirs is None:
        return  # chunkraft's own messages: no second codec knows them
    if name == "ApiVersionsResponse" and message["error_code"]:
        return  # clients read an ApiVersions error as version 0, whatever they asked for
    parsed = theirs.decode(wire, version=version)
    parsed._header = None
    # chunkraft's own tagged fields (tagged_extensions.json) are skipped by kafka-python, as by
    # every reader that does not know their tags: it writes back the message without them.
    assert bytes(parsed.encode(version=version)) == encode(name, version, _without_extensions(
        name, message))


EXTENSION_KEYS = {"ApiVersionsRequest": {"include_private_apis"},
                  "MetadataRequest": {"include_chunks"},
                  "MetadataResponse": {"chunks", "active_chunk_start_offset"}}


def _without_extensions(name: str, message: Any) -> Any:
    keys = EXTENSION_KEYS.get(name)
    if not keys:
        return message

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in keys}
        if isinstance(value, list):
            return [strip(item) for item in value]
        return value

    return strip(message)


def test_the_extension_keys_are_the_tagged_extensions() -> None:
    import json
    import re
    from importlib.resources import files

    from chunkraft.kafka.schema.specs import EXTENSIONS, OWN_RESOURCES, snake_case

    text = files(OWN_RESOURCES).joinpath(EXTENSIONS).read_text()
    data = json.loads(re.sub(r"(?m)^\s*//.*$", "", text))
    declared: dict[str, set[str]] = {}
    for extension in data["extensions"]:
        declared.setdefault(extension["message"], set()).update(
            snake_case(field["name"]) for field in extension["fields"])
    assert declared == EXTENSION_KEYS


def test_every_api_of_kafka_python_is_covered() -> None:
    ours = {spec.name for api in api_specs().values() for spec in (api.request, api.response)}
    theirs = {name for name in kafka_python_classes() if name.endswith(("Request", "Response"))}
    assert theirs <= ours
    assert len(CASES) > 450  # 478 with kafka-python 3.0.12
