"""The approved-device list: validation with clear errors, identity and challenge checks."""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

import pytest

from drivers.errors import DeviceRejectedError
from drivers.paths import config_dir
from drivers.rfid.feig.approval import ReaderApprovals
from drivers.rfid.feig.protocol import SoftwareVersion
from drivers.shuffler.approval import ApprovalConfigError, ApprovalList, check_challenge
from drivers.shuffler.codes import Capability
from drivers.shuffler.messages import ChallengeResult, Identity

IMAGE = b"firmware image bytes"
DIGEST = hashlib.sha256(IMAGE).hexdigest()


def write(tmp_path: Path, body: str) -> Path:
    (tmp_path / "fw.bin").write_bytes(IMAGE)
    path = tmp_path / "approved-devices.toml"
    path.write_text(body, encoding="utf-8")
    return path


def entry(**changes: str) -> str:
    fields = {
        "vendor": "acme",
        "model": "S1",
        "firmware_sha256": DIGEST,
        "firmware_image": "fw.bin",
        **changes,
    }
    return "[[device]]\n" + "".join(f'{k} = "{v}"\n' for k, v in fields.items())


def identity(
    sha: bytes = bytes.fromhex(DIGEST), caps: Capability = Capability.FW_CHALLENGE
) -> Identity:
    return Identity(1, 1, "acme", "S1", "X1", "A", "1.0", sha, 7, caps, 1024)


def test_shipped_list_is_valid() -> None:
    approvals = ApprovalList.load(config_dir() / "approved-devices.toml")
    assert [(e.vendor, e.model) for e in approvals.entries] == [("tablectl", "TSP-SIM-1")]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (entry(firmware_sha256="abc"), "device.0.firmware_sha256: Value error, must be 64"),
        (entry(firmware_sha256="0" * 64), "device.0.firmware_sha256: " + "0" * 64 + " is not"),
        (entry(firmware_image="missing.bin"), "device.0.firmware_image: cannot read"),
        (entry() + 'colour = "red"\n', "device.0.colour: Extra inputs are not permitted"),
        ("[[device]]\nvendor = 'acme'\n", "device.0.model: Field required"),
        ("device = [", "not valid TOML"),
        ("", "device: Field required"),
    ],
)
def test_bad_files_name_the_key(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(ApprovalConfigError, match=message.replace("(", r"\(")):
        ApprovalList.load(write(tmp_path, body))


def test_identity_and_hash_must_match(tmp_path: Path) -> None:
    approvals = ApprovalList.load(write(tmp_path, entry()))
    assert approvals.match(identity()).image == IMAGE
    with pytest.raises(DeviceRejectedError, match="is not approved"):
        approvals.match(identity(sha=bytes(32)))
    other = Identity(1, 1, "acme", "S2", "X", "A", "1", bytes.fromhex(DIGEST), 7, Capability(0), 0)
    with pytest.raises(DeviceRejectedError, match="acme S2 is not an approved device"):
        approvals.match(other)


def test_challenge(tmp_path: Path) -> None:
    approved = ApprovalList.load(write(tmp_path, entry())).entries[0]
    nonce = bytes(range(16))
    good = ChallengeResult(1, hmac.new(nonce, IMAGE, hashlib.sha256).digest())
    check_challenge(approved, identity(), nonce, good)
    with pytest.raises(DeviceRejectedError, match="challenge failed"):
        check_challenge(approved, identity(), bytes(16), good)
    with pytest.raises(DeviceRejectedError, match="unverifiable"):
        check_challenge(approved, identity(), nonce, None)
    with pytest.raises(DeviceRejectedError, match="unverifiable"):
        check_challenge(approved, identity(caps=Capability(0)), nonce, good)
    with pytest.raises(DeviceRejectedError, match="algorithm"):
        check_challenge(approved, identity(), nonce, ChallengeResult(2, good.mac))


def test_the_shipped_list_approves_the_feig_reader_model_by_what_it_reports() -> None:
    approvals = ReaderApprovals.load(config_dir() / "approved-devices.toml")
    m02m8 = SoftwareVersion(sw_rev=0x0102, d_rev=0, hw_type=0, sw_type=33, tr_type=0x0008)
    entry = approvals.check(1, m02m8)
    assert (entry.model, entry.antennas) == ("ID ISC.M02.M8", 8)
    m02 = SoftwareVersion(0x0102, 0, 0, 31, 0x0008)
    with pytest.raises(
        DeviceRejectedError, match=r"is a ID ISC\.M02 \(SW-TYPE 31\), not an approved"
    ):
        approvals.check(1, m02)
    newer = SoftwareVersion(0x0103, 0, 0, 33, 0x0008)
    with pytest.raises(DeviceRejectedError, match=r"firmware 01\.03\.00, not an approved revision"):
        approvals.check(2, newer)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("sw_type = 300\n", "reader.0.sw_type: Input should be less than or equal to 255"),
        ('sw_type = 33\nfirmware = ["4.2"]\n', "'4.2' is not a revision like 04.02.01"),
        ("sw_type = 33\nantennas = 9\n", "reader.0.antennas: Input should be less than or equal"),
    ],
)
def test_bad_reader_entries_name_the_key(tmp_path: Path, body: str, message: str) -> None:
    text = entry() + '\n[[reader]]\nvendor = "FEIG ELECTRONIC"\nmodel = "X"\n' + body
    with pytest.raises(ApprovalConfigError, match=message):
        ReaderApprovals.load(write(tmp_path, text))
