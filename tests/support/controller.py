"""Helpers for testing controller operations against images, without Raft."""

from __future__ import annotations

from typing import Any

from chunkraft.controller.image import MetadataDelta, MetadataImage
from chunkraft.controller.result import ControllerResult
from chunkraft.records import decode_record, encode_record


def commit(image: MetadataImage, result: ControllerResult[Any]) -> MetadataImage:
    """The image after ``result``'s records commit as one batch, as the quorum would do it.

    Records go through the codec first (encode, decode), so a record that cannot be encoded
    fails here as it would in the real write path.
    """
    if not result.records:
        return image
    delta = MetadataDelta(image)
    delta.replay_all(decode_record(encode_record(record)) for record in result.records)
    return delta.apply()
