"""Finding and asking a partition's leader broker for the admin form of CreateChunks
(chunkraft.api.leader_cuts): every reason not to ask."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from chunkraft.api.leader_cuts import CutRequest, ask_leaders
from chunkraft.error_codes import Errors
from chunkraft.records import BrokerEndpoint, RegisterBrokerRecord
from tests.unit.controller.operations.cluster_builders import (
    apply,
    cluster,
    partition,
    with_topic,
)

LEADER_NOT_AVAILABLE = Errors.LEADER_NOT_AVAILABLE.code


def registration(*endpoints: BrokerEndpoint) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(broker_id=1, end_points=endpoints)


def test_no_leader_a_fenced_or_unregistered_one_or_no_listener_is_leader_not_available(
) -> None:
    image = cluster(1, 2, 3, fenced=(3,))
    image = with_topic(image, partition(0, (1, 2), leader=-1, isr=(1, 2)),
                       partition(1, (3, 1)), partition(2, (2, 1), leader=9, isr=(2, 1)),
                       partition(3, (2, 1)))
    assert not image.brokers.get(2).end_points  # the builders register no listener
    cuts = [CutRequest("orders", p, (1, 2), -1) for p in (0, 1, 2, 3)]
    cuts.append(CutRequest("orders", 7, (1, 2), -1))
    cuts.append(CutRequest("nope", 0, (1, 2), -1))
    outcomes = asyncio.run(ask_leaders(image, cuts))
    assert outcomes[0] == (LEADER_NOT_AVAILABLE, "orders-0 has no leader")
    assert outcomes[1] == (LEADER_NOT_AVAILABLE, "the leader of orders-1, broker 3, is fenced")
    assert outcomes[2] == (LEADER_NOT_AVAILABLE,
                           "the leader of orders-2, broker 9, is not registered")
    assert outcomes[3] == (LEADER_NOT_AVAILABLE,
                           "the leader of orders-3, broker 2, registered no listener")
    assert [code for code, _ in outcomes[4:]] == [Errors.UNKNOWN_TOPIC_OR_PARTITION.code] * 2



def test_the_callers_authorization_goes_to_the_broker_with_the_question() -> None:
    seen: list[tuple[str, str | None, dict[str, Any]]] = []

    class Broker(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            seen.append((self.path, self.headers.get("authorization"), body))
            answer = json.dumps({"topics": [{"name": "orders", "partitions": [
                {"partition_index": 0, "error_code": 0}]}]}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Broker)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        listener = BrokerEndpoint(name="HTTP", host="127.0.0.1", port=server.server_address[1])
        image = apply(cluster(2), RegisterBrokerRecord(broker_id=1, broker_epoch=50,
                                                       end_points=(listener,), fenced=False))
        image = with_topic(image, partition(0, (1,)))
        outcomes = asyncio.run(ask_leaders(image, [CutRequest("orders", 0, (2,), 2)],
                                           authorization="Bearer crt_admin"))
    finally:
        server.shutdown()
        server.server_close()
    assert outcomes == [(0, None)]
    assert seen == [("/broker/v1/create-chunks", "Bearer crt_admin", {"topics": [
        {"name": "orders", "partitions": [
            {"partition_index": 0, "broker_ids": [2], "leader": 2}]}]})]
