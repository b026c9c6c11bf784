"""Link statistics: what field support needs to tell a flaky cable from a flaky device."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(slots=True)
class LinkStats:
    """Counters of one end of a TSP/1 link (never reset while the process runs)."""

    frames_sent: int = 0
    frames_received: int = 0
    crc_errors: int = 0
    framing_errors: int = 0
    dropped_bytes: int = 0
    naks_sent: int = 0
    naks_received: int = 0
    retransmits: int = 0
    requests: int = 0
    request_failures: int = 0
    duplicate_responses: int = 0
    events: int = 0
    duplicate_events: int = 0
    rtt_last: float | None = None
    rtt_min: float | None = None
    rtt_max: float | None = None
    rtt_avg: float | None = None

    def record_rtt(self, rtt: float) -> None:
        """Fold one request round trip (seconds) into the RTT figures (EWMA, like TCP's SRTT)."""
        self.rtt_last = rtt
        self.rtt_min = rtt if self.rtt_min is None else min(self.rtt_min, rtt)
        self.rtt_max = rtt if self.rtt_max is None else max(self.rtt_max, rtt)
        self.rtt_avg = rtt if self.rtt_avg is None else self.rtt_avg + (rtt - self.rtt_avg) / 8

    def as_dict(self) -> dict[str, int | float | None]:
        """The counters as a plain dict (for logs and the device status topic)."""
        return asdict(self)
