"""Which exceptions of the clients are a user's failure (printed, exit 1) rather than a bug.

``chunkraft produce`` and ``chunkraft consume`` print ``Error while executing <word> command :
<message>`` for these and exit 1, as the admin tools do for theirs; anything else is a bug and
keeps its traceback.
"""

from __future__ import annotations

import httpx

from chunkraft.client.broker_client import BrokerClientError
from chunkraft.client.command_config import CommandConfigError
from chunkraft.client.consumer import ConsumerError
from chunkraft.client.consumer_group import GroupError
from chunkraft.client.metadata import MetadataUnavailableError
from chunkraft.client.producer import ProducerError

__all__ = ["CLIENT_ERRORS", "client_error_types", "describe_client_error"]

CLIENT_ERRORS: tuple[type[BaseException], ...] = (
    ProducerError, ConsumerError, GroupError, MetadataUnavailableError, BrokerClientError,
    httpx.HTTPError, TimeoutError, CommandConfigError, ValueError)
"""The exceptions a client raises for a failure the user should read about: the clients' own
errors, refused or failed requests, unreachable brokers, timeouts, bad input (ValueError: a
client refusing an argument, such as an unknown isolation level)."""


def client_error_types() -> tuple[type[BaseException], ...]:
    """:data:`CLIENT_ERRORS` (a function, so that callers import the clients lazily)."""
    return CLIENT_ERRORS


def describe_client_error(error: BaseException) -> str:
    """The message the user reads: the error's own text, or its type's name without one."""
    if isinstance(error, httpx.TransportError):
        return f"cannot reach a broker: {error or type(error).__name__}"
    text = str(error)
    return text if text else type(error).__name__
