"""The errors all simulators share: a scenario file not fit to use, a request the device refused."""

from __future__ import annotations

from drivers.tsp.common import ErrorCode


class ScenarioError(ValueError):
    """A scenario file (or one of its steps) that cannot be used; the message names the file,
    the step or the key at fault."""


class RefusedError(Exception):
    """The simulated device refused a request; ``detail`` says why.

    ``code`` is the ERROR a TSP/1 device answers a host's request with. A refusal seen through a
    simulator's control channel (the rig's dealer at the shuffler's keypad) comes without one:
    only the reason crosses the socket.
    """

    def __init__(self, code: ErrorCode | None, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail
