"""Kafka's coordinator APIs on a broker: FindCoordinator and the classic consumer-group
protocol, over the group coordinator the broker already runs."""
