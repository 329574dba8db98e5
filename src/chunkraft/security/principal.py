"""Principal: the authenticated identity behind a request."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ANONYMOUS", "ANONYMOUS_NAME", "Principal"]

ANONYMOUS_NAME = "User:ANONYMOUS"


@dataclass(frozen=True, slots=True)
class Principal:
    """A Kafka principal (``"User:alice"``) and the host the request came from.

    ``name`` is what ACLs and ``super.users`` name; ``host`` is the client's IP address, which
    ACLs may restrict (``"*"`` when unknown, e.g. a request authorized on another controller).
    """

    name: str
    host: str = "*"

    def __str__(self) -> str:
        return self.name


ANONYMOUS = Principal(ANONYMOUS_NAME)
