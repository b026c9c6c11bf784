"""What every TSP/1 message set does with an event frame: decode it by its type number.

Each message set lists its event classes in an :class:`EventSet`; a type the set does not list
comes back as :class:`UnknownEvent`, so a newer device never breaks an older host.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

E = TypeVar("E")
E_co = TypeVar("E_co", covariant=True)


@dataclass(frozen=True, slots=True)
class UnknownEvent:
    """An event type this host does not know (acknowledged and reported, never fatal)."""

    type: int
    payload: bytes


class EventClass(Protocol[E_co]):
    """An event's class: its type number and how its payload is decoded."""

    @property
    def TYPE(self) -> int: ...  # noqa: N802 (the class constant every message class has)

    def decode(self, payload: bytes, /) -> E_co: ...


class EventSet(Generic[E]):
    """The events of one message set, by type number."""

    def __init__(self, *classes: EventClass[E]) -> None:
        self.classes: dict[int, EventClass[E]] = {cls.TYPE: cls for cls in classes}

    def decode(self, msg_type: int, payload: bytes) -> E | UnknownEvent:
        """The event in a frame; raise PayloadError when its payload is too short."""
        cls = self.classes.get(msg_type)
        if cls is None:
            return UnknownEvent(msg_type, payload)
        return cls.decode(payload)
