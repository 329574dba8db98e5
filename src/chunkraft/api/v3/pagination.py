"""Paginated lists: ``?page_size=`` and an opaque ``?page_token=`` (base64url of the last key).

Keys are a topic name, a partition id or a chunk start offset; a page holds the items after
the token's key, in key order, so a walk over ``next`` links sees every item once even while
items are added or removed between pages.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar
from urllib.parse import urlencode

from fastapi import Request, Response

from chunkraft.api.errors import error_response
from chunkraft.error_codes import Errors

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "MAX_LARGE_PAGE_SIZE",
    "MAX_PAGE_SIZE",
    "Page",
    "decode_token",
    "encode_token",
    "paginate",
]

DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000
MAX_LARGE_PAGE_SIZE = 10_000
"""Partitions and chunks: a whole 10,000-partition topic in one page."""

K = TypeVar("K", str, int)
T = TypeVar("T")


def encode_token(key: str | int) -> str:
    return base64.urlsafe_b64encode(str(key).encode()).decode().rstrip("=")


def decode_token(token: str, key_type: type[K]) -> K | None:
    """The key a token carries, or None if it is not one of ours."""
    try:
        text = base64.b64decode(token + "=" * (-len(token) % 4), altchars=b"-_",
                                validate=True).decode()
        return key_type(text)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None


@dataclass(frozen=True)
class Page(Generic[T]):
    """The items of one page and the URL of the next (None on the last page)."""

    items: list[T]
    next: str | None


def paginate(
    request: Request,
    keys: Sequence[K],
    key_type: type[K],
    page_size: int,
    page_token: str | None,
    *,
    max_size: int = MAX_PAGE_SIZE,
    admit: Callable[[K], bool] | None = None,
) -> Page[K] | Response:
    """The page of ``keys`` (sorted ascending) after ``page_token``, at most ``page_size`` of
    those ``admit`` lets through; a 400 answer for a bad size or token."""
    if not 1 <= page_size <= max_size:
        return error_response(Errors.INVALID_REQUEST,
                              f"page_size must be 1 .. {max_size}, not {page_size}", 400)
    after: K | None = None
    if page_token is not None:
        after = decode_token(page_token, key_type)
        if after is None:
            return error_response(Errors.INVALID_REQUEST,
                                  f"page_token {page_token!r} is not a token this API issued",
                                  400)
    items: list[K] = []
    more = False
    start = 0 if after is None else bisect.bisect_right(keys, after)
    for key in itertools.islice(keys, start, None):
        if admit is not None and not admit(key):
            continue
        if len(items) == page_size:
            more = True
            break
        items.append(key)
    next_url = None
    if more:
        params = [(name, value) for name, value in request.query_params.multi_items()
                  if name != "page_token"]
        params.append(("page_token", encode_token(items[-1])))
        next_url = f"{str(request.url).split('?', 1)[0]}?{urlencode(params)}"
    return Page(items, next_url)
