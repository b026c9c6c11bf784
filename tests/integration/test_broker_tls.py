"""TLS to the broker: a client certificate, or a username and password over TLS."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.broker import Broker, free_port, mosquitto_available
from tests.integration.conftest import Collector, DaemonProcess

pytestmark = [
    pytest.mark.broker,
    pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed"),
]


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_pki(directory: Path) -> None:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, all signed by it."""
    directory.mkdir()
    openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=test CA",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        cwd=directory,
    )
    (directory / "server.ext").write_text("subjectAltName = IP:127.0.0.1\n")
    for name, ext in (("server", ["-extfile", "server.ext"]), ("client", [])):
        openssl(
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            f"/CN=table-{name}",
            "-keyout",
            f"{name}.key",
            "-out",
            f"{name}.csr",
            cwd=directory,
        )
        openssl(
            "x509",
            "-req",
            "-in",
            f"{name}.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-out",
            f"{name}.pem",
            *ext,
            cwd=directory,
        )


@pytest.fixture
def pki(tmp_path: Path) -> Path:
    directory = tmp_path / "pki"
    make_pki(directory)
    return directory


def tls_broker(tmp_path: Path, pki: Path, listener: str) -> tuple[Broker, int]:
    """A broker with a plain listener (for the test's subscriber) and a TLS one."""
    if not mosquitto_available():
        pytest.skip("mosquitto is not installed")
    directory = tmp_path / "tls-broker"
    directory.mkdir()
    port = free_port()
    extra = (
        f"listener {port} 127.0.0.1\ncafile {pki}/ca.pem\ncertfile {pki}/server.pem\n"
        f"keyfile {pki}/server.key\n{listener}"
    )
    broker = Broker(directory, head="per_listener_settings true\n", extra=extra)
    broker.start()
    return broker, port


def client_certificate_tls(pki: Path) -> str:
    """The table config's ``[broker.tls]`` for a broker that takes only client certificates."""
    return (
        f'[broker.tls]\nenabled = true\nca_file = "{pki}/ca.pem"\n'
        f'cert_file = "{pki}/client.pem"\nkey_file = "{pki}/client.key"\n'
    )


async def connects(daemon: DaemonProcess, broker: Broker) -> bool:
    """Start the daemon; True once its birth arrives."""
    async with Collector(broker, daemon.topics) as collector:
        daemon.start()
        await collector.wait_for(lambda c: any(s["state"] == "online" for s in c.status), 20)
        return True


async def refused(daemon: DaemonProcess, broker: Broker) -> bool:
    """Start the daemon; True once it logged a failed attempt and no birth came."""
    async with Collector(broker, daemon.topics) as collector:
        daemon.start()
        deadline = time.monotonic() + 20
        while "mqtt.disconnected" not in daemon.log():  # a polling loop with a deadline
            assert time.monotonic() < deadline, daemon.log()
            await asyncio.sleep(0.02)
        return not collector.status


async def test_client_certificate(tmp_path: Path, pki: Path) -> None:
    broker, tls_port = tls_broker(tmp_path, pki, "require_certificate true\nallow_anonymous true\n")
    try:
        tls = client_certificate_tls(pki)
        daemon = DaemonProcess(
            tmp_path / "with-cert", broker, broker_port=tls_port, broker_extra=tls
        )
        try:
            assert await connects(daemon, broker)
        finally:
            daemon.close()
        # the same broker refuses a client without a certificate
        no_cert = f'timeout = 1\n[broker.tls]\nenabled = true\nca_file = "{pki}/ca.pem"\n'
        without = DaemonProcess(
            tmp_path / "no-cert", broker, table="T2", broker_port=tls_port, broker_extra=no_cert
        )
        try:
            assert await refused(without, broker)  # it keeps trying, and says why
        finally:
            without.close()
    finally:
        broker.stop()


async def test_username_and_password_over_tls(tmp_path: Path, pki: Path) -> None:
    passwords = tmp_path / "passwords"
    passwords.write_text("")
    subprocess.run(
        ["mosquitto_passwd", "-b", str(passwords), "table-t1", "s3cret"],
        check=True,
        capture_output=True,
        timeout=30,
    )
    broker, tls_port = tls_broker(
        tmp_path, pki, f"allow_anonymous false\npassword_file {passwords}\n"
    )
    try:
        secret = tmp_path / "broker-password"
        secret.write_text("s3cret\n")
        good = (
            f'username = "table-t1"\npassword_file = "{secret}"\n'
            f'[broker.tls]\nenabled = true\nca_file = "{pki}/ca.pem"\n'
        )
        daemon = DaemonProcess(tmp_path / "good", broker, broker_port=tls_port, broker_extra=good)
        try:
            assert await connects(daemon, broker)
            assert "s3cret" not in daemon.log()  # never logged
        finally:
            daemon.close()
        bad = (
            'username = "table-t1"\npassword = "wrong"\n'
            f'[broker.tls]\nenabled = true\nca_file = "{pki}/ca.pem"\n'
        )
        wrong = DaemonProcess(
            tmp_path / "bad", broker, table="T2", broker_port=tls_port, broker_extra=bad
        )
        try:
            assert await refused(wrong, broker)
        finally:
            wrong.close()
    finally:
        broker.stop()


def test_pki_helper_makes_a_chain(pki: Path) -> None:
    result = subprocess.run(
        ["openssl", "verify", "-CAfile", "ca.pem", "server.pem", "client.pem"],
        cwd=pki,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


async def tablectl(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "controller.cli", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip


async def test_tail_and_dealer_reach_a_broker_that_takes_only_client_certificates(
    tmp_path: Path, pki: Path
) -> None:
    """``tablectl tail --config`` connects where the table's config says, over its TLS, with
    a client certificate of its own; ``tablectl dealer`` does with ``mqtts://`` and the TLS
    options."""
    broker, tls_port = tls_broker(tmp_path, pki, "require_certificate true\nallow_anonymous true\n")
    try:
        tls = client_certificate_tls(pki)
        daemon = DaemonProcess(tmp_path / "table", broker, broker_port=tls_port, broker_extra=tls)
        try:
            assert await connects(daemon, broker)
            tail = await tablectl(
                "tail", "--config", str(daemon.config), "--count", "1",
                "--cert-file", f"{pki}/client.pem", "--key-file", f"{pki}/client.key",
            )  # fmt: skip
            assert tail.stdout is not None
            async with asyncio.timeout(60):  # subscribed once the table's retained status came
                first = await tail.stdout.readline()
            assert first.startswith(b"# status online"), first
            dealer = await tablectl(
                "dealer", "--broker", f"mqtts://127.0.0.1:{tls_port}", "--table", daemon.table,
                "--ca-file", f"{pki}/ca.pem", "--cert-file", f"{pki}/client.pem",
                "--key-file", f"{pki}/client.key", *daemon.key_args(),
                "action", "seat=2", "action=fold", "--transaction", "over-tls",
            )  # fmt: skip
            out, err = await asyncio.wait_for(dealer.communicate(), 60)
            response = json.loads(out)
            assert response["transaction"] == "over-tls", err
            assert response["status"] == "error"
            assert "no hand" in response["error"]
            printed, _ = await asyncio.wait_for(tail.communicate(), 60)
            assert tail.returncode == 0
            assert "command.rejected" in printed.decode()  # the table's answer, as an event
        finally:
            daemon.close()
    finally:
        broker.stop()
