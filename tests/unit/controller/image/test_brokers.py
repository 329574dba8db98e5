import pytest

from chunkraft.errors import InvariantError
from chunkraft.records import BrokerRegistrationChangeRecord, UnregisterBrokerRecord
from tests.unit.controller.image.support import broker, replay


def test_fence_unfence_and_controlled_shutdown() -> None:
    image = replay([broker(1, epoch=7)])
    registration = image.brokers.get(1)
    assert registration is not None and not registration.fenced
    fenced = replay([BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=7, fenced=1)], image)
    state = fenced.brokers.get(1)
    assert state is not None and state.fenced
    assert fenced.brokers.unfenced_ids() == []
    shutting = replay([BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=7, fenced=-1,
                                                      in_controlled_shutdown=1)], fenced)
    state = shutting.brokers.get(1)
    assert state is not None and not state.fenced and state.in_controlled_shutdown


def test_changes_for_another_epoch_or_unknown_broker_are_invariant_errors() -> None:
    image = replay([broker(1, epoch=7)])
    with pytest.raises(InvariantError, match="epoch 6"):
        replay([BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=6, fenced=1)], image)
    with pytest.raises(InvariantError, match="unknown broker 2"):
        replay([UnregisterBrokerRecord(broker_id=2, broker_epoch=0)], image)


def test_unregister_removes_and_reregister_replaces() -> None:
    image = replay([broker(1, epoch=7), broker(2)])
    gone = replay([UnregisterBrokerRecord(broker_id=1, broker_epoch=7)], image)
    assert gone.brokers.get(1) is None and len(gone.brokers) == 1
    again = replay([broker(2, epoch=9)], image)
    state = again.brokers.get(2)
    assert state is not None and state.broker_epoch == 9
