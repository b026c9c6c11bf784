"""``make dist``: one archive that installs tablectl on a table PC (or a pit) with no network.

It holds the project's wheel, every dependency's wheel for CPython 3.11 on each platform asked
for (``wheels/x86_64/``, ``wheels/aarch64/``; the pit's extra included), ``install.sh`` (a
dedicated venv, ``pip --no-index`` from the archive, the example config, the systemd units and
udev rules), ``NO-WHEEL.txt`` naming what has no wheel for a platform (that platform cannot be
installed from the archive until it has one), and ``SHA256SUMS`` over all of it.

The dependencies are resolved once, for this machine, and each platform gets the same versions
(``pip download --no-deps --only-binary=:all: --platform …``), so every table of a floor runs
the same code whatever its processor.

    python scripts/make_dist.py [--platforms x86_64,aarch64] [--out dist/] [--wheel WHEEL]
"""

from __future__ import annotations

import argparse
import hashlib
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PYTHON = "3.11"
#: pip's platform tags for each machine: manylinux wheels first, then plain linux ones.
PLATFORM_TAGS = {
    "x86_64": ["manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64"],
    "aarch64": ["manylinux2014_aarch64", "manylinux_2_17_aarch64", "manylinux_2_28_aarch64"],
}


def run(*command: str | Path) -> subprocess.CompletedProcess[str]:
    """A command, its output kept; fails with it."""
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, command))} failed:\n{done.stdout}{done.stderr}")
    return done


def build_wheel(out: Path) -> Path:
    """The project's wheel, built from this checkout."""
    run(sys.executable, "-m", "build", "--wheel", "--outdir", out, REPO)
    (wheel,) = out.glob("tablectl-*.whl")
    return wheel


def resolve(wheel: Path, into: Path) -> list[str]:
    """Every dependency of the wheel and the pit's extra as ``name==version``, resolved here,
    their wheels (this machine's) downloaded into ``into``."""
    run(sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:", "--dest", into,
        f"tablectl[pit] @ {wheel.as_uri()}")  # fmt: skip
    pins = []
    for found in sorted(into.glob("*.whl")):
        name, version = found.name.split("-")[:2]
        if name != "tablectl":
            pins.append(f"{name}=={version}")
    return pins


def download(pins: list[str], machine: str, into: Path) -> list[str]:
    """Each pinned dependency's wheel for ``machine``; the pins with none."""
    tags = [arg for tag in PLATFORM_TAGS[machine] for arg in ("--platform", tag)]
    missing = []
    for pin in pins:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--only-binary=:all:", "--python-version", PYTHON, "--implementation", "cp",
             *tags, "--dest", str(into), pin],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            missing.append(pin)
    return missing


def checksums(root: Path) -> None:
    """SHA256SUMS over every file of the archive, as ``sha256sum -c`` reads it."""
    lines = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        lines.append(f"{digest}  {path.relative_to(root).as_posix()}\n")
    (root / "SHA256SUMS").write_text("".join(lines))


def make(platforms: list[str], out: Path, built: Path | None = None) -> tuple[Path, str]:
    """Build the archive (with ``built``, the project's wheel already built from this checkout,
    else one built now); its path and what has no wheel."""
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        wheel = built if built is not None else build_wheel(work / "build")
        version = wheel.name.split("-")[1]
        root = work / f"tablectl-{version}-offline"
        root.mkdir()
        shutil.copy2(wheel, root)
        here = work / "here"
        pins = resolve(wheel, here)
        notes = []
        for machine in platforms:
            into = root / "wheels" / machine
            into.mkdir(parents=True)
            if machine == platform.machine():
                for found in here.glob("*.whl"):
                    if not found.name.startswith("tablectl-"):
                        shutil.copy2(found, into)
                missing: list[str] = []
            else:
                missing = download(pins, machine, into)
            notes += [f"{machine}: {pin} has no wheel for CPython {PYTHON}\n" for pin in missing]
        missing_text = "".join(notes) or "every dependency has a wheel\n"
        (root / "NO-WHEEL.txt").write_text(missing_text)
        shutil.copy2(REPO / "scripts" / "install.sh", root / "install.sh")
        checksums(root)
        out.mkdir(parents=True, exist_ok=True)
        archive = out / f"{root.name}.tar.gz"
        with tarfile.open(archive, "w:gz") as tar:
            tar.add(root, arcname=root.name)
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    (out / f"{archive.name}.sha256").write_text(f"{digest}  {archive.name}\n")
    return archive, missing_text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--platforms", default="x86_64,aarch64", help="machines, comma-separated")
    parser.add_argument("--out", type=Path, default=REPO / "dist")
    parser.add_argument(
        "--wheel", type=Path, help="the project's wheel, already built from this checkout"
    )
    args = parser.parse_args()
    platforms = [p.strip() for p in args.platforms.split(",") if p.strip()]
    unknown = [p for p in platforms if p not in PLATFORM_TAGS]
    if unknown:
        parser.error(f"unknown platform {', '.join(unknown)}: {', '.join(PLATFORM_TAGS)}")
    if args.wheel is not None and not args.wheel.is_file():
        parser.error(f"--wheel {args.wheel}: no such file")
    archive, missing = make(platforms, args.out, args.wheel)
    print(archive)
    print(missing, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
