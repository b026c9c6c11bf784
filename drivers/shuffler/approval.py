"""The Board-approved device list (``config/approved-devices.toml``) and the checks against it.

§ 1544 lets a table use only approved shufflers. A device is accepted when its vendor, model and
reported firmware SHA-256 match an entry and it answers a fresh firmware challenge with
HMAC-SHA256(key=nonce, msg=image) over the approved image, which the host computes itself from
the file named in the entry. The reported hash alone proves nothing (a patched device can report
any hash), so a device that cannot answer the challenge is refused too.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from pathlib import Path

from drivers.approvals import ApprovalConfigError, read_approval_file
from drivers.errors import DeviceRejectedError
from drivers.shuffler.codes import Capability
from drivers.shuffler.messages import ChallengeResult, Identity

HMAC_SHA256 = 1

__all__ = ["ApprovalConfigError", "ApprovalList", "ApprovedFirmware", "check_challenge"]


@dataclass(frozen=True, slots=True)
class ApprovedFirmware:
    """One approved device: identity, firmware hash and the image itself."""

    vendor: str
    model: str
    firmware_version: str | None
    sha256: bytes
    image: bytes

    def expected_mac(self, nonce: bytes) -> bytes:
        """The challenge answer an honest device running this image gives."""
        return hmac.new(nonce, self.image, hashlib.sha256).digest()


class ApprovalList:
    """The approved devices of one table."""

    def __init__(self, entries: list[ApprovedFirmware]) -> None:
        self.entries = entries

    @classmethod
    def load(cls, path: Path) -> ApprovalList:
        """Read and validate the file; check every image against its hash."""
        document = read_approval_file(path)
        entries = []
        for index, entry in enumerate(document.device):
            image_path = (path.parent / entry.firmware_image).resolve()
            key = f"device.{index}.firmware_image"
            try:
                image = image_path.read_bytes()
            except OSError as exc:
                raise ApprovalConfigError(
                    f"{path}: {key}: cannot read {image_path}: {exc}"
                ) from None
            digest = hashlib.sha256(image).hexdigest()
            if digest != entry.firmware_sha256:
                raise ApprovalConfigError(
                    f"{path}: device.{index}.firmware_sha256: {entry.firmware_sha256} is not the "
                    f"SHA-256 of {image_path} ({digest})"
                )
            entries.append(
                ApprovedFirmware(
                    entry.vendor,
                    entry.model,
                    entry.firmware_version,
                    bytes.fromhex(digest),
                    image,
                )
            )
        return cls(entries)

    def match(self, identity: Identity) -> ApprovedFirmware:
        """The entry this device claims to be; raise :class:`DeviceRejectedError` if none."""
        same_model = [
            e for e in self.entries if (e.vendor, e.model) == (identity.vendor, identity.model)
        ]
        if not same_model:
            raise DeviceRejectedError(
                f"{identity.vendor} {identity.model} is not an approved device"
            )
        for entry in same_model:
            if hmac.compare_digest(entry.sha256, identity.fw_sha256):
                return entry
        raise DeviceRejectedError(
            f"firmware {identity.fw_sha256.hex()} of {identity.vendor} {identity.model} "
            "is not approved"
        )


def check_challenge(
    entry: ApprovedFirmware, identity: Identity, nonce: bytes, answer: ChallengeResult | None
) -> None:
    """Raise :class:`DeviceRejectedError` unless ``answer`` proves the approved image runs."""
    if not identity.caps & Capability.FW_CHALLENGE or answer is None:
        raise DeviceRejectedError("the device cannot answer the firmware challenge: unverifiable")
    if answer.algo != HMAC_SHA256:
        raise DeviceRejectedError(f"unknown challenge algorithm {answer.algo}: unverifiable")
    if not hmac.compare_digest(answer.mac, entry.expected_mac(nonce)):
        raise DeviceRejectedError("firmware challenge failed: the device is not running the image")
