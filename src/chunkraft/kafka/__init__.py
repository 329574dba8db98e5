"""Kafka's wire protocol: the message definitions, a codec generated from them, and the
listener that serves stock Kafka clients on brokers and controllers."""
