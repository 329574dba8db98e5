"""The rules of :mod:`chunkraft.audit.catalog` as DataFrames of violations.

:mod:`~chunkraft.audit.spark.rules.sequence` yields one frame for every rule that reads a row of
the assignment or compares it along its partition; each other area's ``rules(ctx)`` maps rule
ids to a DataFrame of violation rows (the columns of
:data:`chunkraft.audit.model.VIOLATION_COLUMNS` but ``topic``), or to a string saying why the
rule is skipped (a missing input).
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from chunkraft.audit.catalog import RULES
from chunkraft.audit.spark.context import Context
from chunkraft.audit.spark.rules import (
    configs,
    drift,
    load,
    producer_ids,
    replicas,
    sequence,
    topics,
)

__all__ = ["all_rules"]


def all_rules(ctx: Context) -> tuple[DataFrame, list[DataFrame], dict[str, str]]:
    """Every catalog rule: the sequence rules' violations, the other rules' violation frames,
    and the skipped rules with why (no frame has ``topic`` yet)."""
    others: list[DataFrame] = []
    skipped: dict[str, str] = {}
    covered = set(sequence.RULE_IDS)
    for area in (replicas, topics, producer_ids, drift, configs, load):
        for rule_id, found in area.rules(ctx).items():
            covered.add(rule_id)
            if isinstance(found, str):
                skipped[rule_id] = found
            else:
                others.append(found)
    missing = {rule.id for rule in RULES} ^ covered
    assert not missing, f"rules without a Spark implementation (or unknown): {missing}"
    return sequence.violations(ctx), others, skipped
