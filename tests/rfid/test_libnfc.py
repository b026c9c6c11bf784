"""libnfc's own tools find the simulated PN532 on its pty and list the simulated tags.

libnfc 1.8 picks the device from ``LIBNFC_DEFAULT_DEVICE`` (it does not read
``LIBNFC_SYSCONFDIR``); auto-scan is switched off so nothing else on the machine is probed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from typing import Any

import pytest

TAGS = ("04a1b2c3d4e580", "04112233445566", "deadbeef")

needs_nfc_list = pytest.mark.skipif(
    shutil.which("nfc-list") is None,
    reason="nfc-list not installed (Debian package libnfc-bin; .ci/run installs it)",
)
needs_nfc_poll = pytest.mark.skipif(
    shutil.which("nfc-poll") is None,
    reason="nfc-poll not installed (Debian package libnfc-examples; .ci/run installs it)",
)


def libnfc_env(device: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIBNFC_")}
    env.update(
        LIBNFC_DEFAULT_DEVICE=f"pn532_uart:{device}",
        LIBNFC_AUTO_SCAN="false",
        LIBNFC_INTRUSIVE_SCAN="false",
        LIBNFC_LOG_LEVEL="1",
    )
    return env


def listed_uids(output: str) -> list[str]:
    """UIDs from libnfc's target printout (``UID (NFCID1): 04  a1  b2 …``)."""
    lines = re.findall(r"UID \(NFCID1\):((?:\s+[0-9a-f]{2})+)", output)
    return ["".join(line.split()) for line in lines]


@needs_nfc_list
def test_nfc_list_finds_the_simulated_tags(sim_process: Callable[..., Any]) -> None:
    sim = sim_process(*(arg for tag in TAGS for arg in ("--tag", tag)))
    result = subprocess.run(
        ["nfc-list"],
        env=libnfc_env(str(sim.link)),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "NFC device: user defined default device opened" in result.stdout
    assert "3 ISO14443A passive target(s) found" in result.stdout
    assert sorted(listed_uids(result.stdout)) == sorted(TAGS)
    status = sim.request(status=True)
    assert status["errors_sent"] == 0  # every command libnfc sent was understood
    assert status["asleep"]  # libnfc put the chip in power-down when it closed the device


@needs_nfc_poll
def test_nfc_poll_sees_a_tag_and_then_its_removal(sim_process: Callable[..., Any]) -> None:
    sim = sim_process("--tag", TAGS[0])
    poll = subprocess.Popen(
        ["nfc-poll"],
        env=libnfc_env(str(sim.link)),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        # nfc-poll found the tag once it starts pinging it with InDataExchange (its output is
        # block-buffered in a pipe, so the simulator is where to look).
        deadline = time.monotonic() + 30
        while sim.request(status=True)["commands"].get("40", 0) == 0:
            assert poll.poll() is None, "nfc-poll exited before finding the tag"
            assert time.monotonic() < deadline, "nfc-poll never found the tag"
            time.sleep(0.02)
        sim.request(remove=[TAGS[0]])
        output, _ = poll.communicate(timeout=30)
    finally:
        if poll.poll() is None:
            poll.kill()
            poll.communicate()
    assert poll.returncode == 0, output
    assert listed_uids(output) == [TAGS[0]]
    assert "done." in output
