"""Whole Metadata answers, kept for the image they were written from.

Clients poll Metadata: 32 of them asking for every topic of the same image would otherwise
each cost a build and a 21 MB join. An answer depends on the image, the request, the principal
(only through authorization: not at all for super users or without an authorizer), the
authorizer, the cluster id and the controller id the answer names; :class:`AnswerCache` keeps
answers by all of these, for the latest image only.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable

from chunkraft.api.metadata_json import TOPIC_JSON, TopicJsonCache, metadata_json
from chunkraft.controller.image import MetadataImage
from chunkraft.protocol.topics import MetadataRequest
from chunkraft.security.authorizer import Authorizer
from chunkraft.security.principal import Principal

__all__ = ["ANSWERS", "AnswerCache", "metadata_answer"]


class AnswerCache:
    """Answers (JSON bytes) of one image and one authorizer, by the rest of what they depend on.

    Asked about another image or authorizer, it forgets every answer it holds: the committed
    image only moves forward, so answers of an earlier one would never be asked for again.
    Holds at most ``max_entries`` answers and ``max_bytes`` of them, least recently used
    evicted first; an answer larger than ``max_bytes`` is not kept. Not thread-safe: the
    controller's event loop thread is its only user.
    """

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.size = 0
        self.hits = 0
        self.misses = 0
        self._image: MetadataImage | None = None
        self._authorizer: Authorizer | None = None
        self._answers: OrderedDict[Hashable, bytes] = OrderedDict()

    def get(self, image: MetadataImage, authorizer: Authorizer | None, key: Hashable
            ) -> bytes | None:
        answer = None
        if image is self._image and authorizer is self._authorizer:
            answer = self._answers.get(key)
        if answer is None:
            self.misses += 1
            return None
        self._answers.move_to_end(key)
        self.hits += 1
        return answer

    def put(self, image: MetadataImage, authorizer: Authorizer | None, key: Hashable,
            answer: bytes) -> None:
        if image is not self._image or authorizer is not self._authorizer:
            self.clear()
            self._image, self._authorizer = image, authorizer
        old = self._answers.pop(key, None)
        if old is not None:
            self.size -= len(old)
        if len(answer) > self.max_bytes:
            return
        self._answers[key] = answer
        self.size += len(answer)
        while self.size > self.max_bytes or len(self._answers) > self.max_entries:
            _, evicted = self._answers.popitem(last=False)
            self.size -= len(evicted)

    def __len__(self) -> int:
        return len(self._answers)

    def clear(self) -> None:
        self._answers.clear()
        self.size = 0
        self._image = self._authorizer = None


ANSWERS = AnswerCache(max_entries=8, max_bytes=64 * 1024 * 1024)
"""The controller's kept Metadata answers: at most 8, and 64 MiB (three every-topic answers of
a 100,000-partition image)."""


def metadata_answer(image: MetadataImage, principal: Principal, authorizer: Authorizer | None,
                    request: MetadataRequest, *, cluster_id: str | None, controller_id: int,
                    answers: AnswerCache = ANSWERS, topics: TopicJsonCache = TOPIC_JSON
                    ) -> bytes:
    """:func:`~chunkraft.api.metadata_json.metadata_json`, kept in ``answers``: the same
    request on the same image costs one build however many clients ask."""
    # Equal requests have equal hashes however their bodies were spelled (frozen models).
    sees_all = authorizer is None or authorizer.is_super_user(principal)
    who = None if sees_all else (principal.name, principal.host)
    key = (request, who, cluster_id, controller_id)
    answer = answers.get(image, authorizer, key)
    if answer is None:
        answer = metadata_json(image, principal, authorizer, request, cluster_id=cluster_id,
                               controller_id=controller_id, cache=topics)
        answers.put(image, authorizer, key, answer)
    return answer
