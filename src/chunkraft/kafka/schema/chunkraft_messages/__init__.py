"""chunkraft's own Kafka messages (KIP-1114), as JSON definitions in Kafka's format: package
data read by ``chunkraft.kafka.schema.specs``."""
