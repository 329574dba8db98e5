"""Where an image comes from in the metadata log."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["MetadataProvenance"]


class MetadataProvenance(NamedTuple):
    """The last log offset and Raft epoch an image reflects (-1, -1 for the empty image).

    ``offset`` is inclusive: the image contains the record at ``offset`` and everything before.
    A snapshot of the image is named after ``offset + 1``, the first offset it does not contain.
    """

    offset: int = -1
    epoch: int = -1

    @property
    def end_offset(self) -> int:
        """The first offset not in the image (the name of its snapshot)."""
        return self.offset + 1
