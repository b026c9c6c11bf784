"""The pit's config: one TOML file, validated with pydantic, overridable from the environment.

.. code-block:: toml

    [pit]
    id = "pit-1"                      # this process: its MQTT client id and replay topic
    share_group = "pit"               # every pit process of the floor shares the events

    [broker]                          # as the table's [broker]
    host = "pit-broker.local"
    username = "pit"
    password_file = "/etc/tablectl/pit-broker.password"

    [store]
    url = "sqlite:////var/lib/tablectl/pit.sqlite"   # or "postgresql://pit@db/pit"

    [web]
    listen = "127.0.0.1:8080"

    [security]
    key = "/etc/tablectl/pit.key"     # signs replay requests (role pit in the tables' keyrings)

    [retention]                       # PostgreSQL: months kept online; older ones archived
    events_months = 13
    hands_months = 37
    archive_dir = "/var/lib/tablectl/pit-archive"

Every key can be overridden by ``TABLECTL_<SECTION>__<KEY>`` (``TABLECTL_PIT__ID=pit-2``), so
several processes can share one file.
"""

from __future__ import annotations

import ipaddress
import tomllib
import zoneinfo
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from controller.config import (
    ENV_PREFIX,
    BrokerSection,
    ConfigError,
    LogSection,
    _format,
    _Section,
    config_text,
)
from controller.credentials import expand_credentials
from controller.pit.approved_builds import ApprovedBuildsError, load_approved_builds
from controller.signing import SigningError, load_private_key

DEFAULT_PIT_CONFIG = Path("/etc/tablectl/pit.toml")
#: the pit's config when ``--config`` is not given (docs/cli.md)
CONFIG_ENV = "TABLECTL_PIT_CONFIG"
LEVEL = r"^[A-Za-z0-9_.-]{1,64}$"  # a plain MQTT topic level


class PitSection(_Section):
    """This pit process and the floor it belongs to."""

    id: str = Field(
        default="pit-1",
        pattern=LEVEL,
        description="this process (unique on the floor): MQTT client id pit-<id>, replay topic",
    )
    share_group: str = Field(
        default="pit", pattern=LEVEL, description="the shared subscription's group"
    )
    secure: bool = Field(
        default=False,
        description="also ingest the secure stream (hole cards): needs surveillance credentials",
    )
    session_expiry: int = Field(
        default=86_400,
        ge=3600,
        description="seconds the broker keeps this process's session (and its messages) while "
        "it is away",
    )
    receive_maximum: int = Field(
        default=1000, ge=10, le=65535, description="messages in flight to this process, unacked"
    )
    batch: int = Field(default=500, ge=1, le=20_000, description="messages per commit, at most")
    # A commit costs much the same whatever its size (its statements, the store thread's
    # turn, the acknowledgements' write: some 3 ms of CPU at a floor's pace, where a message
    # costs about 0.12 ms): at 130 events a second per process, 0.3 s costs 182-192 µs an
    # event where 0.2 s costs 218-238 and 0.4 s 174-185, and leaves an event well within a
    # second of its table, p99 ~0.3 s (benchmarks/pit-results.txt, 2026-12-05 "batch_wait").
    batch_wait: float = Field(
        default=0.3, gt=0, le=5, description="seconds a message waits for others to commit with"
    )
    confirm: bool = Field(
        default=True,
        description="tell each table how far its journal is stored (the signed stored request); "
        "false for a pit that is not the tables' record (a copy, a test): a table may prune "
        "what a pit confirmed",
    )
    confirm_interval: float = Field(
        # a table needs the confirmation only to prune closed hands, which it keeps far longer:
        # 30 s rather than 5 s costs it nothing and the floor a sixth of the signed messages
        default=30.0,
        ge=0.1,
        le=3600,
        description="seconds between two stored confirmations to one table, at least",
    )
    approved_builds: Path | None = Field(
        default=None,
        description="the builds of tablectl the tables may run (a TOML list of [[build]] "
        "version and record_sha256, as `tablectl version --wheel` prints): a table running "
        "another gets the build.unapproved alarm; none: no build is judged",
    )


class StoreSection(_Section):
    """Where the events go: SQLite (one file) or PostgreSQL."""

    url: str = Field(
        default="sqlite:////var/lib/tablectl/pit.sqlite",
        description="sqlite:///RELATIVE, sqlite:////ABSOLUTE or postgresql://user@host/db",
    )

    @field_validator("url")
    @classmethod
    def _scheme(cls, url: str) -> str:
        if not url.startswith(("sqlite:///", "postgresql://", "postgres://")):
            raise ValueError("sqlite:///PATH or postgresql://… (psycopg connection URL)")
        return url


class WebSection(_Section):
    """The HTTP API and the floor's web console (docs/console.md)."""

    enabled: bool = Field(default=True, description="false: an ingest-only process")
    listen: str = Field(default="127.0.0.1:8080", pattern=r"^[^:]*:\d{1,5}$")
    session_hours: float = Field(
        default=12.0, gt=0, le=24 * 30, description="hours a login lasts (a shift, by default)"
    )
    lockout_attempts: int = Field(
        default=5,
        ge=1,
        le=1000,
        description="wrong passwords in a row for one user from one client address before each "
        "further try from that address waits (1 s, 2 s, 4 s …)",
    )
    lockout_minutes: float = Field(
        default=15.0,
        gt=0,
        le=24 * 60,
        description="the longest wait, in minutes, between two tries of a user's password from "
        "one address",
    )
    trusted_proxies: list[str] = Field(
        default_factory=list,
        description="addresses (or networks) of reverse proxies whose X-Forwarded-For names the "
        "client; empty: the pit is reached directly and the peer's address is the client's",
    )
    secure_cookie: bool = Field(
        default=False,
        description="send the session cookie over HTTPS only (true behind a TLS proxy)",
    )
    ruling_timeout: float = Field(
        default=10.0, gt=0, le=120, description="seconds to wait for a table to answer a ruling"
    )
    header_timeout: float = Field(
        default=10.0,
        gt=0,
        le=300,
        description="seconds a connection has to send a complete request head (from its opening, "
        "or from the end of the previous answer): a slower one is closed",
    )
    keepalive_timeout: int = Field(
        default=5,
        ge=1,
        le=300,
        description="seconds an idle connection is kept open after an answer",
    )
    streams_per_session: int = Field(
        default=4,
        ge=1,
        le=10_000,
        description="live streams one login session may hold: another ends its oldest",
    )
    streams_per_user: int = Field(
        default=8,
        ge=1,
        le=10_000,
        description="live streams one user may hold over all their sessions: another ends the "
        "oldest",
    )
    streams_total: int = Field(
        default=200,
        ge=1,
        le=100_000,
        description="live streams this pit process serves at once: another is refused (429)",
    )
    live_interval: float = Field(
        default=0.25,
        ge=0,
        le=60,
        description="seconds between two updates of one live page, at least (changes meanwhile "
        "go out together)",
    )
    live_reread: float = Field(
        default=10.0,
        ge=0.5,
        le=3600,
        description="seconds between two re-reads of every live page, whatever the other pit "
        "processes of the store announced (a safety net for an announcement lost)",
    )
    stream_write_timeout: float = Field(
        default=30.0,
        gt=0,
        le=3600,
        description="seconds a live stream may wait for its reader to take what was sent: "
        "longer, and the connection is closed",
    )
    time_zone: str = Field(
        default="",
        description="the floor's time zone, the console's times are written in (an IANA name "
        "such as Europe/Berlin); empty: the host's",
    )

    @field_validator("trusted_proxies")
    @classmethod
    def _addresses(cls, proxies: list[str]) -> list[str]:
        for proxy in proxies:
            try:
                if "/" in proxy:
                    ipaddress.ip_network(proxy)
                else:
                    ipaddress.ip_address(proxy)
            except ValueError:
                raise ValueError(
                    f"{proxy!r}: an IP address, or a network such as 10.0.0.0/8"
                ) from None
        return proxies

    @property
    def host(self) -> str:
        """The address to listen on."""
        return self.listen.rpartition(":")[0] or "0.0.0.0"  # noqa: S104 (":8080": every address)

    @property
    def port(self) -> int:
        """The port to listen on."""
        return int(self.listen.rpartition(":")[2])

    @field_validator("time_zone")
    @classmethod
    def _zone(cls, name: str) -> str:
        if name:
            try:
                zoneinfo.ZoneInfo(name)
            except (ValueError, OSError, zoneinfo.ZoneInfoNotFoundError):
                raise ValueError(
                    f"{name!r}: not a time zone this host knows (an IANA name such as "
                    "Europe/Berlin; empty: the host's)"
                ) from None
        return name

    @property
    def zone(self) -> zoneinfo.ZoneInfo | None:
        """The console's time zone (None: the host's)."""
        return zoneinfo.ZoneInfo(self.time_zone) if self.time_zone else None


class RepairSection(_Section):
    """Gap repair: when to ask a table to replay what never arrived."""

    after: float = Field(
        default=3.0, gt=0, description="seconds a missing seq may be late before it is asked for"
    )
    retry: float = Field(default=10.0, gt=0, description="seconds before asking again")
    attempts: int = Field(
        default=10, ge=1, description="asks before a gap is shown as unrepaired (it stays asked)"
    )
    chunk: int = Field(default=500, ge=1, le=1000, description="seqs per replay request")
    scan: float = Field(default=1.0, gt=0, description="seconds between scans for gaps")
    timeout: float = Field(default=10.0, gt=0, description="seconds to wait for the answer")


class PitSecuritySection(_Section):
    """The pit's own signing key (role ``pit`` in the tables' keyrings)."""

    key: Path | None = Field(
        default=None, description="private key file (tablectl keys new pit --role pit)"
    )
    key_id: str | None = Field(default=None, description="its id in the keyrings (the file name)")

    def key_name(self) -> str | None:
        """The key id the replay requests name."""
        if self.key is None:
            return None
        return self.key_id or self.key.stem


def _months(kind: str, what: str) -> Any:
    return Field(
        default=None,
        ge=1,
        le=1200,
        description=f"months of {what} kept online (PostgreSQL): this month and the {kind}_months "
        "before it; an older month is detached, archived to archive_dir and dropped by "
        "`tablectl pit archive run`. None: every month stays online",
    )


class RetentionSection(_Section):
    """The store for years (PostgreSQL, docs/pit.md): how many months each data kind keeps
    online, and where the older months are archived."""

    events_months: int | None = _months("events", "events (and the rule IDs each cites)")
    hands_months: int | None = _months("hands", "hands (and the rule IDs each cites)")
    rulings_months: int | None = _months("rulings", "rulings")
    holds_months: int | None = _months("holds", "holds")
    alarms_months: int | None = _months("alarms", "alarms (and their acknowledgements)")
    quarters_months: int | None = _months(
        "quarters",
        "the hands counted by quarter hour and hour (what the drop and dealers reports read: "
        "a floor may keep them longer than the hands)",
    )
    decks_months: int | None = _months(
        "decks",
        "the shufflers' decks (SHF-RAND), with their counts by hour and the kept day tallies of "
        "them (a month of the three archived and restored together)",
    )
    archive_dir: Path | None = Field(
        default=None,
        description="where archived months go: a directory per month, a gzip'd COPY file per "
        "table and a manifest with each file's SHA-256 (needed with any *_months)",
    )
    restored_days: float = Field(
        default=7.0,
        gt=0,
        le=3650,
        description="days a month brought back by `tablectl pit archive restore` stays online "
        "before a round archives it again",
    )
    lock_timeout: float = Field(
        default=5.0,
        gt=0,
        le=600,
        description="seconds a detach waits for the queries on a table: longer, and that month "
        "waits for the next round",
    )

    def months(self, kind: str) -> int | None:
        """The months ``kind`` keeps online (None: every month)."""
        value = getattr(self, f"{kind}_months")
        assert value is None or isinstance(value, int)
        return value

    def kept(self) -> dict[str, int]:
        """The data kinds with a retention, and their months."""
        from controller.pit.partitions import KINDS  # noqa: PLC0415 (the store's, not the config's)

        out: dict[str, int] = {}
        for kind in KINDS:
            months = self.months(kind)
            if months is not None:
                out[kind] = months
        return out

    @model_validator(mode="after")
    def _where(self) -> RetentionSection:
        if self.kept() and self.archive_dir is None:
            raise ValueError(
                "archive_dir: where archived months go is needed with "
                + ", ".join(f"{kind}_months" for kind in self.kept())
            )
        return self


#: A time of day on the quarter hour, ``HH:MM`` (a period's edge: the reports group their rows
#: by it, and every time zone's offset is whole quarter hours).
QUARTER_HOUR = r"^([01][0-9]|2[0-3]):(00|15|30|45)$"


class ShiftSection(_Section):
    """A shift of the floor: its name and when it begins (it ends when the next begins)."""

    name: str = Field(pattern=r"^[A-Za-z0-9 _.-]{1,32}$", description="how the reports name it")
    start: str = Field(pattern=QUARTER_HOUR, description="local time it begins, HH:MM")


def _default_shifts() -> list[ShiftSection]:
    return [
        ShiftSection(name="day", start="06:00"),
        ShiftSection(name="swing", start="14:00"),
        ShiftSection(name="grave", start="22:00"),
    ]


class ReportsSection(_Section):
    """The reports (docs/reports.md): the floor's day and shifts in its time zone (``[web]
    time_zone``), and the longest period one report covers."""

    day_start: str = Field(
        default="00:00",
        pattern=QUARTER_HOUR,
        description="local time the floor's (gaming) day begins, HH:MM: the edge of a day and "
        "a month in the reports",
    )
    shifts: list[ShiftSection] = Field(
        default_factory=_default_shifts,
        min_length=1,
        max_length=24,
        description="the shifts of a day, each {name, start}: a shift runs from its start to the "
        "next one's, the last to the first of the next day",
    )
    max_days: int = Field(
        default=92,
        ge=1,
        le=1100,
        description="the longest period a report covers, in days (a report reads every hand of "
        "its period: its time grows with it)",
    )
    # SHF-RAND: the shuffler randomness audit (docs/reports.md, reports/audit_rule.py)
    alpha: float = Field(
        default=1e-5,
        gt=0,
        le=0.05,
        description="the shuffler audit's level: a shuffler's alarm is up while a test's "
        "p-value times the number of tests (Bonferroni) is below it",
    )
    window: int = Field(
        default=1000,
        ge=41,
        le=100_000,
        description="the decks of a shuffler the audit's tests rest on: its last ones",
    )
    every: int = Field(
        default=50,
        ge=1,
        le=100_000,
        description="the decks a shuffler reveals between two checks of the audit",
    )

    @model_validator(mode="after")
    def _distinct(self) -> ReportsSection:
        names = [s.name for s in self.shifts]
        starts = [s.start for s in self.shifts]
        if len(set(names)) != len(names):
            raise ValueError(f"shifts: each shift needs a name of its own (got {names})")
        if len(set(starts)) != len(starts):
            raise ValueError(f"shifts: two shifts begin at the same time (got {starts})")
        return self


class PitConfig(BaseSettings):
    """The whole config of one pit process."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="forbid", frozen=True
    )

    pit: PitSection = PitSection()
    broker: BrokerSection = BrokerSection()
    store: StoreSection = StoreSection()
    web: WebSection = WebSection()
    repair: RepairSection = RepairSection()
    security: PitSecuritySection = PitSecuritySection()
    retention: RetentionSection = RetentionSection()
    reports: ReportsSection = ReportsSection()
    log: LogSection = LogSection()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return env_settings, init_settings

    @property
    def client_id(self) -> str:
        """The MQTT client id: the session the broker keeps for this process."""
        return f"pit-{self.pit.id}"


def is_pit_config(data: Mapping[str, Any]) -> bool:
    """Whether a config document is a pit's (it has ``[pit]`` or ``[store]``, no ``[table]``)."""
    return "table" not in data and ("pit" in data or "store" in data)


def parse_pit_config(data: Mapping[str, Any], source: str = "pit config") -> PitConfig:
    """Validate a pit config (and the environment); check its signing key."""
    try:
        config = PitConfig(**dict(data))
    except ValidationError as exc:
        raise ConfigError(source, _format(exc)) from None
    problems = []
    if config.retention.kept() and config.store.url.startswith("sqlite:"):
        problems.append(
            "retention: a SQLite store keeps every row (it is the store of one host, with no "
            "partitions to archive): months kept online need a PostgreSQL store"
        )
    if config.pit.approved_builds is not None:
        try:
            load_approved_builds(config.pit.approved_builds)
        except ApprovedBuildsError as exc:
            problems.append(f"pit.approved_builds: {exc}")
    if config.security.key is not None:
        try:
            load_private_key(config.security.key)
        except SigningError as exc:
            problems.append(f"security.key: {exc}")
    if problems:
        raise ConfigError(source, problems)
    return config


def read_toml(path: Path) -> dict[str, Any]:
    """The TOML document at ``path`` (ConfigError: unreadable, a journal or other binary file,
    or not TOML)."""
    text = config_text(path)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(path), [f"not valid TOML: {exc}"]) from None


def load_pit_config(path: Path) -> PitConfig:
    """Read, parse and validate the pit config at ``path`` (relative paths: its directory's)."""
    data, problems = expand_credentials(read_toml(path))  # systemd's LoadCredential=
    if problems:
        raise ConfigError(str(path), problems)
    for section, name in (
        ("security", "key"),
        ("broker", "password_file"),
        ("pit", "approved_builds"),
        ("retention", "archive_dir"),
    ):
        part = data.get(section)
        if isinstance(part, dict) and isinstance(part.get(name), str):
            value = Path(part[name])
            if not value.is_absolute():
                data[section] = {**part, name: str(path.parent / value)}
    store = data.get("store")
    if isinstance(store, dict) and isinstance(store.get("url"), str):
        url: str = store["url"]
        if url.startswith("sqlite:///") and not url.startswith("sqlite:////"):
            data["store"] = {**store, "url": f"sqlite:///{path.parent / url[len('sqlite:///') :]}"}
    return parse_pit_config(data, str(path))


def pit_config_schema() -> dict[str, Any]:
    """The JSON Schema of the pit config file."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:tablectl:schema:pit-config",
        **PitConfig.model_json_schema(),
        "title": "tablectl pit config",
    }
