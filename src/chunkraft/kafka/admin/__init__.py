"""Kafka's admin APIs translated to the operations the REST API and the controller RPC run."""
