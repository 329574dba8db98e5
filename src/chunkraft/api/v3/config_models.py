"""The REST v3 configuration bodies (Confluent's topic, broker and cluster config shapes), as
pydantic models."""

from __future__ import annotations

import enum

from pydantic import BaseModel, Field

from chunkraft.api.v3.models import ListMetadata, RequestBody, ResourceMetadata
from chunkraft.protocol.base import StrictBool
from chunkraft.protocol.configs import MAX_CONFIG_ENTRIES, ConfigName, ConfigValue

__all__ = [
    "AlterConfigItem",
    "AlterConfigsBody",
    "ConfigOperationName",
    "ConfigSynonym",
    "KafkaBrokerConfig",
    "KafkaBrokerConfigList",
    "KafkaClusterConfig",
    "KafkaClusterConfigList",
    "KafkaTopicConfig",
    "KafkaTopicConfigList",
    "UpdateConfigBody",
]


class ConfigSynonym(BaseModel):
    """A level that holds a value for the key: its name there, the value and its source."""

    name: str
    value: str | None
    source: str


class _Config(BaseModel):
    """One configuration key of a resource (Confluent's shape): its effective value and
    ``source`` (DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
    DEFAULT_CONFIG), and every level that holds a value, first the one that wins."""

    metadata: ResourceMetadata
    cluster_id: str
    name: str
    value: str | None
    is_default: bool
    is_read_only: bool = False
    is_sensitive: bool = False
    source: str
    synonyms: list[ConfigSynonym]


class KafkaTopicConfig(_Config):
    kind: str = "KafkaTopicConfig"
    topic_name: str


class KafkaBrokerConfig(_Config):
    kind: str = "KafkaBrokerConfig"
    broker_id: int


class KafkaClusterConfig(_Config):
    """A cluster-wide default of every broker (Kafka's ``--entity-default``)."""

    kind: str = "KafkaClusterConfig"
    config_type: str = "BROKER"


class KafkaTopicConfigList(BaseModel):
    kind: str = "KafkaTopicConfigList"
    metadata: ListMetadata
    data: list[KafkaTopicConfig]


class KafkaBrokerConfigList(BaseModel):
    kind: str = "KafkaBrokerConfigList"
    metadata: ListMetadata
    data: list[KafkaBrokerConfig]


class KafkaClusterConfigList(BaseModel):
    kind: str = "KafkaClusterConfigList"
    metadata: ListMetadata
    data: list[KafkaClusterConfig]


class UpdateConfigBody(RequestBody):
    """PUT one key: its new value."""

    value: ConfigValue


class ConfigOperationName(enum.StrEnum):
    """Confluent's alter operations, with Kafka's APPEND and SUBTRACT for LIST keys."""

    SET = "SET"
    DELETE = "DELETE"
    APPEND = "APPEND"
    SUBTRACT = "SUBTRACT"


class AlterConfigItem(RequestBody):
    """One change of a ``configs:alter`` batch (``value`` is ignored by DELETE)."""

    name: ConfigName
    value: ConfigValue | None = None
    operation: ConfigOperationName = ConfigOperationName.SET


class AlterConfigsBody(RequestBody):
    """``configs:alter``: every change applies, or none (one error answers the batch)."""

    data: list[AlterConfigItem] = Field(max_length=MAX_CONFIG_ENTRIES)
    validate_only: StrictBool = False
