"""The local cluster: a quorum, brokers and demos as real processes on 127.0.0.1, behind
``chunkraft cluster`` and ``chunkraft demo`` (the deployment artifacts are in ``deploy/``)."""
