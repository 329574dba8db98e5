"""The local log store: a directory per partition replica of segments, indexes and checkpoints."""
