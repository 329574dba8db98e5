"""The one rule for a registered broker's URL (chunkraft.broker_endpoints)."""

from __future__ import annotations

from chunkraft.broker_endpoints import broker_url
from chunkraft.records import BrokerEndpoint, RegisterBrokerRecord


def registration(*endpoints: BrokerEndpoint) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(broker_id=1, end_points=endpoints)


def test_the_broker_url_prefers_a_listener_named_http_or_https() -> None:
    kafka = BrokerEndpoint(name="PLAINTEXT", host="b1", port=9092)
    assert broker_url(registration(kafka)) == "http://b1:9092"
    assert broker_url(registration(kafka, BrokerEndpoint(name="http", host="b1", port=8080))
                      ) == "http://b1:8080"
    assert broker_url(registration(kafka, BrokerEndpoint(name="HTTPS", host="::1", port=8443))
                      ) == "https://[::1]:8443"
    assert broker_url(registration()) is None
