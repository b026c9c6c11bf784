"""The broker's outer wall (docs/security.md): mosquitto users, passwords and an ACL per role.

``tablectl broker setup USERS.toml --out DIR`` reads who connects to the pit's broker::

    prefix = "tables"
    [users.T1]                   # a table controller: the user is the table's id
    roles = ["table"]
    tables = ["T1"]
    [users.dealer-console-1]
    roles = ["dealer"]           # table, dealer, floor, surveillance, pit
    tables = ["T1", "T2"]        # default: every table ("*")

and writes what mosquitto needs into DIR: ``passwd`` (PBKDF2-SHA512, mosquitto's ``$7$``
format), ``acl`` (one block per user), ``mosquitto.conf`` (including both, with the queue and
packet limits a table needs), and ``passwords/USER`` for each user (mode 0600; kept if present,
so running it again does not change anyone's password). The table's own user alone publishes its
status, state, events, devices and responses; each console publishes the requests of the
commands its role may give (controller/authority.py), no other, and reads the public topics;
only surveillance reads ``secure/#``; the pit reads the events, asks for replays and sends the
floor's rulings, and its processes read and write their own statuses (``{prefix}/_pit/+/status``).

Each connection's client id is its user name (``use_username_as_clientid``): no login can connect
as a table, a pit or another console and take over its session (a table knocked off the broker
would leave a false Last Will). So every process has a user of its own: each table, each
console, each pit process. The network reaches the broker over TLS only (``DIR/tls/``:
:mod:`controller.broker_tls` makes the floor's CA and the broker's certificate, or the site's
are named); plain TCP listens on loopback, for the broker machine's own clients.
The broker is the outer wall only: every request is also signed (the keyring decides).
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import os
import pwd
import secrets
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from controller.authority import COMMAND_ROLES, Role
from controller.broker_tls import BrokerTls
from controller.pit.presence import LEVEL as PRESENCE
from controller.pit.rulings import COMMANDS as RULINGS
from controller.shell.gate import SHELL_VERBS
from controller.shell.maintenance import REQUESTS

BrokerRole = Literal["table", "dealer", "floor", "surveillance", "pit"]
ITERATIONS = 101  # what mosquitto_passwd uses for $7$


class BrokerSetupError(ValueError):
    """A users file that cannot be used; the message names the user and the problem."""


class BrokerUser(BaseModel):
    """One broker user and what it may reach."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    roles: list[BrokerRole] = Field(min_length=1)
    tables: list[str] = Field(default_factory=lambda: ["*"], min_length=1)


class BrokerUsers(BaseModel):
    """Every user of the broker, by name."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prefix: str = Field(
        default="tables",
        min_length=1,
        pattern=r"^[^#]+$",
        description="the topic prefix; '+' for users of every prefix (a test bench)",
    )
    users: dict[str, BrokerUser] = Field(min_length=1)


def load_users(path: Path) -> BrokerUsers:
    """Read and validate a users file."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        users = BrokerUsers.model_validate(data)
    except FileNotFoundError:
        raise BrokerSetupError(f"{path}: no such file") from None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise BrokerSetupError(f"{path}: {exc}") from None
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise BrokerSetupError(f"{path}: {problems}") from None
    for name in users.users:
        if not name or any(c in name for c in ":/#+ \n"):
            raise BrokerSetupError(f"{path}: user {name!r}: no ':', '/', '#', '+' or spaces")
    return users


def password_hash(password: str, salt: bytes | None = None) -> str:
    """A mosquitto password file hash (``$7$``: PBKDF2-SHA512, 101 iterations, 12-byte salt)."""
    salt = salt if salt is not None else secrets.token_bytes(12)
    digest = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, ITERATIONS)
    return f"$7${ITERATIONS}${base64.b64encode(salt).decode()}${base64.b64encode(digest).decode()}"


def acl_lines(name: str, user: BrokerUser, prefix: str) -> list[str]:
    """The ACL block of one user: what each of its roles may read and write."""
    levels = ["+"] if "*" in user.tables else user.tables
    topics: dict[str, None] = {}  # in order, once each
    for table in levels:
        base = f"{prefix}/{table}"
        for role in user.roles:
            for line in _role_topics(role, base):
                topics[line] = None
    if "pit" in user.roles:
        # the pit processes' own statuses (each its own, with its Will) and each other's:
        # controller/pit/presence.py
        topics[f"topic readwrite {prefix}/{PRESENCE}/+/status"] = None
    return [f"user {name}", *topics, ""]


def _role_topics(role: BrokerRole, base: str) -> list[str]:
    if role == "table":
        written = ("events", "secure/events", "state", "devices/#", "response/#")
        return [
            # status and head are read back on every connect (the head check, docs/mqtt.md)
            *(f"topic readwrite {base}/{topic}" for topic in ("status", "head")),
            *(f"topic write {base}/{topic}" for topic in written),
            f"topic write {base}/replay/#",
            f"topic write {base}/secure/replay/#",
            # written only to clear a request a console published retained (docs/mqtt.md)
            f"topic readwrite {base}/request/#",
        ]
    read = ("status", "head", "events", "state", "devices/#")
    lines = [f"topic read {base}/{t}" for t in read]
    # Each role publishes the requests of the commands it may give, and no other: a login that
    # cannot give a command at all cannot put a single message ahead of those who can.
    lines += [f"topic write {base}/request/{verb}" for verb in broker_commands(role)]
    lines += [f"topic read {base}/response/{verb}" for verb in broker_commands(role)]
    if role == "surveillance":
        lines += [f"topic read {base}/secure/events", f"topic read {base}/secure/replay/#"]
    if role == "pit":
        lines.append(f"topic read {base}/replay/#")
    return lines


def broker_commands(role: BrokerRole) -> list[str]:
    """The table requests a console of ``role`` publishes (controller/authority.py): the
    commands the role may give, and for the pit also the rulings it signs for the floor."""
    if role == "table":
        return []
    own = Role(role)
    requests = {*REQUESTS, *SHELL_VERBS}
    verbs = [verb for verb, roles in COMMAND_ROLES.items() if own in roles and verb in requests]
    if role == "pit":
        verbs += [verb for verb in RULINGS.values() if verb not in verbs]
    return verbs


def write_setup(
    users: BrokerUsers,
    out: Path,
    *,
    listener: str = "1883 127.0.0.1",
    tls_listener: str | None = "8883",
    tls: BrokerTls | None = None,
    run_as: str | None = None,
    bind_client_ids: bool = True,
) -> list[Path]:
    """Write passwd, acl, mosquitto.conf and the users' password files into ``out``.

    ``listener`` is the plain TCP listener, loopback only (BrokerSetupError otherwise);
    ``tls_listener`` the TLS one, with ``tls`` its files (None with ``tls_listener`` None: a
    broker for this machine alone, as the rig's).
    """
    plain = loopback_listener(listener)
    if tls_listener is not None and tls is None:
        raise BrokerSetupError("a TLS listener needs its CA, certificate and key")
    out.mkdir(parents=True, exist_ok=True)
    secrets_dir = out / "passwords"
    secrets_dir.mkdir(mode=0o700, exist_ok=True)
    passwd, acl = [], ["# written by tablectl broker setup: one block per user", ""]
    for name, user in users.users.items():
        secret_file = secrets_dir / name
        if secret_file.exists():
            password = secret_file.read_text(encoding="utf-8").strip()
        else:
            password = secrets.token_urlsafe(24)
            fd = os.open(secret_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(password + "\n")
        passwd.append(f"{name}:{password_hash(password)}")
        acl += acl_lines(name, user, users.prefix)
    written = [out / "passwd", out / "acl", out / "mosquitto.conf"]
    _write_private(out / "passwd", "\n".join(passwd) + "\n")
    _write_private(out / "acl", "\n".join(acl))
    # mosquitto reads these as the user it runs as (the password file and the ACL again on
    # every SIGHUP, the key when it reloads its certificates)
    owned = [out / "passwd", out / "acl"]
    if tls is not None and tls.key_file.parent == out / "tls":
        owned.append(tls.key_file)  # the key this command made; a site's own key is the site's
    _give_to(run_as, owned)
    config = broker_config(
        out,
        plain,
        tls_listener if tls is not None else None,
        tls,
        run_as,
        bind_client_ids=bind_client_ids,
    )
    (out / "mosquitto.conf").write_text(config)
    return written


def mosquitto_user() -> str | None:
    """The user mosquitto runs as when this command runs as root and the system has one."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam("mosquitto").pw_name
    except KeyError:
        return None


def _give_to(user: str | None, paths: list[Path]) -> None:
    """Make ``paths`` the user's (as root; a user's own run writes them as that user)."""
    if user is None or os.geteuid() != 0:
        return
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        raise BrokerSetupError(f"--run-as {user}: no such user") from None
    for path in paths:
        os.chown(path, entry.pw_uid, entry.pw_gid)


def loopback_listener(listener: str) -> str:
    """A plain listener line (``port address``) whose address is loopback, or BrokerSetupError:
    on plain TCP anyone on the network path could read and replay the tables' requests."""
    port, _, address = listener.strip().partition(" ")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise BrokerSetupError(f"listener {listener!r}: give a port and an address")
    address = address.strip()
    try:
        loopback = bool(address) and ipaddress.ip_address(address).is_loopback
    except ValueError:
        loopback = address == "localhost"
    if not loopback:
        raise BrokerSetupError(
            f"listener {listener!r}: plain TCP listens on loopback only "
            f"(give '{port} 127.0.0.1'); the network reaches the broker over TLS"
        )
    return f"{port} {address}"


def broker_config(
    directory: Path,
    listener: str = "1883 127.0.0.1",
    tls_listener: str | None = None,
    tls: BrokerTls | None = None,
    run_as: str | None = None,
    *,
    bind_client_ids: bool = True,
) -> str:
    """mosquitto.conf for the tables: no anonymous user, the ACL, client ids bound to users,
    TLS for the network, plain TCP on loopback, and the limits the tables need.

    Started as root, mosquitto runs as ``run_as`` (default: its own user), which must read
    ``passwd``, ``acl`` and the TLS key (written readable by their owner only: run as root,
    :func:`write_setup` gives them to ``run_as``). The config is meant for the main config's
    ``include_dir`` (Debian's ``/etc/mosquitto/conf.d``): it sets no ``pid_file``, log or
    ``persistence_location``, which mosquitto refuses twice.
    """
    user = f"user {run_as}\n" if run_as else ""
    bind = (
        "# a client's id is its user name (mosquitto.conf(5)): no login can take over another's\n"
        "# session, or knock a table off by connecting with its id; each process its own user\n"
        "use_username_as_clientid true\n"
        if bind_client_ids
        else "# a bench broker on loopback: its few logins are shared by several clients\n"
    )
    secure = ""
    if tls_listener is not None and tls is not None:
        secure = f"""# the network's listener: TLS 1.2 or later, a certificate of the floor's CA
listener {tls_listener}
cafile {tls.ca_file}
certfile {tls.cert_file}
keyfile {tls.key_file}
tls_version tlsv1.2
"""
    return f"""# written by tablectl broker setup (docs/operations.md, "The broker")
{user}per_listener_settings false
# plain TCP for this machine's own clients only
listener {listener}
{secure}allow_anonymous false
password_file {directory / "passwd"}
acl_file {directory / "acl"}
{bind}# the retained head and status survive a restart (docs/operations.md, "The broker"); where
# is the main config's persistence_location (Debian's: /var/lib/mosquitto/)
persistence true
# a table's request, envelope or snapshot is a few KiB; the table refuses requests over 16 KiB
max_packet_size 65536
# a console or the pit that falls behind: keep this many QoS 1 messages for it, then drop
max_queued_messages 20000
max_inflight_messages 100
# small messages, and consoles waiting for each answer
set_tcp_nodelay true
"""


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
