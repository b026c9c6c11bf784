"""Network namespaces for the tests: hosts on a switch, links cut and restored (iproute2).

A test that needs a machine apart (no network at all, or a floor of hosts on a LAN) makes it with
``ip netns`` (ip-netns(8)) and removes it at the end, whatever happens. Needs root.

* :class:`Namespace` is one network namespace with nothing in it but a loopback that is down: a
  host with no network (``tests/packaging/test_offline.py``).
* :class:`Network` is a LAN: a switch (a Linux bridge, in a namespace of its own so that the
  machine's own firewall and ``br_netfilter`` settings never see its frames) and one namespace per
  host, each joined to the switch by a veth pair (veth(4)) with an address of one /24. The
  test's own process sits on the switch too (the /24's first address), so it reaches every
  host's services. :meth:`Network.cut` sets a host's port on the switch down: the host's
  interface loses its carrier, and what either side sends is lost, as when a cable is pulled.
  :meth:`Network.restore` plugs it back.

A process runs in a host in one of two ways: its command line prefixed with
:meth:`Host.command` (``ip netns exec``), or, for code that starts its own children (a
``pg_ctl`` that drops to the ``postgres`` user, a broker class's ``Popen``), a call made by
:meth:`Host.call` from a thread that entered the namespace (setns(2): a network namespace
belongs to a thread, and a child forked by that thread is born in it).

Names are unique per process and per use (``tablectl-<pid>-<n>-<host>``; the interfaces in the
machine's own namespace ``tn<pid hex>x<n hex>``), so parallel xdist workers do not collide.
A run that crashed leaves its namespaces behind: every new one first removes those of this
prefix whose owner pid is no longer alive.
"""

from __future__ import annotations

import ctypes
import ipaddress
import itertools
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

PREFIX = "tablectl"
# a namespace this module made: tablectl-<owner pid>-<n>-<role>
_NAMESPACE = re.compile(rf"^{PREFIX}-(\d+)-(\d+)-([a-z0-9-]+)$")
# an interface this module made in the machine's namespace (IFNAMSIZ: 15 characters at most)
_LINK = re.compile(r"^tn([0-9a-f]+)x([0-9a-f]+)$")
_CLONE_NEWNET = 0x40000000  # sched.h
_serial = itertools.count(1)
_serial_lock = threading.Lock()


class NetnsError(RuntimeError):
    """An ``ip`` command failed."""


def unavailable() -> str | None:
    """Why namespaces cannot be made here (None: they can)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2's ip is not installed"
    return None


def ip(*args: str, check: bool = True) -> str:
    """Run ``ip ARGS``; its output (NetnsError naming the command when it fails)."""
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False, timeout=30)
    if check and done.returncode != 0:
        raise NetnsError(f"ip {' '.join(args)}: {done.stderr.strip() or done.returncode}")
    return done.stdout


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def namespaces() -> list[str]:
    """The names of the machine's named network namespaces."""
    return [line.split()[0] for line in ip("netns", "list").splitlines() if line.strip()]


def remove_stale() -> list[str]:
    """Remove the namespaces and links this module made for processes that are gone; their
    names."""
    removed = []
    for name in namespaces():
        match = _NAMESPACE.match(name)
        if match and not _alive(int(match.group(1))):
            ip("netns", "delete", name, check=False)
            removed.append(name)
    for line in ip("-o", "link", "show").splitlines():
        # "7: tn1a2bx3@if6: <...>": the name, without the peer's index
        name = line.split(":", 2)[1].strip().split("@", 1)[0]
        match = _LINK.match(name)
        if match and not _alive(int(match.group(1), 16)):
            ip("link", "delete", name, check=False)
            removed.append(name)
    return removed


def _serial_number() -> int:
    with _serial_lock:
        return next(_serial)


class Namespace:
    """One network namespace of this process, removed by :meth:`close` (or the ``with``)."""

    def __init__(self, role: str, *, serial: int | None = None) -> None:
        if not re.fullmatch(r"[a-z0-9-]+", role):
            raise ValueError(f"a namespace's role is lower-case letters, digits and '-': {role!r}")
        self.serial = _serial_number() if serial is None else serial
        self.name = f"{PREFIX}-{os.getpid()}-{self.serial}-{role}"
        self.made = False

    def make(self) -> Namespace:
        """Create it (after removing what crashed runs left)."""
        remove_stale()
        ip("netns", "add", self.name)
        self.made = True
        return self

    def command(self, *argv: str) -> list[str]:
        """``argv`` as a command line that runs inside the namespace."""
        return ["ip", "netns", "exec", self.name, *argv]

    def ip(self, *args: str, check: bool = True) -> str:
        """``ip ARGS`` inside the namespace."""
        return ip("-n", self.name, *args, check=check)

    def call(self, function: Callable[[], T]) -> T:
        """``function()`` run by a thread inside the namespace: its sockets and the processes it
        starts are the namespace's. The thread ends with the call, so no other code runs there.
        """
        result: list[T] = []
        failure: list[BaseException] = []

        def inside() -> None:
            try:
                _enter(self.name)
                result.append(function())
            except BaseException as exc:  # handed to the caller's thread
                failure.append(exc)

        thread = threading.Thread(target=inside, name=f"netns-{self.name}")
        thread.start()
        thread.join()
        if failure:
            raise failure[0]
        return result[0]

    def close(self) -> None:
        """Remove it (and so every interface in it)."""
        if self.made:
            ip("netns", "delete", self.name, check=False)
            self.made = False

    def __enter__(self) -> Namespace:
        return self.make()

    def __exit__(self, *exc: object) -> None:
        self.close()


def _enter(name: str) -> None:
    """Move the calling thread into the named namespace (setns(2); Python 3.11 has no
    os.setns)."""
    libc = ctypes.CDLL(None, use_errno=True)
    with open(f"/run/netns/{name}", "rb") as handle:
        if libc.setns(handle.fileno(), _CLONE_NEWNET) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"setns into {name}: {os.strerror(errno)}")


@dataclass
class Host:
    """A host of a :class:`Network`: its namespace, its address, its port on the switch."""

    role: str
    namespace: Namespace
    address: str
    port: str  # the switch's interface facing it (in the switch's namespace)

    @property
    def name(self) -> str:
        """The namespace's name."""
        return self.namespace.name

    def command(self, *argv: str) -> list[str]:
        """``argv`` as a command line that runs on this host."""
        return self.namespace.command(*argv)

    def call(self, function: Callable[[], T]) -> T:
        """``function()`` run on this host (see :meth:`Namespace.call`)."""
        return self.namespace.call(function)


def _subnets_in_use() -> list[ipaddress.IPv4Network]:
    """The IPv4 networks the machine's own namespace has addresses or routes in."""
    found = []
    for line in ip("-4", "-o", "addr", "show").splitlines():
        fields = line.split()
        if "inet" in fields:
            found.append(ipaddress.IPv4Interface(fields[fields.index("inet") + 1]).network)
    for line in ip("-4", "route", "show").splitlines():
        first = line.split()[0]
        if first != "default":
            found.append(ipaddress.IPv4Network(first, strict=False))
    return found


def _free_subnet(serial: int) -> ipaddress.IPv4Network:
    """A /24 of 10.0.0.0/8 the machine does not use, chosen from the pid and serial so that two
    processes making networks at the same moment start from different ones."""
    used = _subnets_in_use()
    start = (os.getpid() * 16 + serial) % (1 << 16)
    for step in range(1 << 16):
        index = (start + step) % (1 << 16)
        candidate = ipaddress.IPv4Network(f"10.{index >> 8}.{index & 0xFF}.0/24")
        if not any(candidate.overlaps(other) for other in used):
            return candidate
    raise NetnsError("no free /24 in 10.0.0.0/8")


class Network:
    """Hosts on one switch (see the module's docstring); ``roles`` name them, in order of their
    addresses (.2, .3, …; the test's own process is .1)."""

    def __init__(self, roles: Sequence[str]) -> None:
        if len(set(roles)) != len(roles) or "switch" in roles:
            raise ValueError(f"the hosts' roles must be distinct, and not 'switch': {roles}")
        self.serial = _serial_number()
        self.roles = list(roles)
        self.switch = Namespace("switch", serial=self.serial)
        self.uplink = f"tn{os.getpid():x}x{self.serial:x}"  # ours, in the machine's namespace
        self.subnet: ipaddress.IPv4Network | None = None
        self.address = ""  # the test process's address on the switch
        self.hosts: dict[str, Host] = {}

    def make(self) -> Network:
        """Create the switch, the hosts and their links; everything made is removed again if a
        step fails."""
        try:
            self._make()
        except BaseException:
            self.close()
            raise
        return self

    def _make(self) -> None:
        self.switch.make()
        self.switch.ip("link", "add", "br0", "type", "bridge")
        self.switch.ip("link", "set", "dev", "br0", "up")
        subnet = self.subnet = _free_subnet(self.serial)
        addresses = subnet.hosts()
        self.address = str(next(addresses))
        # the test process's own port: one end here, the other on the switch
        ip(
            "link", "add", "name", self.uplink, "type", "veth",
            "peer", "name", "uplink", "netns", self.switch.name,
        )  # fmt: skip
        self.switch.ip("link", "set", "dev", "uplink", "master", "br0", "up")
        ip("addr", "add", f"{self.address}/{subnet.prefixlen}", "dev", self.uplink)
        ip("link", "set", "dev", self.uplink, "up")
        for role in self.roles:
            namespace = Namespace(role, serial=self.serial).make()
            address = str(next(addresses))
            host = Host(role, namespace, address, port=f"to-{role}")
            self.hosts[role] = host
            self.switch.ip(
                "link", "add", "name", host.port, "type", "veth",
                "peer", "name", "eth0", "netns", namespace.name,
            )  # fmt: skip
            self.switch.ip("link", "set", "dev", host.port, "master", "br0", "up")
            namespace.ip("addr", "add", f"{address}/{subnet.prefixlen}", "dev", "eth0")
            namespace.ip("link", "set", "dev", "eth0", "up")
            namespace.ip("link", "set", "dev", "lo", "up")

    def __getitem__(self, role: str) -> Host:
        return self.hosts[role]

    def cut(self, role: str) -> None:
        """Unplug a host from the switch: nothing it sends arrives, nothing reaches it."""
        self.switch.ip("link", "set", "dev", self.hosts[role].port, "down")

    def restore(self, role: str) -> None:
        """Plug it back in."""
        self.switch.ip("link", "set", "dev", self.hosts[role].port, "up")

    def is_cut(self, role: str) -> bool:
        """Whether the host's port on the switch is down."""
        line = self.switch.ip("-o", "link", "show", "dev", self.hosts[role].port)
        flags = line[line.index("<") + 1 : line.index(">")].split(",")
        return "UP" not in flags

    def close(self) -> None:
        """Remove every host and the switch (their links go with their namespaces)."""
        for host in self.hosts.values():
            host.namespace.close()
        self.hosts.clear()
        self.switch.close()
        ip("link", "delete", self.uplink, check=False)  # gone with its peer already, normally

    def __enter__(self) -> Network:
        return self.make()

    def __exit__(self, *exc: object) -> None:
        self.close()
