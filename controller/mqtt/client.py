"""An asyncio MQTT 5 client on paho-mqtt's public API: every tablectl process speaks MQTT here.

paho-mqtt documents how to run its client in an event loop it does not own ("external event
loop support"): it says through ``on_socket_open``, ``on_socket_close``,
``on_socket_register_write`` and ``on_socket_unregister_write`` which socket to watch, and the
loop calls ``loop_read``, ``loop_write`` and, about once a second, ``loop_misc`` (keepalive).
:class:`Client` is that loop for asyncio, with what the daemon and the pit need that no
library's public API gives them together:

* **a message handed over without a task per message** (:meth:`Client.hand_over`, then
  :meth:`Client.acknowledged` for its PUBACK): the daemon publishes every event of a burst at
  once and waits for the last PUBACK only;
* **writing at once**: a message published from the event loop is written before
  :meth:`Client.hand_over` returns (paho asks for its socket to be watched for every packet it
  queues; watching it is left for a write that did not finish);
* **manual acknowledgement** (``manual_ack``, :meth:`Client.ack`): the pit acknowledges a
  message only after committing it;
* **a connection cut without DISCONNECT** (:meth:`Client.drop`), so the broker publishes the
  Last Will;
* **reading at a pace** (``read_interval``): a process that takes many small messages and works
  on them in batches anyway (the pit) reads its socket at most every ``read_interval`` seconds,
  every message waiting there at once, instead of one turn of the loop per message; while a
  publish, a subscription or the connection waits for the broker's answer, it reads at once.

paho connects with blocking calls (name lookup, TCP, TLS), so :meth:`Client.connect` runs that in
a thread; paho calls the socket callbacks from that thread then, and they hand over to the loop
thread-safely. Everything else runs on the loop's thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import select
import socket
import ssl
import threading
from collections.abc import AsyncIterator, Sequence
from types import TracebackType
from typing import Any, Self

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode
from paho.mqtt.subscribeoptions import SubscribeOptions

from controller.mqtt.records import (
    Message,
    MqttCodeError,
    MqttError,
    SocketOption,
    TlsSettings,
    Topic,
    Will,
)

#: Packets read in one turn of the loop at most when reading at a pace (then the loop's other
#: work, and the rest).
PACKETS_A_TURN = 1000


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
        self._read_interval = read_interval
        self._clean_start, self._properties, self._tls = clean_start, properties, tls
        self._socket_options = tuple(socket_options)
        self._paho = paho.Client(
            CallbackAPIVersion.VERSION2,
            client_id=identifier,
            protocol=paho.MQTTv5,
            reconnect_on_failure=False,
            manual_ack=manual_ack,
        )
        if username is not None:
            self._paho.username_pw_set(username, password)
        if will is not None:
            self._paho.will_set(will.topic, will.payload, will.qos, will.retain)
        self._paho.on_connect = self._on_connect
        self._paho.on_disconnect = self._on_disconnect
        self._paho.on_message = self._on_message
        self._paho.on_publish = self._on_publish
        self._paho.on_subscribe = self._on_subscribe
        self._paho.on_unsubscribe = self._on_unsubscribe
        self._paho.on_socket_open = self._on_socket_open
        self._paho.on_socket_close = self._on_socket_close
        self._paho.on_socket_register_write = self._on_socket_register_write
        self._paho.on_socket_unregister_write = self._on_socket_unregister_write
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._fd = -1
        self._resume: asyncio.TimerHandle | None = None  # reading paused until it runs
        self._handing_over = False
        self._disconnecting = False
        self._connack: asyncio.Future[None] | None = None
        self._ended: asyncio.Future[None] | None = None
        self._misc: asyncio.Task[None] | None = None
        self._publishes: dict[int, asyncio.Future[None]] = {}
        self._subscribes: dict[int, asyncio.Future[list[ReasonCode]]] = {}
        self._messages: asyncio.Queue[Message | None] = asyncio.Queue()

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
        self._loop, self._loop_thread = loop, threading.get_ident()
        self._connack, self._ended = loop.create_future(), loop.create_future()
        try:
            async with asyncio.timeout(self.timeout):
                await loop.run_in_executor(None, self._connect_blocking)
                await asyncio.shield(self._connack)
        except TimeoutError:
            self._abandon()
            raise MqttError(f"no answer from {self.host}:{self.port} in time") from None
        except (OSError, ValueError) as exc:  # refused, unreachable, TLS: ssl.SSLError too
            self._abandon()
            raise MqttError(f"cannot connect to {self.host}:{self.port}: {exc}") from None
        except MqttError:
            self._abandon()
            raise
        self._misc = loop.create_task(self._housekeeping(), name="mqtt-keepalive")

    def _connect_blocking(self) -> None:
        tls = self._tls
        if tls is not None:  # loading certificates reads files: not on the loop either
            self._paho.tls_set(
                ca_certs=tls.ca_file,
                certfile=tls.cert_file,
                keyfile=tls.key_file,
                cert_reqs=ssl.CERT_REQUIRED,
            )
            self._paho.tls_insecure_set(tls.insecure)
        self._paho.connect(
            self.host,
            self.port,
            self.keepalive,
            clean_start=self._clean_start,
            properties=self._properties,
        )

    async def disconnect(self) -> None:
        """Send DISCONNECT and wait until the connection has ended (at most ``timeout``)."""
        ended = self._ended
        if ended is not None and not ended.done() and self._paho.is_connected():
            self._disconnecting = True
            self._paho.disconnect()
            with contextlib.suppress(TimeoutError, MqttError):
                async with asyncio.timeout(self.timeout):
                    await asyncio.shield(ended)
        self._close_socket()
        await self._stop_housekeeping()

    def drop(self) -> None:
        """Cut the TCP connection without DISCONNECT, so that the broker publishes the Will."""
        sock = self._paho.socket()
        shutdown = getattr(sock, "shutdown", None)  # a plain or a TLS socket
        if shutdown is not None:
            with contextlib.suppress(OSError):
                shutdown(socket.SHUT_RDWR)

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
    ) -> paho.MQTTMessageInfo:
        """Hand a message to paho without waiting for its PUBACK (:meth:`acknowledged`); it is
        written at once, with whatever was queued before it, unless ``write`` is False (then
        it goes with the next :meth:`write`)."""
        self._handing_over = True
        try:
            info = self._paho.publish(topic, payload, qos, retain, properties)
        finally:
            self._handing_over = False
        if write:
            self.write()
        rc = info.rc
        if rc == paho.MQTT_ERR_SUCCESS and self._paho.socket() is None:
            rc = paho.MQTT_ERR_CONN_LOST  # queued, but the write found the connection gone
        if rc != paho.MQTT_ERR_SUCCESS:
            raise MqttCodeError(rc, "could not publish")
        return info

    async def acknowledged(self, info: paho.MQTTMessageInfo) -> None:
        """Wait until a message handed over is done (QoS 1: the broker's PUBACK came)."""
        if info.is_published():
            return
        ended = self._ended
        if ended is not None and ended.done():
            raise _lost(ended)
        done = asyncio.get_running_loop().create_future()
        self._publishes[info.mid] = done
        self._read_now()
        try:
            await self._answer(done)
        finally:
            self._publishes.pop(info.mid, None)

    async def publish(
        self,
        topic: str,
        payload: bytes,
        qos: int = 0,
        retain: bool = False,
        properties: Properties | None = None,
    ) -> None:
        """Publish and wait until it is done (QoS 1: its PUBACK)."""
        await self.acknowledged(self.hand_over(topic, payload, qos, retain, properties))

    def send_now(self, topic: str, payload: bytes, *, retain: bool = False) -> None:
        """Send a QoS 0 message without waiting: it goes before whatever is published after
        it (paho writes its packets in order)."""
        self.hand_over(topic, payload, 0, retain)

    def write(self) -> None:
        """Write what paho has queued; watch the socket while some of it is still to go."""
        loop, fd = self._loop, self._fd
        if loop is None or fd < 0 or self._paho.socket() is None:
            return  # no connection: paho has nothing to write to
        try:
            self._paho.loop_write()
        except Exception as exc:  # a write on a broken connection
            self._end(MqttError(f"the connection broke: {exc}"))
            loop.remove_writer(fd)
            return
        # Watched while some of it is still to go (the socket's buffer is full), and no longer
        # once it has gone: a watched socket with nothing to write wakes the loop on every turn.
        if self._paho.socket() is not None and self._paho.want_write():
            loop.add_writer(fd, self.write)
        else:
            loop.remove_writer(fd)

    def want_write(self) -> bool:
        """Whether paho holds bytes not written yet."""
        return self._paho.want_write()

    def fileno(self) -> int:
        """The connection's socket (-1: none)."""
        return self._fd

    # ------------------------------------------------------------------ subscribing

    async def subscribe(
        self,
        topic: str,
        qos: int = 0,
        *,
        options: SubscribeOptions | None = None,
    ) -> list[ReasonCode]:
        """Subscribe and wait for the SUBACK; its reason codes."""
        if options is not None:
            rc, mid = self._paho.subscribe(topic, options=options)
        else:
            rc, mid = self._paho.subscribe(topic, qos)
        if rc != paho.MQTT_ERR_SUCCESS or mid is None:
            raise MqttCodeError(rc, f"could not subscribe to {topic}")
        done: asyncio.Future[list[ReasonCode]] = asyncio.get_running_loop().create_future()
        self._subscribes[mid] = done
        self._read_now()
        try:
            codes: list[ReasonCode] = await self._answer(done)
        finally:
            self._subscribes.pop(mid, None)
        refused = [code for code in codes if code.is_failure]
        if refused:
            raise MqttCodeError(refused[0], f"the broker refused the subscription to {topic}")
        return codes

    async def unsubscribe(self, topic: str) -> None:
        """Unsubscribe and wait for the UNSUBACK."""
        rc, mid = self._paho.unsubscribe(topic)
        if rc != paho.MQTT_ERR_SUCCESS or mid is None:
            raise MqttCodeError(rc, f"could not unsubscribe from {topic}")
        done: asyncio.Future[list[ReasonCode]] = asyncio.get_running_loop().create_future()
        self._subscribes[mid] = done
        self._read_now()
        try:
            await self._answer(done)
        finally:
            self._subscribes.pop(mid, None)

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
        """Acknowledge a message received with ``manual_ack`` (QoS 0 needs none)."""
        if message.qos > 0:
            self._paho.ack(message.mid, message.qos)

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

    async def _housekeeping(self) -> None:
        """paho's keepalive and retries, about once a second, while connected."""
        while self._paho.loop_misc() == paho.MQTT_ERR_SUCCESS:
            await asyncio.sleep(1.0)

    async def _stop_housekeeping(self) -> None:
        task, self._misc = self._misc, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _end(self, error: BaseException | None) -> None:
        """The connection ended (``error``: why, None for a DISCONNECT of ours)."""
        ended = self._ended
        if ended is not None and not ended.done():
            if error is None:
                ended.set_result(None)
            else:
                ended.set_exception(error)
                ended.exception()  # retrieved: a loss nobody waited for is not an error to log
            self._messages.put_nowait(None)

    def _abandon(self) -> None:
        """A connection that was never made: stop watching its socket and close it."""
        self._close_socket()
        sock = self._paho.socket()
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.close()

    def _close_socket(self) -> None:
        loop, fd = self._loop, self._fd
        if self._resume is not None:
            self._resume.cancel()
            self._resume = None
        if loop is not None and fd >= 0:
            loop.remove_reader(fd)
            loop.remove_writer(fd)
        self._fd = -1

    # ------------------------------------------------------------------ paho's callbacks

    def _on_connect(
        self, _c: Any, _u: Any, _f: Any, reason: ReasonCode, _p: Properties | None
    ) -> None:
        connack = self._connack
        if connack is None or connack.done():
            return
        if reason.is_failure:
            connack.set_exception(MqttCodeError(reason, "the broker refused the connection"))
        else:
            connack.set_result(None)

    def _on_disconnect(
        self, _c: Any, _u: Any, _f: Any, reason: ReasonCode, _p: Properties | None
    ) -> None:
        connack = self._connack
        lost = MqttCodeError(reason, "the connection to the broker ended")
        if connack is not None and not connack.done():
            connack.set_exception(lost)
        self._end(None if self._disconnecting else lost)

    def _on_message(self, _c: Any, _u: Any, message: paho.MQTTMessage) -> None:
        self._messages.put_nowait(
            Message(
                Topic(message.topic),
                bytes(message.payload),
                message.qos,
                bool(message.retain),
                message.mid,
                message.properties,
            )
        )

    def _on_publish(
        self, _c: Any, _u: Any, mid: int, _r: ReasonCode, _p: Properties | None
    ) -> None:
        done = self._publishes.pop(mid, None)  # a PUBACK may come before anyone waits for it
        if done is not None and not done.done():
            done.set_result(None)

    def _on_subscribe(
        self, _c: Any, _u: Any, mid: int, codes: list[ReasonCode], _p: Properties | None
    ) -> None:
        done = self._subscribes.pop(mid, None)
        if done is not None and not done.done():
            done.set_result(codes)

    def _on_unsubscribe(
        self, _c: Any, _u: Any, mid: int, codes: list[ReasonCode], _p: Properties | None
    ) -> None:
        self._on_subscribe(_c, _u, mid, codes, _p)

    def _on_socket_open(self, _c: Any, _u: Any, sock: Any) -> None:
        for level, option, value in self._socket_options:
            sock.setsockopt(level, option, value)
        self._on_loop(self._watch, sock.fileno())

    def _watch(self, fd: int) -> None:
        assert self._loop is not None
        self._fd = fd
        self._loop.add_reader(fd, self._readable)

    def _readable(self) -> None:
        paced = self._read_interval > 0
        try:
            for _ in range(PACKETS_A_TURN if paced else 1_000_000):
                rc = self._paho.loop_read()
                sock = self._paho.socket()
                if rc != paho.MQTT_ERR_SUCCESS or sock is None:
                    break
                # a TLS socket may hold decrypted bytes the next epoll will not report
                pending = getattr(sock, "pending", None)
                if pending is not None and pending() > 0:
                    continue
                # paced: on to the next packet while the socket holds more (paho reads one)
                if not paced or not select.select((sock,), (), (), 0)[0]:
                    break
            else:  # a turn's worth read: the rest on the next turn, the loop's others between
                return
        except Exception as exc:  # a read on a broken connection
            self._end(MqttError(f"the connection broke: {exc}"))
            self._close_socket()
            return
        if paced:
            self._pause()

    def _pause(self) -> None:
        """Stop reading for ``read_interval`` seconds (not while an answer is awaited)."""
        loop, fd = self._loop, self._fd
        if loop is None or fd < 0 or self._resume is not None:
            return
        connack = self._connack
        if self._publishes or self._subscribes or (connack is not None and not connack.done()):
            return
        loop.remove_reader(fd)
        self._resume = loop.call_later(self._read_interval, self._read_again, fd)

    def _read_again(self, fd: int) -> None:
        self._resume = None
        if self._loop is not None and self._fd == fd:  # the same connection
            self._loop.add_reader(fd, self._readable)

    def _read_now(self) -> None:
        """An answer is awaited: read as soon as it comes."""
        handle = self._resume
        if handle is not None:
            handle.cancel()
            self._read_again(self._fd)

    def _on_socket_close(self, _c: Any, _u: Any, _sock: Any) -> None:
        # paho calls this before it closes the socket: stop watching it now, on the loop
        if threading.get_ident() == self._loop_thread:
            self._closed()
        else:
            self._on_loop(self._closed)

    def _closed(self) -> None:
        self._close_socket()
        self._end(None if self._disconnecting else MqttError("the broker closed the connection"))

    def _on_socket_register_write(self, _c: Any, _u: Any, _sock: Any) -> None:
        if self._handing_over:
            return  # hand_over writes before it returns
        self._on_loop(self.write)

    def _on_socket_unregister_write(self, _c: Any, _u: Any, _sock: Any) -> None:
        return  # write() stops watching once paho has nothing left to write

    def _on_loop(self, fn: Any, *args: Any) -> None:
        """Run ``fn`` on the loop: now on the loop's thread, else (paho connecting in its thread)
        as soon as the loop can."""
        loop = self._loop
        if loop is None:
            return
        if threading.get_ident() == self._loop_thread:
            loop.call_soon(fn, *args)
        else:
            loop.call_soon_threadsafe(fn, *args)


def _lost(ended: asyncio.Future[None]) -> MqttError:
    error = ended.exception()
    if isinstance(error, MqttError):
        return error
    return MqttError("the connection to the broker ended")
