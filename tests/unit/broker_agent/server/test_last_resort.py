"""An exception no route handled is answered with a Kafka error body and one log line, never
Starlette's plain-text 500 and a traceback."""

from __future__ import annotations

import logging

import pytest

from chunkraft.broker_agent.server import create_broker_app
from chunkraft.error_codes import Errors
from tests.unit.broker_agent.server.support import RECORDS, AsgiClient, FakeRuntime

PRODUCE = {"acks": 1, "topics": [
    {"name": "orders", "partition_count": 3, "partitions": [{"index": 0, "records": RECORDS}]}]}


@pytest.mark.parametrize(("raised", "expected"), [
    (RuntimeError("a bug"), Errors.UNKNOWN_SERVER_ERROR),
    (OSError(5, "Input/output error"), Errors.KAFKA_STORAGE_ERROR),
])
def test_an_unhandled_exception_is_a_kafka_error_and_one_log_line(
        raised: Exception, expected: Errors, caplog: pytest.LogCaptureFixture) -> None:
    runtime = FakeRuntime()
    runtime.replica_manager.fail_with = raised  # type: ignore[assignment]
    client = AsgiClient(create_broker_app(runtime))
    with caplog.at_level(logging.ERROR):
        answer = client.post("/broker/v1/produce", json=PRODUCE)
    assert answer.status_code == 500
    body = answer.json()
    assert (body["error_code"], body["error_name"]) == (expected.code, expected.name)
    assert type(raised).__name__ in body["message"]
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and errors[0].exc_info is None
    assert "POST /broker/v1/produce failed" in errors[0].getMessage()
    # the app still serves
    runtime.replica_manager.fail_with = None
    assert client.post("/broker/v1/produce", json=PRODUCE).status_code == 200
