"""BrokerLifecycle against a scripted controller: register, unfence once the metadata holds
the registration, register again on a stale epoch, wait out a duplicate registration, survive
failed calls, and the controlled shutdown."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from chunkraft.broker_agent.controller_channel import ControllerRpcError
from chunkraft.broker_agent.lifecycle import BrokerLifecycle, security_protocol_of
from chunkraft.error_codes import Errors

CLUSTER = "nD8sTltqTH2OnwobLD1OXw"


class FakeController:
    """Kafka's heartbeat rules in miniature; ``script`` may replace an answer."""

    def __init__(self) -> None:
        self.offset = 10
        self.epoch = -1
        self.fenced = True
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.script: list[Callable[[str, dict[str, Any]], dict[str, Any] | None]] = []

    async def call(self, path: str, body: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        self.requests.append((path.rsplit("/", 1)[1], body))
        if self.script:
            scripted = self.script.pop(0)(path, body)
            if scripted is not None:
                return scripted
        if path.endswith("broker-registration"):
            self.offset += 1
            self.epoch = self.offset
            self.fenced = True
            return {"broker_epoch": self.epoch}
        if body["broker_epoch"] != self.epoch:
            return {"error_code": Errors.STALE_BROKER_EPOCH.code}
        caught_up = body["current_metadata_offset"] >= self.epoch
        if body["want_shut_down"]:
            self.fenced = True
            return {"is_caught_up": caught_up, "is_fenced": True, "should_shut_down": True}
        if caught_up:
            self.fenced = False
        return {"is_caught_up": caught_up, "is_fenced": self.fenced}


def lifecycle(controller: FakeController, offset: Callable[[], int]) -> BrokerLifecycle:
    return BrokerLifecycle(controller, node_id=2, host="127.0.0.1", port=9192,  # type: ignore[arg-type]
                           rack="r1", cluster_id=lambda: CLUSTER, metadata_offset=offset,
                           heartbeat_interval=0.02)


def test_it_registers_then_is_unfenced_once_its_metadata_holds_the_registration() -> None:
    controller = FakeController()
    applied = {"offset": -1}

    async def scenario() -> BrokerLifecycle:
        broker = lifecycle(controller, lambda: applied["offset"])
        task = asyncio.create_task(broker.run())
        await asyncio.wait_for(broker.registered.wait(), 2)
        assert broker.fenced and broker.broker_epoch == 11
        await asyncio.sleep(0.1)
        assert broker.fenced  # no heartbeat can unfence it before the metadata catches up
        applied["offset"] = 11
        await asyncio.wait_for(broker.unfenced.wait(), 2)
        task.cancel()
        return broker

    broker = asyncio.run(scenario())
    registration = controller.requests[0][1]
    assert registration["broker_id"] == 2 and registration["cluster_id"] == CLUSTER
    assert registration["rack"] == "r1"
    assert registration["listeners"] == [{"name": "HTTP", "host": "127.0.0.1", "port": 9192,
                                          "security_protocol": 0}]
    beats = [body for kind, body in controller.requests if kind == "broker-heartbeat"]
    assert beats and beats[-1]["current_metadata_offset"] == 11
    assert not broker.fenced and broker.caught_up


def test_a_stale_epoch_means_a_new_registration() -> None:
    controller = FakeController()

    async def scenario() -> BrokerLifecycle:
        broker = lifecycle(controller, lambda: controller.offset)
        task = asyncio.create_task(broker.run())
        await asyncio.wait_for(broker.unfenced.wait(), 2)
        controller.epoch = 99  # as if an operator unregistered and someone else registered
        for _ in range(200):
            if broker.registrations == 2 and not broker.fenced:
                break
            await asyncio.sleep(0.01)
        task.cancel()
        return broker

    broker = asyncio.run(scenario())
    assert broker.registrations == 2 and broker.broker_epoch == controller.epoch
    assert broker.previous_broker_epoch == 11 and not broker.fenced


def test_a_duplicate_registration_and_failed_calls_are_retried() -> None:
    controller = FakeController()
    controller.script = [
        lambda path, body: {"error_code": Errors.DUPLICATE_BROKER_REGISTRATION.code,
                            "error_message": "the old session lives"},
        _raise,
    ]

    async def scenario() -> BrokerLifecycle:
        broker = lifecycle(controller, lambda: controller.offset)
        task = asyncio.create_task(broker.run())
        await asyncio.wait_for(broker.unfenced.wait(), 2)
        task.cancel()
        return broker

    broker = asyncio.run(scenario())
    kinds = [kind for kind, _ in controller.requests]
    assert kinds[:3] == ["broker-registration"] * 3
    assert broker.heartbeat_failures == 1 and broker.registrations == 1


def _raise(path: str, body: dict[str, Any]) -> dict[str, Any]:
    raise ControllerRpcError(503, {"error_code": Errors.NETWORK_EXCEPTION.code})


def test_controlled_shutdown_heartbeats_want_shut_down_until_allowed() -> None:
    controller = FakeController()

    async def scenario() -> tuple[bool, BrokerLifecycle]:
        broker = lifecycle(controller, lambda: controller.offset)
        broker.heartbeat_interval = 5.0  # the shutdown must not wait for the next interval
        task = asyncio.create_task(broker.run())
        await asyncio.wait_for(broker.unfenced.wait(), 2)
        allowed = await broker.controlled_shutdown(timeout=2)
        await asyncio.wait_for(task, 1)  # run() returns once the shutdown is allowed
        return allowed, broker

    allowed, broker = asyncio.run(scenario())
    assert allowed and broker.shutting_down and broker.fenced
    assert controller.requests[-1][1]["want_shut_down"] is True


def test_a_controller_that_never_allows_the_shutdown_times_out() -> None:
    controller = FakeController()

    def refuse(path: str, body: dict[str, Any]) -> dict[str, Any] | None:
        if body.get("want_shut_down"):
            return {"is_caught_up": True, "is_fenced": False, "should_shut_down": False}
        return None

    async def scenario() -> bool:
        broker = lifecycle(controller, lambda: controller.offset)
        task = asyncio.create_task(broker.run())
        await asyncio.wait_for(broker.unfenced.wait(), 2)
        controller.script = [refuse] * 1000
        allowed = await broker.controlled_shutdown(timeout=0.3)
        task.cancel()
        return allowed

    assert asyncio.run(scenario()) is False


def test_a_broker_never_registered_may_always_stop() -> None:
    async def scenario() -> bool:
        broker = BrokerLifecycle(FakeController(), node_id=0, host="h", port=1,  # type: ignore[arg-type]
                                 cluster_id=lambda: None, metadata_offset=lambda: -1)
        return await broker.controlled_shutdown(timeout=0.1)

    assert asyncio.run(scenario()) is True
    assert (security_protocol_of("http"), security_protocol_of("HTTPS")) == (0, 1)
