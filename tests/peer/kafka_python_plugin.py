"""A pytest plugin for kafka-python's integration tests run against chunkraft (``-p``).

Their fixture takes an external broker from ``KAFKA_URI=PLAINTEXT://host:port`` and always
connects with the URI's scheme ignored, as PLAINTEXT; chunkraft's Kafka listeners are
SASL_PLAINTEXT. The fixture has its own SASL settings (``transport``, ``sasl_mechanism``,
``broker_user`` / ``broker_password``, given to every client it builds), set here for the
external broker: SASL/PLAIN as ``CHUNKRAFT_PEER_USERNAME`` with ``CHUNKRAFT_PEER_PASSWORD``
(the principal's bearer token). Nothing else of the suite is changed.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

USERNAME = "CHUNKRAFT_PEER_USERNAME"
PASSWORD = "CHUNKRAFT_PEER_PASSWORD"


def pytest_configure(config: pytest.Config) -> None:
    from test.integration.fixtures import KafkaFixture  # kafka-python's, on the run's path

    plain = KafkaFixture.instance.__func__  # type: ignore[attr-defined]

    def instance(cls: type[Any], broker_id: int, **params: Any) -> Any:
        if params.get("external"):
            params.update(transport="SASL_PLAINTEXT", sasl_mechanism="PLAIN")
        return plain(cls, broker_id, **params)

    KafkaFixture.instance = classmethod(instance)
    KafkaFixture.broker_user = os.environ.get(USERNAME, "admin")
    KafkaFixture.broker_password = os.environ[PASSWORD]
