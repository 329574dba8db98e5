"""The rules of :mod:`chunkraft.audit.catalog` as DataFrames of violations, one module per area.

Each area's ``rules(ctx)`` maps rule ids to a DataFrame of violation rows (the columns of
:data:`chunkraft.audit.model.VIOLATION_COLUMNS` but ``topic``), or to a string saying why the
rule is skipped (a missing input).
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from chunkraft.audit.catalog import RULES
from chunkraft.audit.spark.context import Context
from chunkraft.audit.spark.rules import coverage, drift, load, producer_ids, replicas, topics

__all__ = ["all_rules"]

RuleFrames = dict[str, DataFrame | str]


def all_rules(ctx: Context) -> RuleFrames:
    """Every catalog rule, in catalog order: its violations, or why it is skipped."""
    found: RuleFrames = {}
    for area in (coverage, replicas, topics, producer_ids, drift, load):
        found.update(area.rules(ctx))
    missing = {rule.id for rule in RULES} ^ set(found)
    assert not missing, f"rules without a Spark implementation (or unknown): {missing}"
    return {rule.id: found[rule.id] for rule in RULES}
