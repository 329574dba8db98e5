"""Kafka's data-plane APIs on a broker: Produce, Fetch, ListOffsets and OffsetForLeaderEpoch.

Each API translates a decoded Kafka request into the ``chunkraft.protocol.data_plane`` message
the broker's ReplicaManager already serves over HTTP, authorizes it as the HTTP routes do, and
translates the answer back: one code path below the two surfaces (log store, ISR, high
watermark, last stable offset, chunks). The handlers run on the broker's main event loop,
where the ReplicaManager lives (see :mod:`chunkraft.kafka.broker_service`).
"""
