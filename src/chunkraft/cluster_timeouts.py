"""How long a node of the cluster waits for another to accept a connection.

Inside a cluster every peer is on the same network: a TCP connection is set up in a round trip
or it is not coming (a host cut off drops the SYN, and the next try comes only after a second).
So brokers and controllers give a connection attempt :data:`CONNECT_TIMEOUT_S`, whatever the
request's own timeout: a cut-off controller costs a broker's heartbeat two seconds before it
tries the next controller, not the whole heartbeat's timeout (which outlived the broker's session
in the multi-host test). Clients outside the cluster use Kafka's
``socket.connection.setup.timeout.ms`` (10 s, ``chunkraft.client.admin``).
"""

from __future__ import annotations

import httpx

__all__ = ["CONNECT_TIMEOUT_S", "cluster_timeout"]

CONNECT_TIMEOUT_S = 2.0


def cluster_timeout(total: float) -> httpx.Timeout:
    """``total`` seconds for each read, write and pool wait, and at most
    :data:`CONNECT_TIMEOUT_S` to connect."""
    return httpx.Timeout(total, connect=min(total, CONNECT_TIMEOUT_S))
