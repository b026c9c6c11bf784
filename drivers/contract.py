"""What every device driver is: the one contract between the daemon and a device.

Like python-can's ``BusABC``, one abstract base class that every backend subclasses, and a table
of backends by name (:mod:`drivers.registry`). The TSP/1 shuffler and readers, the PN532 reader,
the virtual table, the JSON-lines source and third-party plugins are all a :class:`Device`, and
the daemon (``controller/shell/``) sees nothing else. A device is

* **built from options**: ``options_model`` is the pydantic model of its config section
  (``extra="forbid"``, so a misspelt key is an error); :meth:`Device.from_options` validates
  with it (pydantic's ``ValidationError`` if wrong) and :meth:`Device.option_problems` lists
  every problem, one per key, which is what ``tablectl config check`` prints;
* **run one connection at a time**: :meth:`Device.run` connects, hands every input to the sink
  in order, and ends by raising :class:`~drivers.errors.DeviceError` when the connection ends.
  The sink returns once the input is journaled, so a device acknowledged only after it returned
  loses nothing in a crash. ``run`` does not reconnect: the one supervision loop
  (:mod:`drivers.supervisor`) calls it again *on the same object* after a backoff, and reports
  the device's health meanwhile;
* **asked where it is** (:meth:`Device.query`) and **described** (:meth:`Device.describe`);
* **told where the hand can change next** (:meth:`Device.expect`): a hint a reader may use to
  read those zones first;
* **commanded**, when it is a shuffler (:meth:`Device.shuffle`, :meth:`Device.dispense`,
  :meth:`Device.reveal`); the base class refuses them with
  :class:`~drivers.errors.DeviceCommandError`, as a reader does. A dispense of a group the
  device already dispensed raises :class:`~drivers.errors.AlreadyDoneError`: that is what makes
  a resend after a crash safe;
* **closed** (:meth:`Device.close`).

``docs/drivers.md`` ("Writing a driver") says the same for plugin authors.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, ValidationError

from controller.aio import stop_tasks
from controller.decks import DeckManifest
from controller.table.inputs import DeviceInput, Health, Zone
from controller.table.plan import DispenseRequest
from drivers.errors import DeviceCommandError
from drivers.supervisor import InputSink, RestartPolicy, Supervisor

#: What a device can do (``Device.capabilities``).
SHUFFLE = "shuffle"
DISPENSE = "dispense"
REVEAL = "reveal"
READ = "read"


@dataclass(frozen=True)
class DeviceStatus:
    """What a device says about itself when asked.

    ``groups`` are the group numbers of ``shuffle_id`` the device has dispensed, when it can
    tell; None when it cannot (then a resend relies on the device refusing duplicates).
    """

    online: bool
    shuffle_id: int | None = None
    groups: frozenset[int] | None = None
    detail: str = ""


@dataclass(frozen=True)
class DeviceContext:
    """What the daemon offers every device besides its options: the table and its deck."""

    table_id: str = ""
    manifest: DeckManifest | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


class AnyOptions(BaseModel):
    """The options of a driver that names no model: taken as they are, checked by the driver."""

    model_config = ConfigDict(extra="allow", frozen=True)


def pydantic_problems(model: type[BaseModel], options: Mapping[str, Any]) -> list[str]:
    """Validate ``options`` with ``model``; every problem as ``key: message``."""
    try:
        model.model_validate(dict(options))
    except ValidationError as exc:
        return [
            f"{'.'.join(str(p) for p in err['loc']) or '(options)'}: {err['msg']}"
            for err in exc.errors()
        ]
    return []


class Device(ABC):
    """A device as the daemon drives it (see the module docstring)."""

    #: The pydantic model of the options (the keys of ``[devices.NAME]`` beside ``driver``).
    options_model: ClassVar[type[BaseModel]] = AnyOptions
    #: What the device is, reported with its health: ``shuffler``, ``reader`` or ``""``.
    kind: ClassVar[str] = ""
    #: A frozenset of :data:`SHUFFLE`, :data:`DISPENSE`, :data:`REVEAL`, :data:`READ`.
    capabilities: ClassVar[frozenset[str]] = frozenset()
    #: True when ``run`` reports the device ``online`` itself (a DeviceHealthChanged of its own
    #: id); otherwise the supervisor reports it online with its first input after a restart.
    reports_health: ClassVar[bool] = False

    def __init__(
        self, device_id: str, options: BaseModel, context: DeviceContext | None = None
    ) -> None:
        self.device_id = device_id
        self.options = options
        self.context = context or DeviceContext()
        #: The supervisor running the device, once :meth:`supervise` made it.
        self.supervisor: Supervisor | None = None
        self._task: asyncio.Task[None] | None = None
        self._queue: asyncio.Queue[DeviceInput] | None = None

    @classmethod
    def from_options(
        cls, device_id: str, options: Mapping[str, Any], context: DeviceContext | None = None,
        **kwargs: Any,
    ) -> Self:  # fmt: skip
        """Build from a config section (pydantic's ValidationError when the options are wrong).

        Keyword arguments go to the constructor (a test's simulated USB bus, say).
        """
        return cls(device_id, cls.options_model.model_validate(dict(options)), context, **kwargs)

    @classmethod
    def option_problems(cls, options: Mapping[str, Any]) -> list[str]:
        """What is wrong with ``options``, one ``key: message`` each; empty when they are fine."""
        return pydantic_problems(cls.options_model, options)

    @classmethod
    def run_problems(cls, options: BaseModel) -> list[str]:
        """What running with these (valid) options would fail on here, ``key: message`` each:
        a file or directory they name that is missing or not writable. ``tablectl config
        check`` and ``tablectl run`` report them; a missing serial port is no such problem (the
        device may be plugged in later, and the supervisor waits for it)."""
        return []

    def restart_policy(self, default: RestartPolicy) -> RestartPolicy:
        """How the supervisor restarts this device (the daemon's, unless its options say)."""
        return default

    # ------------------------------------------------------------------ the contract

    @abstractmethod
    async def run(self, sink: InputSink) -> None:
        """One connection: every input to ``sink``, in order; raise DeviceError when it ends."""

    @abstractmethod
    async def query(self) -> DeviceStatus:
        """Ask the device where it is (raise DeviceError when it cannot answer)."""

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """Identity for the retained device topic: model, firmware, serial, ``approved``…"""

    async def shuffle(self, ref: int) -> None:
        """Start a shuffle (with its deck check); ``ref`` is the host's reference."""
        raise DeviceCommandError(f"{self.device_id} does not shuffle")

    async def dispense(self, shuffle_id: int, group: int, request: DispenseRequest) -> None:
        """Dispense ``request`` as group ``group`` of deck ``shuffle_id``."""
        raise DeviceCommandError(f"{self.device_id} does not dispense")

    async def reveal(self, shuffle_id: int) -> None:
        """Reveal the order of a retired deck (it arrives as a DeckRevealed input)."""
        raise DeviceCommandError(f"{self.device_id} has no deck")

    def expect(self, zones: frozenset[Zone] | None) -> None:  # noqa: B027 (a hint: optional)
        """The zones where the hand can change next (None: no hint). A reader that reads its
        zones one after another may read these first and the others less often; it must still
        read every zone (``controller/table/watch.py``)."""

    async def close(self) -> None:  # noqa: B027 (optional: most devices have nothing to release)
        """Release whatever outlives ``run`` (``run`` cleans up after itself when it ends)."""

    # ------------------------------------------------------------------ running on its own

    def supervise(self, sink: InputSink, default: RestartPolicy | None = None) -> Supervisor:
        """The supervisor that runs this device and reports to ``sink`` (run its ``run()``)."""
        self.supervisor = Supervisor(self, sink, self.restart_policy(default or RestartPolicy()))
        return self.supervisor

    async def start(self, sink: InputSink | None = None) -> None:
        """Run supervised in a background task; inputs go to ``sink``, or queue for
        :meth:`events` (tools, tests and deck enrollment run a device without the daemon)."""
        if self._task is not None:
            return
        if sink is None:
            queue = self._events_queue()

            async def enqueue(item: DeviceInput) -> None:
                queue.put_nowait(item)

            sink = enqueue
        else:
            self._queue = None
        supervisor = self.supervise(sink)
        self._task = asyncio.create_task(supervisor.run(), name=f"device {self.device_id}")

    async def stop(self) -> None:
        """Stop the background task (its connection closes) and close the device."""
        task, self._task = self._task, None
        try:
            if task is not None:
                await stop_tasks(task)  # a supervisor that failed fails the stop, once closed
        finally:
            await self.close()

    async def __aenter__(self) -> Self:
        """Start (without a sink, unless :meth:`start` already ran); stop at the end."""
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    async def wait_online(self, timeout: float | None = None) -> None:
        """Wait until the device is online (identified, approved and configured)."""
        if self.supervisor is None:
            raise RuntimeError(f"{self.device_id} is not running")
        await self.supervisor.wait_for(Health.ONLINE, timeout=timeout)

    def _events_queue(self) -> asyncio.Queue[DeviceInput]:
        if self._queue is None:
            if self._task is not None:
                raise RuntimeError(f"{self.device_id} hands its inputs to the sink it started with")
            self._queue = asyncio.Queue()
        return self._queue

    async def events(self) -> AsyncIterator[DeviceInput]:
        """Every input, in order (when started without a sink)."""
        queue = self._events_queue()
        while True:
            yield await queue.get()

    async def next_event(self) -> DeviceInput:
        """The next input (when started without a sink)."""
        return await self._events_queue().get()

    def pending_events(self) -> list[DeviceInput]:
        """The inputs produced and not yet taken, without waiting."""
        queue = self._events_queue()
        return [queue.get_nowait() for _ in range(queue.qsize())]
