"""Signing (docs/security.md): the canonical bytes, the worked example, key files."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.cli import main
from controller.keyring import load_keyring
from controller.signing import (
    SigningError,
    canonical,
    load_private_key,
    public_text,
    signature_holds,
)

DOC = (Path(__file__).resolve().parents[2] / "docs" / "security.md").read_text()


def test_the_worked_example_of_the_docs_signs_and_verifies() -> None:
    key = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
    public = re.search(r"has the public key `([^`]+)`", DOC)
    signature = re.search(r"its signature is\n`([^`]+)`", DOC)
    assert public is not None
    assert signature is not None
    assert public_text(key.public_key()) == public.group(1)
    message = canonical(
        "action",
        "T7",
        "k-17",
        {"seat": 3, "action": "raise", "amount": 8},
        "2026-12-01T20:15:04.250Z",
        "5f0c2a8e9d1b4c7a8e6f3b2d1c0a9e8f",
    )
    assert message.decode() in DOC  # the bytes shown are the bytes signed
    raw = base64.b64decode(public.group(1))
    assert signature_holds(raw, signature.group(1), message)
    assert base64.b64encode(key.sign(message)).decode() == signature.group(1)
    assert not signature_holds(raw, signature.group(1), message.replace(b"raise", b"fold"))
    assert not signature_holds(raw, "not base64!", message)


def test_canonical_json_sorts_keys_at_every_level_and_keeps_unicode() -> None:
    one = canonical("x", "T", "t", {"b": {"z": 1, "a": "é"}, "a": [2, 1]}, "ts", "n")
    two = canonical("x", "T", "t", {"a": [2, 1], "b": {"a": "é", "z": 1}}, "ts", "n")
    assert one == two
    assert b'"b":{"a":"\xc3\xa9","z":1}' in one


def test_keys_new_writes_a_private_key_and_a_keyring_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["keys", "new", "ann", "--role", "dealer", "--person", "Ann", "--table", "T7",
                 "--valid-until", "2027-06-30T00:00:00Z", "--out", str(tmp_path)])  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    (tmp_path / "keyring.toml").write_text(printed)
    entry = load_keyring(tmp_path / "keyring.toml").keys["ann"]
    assert (entry.person, entry.roles, entry.tables) == ("Ann", ["dealer"], ["T7"])
    private = load_private_key(tmp_path / "ann.key")
    assert public_text(private.public_key()) == entry.public_key
    assert (tmp_path / "ann.key").stat().st_mode & 0o777 == 0o600
    assert main(["keys", "new", "ann", "--role", "dealer", "--out", str(tmp_path)]) == 2
    assert "exists" in capsys.readouterr().err
    assert main(["keys", "new", "bad name", "--role", "dealer", "--out", str(tmp_path)]) == 2
    (tmp_path / "junk.key").write_text("not a key")
    with pytest.raises(SigningError, match="not a private key"):
        load_private_key(tmp_path / "junk.key")
