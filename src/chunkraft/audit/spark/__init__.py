"""The Spark engine of the audit: PySpark DataFrames and window functions, no Python UDF.

:func:`chunkraft.audit.spark.runner.run_audit` runs every rule of
:mod:`chunkraft.audit.catalog` over the exports of :class:`chunkraft.audit.inputs.AuditInputs`;
:func:`chunkraft.audit.spark.session.build_session` makes the session (local or a cluster's).
"""
