"""The station's views of whole hands, made by the core itself: an automatic dealer plays random
hands into the pure core (simulators/autoplay.py) and after each input the daemon's view of the
table (controller/shell/watch_view.py) goes through a real :class:`Station` as the watch would
bring it, so each view is what the station's pages would be given at that moment.

No daemon and no socket: the station's link is its real :class:`DaemonLink`, its view set as
the watch sets it.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from controller.config import StationSection
from controller.shell.merge_patch import without_nulls
from controller.shell.watch_view import VIEW_SCHEMA, table_view
from controller.signing import new_key
from controller.station.roster import new_person
from controller.station.settings import StationSettings
from controller.station.station import Station
from controller.table.events import TableEvent
from controller.table.inputs import Input
from controller.table.state import TableState
from simulators.autoplay import AutoDealer, Style, random_table

#: A dealer of the tests (the roster is not read: the session is made by the desk).
ANN = new_person("ann", "Ann Example", ["dealer"], [], "1234")


def station(directory: Path) -> Station:
    """A station whose link is not connected (its view is given by :func:`show`)."""
    private, _ = new_key()
    settings = StationSettings(
        "R",
        StationSection(),
        directory / "console.sock",
        directory / "roster.toml",
        directory / "station.key",
        "station",
        private,
        None,
    )
    return Station(settings)


def show(at: Station, view: dict[str, Any]) -> None:
    """The watch brought ``view``: the station has it, connected."""
    at.link.view = view
    at.link.connected = True
    at.link.problem = None
    at.changed()


class Recording(AutoDealer):
    """An automatic dealer that keeps the daemon's view, and the core's state, after every
    input."""

    views: list[dict[str, Any]]
    states: list[TableState]

    async def feed(self, event: Input) -> list[TableEvent]:
        events = await super().feed(event)
        self.views.append(daemon_view(self, len(self.run.events)))
        if hasattr(self, "states"):
            self.states.append(self.run.state)
        return events


def daemon_view(dealer: AutoDealer, seq: int) -> dict[str, Any]:
    """The daemon's whole view of the dealer's table (as controller/shell/daemon_watch.py)."""
    view = {
        "schema": VIEW_SCHEMA,
        "epoch": "e1",
        "seq": seq,
        "table": table_view(dealer.run.state),
        "devices": {"shuffler": {"health": "online", "approved": True}},
        "link": {"broker": "up", "accepting": True, "alarms": []},
    }
    made: dict[str, Any] = without_nulls(view)
    return made


def hand_views(seed: int, hands: int = 2, style: Style | None = None) -> Iterator[dict[str, Any]]:
    """The daemon's views through ``hands`` random hands at a random table of ``seed``."""
    for view, _ in hand_states(seed, hands, style):
        yield view


def hand_states(
    seed: int,
    hands: int = 2,
    style: Style | None = None,
    house_rules: dict[str, Any] | None = None,
) -> Iterator[tuple[dict[str, Any], TableState]]:
    """The daemon's views, and the core's states they were made of, through ``hands`` random
    hands at a random table of ``seed`` (``house_rules``: the profile's overrides)."""
    rng = random.Random(seed)
    table = random_table(rng)
    if house_rules:
        meta = table.scenario.model_copy(update={"house_rules": house_rules})
        table = table.model_copy(update={"scenario": meta})
    dealer = Recording(table, rng, style or Style())
    dealer.views = []
    dealer.states = []
    for _ in range(hands):
        if not dealer.play_hand():
            break
    yield from zip(dealer.views, dealer.states, strict=True)
