"""Whole-request errors (chunkraft.api.errors): statuses, the error body, validation messages,
and the handlers installed on the app."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import ValidationError

from chunkraft.api.errors import error_response, http_status_of, validation_message
from chunkraft.error_codes import Errors
from chunkraft.protocol.topics import CreateTopicsRequest
from tests.unit.api.support import V1, running_node


@pytest.mark.parametrize(("error", "status"), [
    (Errors.INVALID_REQUEST, 400),
    (Errors.CLUSTER_AUTHORIZATION_FAILED, 403),
    (Errors.UNKNOWN_TOPIC_OR_PARTITION, 404),
    (Errors.MESSAGE_TOO_LARGE, 413),
    (Errors.NOT_CONTROLLER, 421),
    (Errors.REQUEST_TIMED_OUT, 503),
    (Errors.METADATA_LOG_CORRUPT, 500),
    (Errors.UNKNOWN_SERVER_ERROR, 500),
    (Errors.INVALID_PARTITIONS, 400),  # anything else that fails a whole request
])
def test_http_status_of(error: Errors, status: int) -> None:
    assert http_status_of(error) == status


def test_the_error_body_has_code_name_and_message() -> None:
    response = error_response(Errors.NOT_CONTROLLER, "ask node 2")
    assert response.status_code == 421
    assert json.loads(bytes(response.body)) == {"error_code": 41, "error_name": "NOT_CONTROLLER",
                                         "message": "ask node 2"}
    default = error_response(Errors.REQUEST_TIMED_OUT, status=504)
    assert default.status_code == 504
    assert json.loads(bytes(default.body))["message"] == "The request timed out."


def test_validation_message_names_every_field() -> None:
    with pytest.raises(ValidationError) as caught:
        CreateTopicsRequest.model_validate({"topics": [{"name": 1, "num_partitions": "x"}],
                                            "validate_only": "maybe"})
    message = validation_message(caught.value)
    assert message.startswith("invalid request: ")
    for field in ("topics.0.name", "topics.0.num_partitions", "validate_only"):
        assert f"{field}: " in message


def test_a_node_that_stopped_applying_its_log_answers_500_metadata_log_corrupt() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            outcome = node.raft.state_machine.apply_entry(b"not an entry")  # a corrupt entry
            assert outcome[0].message
            answer = await node.post("create-topics", {"topics": [{"name": "x"}]})
            assert answer.status_code == 500
            body = answer.json()
            assert body["error_code"] == Errors.METADATA_LOG_CORRUPT.code
            assert body["error_name"] == "METADATA_LOG_CORRUPT"
            assert "corrupt" in body["message"]

    asyncio.run(scenario())


def test_an_invalid_query_parameter_is_400_with_the_body_shape() -> None:
    async def scenario() -> None:
        async with running_node() as node:
            answer = await node.http.post(f"{V1}/metadata", params={"min_offset": "soon"},
                                          json={})
            assert answer.status_code == 400
            body = answer.json()
            assert set(body) == {"error_code", "error_name", "message"}
            assert body["error_code"] == Errors.INVALID_REQUEST.code
            assert "query.min_offset" in body["message"]

    asyncio.run(scenario())
