"""The Board-approved device list, ``config/approved-devices.toml``: one file, read in one place.

§ 1544 lets a table use only approved devices. The file has two kinds of entry:

* ``[[device]]``: a shuffler, approved by vendor, model and firmware image (its SHA-256, and the
  image itself for the firmware challenge: :mod:`drivers.shuffler.approval`);
* ``[[reader]]``: an RFID reader model that cannot prove its firmware, approved by what it says
  it is. A FEIG ID ISC reader reports its type (SW-TYPE) and firmware revision (SW-REV, D-REV)
  in its ``[0x65]`` answer; an entry names the type and, optionally, the revisions allowed
  (:mod:`drivers.rfid.feig.approval`).

A file that cannot be used is an :class:`ApprovalConfigError` naming the file and the key.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator


class ApprovalConfigError(ValueError):
    """The approved-device list cannot be used; the message names the file and key."""


class ShufflerEntry(BaseModel):
    """One approved shuffler (``[[device]]``)."""

    model_config = ConfigDict(extra="forbid")

    vendor: str = Field(min_length=1)
    model: str = Field(min_length=1)
    firmware_version: str | None = None
    firmware_sha256: str
    firmware_image: Path

    @field_validator("firmware_sha256")
    @classmethod
    def _hex_digest(cls, value: str) -> str:
        cleaned = value.strip().lower()
        if len(cleaned) != 64 or any(c not in "0123456789abcdef" for c in cleaned):
            raise ValueError("must be 64 hexadecimal digits (a SHA-256)")
        return cleaned


_REVISION = re.compile(r"\d{2}\.\d{2}\.\d{2}")


class ReaderEntry(BaseModel):
    """One approved RFID reader model (``[[reader]]``)."""

    model_config = ConfigDict(extra="forbid")

    vendor: str = Field(min_length=1)
    model: str = Field(min_length=1, description="the model's name, as its vendor spells it")
    sw_type: int = Field(ge=0, le=255, description="the reader type it reports (SW-TYPE)")
    antennas: int = Field(default=1, ge=1, le=8, description="its antenna outputs")
    firmware: tuple[str, ...] = Field(
        default=(), description="firmware revisions allowed, SW-REV.D-REV as 04.02.01 (none: any)"
    )

    @field_validator("firmware")
    @classmethod
    def _revisions(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for revision in value:
            if not _REVISION.fullmatch(revision):
                raise ValueError(f"{revision!r} is not a revision like 04.02.01")
        return value


class ApprovalFile(BaseModel):
    """The whole file."""

    model_config = ConfigDict(extra="forbid")

    device: list[ShufflerEntry] = Field(min_length=1)
    reader: list[ReaderEntry] = Field(default_factory=list)


def read_approval_file(path: Path) -> ApprovalFile:
    """Read and validate the file (the images are the shuffler list's to read)."""
    try:
        return ApprovalFile.model_validate(tomllib.loads(path.read_text(encoding="utf-8")))
    except OSError as exc:
        raise ApprovalConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ApprovalConfigError(f"{path}: not valid TOML: {exc}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise ApprovalConfigError(f"{path}: {where}: {first['msg']}") from None
