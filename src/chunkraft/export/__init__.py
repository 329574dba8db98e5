"""Columnar export of metadata: controller snapshots and broker state as Parquet tables.

The layout is described in ``docs/export.md``; schemas come from the record declarations
(:mod:`chunkraft.export.tables`); directories are written atomically
(:mod:`chunkraft.export.directory`) with a manifest (:mod:`chunkraft.export.manifest`).
"""
