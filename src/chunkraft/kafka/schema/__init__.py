"""Kafka's message definitions (the JSON files of Kafka's ``clients/src/main/resources/common/
message``), read from the kafka-python package the project depends on, plus chunkraft's own
KIP-1114 messages in the same format (``chunkraft_messages/``); see ``specs.py``."""

from chunkraft.kafka.schema.specs import (
    FieldSpec,
    MessageSpec,
    VersionRange,
    load_message,
    message_specs,
)

__all__ = ["FieldSpec", "MessageSpec", "VersionRange", "load_message", "message_specs"]
