"""Run the test suite with every core busy, as on a loaded machine (`make test-busy`).

One CPU hog per core (a process spinning at the tests' own priority) for the whole run, then
pytest with the given arguments, ``--runs`` times in a row, stopping at the first failure. A test
that passes only when the machine is idle depends on timing it cannot control; this finds it.

    python tests/busy.py --runs 5 -- tests/integration tests/shell
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

HOG = "while True: pass"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=1, help="runs in a row (default 1)")
    parser.add_argument(
        "--hogs", type=int, default=os.cpu_count() or 1, help="busy processes (default: cores)"
    )
    parser.add_argument("pytest_args", nargs="*", help="arguments for pytest (after --)")
    args = parser.parse_args(argv)
    hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(args.hogs)]
    try:
        for run in range(1, args.runs + 1):
            print(f"busy run {run}/{args.runs}: {args.hogs} CPU hog(s)", flush=True)
            started = time.monotonic()
            code = subprocess.call([sys.executable, "-m", "pytest", *args.pytest_args])
            seconds = time.monotonic() - started
            print(f"busy run {run}/{args.runs}: exit {code} after {seconds:.0f} s", flush=True)
            if code != 0:
                return code
        return 0
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


if __name__ == "__main__":
    sys.exit(main())
