"""Kafka's wire protocol served on an asyncio listener: framing, limits, SASL, the handlers."""
