"""Every registered driver is a Device: built from a model that refuses bad options clearly."""

from __future__ import annotations

import asyncio
import inspect
from datetime import UTC, datetime
from typing import Any

import pydantic
import pytest

from controller.config import DeviceSection
from controller.decks import synthetic_manifest
from controller.table.inputs import DeviceInput, Purpose, TagArrived, Zone
from controller.table.plan import DispenseRequest
from drivers.contract import Device, DeviceContext, DeviceStatus
from drivers.errors import DeviceCommandError
from drivers.registry import (
    BUILTIN_DRIVERS,
    DriverUnavailableError,
    available_drivers,
    build_device,
    load_driver,
    option_problems,
)
from drivers.supervisor import InputSink, RestartPolicy

DRIVERS = sorted(available_drivers())


@pytest.mark.parametrize("name", DRIVERS)
def test_every_registered_driver_is_a_concrete_device(name: str) -> None:
    cls = load_driver(name)
    assert issubclass(cls, Device)
    assert not inspect.isabstract(cls), f"{name} leaves abstract methods unimplemented"
    assert issubclass(cls.options_model, pydantic.BaseModel)
    assert cls.kind in ("shuffler", "reader", "")
    assert cls.capabilities, f"{name} says it can do nothing"


@pytest.mark.parametrize("name", sorted(BUILTIN_DRIVERS))
def test_every_builtin_driver_refuses_bad_options_by_key(name: str) -> None:
    cls = load_driver(name)
    problems = option_problems("aux", name, {"colour": "red"})
    assert "devices.aux.colour: Extra inputs are not permitted" in problems
    with pytest.raises(pydantic.ValidationError, match="colour"):
        cls.from_options("aux", {"colour": "red"})


@pytest.mark.parametrize(
    ("name", "options", "problem"),
    [
        ("tsp-shuffler", {}, "port: Field required"),
        ("tsp-shuffler", {"port": "/dev/x", "heartbeat_interval": 0}, "heartbeat_interval: "),
        ("tsp-reader", {"port": "/dev/x"}, "antennas: Field required"),
        ("tsp-reader-usb", {"antennas": [{"antenna": 0, "zone": "seat:11"}]}, "bad seat zone"),
        ("pn532", {"modules": []}, "modules: Tuple should have at least 1 item"),
        ("virtual", {"id_policy": "shout"}, "id_policy: Input should be 'withhold' or 'live'"),
        ("jsonl", {}, "port: Field required"),
    ],
)
def test_a_bad_option_is_named_with_its_key(
    name: str, options: dict[str, Any], problem: str
) -> None:
    problems = option_problems("d", name, options)
    assert any(p.startswith("devices.d.") and problem in p for p in problems), problems


def test_an_unknown_driver_is_a_config_problem_and_a_lookup_error() -> None:
    (problem,) = option_problems("d", "no-such-driver", {})
    assert problem.startswith("devices.d.driver: no driver named 'no-such-driver' (known drivers:")
    with pytest.raises(DriverUnavailableError):
        load_driver("no-such-driver")


def test_the_daemon_builds_each_section_with_its_context() -> None:
    manifest = synthetic_manifest("house-a")
    section = DeviceSection(driver="virtual", seed=3)
    device = build_device(
        "shuffler", section.driver, section.options, DeviceContext("T1", manifest)
    )
    assert device.device_id == "shuffler"
    assert device.context.table_id == "T1"
    assert device.describe()["simulated"] is True


BOARD = [{"antenna": 0, "zone": "board"}]


@pytest.mark.parametrize(
    ("name", "options", "rejected_retry"),
    [
        ("tsp-shuffler", {"port": "/dev/x", "rejected_retry": 7.0}, 7.0),
        ("tsp-reader", {"port": "/dev/x", "antennas": BOARD}, 30.0),
        ("tsp-reader-usb", {"antennas": BOARD}, 30.0),
    ],
)
def test_a_tsp1_driver_restarts_with_the_backoff_of_its_options(
    name: str, options: dict[str, Any], rejected_retry: float
) -> None:
    backoff = {"backoff_base": 0.1, "backoff_cap": 2.0, "fail_after": 4}
    device = load_driver(name).from_options("d", {**options, **backoff})
    policy = device.restart_policy(RestartPolicy())
    assert policy == RestartPolicy(0.1, 2.0, 4, stable_after=10.0, rejected_retry=rejected_retry)


# --------------------------------------------------------------------------- the base class


class Options(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    tags: tuple[str, ...] = ()


class Reader(Device):
    """A reader whose one connection reads its tags and then waits to be cancelled."""

    options_model = Options
    kind = "reader"
    capabilities = frozenset({"read"})
    options: Options

    async def run(self, sink: InputSink) -> None:
        for uid in self.options.tags:
            await sink(TagArrived(datetime.now(UTC), self.device_id, Zone.parse("board"), uid))
        await asyncio.Event().wait()

    async def query(self) -> DeviceStatus:
        return DeviceStatus(True)

    def describe(self) -> dict[str, Any]:
        return {"model": "test"}


async def test_a_reader_refuses_the_shufflers_commands() -> None:
    reader = Reader.from_options("r", {})
    with pytest.raises(DeviceCommandError, match="r does not shuffle"):
        await reader.shuffle(1)
    with pytest.raises(DeviceCommandError, match="r does not dispense"):
        await reader.dispense(1, 1, DispenseRequest(Purpose.HOLE, 1, 2))
    with pytest.raises(DeviceCommandError, match="r has no deck"):
        await reader.reveal(1)


async def test_started_without_a_sink_its_inputs_queue_in_order() -> None:
    reader = Reader.from_options("r", {"tags": ["04a1", "04a2"]})
    assert reader.pending_events() == []
    async with reader:
        first, second = await reader.next_event(), await reader.next_event()
        assert reader.supervisor is not None
        assert reader.supervisor.sessions == 1
    assert [getattr(first, "uid", None), getattr(second, "uid", None)] == ["04a1", "04a2"]
    assert reader.pending_events() == []


async def test_started_with_a_sink_it_has_no_queue() -> None:
    got: list[DeviceInput] = []
    arrived = asyncio.Event()

    async def sink(item: DeviceInput) -> None:
        got.append(item)
        arrived.set()

    reader = Reader.from_options("r", {"tags": ["04a1"]})
    await reader.start(sink)
    try:
        async with asyncio.timeout(5):
            await arrived.wait()
        with pytest.raises(RuntimeError, match="hands its inputs to the sink"):
            reader.pending_events()
    finally:
        await reader.stop()
    assert [getattr(item, "uid", None) for item in got] == ["04a1"]
