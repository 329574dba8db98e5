"""The base of every protocol message, and the strict scalar types its fields use.

Every scalar of a message is strict: a JSON boolean for a ``bool`` (not ``"0"``, ``1`` or
``"yes"``) and a JSON integer for an ``int`` (not ``"7"``, ``7.0`` or ``true``). Lax coercion
turned ``"validate_only": "0"`` into a real write and ``{"broker_id": true}`` into broker 1; a
malformed value must fail validation (HTTP 400) instead. Containers stay lax, so Python code may
still build a ``tuple`` field from a list. ``tests/unit/protocol/test_base.py`` walks every
message's schema to keep it that way.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, Strict

__all__ = ["Int8", "Int16", "Int32", "Int64", "Message", "StrictBool", "StrictInt",
           "exactly_one_of"]

StrictBool = Annotated[bool, Strict()]
"""A JSON ``true`` or ``false``, nothing else."""
StrictInt = Annotated[int, Strict()]
"""A JSON integer (not a string, a float or a bool), unbounded; prefer the sized types."""
Int8 = Annotated[int, Strict(), Field(ge=-(2**7), le=2**7 - 1)]
"""Kafka's INT8."""
Int16 = Annotated[int, Strict(), Field(ge=-(2**15), le=2**15 - 1)]
"""Kafka's INT16: a JSON integer (not a string or a bool) in the int16 range."""
Int32 = Annotated[int, Strict(), Field(ge=-(2**31), le=2**31 - 1)]
"""Kafka's INT32."""
Int64 = Annotated[int, Strict(), Field(ge=-(2**63), le=2**63 - 1)]
"""Kafka's INT64."""


def exactly_one_of(*fields: str) -> dict[str, Any]:
    """A model's ``json_schema_extra``: exactly one of ``fields`` is given, not null (what a
    model validator checks, stated in the schema so that the OpenAPI document says it)."""
    return {"oneOf": [{"required": [field], "properties": {field: {"not": {"type": "null"}}}}
                      for field in fields]}


class Message(BaseModel):
    """An immutable protocol message: unknown fields are refused, values are validated, and
    scalars are strict (see the module doc). Thread-safe (immutable)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
