"""Metadata records: declared once, with the codec, JSON view and checks derived from that.

Every record class is a ``typing.NamedTuple`` (immutable, cheap) registered with its apiKey.
"""

from chunkraft.records.broker_records import (
    BrokerEndpoint,
    BrokerFeature,
    BrokerRegistrationChangeRecord,
    RegisterBrokerRecord,
    UnregisterBrokerRecord,
)
from chunkraft.records.chunk_records import ChunkChangeRecord, ChunkRecord
from chunkraft.records.cluster_records import (
    AccessControlEntryRecord,
    ControllerRegistrationRecord,
    NoOpRecord,
    ProducerIdsRecord,
    RemoveAccessControlEntryRecord,
)
from chunkraft.records.codec import (
    decode_record,
    decode_record_from,
    decode_records,
    encode_record,
    latest_version,
    record_version_of,
)
from chunkraft.records.config_records import (
    BROKER_RESOURCE,
    TOPIC_RESOURCE,
    ConfigRecord,
)
from chunkraft.records.json_view import record_from_json, record_to_json
from chunkraft.records.schema import ZERO_UUID, all_record_schemas, schema_of
from chunkraft.records.topic_records import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    PartitionChangeRecord,
    PartitionRecord,
    PriorPartitionEpoch,
    RemoveTopicRecord,
    TopicRecord,
)
from chunkraft.records.validation import validate_record

Record = (
    RegisterBrokerRecord
    | UnregisterBrokerRecord
    | TopicRecord
    | PartitionRecord
    | PartitionChangeRecord
    | AccessControlEntryRecord
    | RemoveAccessControlEntryRecord
    | RemoveTopicRecord
    | ProducerIdsRecord
    | BrokerRegistrationChangeRecord
    | NoOpRecord
    | ChunkRecord
    | ChunkChangeRecord
    | ControllerRegistrationRecord
    | ConfigRecord
)
"""Any metadata record."""

__all__ = [
    "BROKER_RESOURCE",
    "NO_LEADER",
    "NO_LEADER_CHANGE",
    "TOPIC_RESOURCE",
    "ZERO_UUID",
    "AccessControlEntryRecord",
    "BrokerEndpoint",
    "BrokerFeature",
    "BrokerRegistrationChangeRecord",
    "ChunkChangeRecord",
    "ChunkRecord",
    "ConfigRecord",
    "ControllerRegistrationRecord",
    "NoOpRecord",
    "PartitionChangeRecord",
    "PartitionRecord",
    "PriorPartitionEpoch",
    "ProducerIdsRecord",
    "Record",
    "RegisterBrokerRecord",
    "RemoveAccessControlEntryRecord",
    "RemoveTopicRecord",
    "TopicRecord",
    "UnregisterBrokerRecord",
    "all_record_schemas",
    "decode_record",
    "decode_record_from",
    "decode_records",
    "encode_record",
    "latest_version",
    "record_from_json",
    "record_to_json",
    "record_version_of",
    "schema_of",
    "validate_record",
]
