"""Configuration messages: IncrementalAlterConfigs, AlterConfigs (legacy) and DescribeConfigs.

Field names are Kafka's, in snake_case. A resource is ``(resource_type, resource_name)``: 2 is a
topic (by name), 4 a broker (by id as text, or ``""`` for the cluster default of every broker).
Every bound is in the schema, so an oversized or malformed body fails validation (HTTP 400,
INVALID_REQUEST) before an operation sees it; a well-formed request that is wrong (an unknown
key, a bad value, a topic that does not exist) is answered per resource with a Kafka error code.

Differences from Kafka, on purpose: DescribeConfigs has ``include_all`` (false: only the keys
set on the resource itself, what ``kafka-configs --describe`` shows; true: every key, as
``--describe --all`` and Kafka's own DescribeConfigs answer); a config entry carries
``is_default`` (Kafka's version 0 field) besides ``config_source``; the alter responses carry
no ``throttle_time_ms`` (chunkraft never throttles admin requests).
"""

from __future__ import annotations

import enum
from typing import Annotated

from pydantic import Field, Strict

from chunkraft.protocol.base import Int8, Int16, Int32, Message, StrictBool

__all__ = [
    "MAX_CONFIG_ENTRIES",
    "MAX_CONFIG_RESOURCES",
    "AlterConfigsRequest",
    "AlterConfigsResource",
    "AlterConfigsResourceResponse",
    "AlterConfigsResponse",
    "AlterableConfig",
    "ConfigName",
    "ConfigValue",
    "DescribeConfigsEntry",
    "DescribeConfigsRequest",
    "DescribeConfigsResource",
    "DescribeConfigsResponse",
    "DescribeConfigsResult",
    "DescribeConfigsSynonym",
    "IncrementalAlterConfigsRequest",
    "IncrementalAlterConfigsResource",
    "IncrementalAlterConfigsResponse",
    "IncrementalAlterableConfig",
    "OpType",
]

MAX_CONFIG_RESOURCES = 1000
"""Resources in one request."""
MAX_CONFIG_ENTRIES = 100
"""Config entries (or keys asked for) per resource: more than every key there is."""

ConfigName = Annotated[str, Strict(), Field(min_length=1, max_length=255)]
"""A configuration key's name."""
ConfigValue = Annotated[str, Strict(), Field(max_length=4096)]
"""A configuration value, as text."""
ResourceName = Annotated[str, Strict(), Field(max_length=255)]
"""A topic's name, a broker's id as text, or empty (the cluster default of every broker)."""


class OpType(enum.IntEnum):
    """Kafka's ``AlterConfigOp.OpType``."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


# ------------------------------------------------------------------ IncrementalAlterConfigs


class IncrementalAlterableConfig(Message):
    """One change: SET the key to ``value``, DELETE it (``value`` ignored), APPEND the items of
    ``value`` to a LIST key or SUBTRACT them from it."""

    name: ConfigName
    config_operation: Annotated[int, Strict(), Field(ge=0, le=3)] = OpType.SET
    value: ConfigValue | None = None


class IncrementalAlterConfigsResource(Message):
    resource_type: Int8
    resource_name: ResourceName
    configs: tuple[IncrementalAlterableConfig, ...] = Field(default=(),
                                                             max_length=MAX_CONFIG_ENTRIES)


class IncrementalAlterConfigsRequest(Message):
    """Each resource changes, or fails, on its own (all its keys or none); ``validate_only``
    writes nothing."""

    resources: tuple[IncrementalAlterConfigsResource, ...] = Field(
        max_length=MAX_CONFIG_RESOURCES)
    validate_only: StrictBool = False


class AlterConfigsResourceResponse(Message):
    """The outcome for one resource."""

    error_code: Int16 = 0
    error_message: str | None = None
    resource_type: Int8
    resource_name: str


class IncrementalAlterConfigsResponse(Message):
    """One answer per distinct resource of the request, in request order."""

    responses: tuple[AlterConfigsResourceResponse, ...] = ()


# ------------------------------------------------------------------ AlterConfigs (legacy)


class AlterableConfig(Message):
    """A key and its value (null is refused: legacy AlterConfigs deletes by leaving out)."""

    name: ConfigName
    value: ConfigValue | None = None


class AlterConfigsResource(Message):
    """The resource's dynamic keys become exactly ``configs`` (the others are deleted)."""

    resource_type: Int8
    resource_name: ResourceName
    configs: tuple[AlterableConfig, ...] = Field(default=(), max_length=MAX_CONFIG_ENTRIES)


class AlterConfigsRequest(Message):
    resources: tuple[AlterConfigsResource, ...] = Field(max_length=MAX_CONFIG_RESOURCES)
    validate_only: StrictBool = False


class AlterConfigsResponse(Message):
    """One answer per distinct resource of the request, in request order."""

    responses: tuple[AlterConfigsResourceResponse, ...] = ()


# ------------------------------------------------------------------ DescribeConfigs


class DescribeConfigsResource(Message):
    """A resource to describe; ``configuration_keys`` null: the keys ``include_all`` says."""

    resource_type: Int8
    resource_name: ResourceName
    configuration_keys: tuple[ConfigName, ...] | None = Field(default=None,
                                                             max_length=MAX_CONFIG_ENTRIES)


class DescribeConfigsRequest(Message):
    resources: tuple[DescribeConfigsResource, ...] = Field(max_length=MAX_CONFIG_RESOURCES)
    include_synonyms: StrictBool = False
    include_documentation: StrictBool = False
    include_all: StrictBool = False
    """False: only the keys set on the resource itself; true: every key of its type."""


class DescribeConfigsSynonym(Message):
    """A level that holds a value for the key: its name there, the value and its source."""

    name: str
    value: str | None
    source: Int8


class DescribeConfigsEntry(Message):
    """One key: its effective value, Kafka's ConfigSource code (1 topic, 2 broker, 3 cluster
    default, 4 static, 5 default) and Kafka's ConfigType code (1 BOOLEAN, 2 STRING, 3 INT,
    5 LONG, 7 LIST)."""

    name: str
    value: str | None
    read_only: StrictBool = False
    is_default: StrictBool = False
    config_source: Int8
    is_sensitive: StrictBool = False
    synonyms: tuple[DescribeConfigsSynonym, ...] = ()
    config_type: Int8 = 0
    documentation: str | None = None


class DescribeConfigsResult(Message):
    error_code: Int16 = 0
    error_message: str | None = None
    resource_type: Int8
    resource_name: str
    configs: tuple[DescribeConfigsEntry, ...] = ()


class DescribeConfigsResponse(Message):
    """One result per resource of the request, in request order."""

    throttle_time_ms: Int32 = 0
    results: tuple[DescribeConfigsResult, ...] = ()
