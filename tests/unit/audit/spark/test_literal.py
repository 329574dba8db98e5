"""literal_frame: driver-side rows as a constant frame of exactly the declared schema."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from chunkraft.audit.spark.literal import literal_frame

SCHEMA = "topic_id string, topic string, known boolean, topic_rf int, offsets bigint"


def test_rows_come_back_with_their_types_and_nulls(spark: SparkSession) -> None:
    rows = [("id-a", "alpha", True, 3, 2**40), ("id-b", None, None, None, None),
            ("id-\"c\"\n", "é ✓", False, -1, -(2**62))]
    frame = literal_frame(spark, rows, SCHEMA)
    assert frame.schema.simpleString() == (
        "struct<topic_id:string,topic:string,known:boolean,topic_rf:int,offsets:bigint>")
    assert [tuple(r) for r in frame.collect()] == rows


def test_a_struct_type_schema_and_array_columns(spark: SparkSession) -> None:
    schema = T.StructType([T.StructField("broker_id", T.IntegerType()),
                           T.StructField("replicas", T.ArrayType(T.IntegerType()))])
    frame = literal_frame(spark, [(1, [0, 2]), (2, [])], schema)
    assert frame.schema == schema
    assert [(r["broker_id"], r["replicas"]) for r in frame.collect()] == [(1, [0, 2]), (2, [])]


def test_no_rows_is_an_empty_frame_of_the_schema(spark: SparkSession) -> None:
    frame = literal_frame(spark, [], SCHEMA)
    assert [f.name for f in frame.schema.fields] == [
        "topic_id", "topic", "known", "topic_rf", "offsets"]
    assert frame.count() == 0


def test_it_joins_as_a_broadcast_without_a_python_rdd(spark: SparkSession) -> None:
    small = literal_frame(spark, [(i, f"n{i}") for i in range(1000)], "k int, name string")
    big = spark.range(5000).select((F.col("id") % 1000).cast("int").alias("k"))
    joined = big.join(F.broadcast(small), "k")
    assert joined.count() == 5000
    plan = joined._jdf.queryExecution().executedPlan().toString()
    assert "BroadcastHashJoin" in plan
    assert "PythonRDD" not in plan and "Scan ExistingRDD" not in plan


def test_a_row_of_the_wrong_width_is_refused(spark: SparkSession) -> None:
    with pytest.raises(ValueError, match="does not have the 2 fields"):
        literal_frame(spark, [(1,)], "k int, name string")
