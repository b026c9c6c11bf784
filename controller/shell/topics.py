"""The MQTT topics of one table (docs/mqtt.md)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Topics:
    """Every topic of table ``table`` under ``prefix``."""

    prefix: str
    table: str

    @property
    def base(self) -> str:
        """``{prefix}/{table}``."""
        return f"{self.prefix}/{self.table}"

    @property
    def status(self) -> str:
        """Retained birth and Last Will."""
        return f"{self.base}/status"

    @property
    def head(self) -> str:
        """Retained: the last event published and its place in the journal's hash chain."""
        return f"{self.base}/head"

    @property
    def events(self) -> str:
        """Every event's public view."""
        return f"{self.base}/events"

    @property
    def secure_events(self) -> str:
        """Every event's surveillance view (ACL-protected)."""
        return f"{self.base}/secure/events"

    @property
    def state(self) -> str:
        """Retained public snapshot of the table."""
        return f"{self.base}/state"

    def device(self, device_id: str) -> str:
        """Retained health and identity of one device."""
        return f"{self.base}/devices/{device_id}"

    def request(self, command: str = "+") -> str:
        """Dealer requests (``+`` subscribes to all)."""
        return f"{self.base}/request/{command}"

    def response(self, command: str) -> str:
        """Responses to dealer requests."""
        return f"{self.base}/response/{command}"

    def stream(self, stream: str) -> str:
        """The topic of an outbox stream (``public`` or ``secure``)."""
        return self.secure_events if stream == "secure" else self.events

    def command_of(self, topic: str) -> str | None:
        """The command verb of a request topic, or None for any other topic."""
        head = f"{self.base}/request/"
        if topic.startswith(head) and "/" not in topic[len(head) :]:
            return topic[len(head) :]
        return None
