"""The controller's Raft log: one replicated entry point feeding a deterministic state machine.

``node`` builds the one SyncObj (``transport_guard``, the only other module that imports
pysyncobj, bounds its connections); ``local`` is an in-memory stand-in with the same interface
(:class:`~chunkraft.controller.raft.log.RaftLog`) for tests of the layers above.
"""

from chunkraft.controller.raft.entry import ANY_OFFSET, ProposedBatch, decode_entry, encode_entry
from chunkraft.controller.raft.log import ProposalError, QuorumStatus, RaftLog, VoterStatus
from chunkraft.controller.raft.state_machine import (
    NO_KEY,
    BatchOutcome,
    BatchStatus,
    CommittedBatch,
    MetadataStateMachine,
    TailRead,
)

__all__ = [
    "ANY_OFFSET",
    "NO_KEY",
    "BatchOutcome",
    "BatchStatus",
    "CommittedBatch",
    "MetadataStateMachine",
    "ProposalError",
    "ProposedBatch",
    "QuorumStatus",
    "RaftLog",
    "TailRead",
    "VoterStatus",
    "decode_entry",
    "encode_entry",
]
