"""The rule catalog: stable, well-formed ids that both engines and the docs rely on."""

from __future__ import annotations

import re

from chunkraft.audit.catalog import RULES, RULES_BY_ID, Needs, Severity

AREAS = {"chunks", "replicas", "topics", "producer_ids", "drift", "load"}


def test_ids_are_unique_and_named_area_dot_rule() -> None:
    assert len(RULES_BY_ID) == len(RULES)
    for rule in RULES:
        area, _, name = rule.id.partition(".")
        assert area in AREAS, rule.id
        assert re.fullmatch(r"[a-z_]+", name), rule.id


def test_every_audit_area_has_rules() -> None:
    assert {rule.id.partition(".")[0] for rule in RULES} == AREAS


def test_every_rule_says_what_it_checks_with_an_example() -> None:
    for rule in RULES:
        assert rule.title and rule.description.endswith("."), rule.id
        assert rule.example, rule.id


def test_drift_rules_and_block_overlap_need_broker_states_and_time_rules_a_previous() -> None:
    for rule in RULES:
        if rule.id.startswith("drift.") or rule.id == "producer_ids.blocks_overlap":
            assert rule.needs is Needs.BROKER_STATES, rule.id
    needs_previous = {r.id for r in RULES if r.needs is Needs.PREVIOUS}
    assert needs_previous == {"replicas.fenced_broker", "replicas.stuck_move",
                              "producer_ids.grow"}


def test_severities_rank_error_above_warning_above_info() -> None:
    assert Severity.ERROR.rank > Severity.WARNING.rank > Severity.INFO.rank
