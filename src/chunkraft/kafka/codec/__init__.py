"""Kafka's wire format, generated from the message definitions: ``codegen`` writes one encoder
and one decoder per message and version, ``messages`` finds them by name and handles the
frames' headers."""
