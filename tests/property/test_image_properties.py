"""Properties of replay: batching does not matter, snapshots round-trip, local_changes is right."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkraft.controller.image import (
    MetadataDelta,
    MetadataImage,
    MetadataProvenance,
    compute_local_changes,
)
from chunkraft.records import decode_record, encode_record, validate_record
from tests.support.brute_force import as_plain, brute_force_local_changes
from tests.support.histories import BROKERS, metadata_histories

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def replay(records: list[Any], base: MetadataImage = MetadataImage.EMPTY) -> MetadataImage:
    delta = MetadataDelta(base)
    for record in records:
        delta.replay(record)
    return delta.apply()


@SETTINGS
@given(metadata_histories())
def test_history_records_are_valid(records: list[Any]) -> None:
    for record in records:
        validate_record(record)


@SETTINGS
@given(metadata_histories(), st.data())
def test_every_split_into_deltas_gives_the_same_image(
    records: list[Any], data: st.DataObject
) -> None:
    whole = replay(records)
    cuts = sorted(data.draw(st.sets(st.integers(0, len(records)), max_size=6)))
    image = MetadataImage.EMPTY
    previous = 0
    for cut in [*cuts, len(records)]:
        image = replay(records[previous:cut], image)
        previous = cut
    assert image == whole
    assert image.content_hash() == whole.content_hash()


@SETTINGS
@given(metadata_histories())
def test_image_to_records_replays_to_the_same_image(records: list[Any]) -> None:
    image = replay(records)
    rebuilt = replay(list(image.to_records()))
    assert rebuilt.content_hash() == image.content_hash()
    assert rebuilt.with_provenance(image.provenance) == image
    # and through the codec, as a snapshot would carry them
    decoded = [decode_record(encode_record(r)) for r in image.to_records()]
    assert replay(decoded).with_provenance(image.provenance) == image


@SETTINGS
@given(metadata_histories(), metadata_histories())
def test_hash_distinguishes_different_content(a: list[Any], b: list[Any]) -> None:
    first, second = replay(a), replay(b)
    same = list(first.to_records()) == list(second.to_records())
    assert (first.content_hash() == second.content_hash()) == same


@SETTINGS
@given(metadata_histories(max_steps=30), st.data())
def test_local_changes_agree_with_brute_force(records: list[Any], data: st.DataObject) -> None:
    cut = data.draw(st.integers(0, len(records)))
    old = replay(records[:cut])
    delta = MetadataDelta(old)
    for record in records[cut:]:
        delta.replay(record)
    new = delta.apply(MetadataProvenance(old.offset + len(records) - cut, 0))
    for broker_id in BROKERS:
        expected = brute_force_local_changes(old, new, broker_id)
        assert as_plain(compute_local_changes(delta.topics_delta, broker_id)) == expected
