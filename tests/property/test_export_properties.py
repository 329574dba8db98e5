"""Export round trip: image -> snapshot file -> Parquet export -> records -> replay gives the
same image, for any metadata history (and any batch size of the snapshot)."""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkraft.controller.image import MetadataDelta, MetadataImage, MetadataProvenance
from chunkraft.export.manifest import Manifest
from chunkraft.export.snapshot_export import export_snapshot
from chunkraft.export.tables import CONTROLLER_TABLES, table_to_records
from chunkraft.records.files import write_snapshot
from tests.support.histories import metadata_histories

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def replay(records: list[Any]) -> MetadataImage:
    delta = MetadataDelta(MetadataImage.EMPTY)
    for record in records:
        delta.replay(record)
    return delta.apply(MetadataProvenance(len(records), 1))


@SETTINGS
@given(metadata_histories(), st.integers(1, 7), st.integers(1, 5))
def test_export_replays_to_the_same_image(records: list[Any], per_batch: int,
                                          row_group: int) -> None:
    image = replay(records)
    with tempfile.TemporaryDirectory(prefix="a_export_prop_") as scratch:
        path = write_snapshot(scratch, end_offset=image.offset + 1, epoch=1,
                              cluster_id=uuid.UUID(int=1), records=image.encoded_records(),
                              records_per_batch=per_batch)
        out = Path(scratch) / "out"
        manifest = export_snapshot(path, out, workers=1, row_group_rows=row_group)
        assert manifest.offset == image.offset
        exported: list[Any] = []
        for spec in CONTROLLER_TABLES:  # the tables' order is a valid replay order
            for file in Manifest.read(out).tables[spec.name].files:
                exported.extend(table_to_records(spec, pq.read_table(out / file)))
    assert replay(exported).with_provenance(image.provenance) == image
