"""What every TSP/1 driver does the same way: the shape of a connection, the session, the health.

:class:`TspDriver` is the :class:`~drivers.contract.Device` of a TSP/1 device
(``docs/protocols/tsp1.md`` §2); the shuffler (:mod:`drivers.shuffler.driver`) and the reader
(:mod:`drivers.rfid.tsp_reader.driver`) subclass it with their message sets. Each call of
:meth:`TspDriver.run` is one connection:

1. open the transport (:meth:`TspDriver._open`) and start handing the device's events to the
   driver one at a time (:meth:`TspDriver._on_event`), each acknowledged once the sink took what
   the driver made of it (:class:`~drivers.tsp.session.EventPump`);
2. IDENTIFY: the device's identity and boot id;
3. set the device up (:meth:`TspDriver._set_up`: approve, configure; raise to refuse it), after
   which the application's requests may go (:meth:`TspDriver._call`, otherwise
   :class:`~drivers.errors.DeviceNotReadyError`) and, for a driver whose events wait for it
   (:attr:`TspDriver.events_wait_for_set_up`), events are handed over;
4. finish (:meth:`TspDriver._go_online`: sync the clock, reconcile), report the device ``online``
   and PING it (:func:`~drivers.tsp.heartbeat.serve`: ``stale`` while PINGs go unanswered) until
   the connection ends. The supervision loop (:mod:`drivers.supervisor`) reconnects, with the
   backoff of the options (:class:`~drivers.tsp.options.TspOptions`).

One link client serves every connection, so the link's de-duplication state survives a
reconnect: an event retransmitted after a replug is recognised. A new boot id is reported as
:class:`~controller.table.inputs.DeviceRebooted` and ends the connection, so that the next one
sets the device up again: it forgot its configuration, and a reboot is also how new firmware
takes effect.
"""

from __future__ import annotations

import asyncio
import contextlib
from abc import abstractmethod
from collections.abc import Callable
from enum import IntEnum
from typing import ClassVar, Generic, TypeVar

import structlog

from controller.aio import stop_tasks, utc_now
from controller.table.inputs import DeviceHealthChanged, DeviceInput, DeviceRebooted, Health
from drivers.contract import Device, DeviceContext
from drivers.errors import DeviceNotReadyError
from drivers.supervisor import InputSink, RestartPolicy
from drivers.transport import ByteTransport, DataCallback, LostCallback
from drivers.tsp.client import LinkClient
from drivers.tsp.common import HasBootId, IdentityHead, boot_id_reader
from drivers.tsp.events import EventSet, UnknownEvent
from drivers.tsp.frame import TYPE_GET_STATUS, TYPE_IDENTIFY, TYPE_PING, Frame
from drivers.tsp.heartbeat import serve
from drivers.tsp.link import EventReceived, HostLink, LinkTimers, SessionChanged
from drivers.tsp.options import TspOptions
from drivers.tsp.payload import PayloadError
from drivers.tsp.session import EventPump, call
from drivers.tsp.stats import LinkStats

log = structlog.get_logger("tablectl.tsp")

#: The message set's IDENTIFY response.
IdentityT = TypeVar("IdentityT", bound=IdentityHead)
#: The message set's GET_STATUS (and PING) response.
StatusT = TypeVar("StatusT", bound=HasBootId)
#: One of the message set's events.
E = TypeVar("E")


class _Common(IntEnum):
    """The requests every TSP/1 message set numbers alike."""

    IDENTIFY = TYPE_IDENTIFY
    GET_STATUS = TYPE_GET_STATUS


class TspDriver(Device, Generic[IdentityT, StatusT]):
    """One TSP/1 device; a subclass opens its transport, sets it up and reads its events.

    ``decode_identity`` and ``decode_status`` parse the message set's IDENTIFY and GET_STATUS
    (and PING) responses: the link reads the boot id in them.
    """

    reports_health = True
    #: Whether events wait until the device is set up (an unapproved shuffler's are not trusted).
    events_wait_for_set_up: ClassVar[bool] = False
    #: What the health reports of a connection say of approval: True when only an approved
    #: device gets that far (the shuffler), None when the device is not approved at all.
    approved_when_online: ClassVar[bool | None] = None
    options: TspOptions

    def __init__(
        self,
        device_id: str,
        options: TspOptions,
        context: DeviceContext | None,
        decode_identity: Callable[[bytes], IdentityT],
        decode_status: Callable[[bytes], StatusT],
    ) -> None:
        super().__init__(device_id, options, context)
        self._decode_identity = decode_identity
        self._decode_status = decode_status
        self._link = HostLink(
            LinkTimers(options.response_timeout, options.max_retransmits),
            boot_id_reader(decode_identity, decode_status),
        )
        #: What the device said of itself at the last IDENTIFY.
        self.identity: IdentityT | None = None
        #: Its last GET_STATUS or PING response.
        self.last_status: StatusT | None = None
        self._link_client: LinkClient | None = None
        self._client: LinkClient | None = None  # while the device is set up: requests may go
        self._sink: InputSink | None = None
        self._ready = asyncio.Event()
        self._restart = asyncio.Event()
        self._session_boot: int | None = None
        #: Event frames too short for their type, dropped.
        self.bad_events = 0

    def restart_policy(self, default: RestartPolicy) -> RestartPolicy:
        """The backoff and failure count of the options."""
        o = self.options
        return RestartPolicy(o.backoff_base, o.backoff_cap, o.fail_after, stable_after=10.0)

    @property
    def stats(self) -> LinkStats:
        """Link statistics: CRC errors, NAKs, retransmits, round-trip times."""
        return self._link.stats

    @property
    def boot_id(self) -> int | None:
        """The device's current boot id."""
        return self._link.boot_id

    async def get_status(self) -> StatusT:
        """GET_STATUS."""
        status = self._decode_status(await self._call(_Common.GET_STATUS))
        self.last_status = status
        return status

    # ------------------------------------------------------------------ one connection

    async def run(self, sink: InputSink) -> None:
        """Connect, identify, set up, report online, then heartbeat until the connection ends."""
        self._sink = sink
        # One client for the driver's lifetime: events and session changes it queued survive a
        # reconnect, and so does the link's de-duplication state.
        if self._link_client is None:
            self._link_client = LinkClient(self._link)
        client = self._link_client
        self._session_boot = None
        transport = await self._open(client.data_received, client.connection_lost)
        client.attach(transport)
        gate = self._ready if self.events_wait_for_set_up else None
        pump = EventPump(client, self._on_event, self._on_session, gate=gate)
        consumer = asyncio.create_task(pump.run(), name=f"{self.device_id}:events")
        self._restart.clear()
        try:
            identity = self._decode_identity(await self._request(client, _Common.IDENTIFY))
            self.identity = identity
            self._session_boot = identity.boot_id
            await self._set_up(client, identity)
            self._client = client
            self._ready.set()
            detail = await self._go_online(identity)
            await self._report(Health.ONLINE, detail)
            await serve(
                client,
                self._report,
                consumer,
                name=self.device_id,
                interval=self.options.heartbeat_interval,
                max_failures=self.options.heartbeat_failures,
                restart=self._restart,
                on_response=self._on_ping,
            )
        finally:
            self._client = None
            self._ready.clear()
            try:
                # Not ``cancel(); await`` with CancelledError suppressed: a cancellation of this
                # connection landing meanwhile would be suppressed with it, and the supervisor
                # would connect again instead of stopping.
                await stop_tasks(consumer)
            finally:
                # An event half-way into the sink is finished, not dropped.
                await pump.finish()
                transport.close()
                await transport.wait_closed()
                client.detach()

    @abstractmethod
    async def _open(self, on_data: DataCallback, on_lost: LostCallback) -> ByteTransport:
        """Open the transport (a serial port, a USB device)."""

    @abstractmethod
    async def _set_up(self, client: LinkClient, identity: IdentityT) -> None:
        """Set the identified device up with requests on ``client`` (raise to refuse it)."""

    async def _go_online(self, identity: IdentityT) -> str:
        """Requests may go now: finish setting up; return the detail of the online report."""
        return ""

    @abstractmethod
    async def _on_event(self, item: EventReceived) -> None:
        """One event from the device: hand what it means to :meth:`_emit`."""

    def _decode_event(self, events: EventSet[E], item: EventReceived) -> E | UnknownEvent | None:
        """The event of a frame; None for one too short for its type, which is logged and
        dropped: it is acknowledged all the same, since the device would only send it again."""
        try:
            return events.decode(item.frame.type, item.frame.payload)
        except PayloadError as exc:
            self.bad_events += 1
            kind = item.frame.type
            log.error(f"{self.kind}.bad_event", device=self.device_id, type=kind, error=str(exc))
            return None

    def _on_ping(self, frame: Frame) -> None:
        if frame.type == TYPE_PING:
            with contextlib.suppress(PayloadError):
                self.last_status = self._decode_status(frame.payload)

    async def _on_session(self, change: SessionChanged) -> None:
        if change.previous is None:
            return
        log.warning(f"{self.kind}.rebooted", device=self.device_id, boot_id=change.boot_id)
        restart = self._session_boot is not None and change.boot_id != self._session_boot
        if restart:
            # The rebooted device is not set up (and new firmware takes effect at a reboot):
            # neither its events nor the application's requests pass until the next connection
            # has set it up again. Its events stay unacknowledged, so it sends them again then.
            self._client = None
            self._ready.clear()
        await self._emit(DeviceRebooted(utc_now(), self.device_id, change.boot_id))
        if restart:
            self._restart.set()

    # ------------------------------------------------------------------ plumbing

    async def _emit(self, item: DeviceInput) -> None:
        assert self._sink is not None, "inputs are made only while run() is connected"
        await self._sink(item)

    async def _report(self, health: Health, detail: str = "") -> None:
        approved = self.approved_when_online
        await self._emit(
            DeviceHealthChanged(utc_now(), self.device_id, health, approved, detail, self.kind)
        )

    async def _request(self, client: LinkClient, msg_type: IntEnum, payload: bytes = b"") -> bytes:
        return await call(client, msg_type, payload, msg_type.name)

    async def _call(self, msg_type: IntEnum, payload: bytes = b"") -> bytes:
        """A request of the application: only to a device that is set up."""
        client = self._client
        if client is None:
            health = self.supervisor.health if self.supervisor else None
            state = health.value if health else "not connected"
            raise DeviceNotReadyError(f"{self.device_id} is not available ({state})")
        return await self._request(client, msg_type, payload)
