"""Every error code chunkraft answers with, in one place.

Kafka's numeric codes and names are kept as Kafka defines them (``Errors.java``), so a Kafka
operator reads them as usual. Codes chunkraft adds for partition chunks and partition expansion
start at 10000 and can never clash with Kafka's.

Batch operations answer one code per topic, partition or chunk inside a successful response, as
the Kafka protocol does; :class:`ApiException` carries a code out of a layer that cannot answer
per item.
"""

from __future__ import annotations

import enum

__all__ = ["ApiException", "Errors"]


class Errors(enum.Enum):
    """A Kafka error: ``code`` (on the wire), ``retriable`` and a default message.

    The enum name is the error's Kafka name (``Errors.INVALID_PARTITIONS.name``).
    """

    UNKNOWN_SERVER_ERROR = (-1, False, "The server experienced an unexpected error when processing the request.")
    NONE = (0, False, "")
    OFFSET_OUT_OF_RANGE = (1, False, "The requested offset is not within the range of offsets maintained by the server.")
    CORRUPT_MESSAGE = (2, True, "This message has failed its CRC checksum, exceeds the valid size, has a null key for a compacted topic, or is otherwise corrupt.")
    UNKNOWN_TOPIC_OR_PARTITION = (3, True, "This server does not host this topic-partition.")
    INVALID_FETCH_SIZE = (4, False, "The requested fetch size is invalid.")
    LEADER_NOT_AVAILABLE = (5, True, "There is no leader for this topic-partition as we are in the middle of a leadership election.")
    NOT_LEADER_OR_FOLLOWER = (6, True, "For requests intended only for the leader, this error indicates that the broker is not the current leader. For requests intended for any replica, this error indicates that the broker is not a replica of the topic partition.")
    REQUEST_TIMED_OUT = (7, True, "The request timed out.")
    BROKER_NOT_AVAILABLE = (8, False, "The broker is not available.")
    REPLICA_NOT_AVAILABLE = (9, True, "The replica is not available for the requested topic-partition.")
    MESSAGE_TOO_LARGE = (10, False, "The request included a message larger than the max message size the server will accept.")
    NETWORK_EXCEPTION = (13, True, "The server disconnected before a response was received.")
    COORDINATOR_LOAD_IN_PROGRESS = (14, True, "The coordinator is loading and hence can't process requests.")
    COORDINATOR_NOT_AVAILABLE = (15, True, "The coordinator is not available.")
    NOT_COORDINATOR = (16, True, "This is not the correct coordinator.")
    INVALID_TOPIC_EXCEPTION = (17, False, "The request attempted to perform an operation on an invalid topic.")
    RECORD_LIST_TOO_LARGE = (18, False, "The request included message batch larger than the configured segment size on the server.")
    NOT_ENOUGH_REPLICAS = (19, True, "Messages are rejected since there are fewer in-sync replicas than required.")
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = (20, True, "Messages are written to the log, but to fewer in-sync replicas than required.")
    INVALID_REQUIRED_ACKS = (21, False, "Produce request specified an invalid value for required acks.")
    ILLEGAL_GENERATION = (22, False, "Specified group generation id is not valid.")
    INCONSISTENT_GROUP_PROTOCOL = (23, False, "The group member's supported protocols are incompatible with those of existing members or first group member tried to join with empty protocol type or empty protocol list.")
    INVALID_GROUP_ID = (24, False, "The configured groupId is invalid.")
    UNKNOWN_MEMBER_ID = (25, False, "The coordinator is not aware of this member.")
    INVALID_SESSION_TIMEOUT = (26, False, "The session timeout is not within the range allowed by the broker (as configured by group.min.session.timeout.ms and group.max.session.timeout.ms).")
    REBALANCE_IN_PROGRESS = (27, False, "The group is rebalancing, so a rejoin is needed.")
    TOPIC_AUTHORIZATION_FAILED = (29, False, "Topic authorization failed.")
    GROUP_AUTHORIZATION_FAILED = (30, False, "Group authorization failed.")
    CLUSTER_AUTHORIZATION_FAILED = (31, False, "Cluster authorization failed.")
    INVALID_TIMESTAMP = (32, False, "The timestamp of the message is out of acceptable range.")
    UNSUPPORTED_SASL_MECHANISM = (33, False, "The broker does not support the requested SASL mechanism.")
    ILLEGAL_SASL_STATE = (34, False, "Request is not valid given the current SASL state.")
    UNSUPPORTED_VERSION = (35, False, "The version of API is not supported.")
    TOPIC_ALREADY_EXISTS = (36, False, "Topic with this name already exists.")
    INVALID_PARTITIONS = (37, False, "Number of partitions is below 1.")
    INVALID_REPLICATION_FACTOR = (38, False, "Replication factor is below 1 or larger than the number of available brokers.")
    INVALID_REPLICA_ASSIGNMENT = (39, False, "Replica assignment is invalid.")
    INVALID_CONFIG = (40, False, "Configuration is invalid.")
    NOT_CONTROLLER = (41, True, "This is not the correct controller for this cluster.")
    INVALID_REQUEST = (42, False, "This most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker. See the broker logs for more details.")
    POLICY_VIOLATION = (44, False, "Request parameters do not satisfy the configured policy.")
    OUT_OF_ORDER_SEQUENCE_NUMBER = (45, False, "The broker received an out of order sequence number.")
    DUPLICATE_SEQUENCE_NUMBER = (46, False, "The broker received a duplicate sequence number.")
    INVALID_PRODUCER_EPOCH = (47, False, "Producer attempted to produce with an old epoch.")
    INVALID_TXN_STATE = (48, False, "The producer attempted a transactional operation in an invalid state.")
    INVALID_PRODUCER_ID_MAPPING = (49, False, "The producer attempted to use a producer id which is not currently assigned to its transactional id.")
    INVALID_TRANSACTION_TIMEOUT = (50, False, "The transaction timeout is larger than the maximum value allowed by the broker (as configured by transaction.max.timeout.ms).")
    CONCURRENT_TRANSACTIONS = (51, True, "The producer attempted to update a transaction while another concurrent operation on the same transaction was ongoing.")
    TRANSACTION_COORDINATOR_FENCED = (52, False, "Indicates that the transaction coordinator sending a WriteTxnMarker is no longer the current coordinator for a given producer.")
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = (53, False, "Transactional Id authorization failed.")
    SECURITY_DISABLED = (54, False, "Security features are disabled.")
    OPERATION_NOT_ATTEMPTED = (55, False, "The broker did not attempt to execute this operation. This may happen for batched RPCs where some operations in the batch failed, causing the broker to respond without trying the rest.")
    KAFKA_STORAGE_ERROR = (56, True, "Disk error when trying to access log file on the disk.")
    SASL_AUTHENTICATION_FAILED = (58, False, "SASL Authentication failed.")
    UNKNOWN_PRODUCER_ID = (59, False, "This exception is raised by the broker if it could not locate the producer metadata associated with the producerId in question.")
    REASSIGNMENT_IN_PROGRESS = (60, False, "A partition reassignment is in progress.")
    NON_EMPTY_GROUP = (68, False, "The group is not empty.")
    GROUP_ID_NOT_FOUND = (69, False, "The group id does not exist.")
    FETCH_SESSION_ID_NOT_FOUND = (70, True, "The fetch session ID was not found.")
    INVALID_FETCH_SESSION_EPOCH = (71, True, "The fetch session epoch is invalid.")
    TOPIC_DELETION_DISABLED = (73, False, "Topic deletion is disabled.")
    FENCED_LEADER_EPOCH = (74, True, "The leader epoch in the request is older than the epoch on the broker.")
    UNKNOWN_LEADER_EPOCH = (75, True, "The leader epoch in the request is newer than the epoch on the broker.")
    UNSUPPORTED_COMPRESSION_TYPE = (76, False, "The requesting client does not support the compression type of given partition.")
    STALE_BROKER_EPOCH = (77, False, "Broker epoch has changed.")
    OFFSET_NOT_AVAILABLE = (78, True, "The leader high watermark has not caught up from a recent leader election so the offsets cannot be guaranteed to be monotonically increasing.")
    MEMBER_ID_REQUIRED = (79, False, "The group member needs to have a valid member id before actually entering a consumer group.")
    NO_REASSIGNMENT_IN_PROGRESS = (85, False, "No partition reassignment is in progress.")
    INVALID_RECORD = (87, False, "This record has failed the validation on broker and hence will be rejected.")
    UNSTABLE_OFFSET_COMMIT = (88, True, "There are unstable offsets that need to be cleared.")
    PRODUCER_FENCED = (90, False, "There is a newer producer with the same transactionalId which fences the current one.")
    INVALID_UPDATE_VERSION = (95, False, "The given update version was invalid.")
    UNKNOWN_TOPIC_ID = (100, True, "This server does not host this topic ID.")
    DUPLICATE_BROKER_REGISTRATION = (101, False, "This broker ID is already in use.")
    BROKER_ID_NOT_REGISTERED = (102, False, "The given broker ID was not registered.")
    INCONSISTENT_TOPIC_ID = (103, True, "The log's topic ID did not match the topic ID in the request.")
    INCONSISTENT_CLUSTER_ID = (104, False, "The clusterId in the request does not match that found on the server.")
    TRANSACTIONAL_ID_NOT_FOUND = (105, False, "The transactionalId could not be found.")
    INELIGIBLE_REPLICA = (107, False, "The new ISR contains at least one ineligible replica.")
    NEW_LEADER_ELECTED = (108, False, "The AlterPartition request successfully updated the partition state but the leader has changed.")
    MISMATCHED_ENDPOINT_TYPE = (114, False, "The request was sent to an endpoint of the wrong type.")
    UNSUPPORTED_ENDPOINT_TYPE = (115, False, "This endpoint type is not supported yet.")
    DUPLICATE_VOTER = (120, False, "The voter is already part of the set of voters.")
    VOTER_NOT_FOUND = (121, False, "The voter is not part of the set of voters.")

    # chunkraft's own codes: partition chunks (KIP-1114), expansion (KIP-253), the metadata log.
    INVALID_PARTITION_COUNT = (10000, True, "The partition count in the request does not match the topic's partition count on the broker; refresh metadata and retry.")
    UNKNOWN_CHUNK = (10001, False, "The partition has no inactive chunk that starts at this offset.")
    FENCED_CHUNK_EPOCH = (10002, False, "The chunk epoch in the request does not match the chunk's current epoch.")
    INVALID_CHUNK_OFFSETS = (10003, False, "The chunk offsets are not consistent with the partition's active chunk.")
    SNAPSHOT_NEEDED = (10004, False, "The requested offset is older than the retained metadata log; load the newest snapshot and continue from its offset.")
    OPERATION_OUTCOME_UNKNOWN = (10005, True, "The controller lost leadership or timed out before the operation's outcome was known; retry with the same idempotency key.")
    METADATA_LOG_CORRUPT = (10006, False, "The controller found a corrupt entry in its metadata log and stopped applying it.")

    def __init__(self, code: int, retriable: bool, message: str) -> None:
        self.code = code
        self.retriable = retriable
        self.message = message

    @classmethod
    def for_code(cls, code: int) -> Errors:
        """The error with this wire code; UNKNOWN_SERVER_ERROR for a code we do not know."""
        return _BY_CODE.get(code, cls.UNKNOWN_SERVER_ERROR)

    def exception(self, message: str | None = None) -> ApiException:
        return ApiException(self, message)


_BY_CODE: dict[int, Errors] = {error.code: error for error in Errors}


class ApiException(Exception):
    """A Kafka error raised out of a layer that answers for the whole request or one item.

    ``message`` defaults to the error's own; the codes stay stable, the messages may say more.
    """

    def __init__(self, error: Errors, message: str | None = None) -> None:
        self.error = error
        self.message = message if message is not None else error.message
        super().__init__(f"{error.name}: {self.message}")

    @property
    def code(self) -> int:
        return self.error.code
