"""The fast Metadata JSON equals the reference on every image of generated histories.

One topic cache lives through each history, so texts written for an earlier image are offered
for every later one: a text reused where a partition, its chunks or its brokers changed would
show up as a difference from ``describe_as``. Histories rarely fence a broker while its topics
stay unchanged, so the test adds such flips between the cuts.
"""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkraft.api.authorized import describe_as
from chunkraft.api.metadata_json import TopicJsonCache, metadata_json
from chunkraft.controller.image import MetadataDelta, MetadataImage
from chunkraft.protocol.topics import MetadataRequest
from chunkraft.records import BrokerRegistrationChangeRecord
from chunkraft.records.uuids import kafka_uuid_str
from chunkraft.security.authorizer import Authorizer
from chunkraft.security.principal import Principal
from tests.support.histories import TOPIC_NAMES, metadata_histories

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

# The histories' ACLs allow User:alice operations on topic "alpha".
PRINCIPALS = (Principal("User:alice"), Principal("User:bob"), Principal("User:admin"))
AUTHORIZERS = (None, Authorizer(["User:admin"]),
               Authorizer(allow_everyone_if_no_acl_found=True))


def replay(records: list[Any], base: MetadataImage) -> MetadataImage:
    delta = MetadataDelta(base)
    for record in records:
        delta.replay(record)
    return delta.apply()


def entries(image: MetadataImage) -> st.SearchStrategy[dict[str, str | None]]:
    ids = [t.topic_id for t in image.topics.by_id.values()] + [uuid.UUID(int=42)]
    names = st.sampled_from([*TOPIC_NAMES, "ghost"])
    topic_ids = st.sampled_from(ids).flatmap(
        lambda i: st.sampled_from([kafka_uuid_str(i), str(i)]))
    return st.one_of(
        names.map(lambda n: {"name": n}),
        topic_ids.map(lambda i: {"topic_id": i}),
        st.tuples(names, topic_ids).map(lambda p: {"name": p[0], "topic_id": p[1]}),
        st.just({"topic_id": "not-an-id"}),
        st.just({}),
    )


def requests(image: MetadataImage) -> st.SearchStrategy[MetadataRequest]:
    topics = st.none() | st.lists(entries(image), max_size=6)
    return st.builds(lambda t, c: MetadataRequest.model_validate(
        {"topics": t, "include_chunks": c}), topics, st.booleans())


@SETTINGS
@given(metadata_histories(), st.data())
def test_fast_metadata_is_the_reference_on_every_image_of_a_history(
        records: list[Any], data: st.DataObject) -> None:
    # A small cache evicts (and rewrites) all the time; a large one keeps every topic.
    cache = TopicJsonCache(data.draw(st.sampled_from([1 << 22, 1500])))
    cuts = sorted(data.draw(st.sets(st.integers(0, len(records)), max_size=8)))
    image = MetadataImage.EMPTY
    previous = 0
    for cut in [*cuts, len(records)]:
        image = replay(records[previous:cut], image)
        previous = cut
        registered = list(image.brokers)
        if registered and data.draw(st.booleans()):
            # A flip of one broker's fencing (the histories' model does not track fencing, so
            # the records after it stay valid): every topic image stays the same object.
            broker = data.draw(st.sampled_from(registered))
            image = replay([BrokerRegistrationChangeRecord(
                broker_id=broker.broker_id, broker_epoch=broker.broker_epoch,
                fenced=-1 if broker.fenced else 1)], image)
        # Every topic as a super user sees it, then a drawn request of a drawn principal.
        for include_chunks in (True, False):
            check(image, MetadataRequest(include_chunks=include_chunks), PRINCIPALS[2], None,
                  cache)
        check(image, data.draw(requests(image)), data.draw(st.sampled_from(PRINCIPALS)),
              data.draw(st.sampled_from(AUTHORIZERS)), cache)


def check(image: MetadataImage, request: MetadataRequest, principal: Principal,
          authorizer: Authorizer | None, cache: TopicJsonCache) -> None:
    expected = describe_as(image, principal, authorizer, request, cluster_id="c",
                           controller_id=0).model_dump_json()
    fast = metadata_json(image, principal, authorizer, request, cluster_id="c",
                         controller_id=0, cache=cache)
    assert fast.decode() == expected
