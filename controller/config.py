"""The table config: one TOML file, validated with pydantic, overridable from the environment.

.. code-block:: toml

    [table]
    id = "T7"
    profile = "rrop-cash"
    stacks = { 1 = 200, 2 = 200, 3 = 200 }
    button = 3
    blinds = [1, 2]

    [devices.shuffler]
    driver = "tsp-shuffler"
    port = "/dev/table/shuffler"

    [broker]
    host = "pit-broker.local"

Every key can be overridden by an environment variable ``TABLECTL_<SECTION>__<KEY>``
(``TABLECTL_BROKER__HOST=10.0.0.5``, ``TABLECTL_JOURNAL__PATH=/tmp/j.sqlite``); the environment
wins over the file. :func:`load_config` raises :class:`ConfigError` whose lines each name the key
and say what is wrong with it.
"""

from __future__ import annotations

import ipaddress
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from controller.authority import Role
from controller.credentials import expand_credentials
from controller.decks import DeckManifest, ManifestError, load_deck, load_manifest
from controller.keyring import Keyring, KeyringError, load_keyring
from controller.profiles import ProfileError, RulesProfile, load_profile
from controller.table.inputs import Zone
from drivers.registry import option_problems

ENV_PREFIX = "TABLECTL_"
DEFAULT_CONFIG = Path("/etc/tablectl/table.toml")


class ConfigError(ValueError):
    """A config that cannot be used; ``problems`` has one line per key."""

    def __init__(self, source: str, problems: list[str]) -> None:
        super().__init__(f"{source}:\n" + "\n".join(f"  {p}" for p in problems))
        self.source = source
        self.problems = problems


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TableSection(_Section):
    """The table: who plays, under which rules, with which deck."""

    id: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    profile: str = Field(default="rrop-cash", description="rules profile in config/profiles")
    house_rules: dict[str, Any] = Field(default_factory=dict, description="profile overrides")
    stacks: dict[int, int] = Field(min_length=2, description="seat (1-10) -> chips")
    button: int = Field(ge=1, le=10)
    blinds: tuple[int, int]
    ante: int = Field(default=0, ge=0)
    deck: str = Field(default="house-a", description="deck manifest: a name or a path")
    shuffler: str = Field(default="shuffler", description="device id of the shuffler")
    dispense: Literal["host", "dealer"] = Field(
        default="host",
        description="host: the daemon asks the shuffler for each shuffle, group and reveal; "
        "dealer: the dealer runs the shuffler from its keypad and the daemon asks for nothing",
    )
    settle: float = Field(
        default=3.0, gt=0, le=60, description="seconds the readers get to see dealt cards"
    )

    @field_validator("id")
    @classmethod
    def _not_reserved(cls, table: str) -> str:
        if table.startswith("_"):
            # the topic level ``{prefix}/_pit`` is the pit processes' own (docs/mqtt.md)
            raise ValueError("a table id does not begin with '_' (kept for the pit's topics)")
        return table

    @field_validator("stacks")
    @classmethod
    def _seats(cls, stacks: dict[int, int]) -> dict[int, int]:
        bad = [seat for seat in stacks if not 1 <= seat <= 10]
        if bad:
            raise ValueError(f"seats are numbered 1 to 10, not {bad}")
        if any(chips < 0 for chips in stacks.values()):
            raise ValueError("a stack cannot be negative")
        return stacks

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.button not in self.stacks:
            raise ValueError(f"button: seat {self.button} has no stack")
        small, big = self.blinds
        if not 0 < small <= big:
            raise ValueError(f"blinds: must be positive, small first ({small}, {big})")
        return self

    def rules_profile(self) -> RulesProfile:
        """The profile with the house-rule overrides applied."""
        return load_profile(self.profile).with_overrides(self.house_rules)

    def manifest(self) -> DeckManifest:
        """The deck manifest: a shipped deck name, or a path to a manifest file."""
        if "/" in self.deck or self.deck.endswith(".toml"):
            return load_manifest(Path(self.deck))
        return load_deck(self.deck)

    def genesis(self) -> dict[str, Any]:
        """What a new journal records as the table it starts from."""
        return {
            "table_id": self.id,
            "profile": self.profile,
            "house_rules": self.house_rules,
            "stacks": {str(k): v for k, v in self.stacks.items()},
            "button": self.button,
            "blinds": list(self.blinds),
            "ante": self.ante,
            "deck": self.deck,
            "settle": self.settle,
        }


class DeviceSection(BaseModel):
    """One device: its driver, and the driver's own options (any other key)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    driver: str = Field(min_length=1, description="driver name (drivers/registry.py)")
    enabled: bool = True

    @property
    def options(self) -> dict[str, Any]:
        """The driver's options: every key but ``driver`` and ``enabled``."""
        return dict(self.model_extra or {})


class TlsSection(_Section):
    """TLS to the broker: server verification and, optionally, a client certificate."""

    enabled: bool = False
    ca_file: Path | None = Field(default=None, description="CA bundle (default: system CAs)")
    cert_file: Path | None = Field(default=None, description="client certificate (PEM)")
    key_file: Path | None = Field(default=None, description="client key (PEM)")
    insecure: bool = Field(default=False, description="skip host name checks (tests only)")

    @model_validator(mode="after")
    def _pair(self) -> Self:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("cert_file and key_file go together")
        return self


class BrokerSection(_Section):
    """The MQTT broker of the pit."""

    enabled: bool = Field(
        default=True, description="false: no broker; events stay in the journal (a bench table)"
    )
    host: str = "localhost"
    port: int = Field(default=1883, ge=1, le=65535)
    prefix: str = Field(default="tables", min_length=1, pattern=r"^[^#+]+$")
    client_id: str | None = Field(default=None, description="default: tablectl-<table id>")
    username: str | None = None
    password: str | None = None
    password_file: Path | None = Field(default=None, description="read the password from here")
    keepalive: int = Field(default=15, ge=2, le=600)
    timeout: float = Field(default=10.0, gt=0, description="seconds for a connect or a PUBACK")
    reconnect_min: float = Field(default=0.5, gt=0)
    reconnect_max: float = Field(default=30.0, gt=0)
    tls: TlsSection = TlsSection()
    plain_tcp: bool = Field(
        default=False,
        description="true: plain TCP to a broker on another machine (a closed bench network "
        "only: requests and hole cards cross it readable)",
    )

    @field_validator("host")
    @classmethod
    def _host(cls, host: str, info: ValidationInfo) -> str:
        if info.data.get("enabled", True) and not host.strip():
            raise ValueError(
                "empty: give the broker's host name or address "
                "(or enabled = false for a table without a broker)"
            )
        return host

    @model_validator(mode="after")
    def _credentials(self) -> Self:
        if self.password is not None and self.password_file is not None:
            raise ValueError("give password or password_file, not both")
        if self.reconnect_max < self.reconnect_min:
            raise ValueError("reconnect_max must not be below reconnect_min")
        return self

    def loopback(self) -> bool:
        """Whether the broker is this machine (its name or a loopback address)."""
        host = self.host.strip().strip("[]")
        if host == "localhost":
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False

    def url(self) -> str:
        """The broker as people write it: ``mqtts://host:port`` when TLS is on."""
        return f"{'mqtts' if self.tls.enabled else 'mqtt'}://{self.host}:{self.port}"

    def secret(self) -> str | None:
        """The password, from the config or its file."""
        if self.password_file is not None:
            return self.password_file.read_text(encoding="utf-8").strip()
        return self.password


class JournalSection(_Section):
    """Where the journal lives, and how its disk is watched (docs/operations.md)."""

    path: Path = Path("/var/lib/tablectl/journal.sqlite")
    low_disk_bytes: int = Field(
        default=256 * 1024 * 1024,
        ge=0,
        description="raise the low-disk alarm when the journal's file system has less free "
        "(0: no alarm)",
    )
    disk_poll: float = Field(
        default=5.0,
        gt=0,
        le=300,
        description="seconds between looks at the free space, and between tries to write "
        "again while the disk is full",
    )
    max_pages: int | None = Field(
        default=None,
        ge=1,
        description="the most pages (4 KiB) the database may grow to: past it the journal is "
        "full as on a full disk (a journal sharing its disk; fault tests)",
    )
    live_hands: int = Field(
        default=50,
        ge=0,
        description="closed hands kept in the live database; older ones move into archive "
        'segments (docs/operations.md, "Retention")',
    )
    keep_days: float | None = Field(
        default=None,
        gt=0,
        description="prune segments older than this, once the pit or the archive has them "
        "(none: age alone prunes nothing)",
    )
    max_bytes: int | None = Field(
        default=None,
        ge=1024 * 1024,
        description="the journal's budget: database, WAL and local segments; the oldest "
        "segments the pit or the archive has are pruned to keep it (none: no budget)",
    )
    archive_dir: Path | None = Field(
        default=None,
        description="a directory (e.g. a NAS mount) that receives a verified copy of every "
        "segment; an archived segment may be pruned",
    )
    retention_interval: float = Field(
        default=60.0, gt=0, le=3600, description="seconds between two retention rounds"
    )
    inbox_seconds: float = Field(
        default=3600.0,
        ge=0,
        description="requests younger than this stay live, so a redelivered one gets its "
        "stored response; at least twice security.clock_skew (an older one is refused as stale)",
    )


class MetricsSection(_Section):
    """Prometheus metrics (docs/operations.md, "Metrics"): off unless enabled."""

    enabled: bool = False
    host: str = Field(
        default="127.0.0.1", min_length=1, description="where to listen (default: this host only)"
    )
    port: int = Field(default=9464, ge=1, le=65535)


class LogSection(_Section):
    """Logging: JSON lines for journald, readable text on a terminal."""

    level: Literal["debug", "info", "warning", "error"] = "info"
    format: Literal["auto", "json", "console"] = "auto"


class DaemonSection(_Section):
    """Timings of the daemon itself."""

    historical_after: float = Field(
        default=5.0, gt=0, description="an event published this many seconds late is historical"
    )
    device_query_timeout: float = Field(default=5.0, gt=0)
    device_restart_min: float = Field(default=0.5, gt=0)
    device_restart_max: float = Field(default=30.0, gt=0)
    dispatch_retry: float = Field(default=2.0, gt=0, description="seconds between resends")
    shutdown_step: float = Field(default=3.0, gt=0, description="bound of each shutdown step")
    console: Path | None = Field(
        default=None,
        description="Unix socket for a local dealer console (requests as JSON lines)",
    )


class SecuritySection(_Section):
    """Who may give the table commands (docs/security.md)."""

    require_signed: bool = Field(
        default=True,
        description="refuse unsigned requests; false lets them in with unsigned_roles (a bench "
        "table), which the daemon logs loudly and states in its birth message",
    )
    keyring: Path | None = Field(
        default=None, description="the keyring: public keys, persons and roles (TOML)"
    )
    unsigned_roles: list[Role] = Field(
        default_factory=lambda: [Role.DEALER, Role.FLOOR],
        description="the roles of an unsigned request when require_signed is false",
    )
    clock_skew: float = Field(
        default=30.0, gt=0, le=600, description="seconds a signed request's ts may be off"
    )
    max_request_bytes: int = Field(default=16 * 1024, ge=256, le=1024 * 1024)
    max_depth: int = Field(default=8, ge=2, le=64)
    max_int_digits: int = Field(default=18, ge=4, le=64)
    max_string: int = Field(default=1024, ge=64, le=65536)
    rate_per_key: float = Field(default=20.0, gt=0, description="requests a second per key")
    rate_per_key_burst: float = Field(default=40.0, ge=1)
    rate_anonymous: float = Field(
        default=20.0, gt=0, description="requests a second, all unsigned or unknown senders"
    )
    rate_anonymous_burst: float = Field(default=40.0, ge=1)
    rate_total: float = Field(
        default=200.0, gt=0, description="requests a second, all but signed dealer and floor ones"
    )
    rate_total_burst: float = Field(default=400.0, ge=1)
    rate_replays: float = Field(
        default=5.0,
        gt=0,
        description="requests a second, all stale or replayed copies of signed requests together",
    )
    rate_replays_burst: float = Field(default=20.0, ge=1)
    queue_limit: int = Field(default=10_000, ge=10, le=1_000_000)

    def load_keyring(self) -> Keyring | None:
        """The keyring (None when none is configured)."""
        return load_keyring(self.keyring) if self.keyring is not None else None


#: The zones where the hand's cards lie: a badge is never read on one (an unknown tag there is a
#: foreign card, FOUL-FOREIGN, not a dealer).
_PLAY_ZONES = frozenset({"seat", "board", "burn", "muck", "shuffler_in"})


class StationSection(_Section):
    """The dealer's station (``tablectl station run``, docs/station.md): a local web app for the
    table's touchscreen that talks to the daemon over its console socket."""

    listen: str = Field(
        default="127.0.0.1:8470",
        pattern=r"^[^:]*:\d{1,5}$",
        description="where the station's web app listens (host:port; loopback: the kiosk "
        "browser runs on the table PC)",
    )
    console: Path | None = Field(
        default=None, description="the daemon's console socket (default: [daemon] console)"
    )
    roster: Path | None = Field(
        default=None,
        description="the dealers who may log in (TOML; default: roster.toml beside the keyring)",
    )
    key: Path | None = Field(
        default=None,
        description="the station's private key (tablectl keys new; default: station.key "
        "beside the keyring)",
    )
    key_id: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$",
        description="the station key's id in the keyring (default: the key file's name)",
    )
    badge_zone: str | None = Field(
        default=None,
        description="the reader zone whose reads are dealers' badges (e.g. enroll); none: "
        "log-in by typed id only",
    )
    idle_logout: float = Field(
        default=300.0, gt=0, le=86400, description="seconds without a touch before log-out"
    )
    lockout_attempts: int = Field(
        default=5, ge=1, le=100, description="wrong PINs before each further try waits"
    )
    lockout_max: float = Field(
        default=900.0,
        ge=1,
        le=86400,
        description="the longest wait (s); the waits double from one second up to it",
    )
    request_timeout: float = Field(
        default=10.0, gt=0, le=120, description="seconds the daemon has to answer a request"
    )

    @field_validator("listen")
    @classmethod
    def _port(cls, listen: str) -> str:
        if not 0 < int(listen.rpartition(":")[2]) <= 65535:
            raise ValueError("the port is 1 to 65535")
        return listen

    @field_validator("badge_zone")
    @classmethod
    def _badge_zone(cls, zone: str | None) -> str | None:
        if zone is None:
            return None
        parsed = Zone.parse(zone)
        if parsed.kind.value in _PLAY_ZONES:
            raise ValueError(
                f"{zone!r} holds the hand's cards: a badge is read on a zone no card is dealt "
                "to (enroll)"
            )
        return str(parsed)

    @property
    def host(self) -> str:
        """The address to listen on."""
        return self.listen.rpartition(":")[0] or "127.0.0.1"

    @property
    def port(self) -> int:
        """The port to listen on."""
        return int(self.listen.rpartition(":")[2])


class TableConfig(BaseSettings):
    """The whole config of one table controller."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="forbid", frozen=True
    )

    table: TableSection
    devices: dict[str, DeviceSection] = Field(default_factory=dict)
    broker: BrokerSection = BrokerSection()
    journal: JournalSection = JournalSection()
    log: LogSection = LogSection()
    daemon: DaemonSection = DaemonSection()
    security: SecuritySection = SecuritySection()
    metrics: MetricsSection = MetricsSection()
    station: StationSection = StationSection()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The environment first: it overrides the file, which arrives as init arguments.
        return env_settings, init_settings

    @field_validator("devices")
    @classmethod
    def _device_ids(cls, devices: dict[str, DeviceSection]) -> dict[str, DeviceSection]:
        for device_id in devices:
            if not device_id or any(c in device_id for c in "/#+ "):
                raise ValueError(f"device id {device_id!r} must be a plain topic level")
        return devices

    @property
    def client_id(self) -> str:
        """The MQTT client id."""
        return self.broker.client_id or f"tablectl-{self.table.id}"


def _format(exc: ValidationError) -> list[str]:
    problems = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        message = err["msg"].removeprefix("Value error, ")
        value = err.get("input")
        shown = "" if err["type"] == "missing" or isinstance(value, dict) else f" (got {value!r})"
        problems.append(f"{loc or '(top level)'}: {message}{shown}")
    return problems


def parse_config(data: Mapping[str, Any], source: str = "config") -> TableConfig:
    """Validate config data (and the environment); check profile, deck and driver options."""
    try:
        config = TableConfig(**dict(data))
    except ValidationError as exc:
        raise ConfigError(source, _format(exc)) from None
    problems: list[str] = []
    try:
        config.table.rules_profile()
    except ProfileError as exc:
        problems.append(f"table.profile / table.house_rules: {exc}")
    try:
        config.table.manifest()
    except ManifestError as exc:
        problems.append(f"table.deck: {exc}")
    for device_id, device in config.devices.items():
        problems += option_problems(device_id, device.driver, device.options)
    security = config.security
    if security.require_signed and security.keyring is None:
        problems.append(
            "security.keyring: required: the table takes signed requests only "
            "(require_signed = true, the default); give the keyring of its keys"
        )
    try:
        security.load_keyring()
    except KeyringError as exc:
        problems.append(f"security.keyring: {exc}")
    if config.journal.inbox_seconds < 2 * security.clock_skew:
        # A request is admitted while its ts is within clock_skew of the table's clock: the
        # same signed bytes may come again up to 2 × clock_skew after the first was taken, and
        # must find its inbox row still live (docs/operations.md, "Retention").
        problems.append(
            f"journal.inbox_seconds: at least twice security.clock_skew "
            f"({2 * security.clock_skew:g} s): a request redelivered sooner must find its "
            f"stored response (got {config.journal.inbox_seconds:g})"
        )
    if problems:
        raise ConfigError(source, problems)
    return config


class NotAConfigError(ConfigError):
    """A file given as a config that is no config at all: a journal, or not text."""


#: The first bytes of every SQLite database, a journal among them.
SQLITE_HEADER = b"SQLite format 3\x00"


def config_text(path: Path) -> str:
    """The text of the config file at ``path``: ConfigError when it cannot be read, or is a
    journal (the other file the command line takes) or some other file that is not text."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(str(path), [f"cannot read: {exc.strerror or exc}"]) from None
    if raw.startswith(SQLITE_HEADER):
        raise NotAConfigError(
            str(path),
            [
                "a SQLite database (a journal?), not a config: --config takes the config "
                f"file; a journal goes to the journal verbs as --journal {path}"
            ],
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotAConfigError(
            str(path), [f"not a config: not UTF-8 text (byte {exc.start} of the file)"]
        ) from None


def load_config(path: Path) -> TableConfig:
    """Read, parse and validate the config file at ``path``."""
    text = config_text(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(path), [f"not valid TOML: {exc}"]) from None
    data, problems = expand_credentials(data)  # systemd's LoadCredential= (docs/operations.md)
    if problems:
        raise ConfigError(str(path), problems)
    security = data.get("security")
    if isinstance(security, dict) and isinstance(security.get("keyring"), str):
        # a keyring beside the config: a relative path is the config's directory's
        keyring = Path(security["keyring"])
        if not keyring.is_absolute():
            data["security"] = {**security, "keyring": str(path.parent / keyring)}
    station = data.get("station")
    if isinstance(station, dict):
        # the station's files too: a relative path is the config's directory's
        data["station"] = {
            **station,
            **{
                name: str(path.parent / station[name])
                for name in ("roster", "key", "console")
                if isinstance(station.get(name), str) and not Path(station[name]).is_absolute()
            },
        }
    return parse_config(data, str(path))


def config_schema() -> dict[str, Any]:
    """The JSON Schema of the config file."""
    schema = TableConfig.model_json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:tablectl:schema:config",
        **schema,
        "title": "tablectl table config",
    }
