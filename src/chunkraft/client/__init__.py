"""Clients of chunkraft, as Kafka users know them: a Producer, a Consumer and an AdminClient.

- :class:`Producer` sends records to the brokers' data plane (acks=all and idempotent by
  default; transactions), :class:`Consumer` reads them chunk by chunk (assigned partitions,
  key ranges, or a group subscription), both given broker URLs;
- :class:`AdminClient` calls the controllers' admin REST API (topics, partitions, chunks,
  ACLs, configurations), given controller URLs;
- :class:`CommandConfig` is what they authenticate with (a bearer token, TLS files), read from
  a command-config file or ``CHUNKRAFT_TOKEN``.

Against a running cluster (``chunkraft cluster`` prints its URLs and writes the admin's
command-config file)::

    from chunkraft.client import CommandConfig, Consumer, Producer

    token = CommandConfig.load("admin.properties").token
    with Producer(["http://127.0.0.1:9092"], token=token) as producer:
        metadata = producer.send("orders", b"hello", key=b"k1").get(timeout=30)
    consumer = Consumer(["http://127.0.0.1:9092"], token=token, auto_offset_reset="earliest")
    consumer.assign([("orders", metadata.partition)])
    records = consumer.poll(1000)   # ConsumerRecord(topic, partition, offset, ..., broker_id)
    consumer.close()

What needs no cluster, checked by the test suite (``tests/unit/client/test_package.py`` runs
this docstring):

>>> from chunkraft.client import AdminClient, CommandConfig, Consumer, Producer
>>> from chunkraft.client import partition_for_key, split_bootstrap
>>> partition_for_key(b"order-17", 6)  # Kafka's murmur2 partition of a key, byte for byte
3
>>> split_bootstrap("http://127.0.0.1:9091, http://127.0.0.1:9092/")
['http://127.0.0.1:9091', 'http://127.0.0.1:9092']
>>> CommandConfig.load(None, environment={"CHUNKRAFT_TOKEN": "crt_example"}).token
'crt_example'

The modules behind these names (``producer``, ``consumer``, ``admin``...) stay importable;
the lower layers (``broker_client``, ``controller_rpc``) are for tools and tests.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chunkraft.client.admin import AdminClient, AdminError, split_bootstrap
    from chunkraft.client.command_config import CommandConfig, CommandConfigError
    from chunkraft.client.consumer import (
        Consumer,
        ConsumerError,
        ConsumerRecord,
        TopicPartition,
    )
    from chunkraft.client.partitioner import partition_for_key
    from chunkraft.client.producer import (
        FutureRecordMetadata,
        Producer,
        ProducerError,
        ProducerFencedError,
        RecordMetadata,
        TransactionError,
    )

_HOMES = {
    "AdminClient": "admin", "AdminError": "admin", "split_bootstrap": "admin",
    "CommandConfig": "command_config", "CommandConfigError": "command_config",
    "Consumer": "consumer", "ConsumerError": "consumer", "ConsumerRecord": "consumer",
    "TopicPartition": "consumer", "partition_for_key": "partitioner",
    "FutureRecordMetadata": "producer", "Producer": "producer", "ProducerError": "producer",
    "ProducerFencedError": "producer", "RecordMetadata": "producer",
    "TransactionError": "producer",
}
"""Each public name and its module, imported on first use: a command that only needs the
admin client does not pay for importing the producer and the consumer."""


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])


__all__ = [
    "AdminClient",
    "AdminError",
    "CommandConfig",
    "CommandConfigError",
    "Consumer",
    "ConsumerError",
    "ConsumerRecord",
    "FutureRecordMetadata",
    "Producer",
    "ProducerError",
    "ProducerFencedError",
    "RecordMetadata",
    "TopicPartition",
    "TransactionError",
    "partition_for_key",
    "split_bootstrap",
]
