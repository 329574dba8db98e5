"""kafka/codec on the golden frames of the stock clients (tests/golden/kafka, written by
scripts/capture-kafka-golden): each frame's header and body decode with our codec and with
kafka-python's, to the same fields, and our codec writes the frame back byte for byte, except
where a client sent what a codec cannot keep (listed below with the reason)."""

from __future__ import annotations

import pathlib
import re
from typing import Any

import pytest

from chunkraft.kafka.codec.messages import (
    KafkaDecodeError,
    api_specs,
    decode,
    decode_request_header,
    decoder,
    encode,
    request_header_version,
)
from chunkraft.kafka.schema.specs import OWN_TAGS_FROM, FieldSpec, message_specs
from tests.support.kafka_messages import kafka_python_classes

GOLDEN = pathlib.Path(__file__).resolve().parents[3] / "golden" / "kafka"
FRAMES = sorted(GOLDEN.glob("*/*.hex"))
CLIENTS = ("kcat", "kafka-python", "confluent-kafka", "aiokafka", "kafkajs")
NAME = re.compile(r"(?P<number>\d\d)-(?P<api>[A-Za-z]+)-v(?P<version>\d+)\.hex")

# Frames whose body ends before the frame does: librdkafka 2.16 sends its all-topics Metadata
# v12 request with 3 bytes after the body, which kafka-python ignores too (see the README).
TRAILING = {
    "confluent-kafka/05-Metadata-v12.hex": bytes.fromhex("010000"),
    "confluent-kafka-plaintext/03-Metadata-v12.hex": bytes.fromhex("010000"),
}
# Frames with tagged fields no definition knows (a codec skips them, so cannot write them
# back): none of these clients sends any in its first frames.
UNKNOWN_TAGS: set[str] = set()
# Kafka's pattern for ApiVersions v3+'s ClientSoftwareName and ClientSoftwareVersion (a broker
# answers INVALID_REQUEST to others).
SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def _key(path: pathlib.Path) -> str:
    return f"{path.parent.name}/{path.name}"


def _frame(path: pathlib.Path) -> bytes:
    return bytes.fromhex(path.read_text().strip())


def _in_version(fields: tuple[FieldSpec, ...], version: int,
                message: dict[str, Any]) -> dict[str, Any]:
    """Only the fields ``version`` has (our decoder fills in the others with defaults; the
    other codec leaves them out), nested structs included."""
    out: dict[str, Any] = {}
    for spec in fields:
        if version not in spec.versions:
            continue
        if spec.tag is not None and spec.tag >= OWN_TAGS_FROM:
            continue  # chunkraft's own tagged fields: kafka-python does not know them
        value = message[spec.key]
        if spec.is_struct and value is not None:
            if spec.is_array:
                value = [_in_version(spec.fields, version, item) for item in value]
            else:
                value = _in_version(spec.fields, version, value)
        out[spec.key] = value
    return out


def _unknown_tags(container: Any) -> bool:
    """Whether kafka-python kept unknown tags anywhere in ``container``."""
    if getattr(container, "unknown_tags", None):
        return True
    for name in getattr(container, "fields", {}):
        value = getattr(container, name, None)
        items = value if isinstance(value, list) else [value]
        if any(hasattr(item, "unknown_tags") and _unknown_tags(item) for item in items):
            return True
    return False


def test_every_client_was_captured_with_sasl_and_without() -> None:
    folders = {path.parent.name for path in FRAMES}
    assert folders == {*CLIENTS, *(f"{client}-plaintext" for client in CLIENTS)}
    assert len(FRAMES) >= 30
    for folder in folders:
        apis = [NAME.fullmatch(path.name)["api"]  # type: ignore[index]
                for path in FRAMES if path.parent.name == folder]
        assert apis[0] == "ApiVersions" and "Metadata" in apis, folder
        sasl = ["SaslHandshake", "SaslAuthenticate"]
        if folder.endswith("-plaintext"):
            assert not set(sasl) & set(apis), folder
        else:
            assert apis[1:3] == sasl, folder
    for name in (*TRAILING, *UNKNOWN_TAGS):
        assert (GOLDEN / name).is_file(), name


@pytest.mark.parametrize("path", FRAMES, ids=_key)
def test_a_golden_frame_decodes_alike_in_both_codecs_and_is_written_back(
        path: pathlib.Path) -> None:
    frame = _frame(path)
    named = NAME.fullmatch(path.name)
    assert named is not None, path.name
    header = decode_request_header(frame)
    api = api_specs()[header.api_key]
    assert (api.name, header.api_version) == (named["api"], int(named["version"]))
    name, version = f"{api.name}Request", header.api_version

    # Ours: the whole frame, or the whole frame but a known trailer.
    trailer = TRAILING.get(_key(path), b"")
    body = frame[header.size:]
    if trailer:
        with pytest.raises(KafkaDecodeError, match=f"{len(trailer)} bytes left"):
            decode(name, version, body)
        ours, end = decoder(name, version)(body, 0, len(body))
        assert body[end:] == trailer
    else:
        ours = decode(name, version, body)

    # Theirs: kafka-python's class for the message, header included.
    theirs = kafka_python_classes()[name].decode(frame, version=version, header=True)
    assert theirs.header.to_dict(json=False) == {
        "request_api_key": header.api_key, "request_api_version": version,
        "correlation_id": header.correlation_id, "client_id": header.client_id}
    assert theirs.to_dict(json=False) == _in_version(message_specs()[name].fields, version, ours)
    tagged = _unknown_tags(theirs) or _unknown_tags(theirs.header)
    assert tagged == (_key(path) in UNKNOWN_TAGS)

    # Written back: by us and by kafka-python, the same bytes as the client's (less a trailer).
    written = encode("RequestHeader", request_header_version(header.api_key, version), {
        "request_api_key": header.api_key, "request_api_version": version,
        "correlation_id": header.correlation_id, "client_id": header.client_id,
    }) + encode(name, version, ours)
    if _key(path) in UNKNOWN_TAGS:
        assert written != frame
    else:
        assert written == frame[:len(frame) - len(trailer)]
        assert bytes(theirs.encode(version=version, header=True)) == written


@pytest.mark.parametrize("path", [p for p in FRAMES if "-Sasl" in p.name], ids=_key)
def test_the_sasl_exchange_is_plain_with_the_username_and_password(path: pathlib.Path) -> None:
    frame = _frame(path)
    header = decode_request_header(frame)
    message = decode(f"{api_specs()[header.api_key].name}Request", header.api_version,
                     frame[header.size:])
    if header.api_key == 17:
        assert message == {"mechanism": "PLAIN"}
    else:
        authzid, username, password = message["auth_bytes"].split(b"\x00")
        assert (username, password) == (b"alice", b"secret")
        assert authzid in (b"", b"alice")  # librdkafka and kafkajs: empty; the others: alice


@pytest.mark.parametrize("path", [p for p in FRAMES if "-ApiVersions-" in p.name], ids=_key)
def test_api_versions_v3_names_the_client_software_as_kafka_requires(
        path: pathlib.Path) -> None:
    frame = _frame(path)
    header = decode_request_header(frame)
    message = decode("ApiVersionsRequest", header.api_version, frame[header.size:])
    if header.api_version >= 3:
        assert SOFTWARE.fullmatch(message["client_software_name"])
        assert SOFTWARE.fullmatch(message["client_software_version"])
    else:
        assert path.parent.name.startswith(("kafkajs", "aiokafka"))
