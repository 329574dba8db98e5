"""Kept Metadata answers: one build per (image, request, who asks), never a stale answer."""

from __future__ import annotations

import pytest

from chunkraft.api.authorized import describe_as
from chunkraft.api.metadata_answers import AnswerCache, metadata_answer
from chunkraft.api.metadata_json import TopicJsonCache
from chunkraft.controller.image import MetadataImage
from chunkraft.protocol.acls import AclOperation
from chunkraft.protocol.topics import MetadataRequest
from chunkraft.records import PartitionChangeRecord
from chunkraft.security.authorizer import Authorizer
from chunkraft.security.principal import Principal
from tests.unit.api.metadata_support import ADMIN, ALICE, AUTHORIZER, acl, rich_image
from tests.unit.controller.operations.topic_support import ORDERS_ID, apply

ALL = MetadataRequest()


class Answers:
    """An answer cache and a topic cache of one test, and a way to ask through them."""

    def __init__(self, max_entries: int = 8, max_bytes: int = 1 << 24) -> None:
        self.answers = AnswerCache(max_entries, max_bytes)
        self.topics = TopicJsonCache(1 << 24)

    def ask(self, image: MetadataImage, request: MetadataRequest = ALL,
            principal: Principal = ADMIN, authorizer: Authorizer | None = AUTHORIZER,
            controller_id: int = 1) -> bytes:
        answer = metadata_answer(image, principal, authorizer, request, cluster_id="c",
                                 controller_id=controller_id, answers=self.answers,
                                 topics=self.topics)
        assert answer.decode() == describe_as(
            image, principal, authorizer, request, cluster_id="c",
            controller_id=controller_id).model_dump_json()
        return answer


@pytest.fixture
def image() -> MetadataImage:
    return apply(rich_image(), acl(AclOperation.DESCRIBE, "orders"))


def test_the_same_request_on_the_same_image_is_built_once(image: MetadataImage) -> None:
    cache = Answers()
    first = cache.ask(image)
    assert cache.ask(image) is first
    # However the body was spelled: equal requests are one key.
    spelled = MetadataRequest.model_validate_json(b'{ "include_chunks" : true, "topics": null}')
    assert cache.ask(image, spelled) is first
    assert (cache.answers.hits, cache.answers.misses, len(cache.answers)) == (2, 1, 1)
    assert cache.topics.misses == 3  # the topics were written once


def test_answers_are_kept_per_principal_only_where_authorization_applies(
        image: MetadataImage) -> None:
    cache = Answers()
    admin = cache.ask(image)
    # Super users all see everything: one answer.
    assert cache.ask(image, principal=Principal("User:admin", host="10.1.1.1")) is admin
    alice = cache.ask(image, principal=ALICE)
    assert alice != admin
    assert cache.ask(image, principal=ALICE) is alice
    # The same name from another host may be refused by host-restricted ACLs: its own key.
    cache.ask(image, principal=Principal(ALICE.name, host="10.0.0.9"))
    assert len(cache.answers) == 3


def test_the_controller_id_and_the_request_are_part_of_the_key(image: MetadataImage) -> None:
    cache = Answers()
    one = cache.ask(image, controller_id=1)
    assert cache.ask(image, controller_id=2) != one
    cache.ask(image, MetadataRequest(include_chunks=False))
    cache.ask(image, MetadataRequest.model_validate({"topics": [{"name": "orders"}]}))
    assert len(cache.answers) == 4 and cache.answers.hits == 0


def test_a_new_image_or_authorizer_forgets_every_answer(image: MetadataImage) -> None:
    cache = Answers()
    cache.ask(image)
    cache.ask(image, principal=ALICE)
    changed = apply(image, PartitionChangeRecord(partition_id=0, topic_id=ORDERS_ID, leader=1))
    after = cache.ask(changed)
    assert b'"leader_id":1,"leader_epoch":1' in after
    assert len(cache.answers) == 1
    other = Authorizer(["User:alice"])
    cache.ask(changed, principal=ALICE, authorizer=other)
    cache.ask(changed, principal=ALICE, authorizer=None)
    assert len(cache.answers) == 1 and cache.answers.hits == 0


def test_answers_are_bounded_in_number_and_bytes(image: MetadataImage) -> None:
    cache = Answers(max_entries=2)
    for controller_id in (1, 2, 3):
        cache.ask(image, controller_id=controller_id)
    assert len(cache.answers) == 2
    cache.ask(image, controller_id=2)
    assert cache.answers.hits == 1
    size = len(cache.ask(image))
    small = Answers(max_bytes=size + 10)
    small.ask(image)
    small.ask(image, controller_id=2)  # the first is evicted to make room
    assert len(small.answers) == 1 and small.answers.size <= size + 10
    tiny = Answers(max_bytes=size - 1)
    tiny.ask(image)
    assert len(tiny.answers) == 0 and tiny.answers.size == 0
    tiny.answers.clear()
