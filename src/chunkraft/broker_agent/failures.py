"""Unexpected failures on the data plane as Kafka error codes and one log line each.

A bug or a disk error while serving one partition must not fail the whole request with an
HTTP 500 and a traceback: Kafka answers such a partition UNKNOWN_SERVER_ERROR (or
KAFKA_STORAGE_ERROR for an I/O error, which Kafka's clients retry after a metadata refresh)
and answers every other partition normally. The paths catch per partition and use these.
"""

from __future__ import annotations

import logging

from chunkraft.error_codes import ApiException, Errors

__all__ = ["error_of", "failed"]

log = logging.getLogger("chunkraft.broker_agent.data_plane")


def error_of(error: BaseException) -> Errors:
    """The Kafka error that answers ``error``: its own for an ApiException, KAFKA_STORAGE_ERROR
    for an OSError (the disk), else UNKNOWN_SERVER_ERROR."""
    if isinstance(error, ApiException):
        return error.error
    if isinstance(error, OSError):
        return Errors.KAFKA_STORAGE_ERROR
    return Errors.UNKNOWN_SERVER_ERROR


def failed(what: str, error: BaseException) -> tuple[Errors, str]:
    """Logs one line (no traceback) for an unexpected failure of ``what``; returns the Kafka
    error and the message to answer with."""
    kafka_error = error_of(error)
    message = f"{type(error).__name__}: {error}"
    log.error("%s failed: %s (answered %s)", what, message, kafka_error.name)
    return kafka_error, message
