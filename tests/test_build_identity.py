"""The build identity: the same for the same wheel's files however it is installed, different for
any other file (controller/build_identity.py). Installed from a wheel: tests/packaging."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from controller.build_identity import files_digest

WHEEL = [
    ("controller/cards.py", "sha256=AAA"),
    ("tablectl-0.1.0.dist-info/METADATA", "sha256=BBB"),
    ("tablectl-0.1.0.data/data/share/tablectl/config/table.toml", "sha256=CCC"),
    ("tablectl-0.1.0.dist-info/RECORD", ""),
]
INSTALLED = [
    ("controller/__pycache__/cards.cpython-311.pyc", ""),
    ("../../../bin/tablectl", "sha256=SCRIPT"),
    ("../../../share/tablectl/config/table.toml", "sha256=CCC"),
    ("tablectl-0.1.0.dist-info/METADATA", "sha256=BBB"),
    ("tablectl-0.1.0.dist-info/INSTALLER", "sha256=PIP"),
    ("tablectl-0.1.0.dist-info/REQUESTED", "sha256=EMPTY"),
    ("tablectl-0.1.0.dist-info/direct_url.json", "sha256=WHERE"),
    ("tablectl-0.1.0.dist-info/RECORD", ""),
    ("controller/cards.py", "sha256=AAA"),
]


def test_an_installation_has_the_identity_of_its_wheel() -> None:
    assert files_digest(INSTALLED) == files_digest(WHEEL)


@given(st.permutations(INSTALLED), st.integers(1, 5))
def test_the_identity_does_not_depend_on_order_or_on_the_prefix(
    lines: list[tuple[str, str]], depth: int
) -> None:
    moved = [(("../" * depth + n[9:]) if n.startswith("../../../") else n, h) for n, h in lines]
    assert files_digest(moved) == files_digest(WHEEL)


def test_any_other_byte_or_file_is_another_identity() -> None:
    changed = [(n, "sha256=ZZZ" if n == "controller/cards.py" else h) for n, h in WHEEL]
    added = [*WHEEL, ("controller/extra.py", "sha256=DDD")]
    renamed = [("controller/kards.py" if n == "controller/cards.py" else n, h) for n, h in WHEEL]
    digests = {files_digest(x) for x in (WHEEL, changed, added, renamed, WHEEL[1:])}
    assert len(digests) == 5
