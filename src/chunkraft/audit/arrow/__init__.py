"""The audit's single-process engine on pyarrow: the catalog's rules without a JVM.

:func:`run_audit` takes the same inputs and settings as the Spark engine and returns the same
report (counts, samples, load summary, timelines, diff); ``engine`` is ``"arrow"``.
"""

from chunkraft.audit.arrow.runner import run_audit

__all__ = ["run_audit"]
