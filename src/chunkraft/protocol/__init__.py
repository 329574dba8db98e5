"""Request and response messages of the controller's RPC surface, shaped like Kafka's.

Each message mirrors the Kafka protocol message of the same name (CreatePartitionsRequest,
BrokerHeartbeatResponse, ...), with Kafka's field names in snake_case; chunkraft's own messages
(CreateChunks, AlterChunkAssignments, the metadata stream) follow the same style. The models are
pydantic, so the HTTP layer validates bodies with them, and operations take and return them.
"""
