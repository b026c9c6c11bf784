"""A real load balancer in front of pit processes: nginx (Debian's ``nginx`` package), as a floor
puts one (docs/pit.md, "Behind a load balancer").

Two front ends on one nginx, both spreading the console over the same pits: one in round robin
(each request to the next pit, a session's requests on every pit), one sticky (each session's
requests to one pit, chosen by a consistent hash of its session cookie). The access log names,
for each request, the front end, the pit that answered it and whether a session cookie came.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from controller.pit.users import SESSION_COOKIE
from tests.integration.broker import free_port, wait_port

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def nginx_available() -> bool:
    """Whether nginx is installed."""
    return Path(NGINX).exists()


@dataclass(frozen=True)
class Served:
    """One request as the access log has it."""

    front: str  # "round-robin" or "sticky"
    upstream: str  # host:port of the pit that answered (each tried, ", " apart, if retried)
    session: str  # the session cookie's value, or "-"
    request: str


class Nginx:
    """nginx in front of ``pits`` (their ``host:port``), in the foreground, under ``directory``."""

    def __init__(self, directory: Path, pits: Sequence[str]) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.round_robin_port = free_port()
        self.sticky_port = free_port()
        self.access_log = directory / "access.log"
        servers = "".join(f"        server {pit} max_fails=1 fail_timeout=5s;\n" for pit in pits)
        temp = "".join(
            f"    {kind}_temp_path {directory / kind};\n"
            for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        )
        # what the console needs of a proxy: HTTP/1.1 to the pits with keep-alive, no buffering
        # of the live pages' event streams (Server-Sent Events), long reads for them, and the
        # client's address passed on (the pits trust this proxy: [web] trusted_proxies)
        location = """
        location / {
            proxy_pass http://%s;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_buffering off;
            proxy_read_timeout 1h;
            proxy_next_upstream error timeout http_502 http_503;
        }
"""
        self.config = directory / "nginx.conf"
        self.config.write_text(
            f"worker_processes 1;\npid {directory / 'nginx.pid'};\n"
            f"error_log {directory / 'error.log'} warn;\n"
            "events { worker_connections 512; }\n"
            "http {\n"
            f"{temp}"
            # fields apart by "|": $upstream_addr lists every pit tried, comma and space apart
            f"    log_format balanced '$server_port|$upstream_addr|"
            f"$cookie_{SESSION_COOKIE}|$request';\n"
            f"    access_log {self.access_log} balanced;\n"
            f"    upstream round_robin {{\n{servers}        keepalive 8;\n    }}\n"
            f"    upstream sticky {{\n        hash $cookie_{SESSION_COOKIE} consistent;\n"
            f"{servers}        keepalive 8;\n    }}\n"
            f"    server {{\n        listen 127.0.0.1:{self.round_robin_port};\n"
            f"{location % 'round_robin'}    }}\n"
            f"    server {{\n        listen 127.0.0.1:{self.sticky_port};\n"
            f"{location % 'sticky'}    }}\n"
            "}\n"
        )
        self.proc: subprocess.Popen[bytes] | None = None

    def url(self, front: str) -> str:
        """The base URL of ``front`` ("round-robin" or "sticky")."""
        port = self.round_robin_port if front == "round-robin" else self.sticky_port
        return f"http://127.0.0.1:{port}"

    def start(self) -> None:
        """Start nginx and wait until both front ends listen."""
        log = (self.directory / "nginx.out").open("ab")
        self.proc = subprocess.Popen(
            [NGINX, "-p", str(self.directory), "-c", str(self.config), "-g", "daemon off;"],
            stdout=log,
            stderr=log,
        )
        log.close()
        for port in (self.round_robin_port, self.sticky_port):
            wait_port(port, 20)

    def served(self) -> list[Served]:
        """Every request logged so far."""
        if not self.access_log.exists():
            return []
        out = []
        fronts = {str(self.round_robin_port): "round-robin", str(self.sticky_port): "sticky"}
        for line in self.access_log.read_text().splitlines():
            port, upstream, session, request = line.split("|", 3)
            out.append(Served(fronts.get(port, port), upstream, session, request))
        return out

    def close(self) -> None:
        """Stop nginx (a quick shutdown: the live pages' streams are not waited for)."""
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None
