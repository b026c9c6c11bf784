"""The dealer console's client when the broker goes: what waits for a response fails at once."""

from __future__ import annotations

import asyncio

import pytest

from controller.mqtt import Client, MqttError
from controller.shell.client import DealerClient
from controller.shell.topics import Topics
from simulators.dealer_console import AutoConsole
from tests.integration.broker import Broker
from tests.waiting import until

pytestmark = pytest.mark.broker


async def test_a_request_waiting_for_its_response_fails_when_the_broker_goes(
    broker: Broker,
) -> None:
    """No table answers here: the request waits. The broker stops; the request must fail with
    the lost connection, not wait out its timeout (a console would sit for a minute with no
    table behind it), and every request after it must fail the same way, at once."""
    lost: list[MqttError] = []
    async with Client("127.0.0.1", broker.port, timeout=5) as client:
        dealer = DealerClient(client, Topics("tables", "T0"), on_lost=lost.append)
        await dealer.start()
        waiting = asyncio.create_task(dealer.send("start_hand", timeout=600))
        # once the request is registered it has been written (nothing awaits in between); a
        # publish after it is acknowledged after it (one connection, in order), so both reached
        # the broker before it stops
        await until(lambda: bool(dealer._waiting), 10, "the request sent")
        await client.publish("tables/T0/probe", b"", qos=1)
        broker.stop()
        async with asyncio.timeout(60):  # well under the request's own 600 s
            with pytest.raises(MqttError, match="lost"):
                await waiting
        assert len(lost) == 1
        with pytest.raises(MqttError, match="lost"):
            await dealer.send("start_hand", timeout=600)
        await dealer.stop()  # the reader ended on the lost connection; stopping is quiet
        assert dealer.lost is not None


async def test_a_console_waiting_for_the_table_stops_waiting_when_the_broker_goes(
    broker: Broker,
) -> None:
    """The automatic console waits for a state snapshot (the table is dealing, say). When the
    broker stops it must raise at once, so that whoever drives it connects again, rather than
    wait out its timeout on a connection that can no longer bring one."""
    async with Client("127.0.0.1", broker.port, timeout=5) as client:
        console = AutoConsole(client, Topics("tables", "T0"))
        await console.start()
        waiting = asyncio.create_task(console.wait_snapshot(1, timeout=600))
        await client.publish("tables/T0/probe", b"", qos=1)
        broker.stop()
        async with asyncio.timeout(60):
            with pytest.raises(MqttError, match="lost"):
                await waiting
