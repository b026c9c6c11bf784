"""The asyncio MQTT 5 client every tablectl process speaks through: the packets of ``codec.py``
over an asyncio transport (TCP, or TLS from the standard library's ``ssl``).

Why its own: the pit takes every event of a floor, and with paho-mqtt a received message cost
more of its CPU than storing it (paho reads a packet a byte at a time and builds a property table,
a message object and a lock for each, benchmarks/pit-results.txt). Here a read takes every packet
the socket holds, a PUBLISH is a few slices of the buffer, and acknowledgements go out together.
What the daemon and the pit need from it, which no library's public API gave them together:

* **a message handed over without a task per message** (:meth:`Client.hand_over`, then
  :meth:`Client.acknowledged` for its PUBACK): the daemon publishes every event of a burst at
  once and waits for the last PUBACK only;
* **writing at once**: a message handed over is written before :meth:`Client.hand_over`
  returns, with whatever was queued before it (``write=False`` leaves it for :meth:`write`);
* **in order, within the broker's Receive Maximum** (MQTT 5.0, 4.9): QoS 1 messages past the
  number the broker takes unacknowledged wait, and whatever is handed over after them waits
  behind them;
* **manual acknowledgement** (``manual_ack``, :meth:`Client.ack`): the pit acknowledges a
  message only after committing it; the PUBACKs of one turn of the loop go in one write;
* **a connection cut without DISCONNECT** (:meth:`Client.drop`), so the broker publishes the
  Last Will;
* **reading at a pace** (``read_interval``): a process that takes many small messages and works
  on them in batches anyway (the pit) reads its socket on the ticks of ``read_interval``
  (:func:`controller.aio.next_tick`: the multiples of it, half to one and a half of it apart),
  every message waiting there at once; while a publish, a subscription or the connection waits
  for the broker's answer, it reads at once, and after a read of :data:`BACKLOG_READ` bytes or
  more (a session's backlog) it reads on;
* **Keep Alive** (3.1.2.10): a PINGREQ once nothing was sent or received for half the Keep
  Alive, the connection ended when its PINGRESP has not come within the Keep Alive.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import ssl
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from types import TracebackType
from typing import Any, Self

from controller.aio import next_tick
from controller.mqtt import codec
from controller.mqtt.codec import Message
from controller.mqtt.records import (
    Delivery,
    MqttCodeError,
    MqttError,
    Properties,
    SocketOption,
    SubscribeOptions,
    TlsSettings,
    Will,
)

#: Packet identifiers are 1-65535 (2.2.1).
_MIDS = 65535


#: A read of this many bytes or more is a backlog (a session's messages kept while the process
#: was away, or far more than a tick's worth): a client reading at a pace reads on at once, at
#: its own pace of work, rather than one read a tick (one read takes 256 KiB at most).
BACKLOG_READ = 64 * 1024


class Client:
    """One connection to a broker (MQTT 5), used as ``async with Client(...) as client``.

    A client connects once; for another connection, make another client.
    """

    def __init__(
        self,
        host: str,
        port: int,
        *,
        identifier: str = "",
        username: str | None = None,
        password: str | None = None,
        keepalive: int = 60,
        timeout: float = 10.0,
        tls: TlsSettings | None = None,
        socket_options: Sequence[SocketOption] = (),
        will: Will | None = None,
        clean_start: bool = True,
        properties: Properties | None = None,
        manual_ack: bool = False,
        read_interval: float = 0.0,
    ) -> None:
        self.host, self.port, self.keepalive, self.timeout = host, port, keepalive, timeout
        self._identifier, self._username, self._password = identifier, username, password
        self._will, self._clean_start, self._properties = will, clean_start, properties
        self._tls, self._socket_options = tls, tuple(socket_options)
        self._manual_ack, self._read_interval = manual_ack, read_interval
        self._loop: asyncio.AbstractEventLoop | None = None
        self._transport: asyncio.Transport | None = None
        self._decoder = codec.Decoder()
        self._out = bytearray()  # packets handed over, not yet given to the transport
        self._flush: asyncio.Handle | None = None  # a write at the end of this turn
        self._resume: asyncio.TimerHandle | None = None  # reading paused until it runs
        self._paused = False
        self._disconnecting = False
        self._connack: asyncio.Future[None] | None = None
        self._ended: asyncio.Future[None] | None = None
        self._next_mid = 0
        self._inflight: dict[int, Delivery] = {}  # QoS 1 sent, PUBACK not yet come
        self._waiting: deque[tuple[bytes, Delivery | None, int]] = deque()  # over the maximum
        self._send_maximum = _MIDS  # the broker's Receive Maximum (3.2.2.3.3)
        self._subscribes: dict[int, asyncio.Future[tuple[int, ...]]] = {}
        self._messages: asyncio.Queue[Message | None] = asyncio.Queue()
        self._sent_at = self._received_at = 0.0
        self._ping_since: float | None = None
        self._keepalive_timer: asyncio.TimerHandle | None = None

    # ------------------------------------------------------------------ connecting

    async def __aenter__(self) -> Self:
        await self.connect()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.disconnect()

    async def connect(self) -> None:
        """Connect and wait for the broker's CONNACK."""
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._connack, self._ended = loop.create_future(), loop.create_future()
        try:
            async with asyncio.timeout(self.timeout):
                context = None
                if self._tls is not None:  # loading certificates reads files: not on the loop
                    context = await loop.run_in_executor(None, _tls_context, self._tls)
                await loop.create_connection(
                    lambda: _Protocol(self),
                    self.host,
                    self.port,
                    ssl=context,
                    server_hostname=self.host if context is not None else None,
                )
                self._send(
                    codec.connect(
                        client_id=self._identifier,
                        keepalive=self.keepalive,
                        clean_start=self._clean_start,
                        username=self._username,
                        password=self._password,
                        will=self._will,
                        properties=self._properties,
                    )
                )
                self.write()
                await asyncio.wait(
                    (self._connack, self._ended), return_when=asyncio.FIRST_COMPLETED
                )
                if not self._connack.done():
                    raise _lost(self._ended)
                self._connack.result()
        except TimeoutError:
            self._abandon()
            raise MqttError(f"no answer from {self.host}:{self.port} in time") from None
        except (OSError, ValueError) as exc:  # refused, unreachable, TLS: ssl.SSLError too
            self._abandon()
            raise MqttError(f"cannot connect to {self.host}:{self.port}: {exc}") from None
        except (MqttError, asyncio.CancelledError):  # cancelled: no connection left behind
            self._abandon()
            raise
        self._arm_keepalive()

    async def disconnect(self) -> None:
        """Send DISCONNECT and wait until the connection has ended (at most ``timeout``)."""
        ended, transport = self._ended, self._transport
        if ended is not None and not ended.done() and transport is not None:
            self._disconnecting = True
            self._send(codec.disconnect())
            self.write()
            transport.close()  # after what is buffered has gone
            with contextlib.suppress(TimeoutError, MqttError):
                async with asyncio.timeout(self.timeout):
                    await asyncio.shield(ended)
        self._abandon()

    def drop(self) -> None:
        """Cut the TCP connection without DISCONNECT, so that the broker publishes the Will."""
        transport = self._transport
        if transport is not None:
            transport.abort()

    async def wait_lost(self) -> None:
        """Wait until the connection ends; raise why (nothing when it ended by
        :meth:`disconnect`)."""
        assert self._ended is not None, "not connected"
        await asyncio.shield(self._ended)

    # ------------------------------------------------------------------ publishing

    def hand_over(
        self,
        topic: str,
        payload: bytes,
        qos: int = 0,
        retain: bool = False,
        properties: Properties | None = None,
        *,
        write: bool = True,
    ) -> Delivery:
        """Hand a message over without waiting for its PUBACK (:meth:`acknowledged`); it is
        written at once, with whatever was queued before it, unless ``write`` is False (then
        it goes with the next :meth:`write`)."""
        self._check_open()
        mid = self._new_mid() if qos else 0
        packet = codec.publish(topic, payload, qos, retain, mid, properties)
        delivery = Delivery(mid)
        if self._waiting or (qos and len(self._inflight) >= self._send_maximum):
            self._waiting.append((packet, delivery if qos else None, mid))
        else:
            if qos:
                self._inflight[mid] = delivery
            self._send(packet)
        if write:
            self.write()
        return delivery

    async def acknowledged(self, delivery: Delivery) -> None:
        """Wait until a message handed over is done (QoS 1: the broker's PUBACK came)."""
        if delivery.is_published():
            return
        ended = self._ended
        if ended is not None and ended.done():
            raise _lost(ended)
        done = delivery.waiter = asyncio.get_running_loop().create_future()
        self._read_now()
        try:
            await self._answer(done)
        finally:
            delivery.waiter = None

    async def publish(
        self,
        topic: str,
        payload: bytes,
        qos: int = 0,
        retain: bool = False,
        properties: Properties | None = None,
    ) -> None:
        """Publish and wait until it is done (QoS 0: written; QoS 1: its PUBACK came). A QoS 1
        message is written at the end of this turn of the loop, with whatever else was
        published in it: many publishes gathered at once (the pit's storage confirmations) go
        in one write."""
        delivery = self.hand_over(topic, payload, qos, retain, properties, write=qos == 0)
        if qos:
            self.write_soon()
        await self.acknowledged(delivery)

    def send_now(self, topic: str, payload: bytes, *, retain: bool = False) -> None:
        """Send a QoS 0 message without waiting: it goes before whatever is published after
        it (packets are written in the order they are handed over)."""
        self.hand_over(topic, payload, 0, retain)

    def write(self) -> None:
        """Give the transport what was handed over; the transport writes what the socket
        takes now and the rest as it can (:meth:`want_write`)."""
        handle, self._flush = self._flush, None
        if handle is not None:
            handle.cancel()
        transport, out = self._transport, self._out
        if not out or transport is None or transport.is_closing():
            return
        transport.write(bytes(out))
        out.clear()
        self._sent_at = time.monotonic()

    def write_soon(self) -> None:
        """:meth:`write` at the end of this turn of the loop, once for all that asked."""
        if self._flush is None and self._loop is not None:
            self._flush = self._loop.call_soon(self.write)

    def want_write(self) -> bool:
        """Whether bytes handed over have not been written to the socket yet."""
        transport = self._transport
        if self._out or self._waiting:
            return True
        return transport is not None and transport.get_write_buffer_size() > 0

    def fileno(self) -> int:
        """The connection's socket (-1: none)."""
        transport = self._transport
        if transport is None:
            return -1
        sock = transport.get_extra_info("socket")
        return -1 if sock is None else int(sock.fileno())

    # ------------------------------------------------------------------ subscribing

    async def subscribe(
        self,
        topic: str,
        qos: int = 0,
        *,
        options: SubscribeOptions | None = None,
    ) -> tuple[int, ...]:
        """Subscribe and wait for the SUBACK; its reason codes (the QoS granted)."""
        options = options or SubscribeOptions(qos=qos)
        codes = await self._request(lambda mid: codec.subscribe(mid, topic, options))
        refused = [code for code in codes if code >= 0x80]
        if refused:
            raise MqttCodeError(refused[0], f"the broker refused the subscription to {topic}")
        return codes

    async def unsubscribe(self, topic: str) -> None:
        """Unsubscribe and wait for the UNSUBACK."""
        await self._request(lambda mid: codec.unsubscribe(mid, topic))

    async def _request(self, packet: Callable[[int], bytes]) -> tuple[int, ...]:
        self._check_open()
        mid = self._new_mid()
        done: asyncio.Future[tuple[int, ...]] = asyncio.get_running_loop().create_future()
        self._subscribes[mid] = done
        self._send(packet(mid))
        self.write()
        self._read_now()
        try:
            codes: tuple[int, ...] = await self._answer(done)
        finally:
            self._subscribes.pop(mid, None)
        return codes

    @property
    def messages(self) -> AsyncIterator[Message]:
        """The messages received, in order, until the connection ends (then its error)."""
        return self._received()

    async def _received(self) -> AsyncIterator[Message]:
        while True:
            message = await self._messages.get()
            if message is None:
                self._messages.put_nowait(None)  # every reader learns the end
                assert self._ended is not None
                if self._ended.exception() is not None:
                    raise _lost(self._ended)
                return
            yield message

    def ack(self, message: Message) -> None:
        """Acknowledge a message received with ``manual_ack`` (QoS 0 needs none). The
        acknowledgements of one turn of the loop are written together at its end."""
        if message.qos > 0 and self._transport is not None:
            self._send(codec.puback(message.mid))
            self.write_soon()

    # ------------------------------------------------------------------ waiting

    async def _answer(self, done: asyncio.Future[Any]) -> Any:
        """Wait for the broker's answer, the connection's end or ``timeout``, whichever first."""
        ended = self._ended
        assert ended is not None, "not connected"
        limit = None if self.timeout == math.inf else self.timeout
        try:
            async with asyncio.timeout(limit):
                await asyncio.wait((done, ended), return_when=asyncio.FIRST_COMPLETED)
        except TimeoutError:
            raise MqttError("the broker did not answer in time") from None
        if done.done():
            return done.result()
        raise _lost(ended)

    # ------------------------------------------------------------------ the connection's state

    def _check_open(self) -> None:
        ended, transport = self._ended, self._transport
        if ended is None:
            raise MqttError("not connected")
        if ended.done():
            raise _lost(ended)
        if transport is None or transport.is_closing():
            raise MqttError("the connection to the broker is lost")

    def _new_mid(self) -> int:
        """A Packet Identifier no packet awaiting its answer holds (2.2.1). A message waiting
        for a place is in neither dict, but every identifier given after it waits behind it:
        counting the waiting ones bounds the whole, so none comes round to it again."""
        if len(self._inflight) + len(self._waiting) + len(self._subscribes) >= _MIDS:
            raise MqttError("every Packet Identifier is in use")
        while True:
            self._next_mid = self._next_mid % _MIDS + 1
            mid = self._next_mid
            if mid not in self._inflight and mid not in self._subscribes:
                return mid

    def _send(self, packet: bytes) -> None:
        self._out += packet

    def _end(self, error: BaseException | None) -> None:
        """The connection ended (``error``: why, None for a DISCONNECT of ours)."""
        for timer in (self._keepalive_timer, self._resume, self._flush):
            if timer is not None:
                timer.cancel()
        self._keepalive_timer = self._resume = self._flush = None
        ended = self._ended
        if ended is not None and not ended.done():
            if error is None:
                ended.set_result(None)
            else:
                ended.set_exception(error)
                ended.exception()  # retrieved: a loss nobody waited for is not an error to log
            self._messages.put_nowait(None)
        connack = self._connack
        if connack is not None and not connack.done():
            connack.set_exception(error or MqttError("the connection ended"))
            connack.exception()

    def _abandon(self) -> None:
        """Close the transport, if any, at once."""
        transport, self._transport = self._transport, None
        if transport is not None:
            transport.abort()
        self._end(None if self._disconnecting else MqttError("the connection was closed"))

    def _fail(self, reason: int, error: MqttError) -> None:
        """End the connection on the broker's fault: DISCONNECT with ``reason`` (4.13.1), then
        close it."""
        transport = self._transport
        self._end(error)
        if transport is not None and not transport.is_closing():
            transport.write(codec.disconnect(reason))
            transport.close()

    # ------------------------------------------------------------------ the transport's calls

    def _made(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            for level, option, value in self._socket_options:
                with contextlib.suppress(OSError):
                    sock.setsockopt(level, option, value)

    def _data(self, data: bytes) -> None:
        self._received_at = time.monotonic()
        try:
            packets = self._decoder.feed(data)
        except codec.ProtocolError as exc:
            self._fail(exc.reason, exc)
            return
        for packet in packets:
            if type(packet) is Message:
                self._message(packet)
            else:
                self._control(packet)
        if self._flush is not None:
            self.write()  # what answering these queued (PUBACKs), in one write
        if self._read_interval > 0 and len(data) < BACKLOG_READ:
            self._pause()  # (a read this large is a backlog: the next is read at once)

    def _message(self, message: Message) -> None:
        self._messages.put_nowait(message)
        if message.qos and not self._manual_ack:
            self._send(codec.puback(message.mid))
            self.write_soon()

    def _control(self, packet: codec.Packet) -> None:
        if isinstance(packet, codec.Ack):
            if packet.kind == codec.PUBACK:
                self._puback(packet.mid, packet.reasons[0])
            else:
                done = self._subscribes.pop(packet.mid, None)
                if done is not None and not done.done():
                    done.set_result(packet.reasons)
        elif isinstance(packet, codec.PingResp):
            self._ping_since = None
        elif isinstance(packet, codec.ConnAck):
            self._connacked(packet)
        elif isinstance(packet, codec.Disconnect):
            words = packet.properties.reason_string
            said = f"the broker ended the connection{f' ({words})' if words else ''}"
            self._end(MqttCodeError(packet.reason, said))
            if self._transport is not None:
                self._transport.close()

    def _connacked(self, packet: codec.ConnAck) -> None:
        connack = self._connack
        if connack is None or connack.done():
            self._fail(codec.PROTOCOL_ERROR, MqttError("a second CONNACK (3.2)"))
            return
        if packet.reason >= 0x80:
            connack.set_exception(MqttCodeError(packet.reason, "the broker refused the connection"))
            return
        properties = packet.properties
        if properties.receive_maximum is not None:
            self._send_maximum = properties.receive_maximum
        if properties.server_keep_alive is not None:  # 3.2.2.3.14: the broker's value rules
            self.keepalive = properties.server_keep_alive
        connack.set_result(None)

    def _puback(self, mid: int, reason: int) -> None:
        delivery = self._inflight.pop(mid, None)
        if delivery is None:
            return  # not ours (a broker's repeat): nothing waits for it
        delivery.reason = reason
        waiter = delivery.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        self._release()

    def _release(self) -> None:
        """Send what waited for a free place among the unacknowledged, in order."""
        waiting = self._waiting
        while waiting:
            packet, delivery, mid = waiting[0]
            if delivery is not None:  # QoS 1: needs a free place
                if len(self._inflight) >= self._send_maximum:
                    break
                self._inflight[mid] = delivery
            waiting.popleft()
            self._send(packet)
        if self._out:
            self.write_soon()

    def _closed(self, exc: Exception | None) -> None:
        self._transport = None
        if self._disconnecting:
            self._end(None)
        elif exc is None:
            self._end(MqttError("the broker closed the connection"))
        else:
            self._end(MqttError(f"the connection broke: {exc}"))

    # ------------------------------------------------------------------ reading at a pace

    def _pause(self) -> None:
        """Stop reading for ``read_interval`` seconds (not while an answer is awaited)."""
        transport, loop = self._transport, self._loop
        if transport is None or loop is None or self._paused or transport.is_closing():
            return
        connack = self._connack
        if self._subscribes or (connack is not None and not connack.done()):
            return
        if any(d.waiter is not None for d in self._inflight.values()):
            return
        transport.pause_reading()
        self._paused = True
        # on the tick: the process's other timers due then (on the same grid) share the wake
        self._resume = loop.call_at(next_tick(loop.time(), self._read_interval), self._read_again)

    def _read_again(self) -> None:
        self._resume = None
        if self._paused:
            self._paused = False
            transport = self._transport
            if transport is not None and not transport.is_closing():
                transport.resume_reading()

    def _read_now(self) -> None:
        """An answer is awaited: read as soon as it comes."""
        handle = self._resume
        if handle is not None:
            handle.cancel()
            self._read_again()

    # ------------------------------------------------------------------ Keep Alive (3.1.2.10)

    def _arm_keepalive(self) -> None:
        loop = self._loop
        if self.keepalive > 0 and loop is not None:
            now = time.monotonic()
            self._sent_at = self._received_at = now
            self._keepalive_timer = loop.call_later(self.keepalive / 2, self._keepalive_due)

    def _keepalive_due(self) -> None:
        loop = self._loop
        if loop is None or self._transport is None:
            return
        now, half = time.monotonic(), self.keepalive / 2
        if self._ping_since is not None and now - self._ping_since >= self.keepalive:
            self._fail(0x8D, MqttError(f"no PINGRESP in {self.keepalive} s (Keep Alive)"))
            return
        if self._ping_since is None and now - min(self._sent_at, self._received_at) >= half:
            self._ping_since = now
            self._send(codec.PINGREQ_BYTES)
            self.write()
        self._keepalive_timer = loop.call_later(half, self._keepalive_due)


class _Protocol(asyncio.Protocol):
    """The transport's calls, handed to the client."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.client._made(transport)

    def data_received(self, data: bytes) -> None:
        self.client._data(data)

    def eof_received(self) -> bool | None:
        return False  # the broker has closed its side: close ours (connection_lost follows)

    def connection_lost(self, exc: Exception | None) -> None:
        self.client._closed(exc)


def _tls_context(tls: TlsSettings) -> ssl.SSLContext:
    """Verify the server always (its certificate; its name unless ``insecure``)."""
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=tls.ca_file)
    if tls.cert_file is not None:
        context.load_cert_chain(tls.cert_file, tls.key_file)
    context.check_hostname = not tls.insecure
    context.verify_mode = ssl.CERT_REQUIRED
    return context


def _lost(ended: asyncio.Future[None]) -> MqttError:
    error = ended.exception() if ended.done() else None
    if isinstance(error, MqttError):
        return error
    return MqttError("the connection to the broker ended")
