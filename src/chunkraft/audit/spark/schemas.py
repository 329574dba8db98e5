"""The Spark schema of every export table, derived from its Arrow schema.

The Arrow schemas come from the record declarations (:mod:`chunkraft.export.tables`), so the
Parquet files, the pyarrow engine and Spark all read the same columns with the same types.
"""

from __future__ import annotations

from functools import cache

import pyarrow as pa
from pyspark.sql import types as T

from chunkraft.export.tables import TABLES_BY_NAME

__all__ = ["spark_schema", "spark_type"]


def spark_type(arrow: pa.DataType) -> T.DataType:
    """The Spark type of an Arrow type used by the export tables."""
    scalars: list[tuple[pa.DataType, T.DataType]] = [
        (pa.bool_(), T.BooleanType()), (pa.int8(), T.ByteType()), (pa.int16(), T.ShortType()),
        (pa.int32(), T.IntegerType()), (pa.int64(), T.LongType()), (pa.string(), T.StringType()),
    ]
    for arrow_scalar, spark_scalar in scalars:
        if arrow == arrow_scalar:
            return spark_scalar
    if pa.types.is_list(arrow):
        return T.ArrayType(spark_type(arrow.value_type), containsNull=True)
    if pa.types.is_struct(arrow):
        return T.StructType([T.StructField(f.name, spark_type(f.type), True)
                             for f in (arrow.field(i) for i in range(arrow.num_fields))])
    raise TypeError(f"no Spark type for Arrow {arrow}")


@cache
def spark_schema(table: str) -> T.StructType:
    """The Spark schema of export table ``table`` (every column nullable, as Spark reads)."""
    arrow = TABLES_BY_NAME[table].schema
    return T.StructType([T.StructField(f.name, spark_type(f.type), True) for f in arrow])
