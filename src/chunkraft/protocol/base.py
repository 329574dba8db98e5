"""The base of every protocol message."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["Message"]


class Message(BaseModel):
    """An immutable protocol message: unknown fields are refused, values are validated."""

    model_config = ConfigDict(frozen=True, extra="forbid")
