"""Configurations as metadata (KRaft's ConfigRecord): one key of one resource per record."""

from __future__ import annotations

from typing import Annotated, NamedTuple

from chunkraft.records.schema import INT8, STRING, metadata_record

__all__ = ["BROKER_RESOURCE", "TOPIC_RESOURCE", "ConfigRecord"]

TOPIC_RESOURCE = 2
"""Kafka's ConfigResource.Type.TOPIC: the resource name is the topic's name."""
BROKER_RESOURCE = 4
"""Kafka's ConfigResource.Type.BROKER: the name is the broker id, or empty for the cluster-wide
default of every broker."""


@metadata_record(4, "0", "A configuration key of a topic or a broker was set or deleted.")
class ConfigRecord(NamedTuple):
    """Sets ``name`` of the resource to ``value``; a null value deletes the key (the value then
    comes from the next level: broker, cluster default, static default)."""

    resource_type: Annotated[int, INT8("0+", "The resource type: 2 topic, 4 broker.")] = 0
    resource_name: Annotated[
        str, STRING("0+", "The topic's name, the broker's id, or empty for the cluster "
                    "default.")] = ""
    name: Annotated[str, STRING("0+", "The configuration key.")] = ""
    value: Annotated[
        str | None, STRING("0+", "The value, or null to delete the key.", nullable="0+")
    ] = None
