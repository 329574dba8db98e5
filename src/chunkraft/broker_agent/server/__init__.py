"""The broker agent's HTTP data plane: :func:`create_broker_app` over a broker runtime."""

from chunkraft.broker_agent.server.app import broker_status, create_broker_app
from chunkraft.broker_agent.server.ports import BrokerRuntimeLike

__all__ = ["BrokerRuntimeLike", "broker_status", "create_broker_app"]
