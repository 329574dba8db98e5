"""The broker agent: follows the metadata stream, keeps its own image, and makes chunks real.

A ReplicaManager applies each metadata delta through ``compute_local_changes`` to a local log
store; a data plane over HTTP serves produce, fetch, list offsets, OffsetsForLeaderEpoch and
chunk rolls; followers replicate from leaders and chunk replicas copy from in-sync replicas.
"""
