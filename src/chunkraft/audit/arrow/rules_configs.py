"""drift.config: the topic configuration brokers apply against the metadata's.

The brokers' ``local_configs`` rows of topics the snapshot has (by name: the smallest topic id
of that name) are looked up in the metadata's three levels
(:mod:`chunkraft.audit.config_expectations`); a row whose value the metadata decides and that
differs from it is a violation, named by topic and broker.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from chunkraft.audit.arrow.columns import array
from chunkraft.audit.arrow.found import Found, found
from chunkraft.audit.arrow.read import BrokerStates, Snapshot, read_table
from chunkraft.audit.config_expectations import (
    BROKER_SOURCE,
    DEFAULT_SOURCE,
    TOPIC_SOURCE,
    expectations,
)

__all__ = ["config_rules"]

RULE = "drift.config"
_CONFIG_COLUMNS = ("resource_type", "resource_name", "name", "value")


def config_rules(snap: Snapshot, states: BrokerStates | None) -> list[Found]:
    if states is None:
        return [found(RULE, 0, str)]
    raw = read_table(snap.export, "configs", _CONFIG_COLUMNS)
    wanted = expectations(zip(*(raw[c].to_pylist() for c in _CONFIG_COLUMNS), strict=True))
    t = snap.topics
    by_name = t.group_by("name", use_threads=False).aggregate([("topic_id", "min")])
    local = states.configs.select(["broker_id", "topic", "name", "value", "source"])
    local = local.join(pa.table({"topic": array(by_name["name"]),
                                 "topic_id": array(by_name["topic_id_min"])}),
                       "topic", join_type="inner", use_threads=False)
    levels = (
        (pa.table({"topic": pa.array([r[0] for r in wanted.topic], pa.string()),
                   "name": pa.array([r[1] for r in wanted.topic], pa.string()),
                   "v_topic": pa.array([r[2] for r in wanted.topic], pa.string())}),
         ["topic", "name"]),
        (pa.table({"broker_id": pa.array([r[0] for r in wanted.broker], pa.int32()),
                   "name": pa.array([r[1] for r in wanted.broker], pa.string()),
                   "v_broker": pa.array([r[2] for r in wanted.broker], pa.string())}),
         ["broker_id", "name"]),
        (pa.table({"name": pa.array([r[0] for r in wanted.default], pa.string()),
                   "v_default": pa.array([r[1] for r in wanted.default], pa.string())}),
         ["name"]),
    )
    for level, keys in levels:
        local = local.join(level, keys, join_type="left outer", use_threads=False)
    v_topic, v_broker, v_default = (array(local[c]) for c in ("v_topic", "v_broker",
                                                               "v_default"))
    expected = pc.coalesce(v_topic, v_broker, v_default)
    source = pc.if_else(pc.is_valid(v_topic), TOPIC_SOURCE,
                        pc.if_else(pc.is_valid(v_broker), BROKER_SOURCE, DEFAULT_SOURCE))
    hit = pc.indices_nonzero(pc.fill_null(pc.not_equal(array(local["value"]), expected),
                                          False))
    return [found(RULE, len(hit), _detail, topic_id=array(local["topic_id"]).take(hit),
                  broker_id=array(local["broker_id"]).take(hit),
                  name=array(local["name"]).take(hit), value=array(local["value"]).take(hit),
                  source=array(local["source"]).take(hit), expected=expected.take(hit),
                  expected_source=source.take(hit))]


def _detail(r: dict[str, Any]) -> str:
    return (f"broker {r['broker_id']} applies {r['name']}={r['value']} ({r['source']}) to "
            f"{r['topic']} but the metadata says {r['expected']} ({r['expected_source']})")
