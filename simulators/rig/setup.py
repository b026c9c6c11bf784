"""What the rig builds: the table it runs, the reader's antennas, and the daemon's config.

One TSP/1 reader serves the whole table: an antenna under each of the ten seats, the board, the
burn, the muck and the shuffler's input. The daemon's config is generated for each run: the
table (from a scenario or the demo), the shuffler and the reader on the simulators' links, the
broker (or none) and a journal of its own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from controller.table.inputs import Zone
from simulators.rig.broker import Login

ReaderKind = Literal["tsp", "feig"]

SHUFFLER = "shuffler"
READER = "reader"

#: Antenna number → zone, for the rig's reader.
ANTENNAS: dict[int, str] = {
    **{seat - 1: f"seat:{seat}" for seat in range(1, 11)},
    10: "board",
    11: "burn",
    12: "muck",
    13: "shuffler_in",
}
ZONE_ANTENNA: dict[Zone, int] = {Zone.parse(zone): antenna for antenna, zone in ANTENNAS.items()}
#: The number of the rig's first antenna on each reader (a FEIG multiplexer counts from 1).
FIRST_ANTENNA: dict[str, int] = {"tsp": 0, "feig": 1}
#: The FEIG readers on the rig's line (COM-ADRs): eight antennas each, so two for fourteen zones.
FEIG_READERS = (1, 2)
FEIG_OUTPUTS = 8


def feig_antenna(line_antenna: int) -> tuple[int, int]:
    """The FEIG reader (COM-ADR) and ANT_NR of the rig's line antenna ``line_antenna`` (1…)."""
    index, output = divmod(line_antenna - 1, FEIG_OUTPUTS)
    return FEIG_READERS[index], output + 1


@dataclass(frozen=True)
class TableSetup:
    """The table the daemon runs (the ``[table]`` section)."""

    id: str
    stacks: Mapping[int, int]
    button: int
    blinds: tuple[int, int] = (1, 2)
    ante: int = 0
    profile: str = "rrop-cash"
    house_rules: Mapping[str, Any] = field(default_factory=dict)
    deck: str = "house-a"
    settle: float = 3.0
    id_policy: Literal["withhold", "live"] = "withhold"
    dispense: Literal["host", "dealer"] = "dealer"  # host: the daemon asks for every group


@dataclass(frozen=True)
class RigPaths:
    """Where the rig's pieces meet: device links, control sockets, the journal, the console."""

    directory: Path  # the table's files: its config, journal and logs
    bench: Path  # the simulators' links and control sockets
    sockets: Path  # the table's own sockets (Unix socket paths must be short)

    @property
    def shuffler_link(self) -> Path:
        """The shuffler simulator's pty link."""
        return self.bench / "shuffler.tty"

    @property
    def shuffler_control(self) -> Path:
        """The shuffler simulator's control socket."""
        return self.bench / "shuffler.ctl"

    @property
    def reader_link(self) -> Path:
        """The reader simulator's pty link."""
        return self.bench / "reader.tty"

    @property
    def reader_control(self) -> Path:
        """The reader simulator's control socket."""
        return self.bench / "reader.ctl"

    @property
    def console(self) -> Path:
        """The daemon's local console socket."""
        return self.sockets / "console.sock"

    @property
    def notify(self) -> Path:
        """The socket the daemon reports READY=1 on."""
        return self.sockets / "notify"

    @property
    def config(self) -> Path:
        """The generated daemon config."""
        return self.directory / "table.toml"

    @property
    def journal(self) -> Path:
        """The daemon's journal."""
        return self.directory / "journal.sqlite"


def toml_value(value: Any) -> str:
    """A TOML value for a scalar, a list or a mapping (inline table)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid TOML basic string
    if isinstance(value, Mapping):
        items = ", ".join(f"{json.dumps(str(k))} = {toml_value(v)}" for k, v in value.items())
        return "{ " + items + " }" if items else "{}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML for {type(value).__name__}")


def _reader_options(reader: ReaderKind, paths: RigPaths) -> list[str]:
    port = f"port = {toml_value(str(paths.reader_link))}"
    if reader == "feig":
        # The FEIG reader does not debounce: the driver does, and arbitrates the crosstalk the
        # simulator is started with (the defaults: two sweeps to arrive, three to depart).
        return [
            'driver = "feig-isc"',
            port,
            "scan_period_ms = 4",
            "response_timeout = 0.3",
            "reconnect_min = 0.05",
            "reconnect_max = 0.5",
        ]
    return [
        'driver = "tsp-reader"',
        port,
        # One read asserts a tag and one clean miss releases it: the simulated antennas do not
        # flap unless told to, and the rig waits for every edge.
        "scan_period_ms = 4",
        "arrive_n = 1",
        "depart_n = 1",
        "snapshot_ms = 1000",
        "heartbeat_interval = 0.5",
        "backoff_base = 0.05",
        "backoff_cap = 0.5",
    ]


def daemon_config(
    setup: TableSetup,
    paths: RigPaths,
    broker: tuple[str, int] | None,
    *,
    prefix: str = "tables",
    keyring: Path | None = None,
    login: Login | None = None,
    reader: ReaderKind = "tsp",
) -> str:
    """The daemon's config for ``setup`` on the rig's devices (the TSP/1 reader, or the FEIG
    reader: ``reader = "feig"``)."""
    table = {
        "id": setup.id,
        "profile": setup.profile,
        "house_rules": dict(setup.house_rules),
        "stacks": {str(seat): chips for seat, chips in setup.stacks.items()},
        "button": setup.button,
        "blinds": list(setup.blinds),
        "ante": setup.ante,
        "deck": setup.deck,
        "shuffler": SHUFFLER,
        "dispense": setup.dispense,
        "settle": setup.settle,
    }
    lines = ["[table]", *(f"{key} = {toml_value(value)}" for key, value in table.items())]
    lines += [
        "",
        f"[devices.{SHUFFLER}]",
        'driver = "tsp-shuffler"',
        f"port = {toml_value(str(paths.shuffler_link))}",
        f"id_policy = {toml_value(setup.id_policy)}",
        "heartbeat_interval = 0.5",
        "backoff_base = 0.05",
        "backoff_cap = 0.5",
        "",
        f"[devices.{READER}]",
        *_reader_options(reader, paths),
    ]
    for antenna, zone in ANTENNAS.items():
        number = antenna + FIRST_ANTENNA[reader]
        lines += ["", f"[[devices.{READER}.antennas]]"]
        if reader == "feig":
            com_adr, number = feig_antenna(number)
            lines.append(f"reader = {com_adr}")
        lines += [f"antenna = {number}", f"zone = {toml_value(zone)}"]
    # The rig's dealer is a program: it sends requests faster than a person at a table does.
    lines += ["", "[security]", "rate_per_key = 1000.0", "rate_per_key_burst = 1000.0"]
    lines += ["rate_total = 2000.0", "rate_total_burst = 2000.0"]
    if keyring is not None:
        lines.append(f"keyring = {toml_value(str(keyring))}")
    else:
        lines.append("require_signed = false")
    lines += ["", "[broker]"]
    if broker is None:
        lines.append("enabled = false")
    else:
        host, port = broker
        lines += [
            f"host = {toml_value(host)}",
            f"port = {port}",
            f"prefix = {toml_value(prefix)}",
            f"client_id = {toml_value(f'tablectl-{prefix}-{setup.id}-{paths.directory.name}')}",
            "keepalive = 5",
            "reconnect_min = 0.05",
            "reconnect_max = 1.0",
        ]
        if login is not None:
            lines += [
                f"username = {toml_value(login.username)}",
                f"password_file = {toml_value(str(login.password_file))}",
            ]
    lines += [
        "",
        "[journal]",
        f"path = {toml_value(str(paths.journal))}",
        "",
        "[log]",
        'format = "json"',
        'level = "info"',
        "",
        "[daemon]",
        f"console = {toml_value(str(paths.console))}",
        "device_restart_min = 0.05",
        "device_restart_max = 0.5",
        "shutdown_step = 2.0",
        "",
    ]
    return "\n".join(lines)
