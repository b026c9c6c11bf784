"""Mutation testing (``make mutation``): how many one-token mistakes in each module its tests
catch, with cosmic-ray (a maintained tool: https://cosmic-ray.readthedocs.io).

cosmic-ray makes each mutant by editing the module's file on disk, runs a test command, and
puts the file back. So every module is mutated in a copy of the working tree of its own, under
``.mutation/work/`` (never in the checkout), and several modules run at once (``--jobs``), each in
its copy. The tests of a mutant are the module's own (``MODULES``, below): ``pytest -x`` on them,
one process, stopping at the first failure. Before any mutant the same command must pass on the
unmutated copy (cosmic-ray's baseline), or the module's figures would count a broken command as
kills.

Results are kept per module in ``.mutation/cache/`` under a key made of the module's text and
its tests' (and the suite's conftest): ``--changed`` runs only the modules whose key moved and
takes the others from the cache. Every run rewrites ``benchmarks/mutation-results.txt``: one row
per module (mutants, killed, equivalent, survived, timed out, the share killed) and, under it,
every survivor not listed in ``benchmarks/mutation-equivalent.toml``, which names each mutant
that cannot be killed (same behaviour) with the reason.

    python benchmarks/mutation.py                      # every module (hours)
    python benchmarks/mutation.py drivers/tsp/frame.py # one
    python benchmarks/mutation.py --changed --jobs 2   # what changed since the last run
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STATE = REPO / ".mutation"
RESULTS = REPO / "benchmarks" / "mutation-results.txt"
EQUIVALENT = REPO / "benchmarks" / "mutation-equivalent.toml"
#: Each mutant's test run may take this many seconds (a mutant that loops for ever is a kill).
TIMEOUT = 120.0

_CORE_TESTS = (
    "tests/core/test_rules_hand.py",
    "tests/core/test_scenario_files.py",
    "tests/core/test_irregular_properties.py",
    "tests/core/test_properties.py",
)

_TSP_TESTS = (
    "tests/drivers/test_tsp_codec.py",
    "tests/drivers/test_tsp_golden.py",
    "tests/drivers/test_tsp_layout.py",
    "tests/drivers/test_tsp_link.py",
)

#: Each module mutated, and the tests that must catch its mutants.
MODULES: dict[str, tuple[str, ...]] = {
    # the codecs of every driver
    **dict.fromkeys(
        ("drivers/tsp/frame.py", "drivers/tsp/cobs.py", "drivers/tsp/crc.py"), _TSP_TESTS
    ),
    "drivers/rfid/pn532/frames.py": ("tests/rfid/test_pn532_frames.py",),
    "drivers/rfid/feig/frames.py": ("tests/rfid/test_feig_protocol.py",),
    "drivers/rfid/feig/protocol.py": ("tests/rfid/test_feig_protocol.py",),
    # the journal's chain
    "controller/shell/chain.py": ("tests/shell/test_integrity.py", "tests/shell/test_journal.py"),
    # the table's flow and engine
    "controller/table/flow.py": ("tests/core/test_transitions.py", *_CORE_TESTS),
    "controller/table/engine.py": ("tests/core/test_engine_tables.py", *_CORE_TESTS),
    # the rules (controller/rules) and the game (controller/game), module by module
    **{
        f"controller/rules/{path.name}": _CORE_TESTS
        for path in sorted((REPO / "controller" / "rules").glob("*.py"))
        if path.name not in ("__init__.py", "ids.py")
    },
    **{
        f"controller/game/{path.name}": ("tests/core/test_betting.py", *_CORE_TESTS)
        for path in sorted((REPO / "controller" / "game").glob("*.py"))
        if path.name != "__init__.py"
    },
}


@dataclass
class Outcome:
    """One module's figures, and the survivors not known to be equivalent."""

    module: str
    key: str
    tests: list[str] = field(default_factory=list)
    mutants: int = 0
    killed: int = 0
    equivalent: int = 0
    survived: int = 0
    timed_out: int = 0
    seconds: float = 0.0
    error: str = ""
    survivors: list[str] = field(default_factory=list)

    @property
    def score(self) -> float:
        """Killed (timeouts included) of the mutants that could be killed, in percent."""
        killable = self.mutants - self.equivalent
        return 100.0 * (self.killed + self.timed_out) / killable if killable else 100.0


def key_of(module: str, tests: tuple[str, ...]) -> str:
    """What a module's result depends on: its text, its tests', the suite's conftest."""
    digest = hashlib.sha256()
    for name in (module, *tests, "tests/conftest.py"):
        digest.update(name.encode() + b"\0" + (REPO / name).read_bytes())
    return digest.hexdigest()[:16]


def _slug(module: str) -> str:
    return module.replace("/", "_").removesuffix(".py")


def _copy_tree(target: Path) -> None:
    """The checkout's tracked and new files (not ignored ones) copied to ``target``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, capture_output=True, check=True,
    ).stdout.split(b"\0")  # fmt: skip
    if target.exists():
        shutil.rmtree(target)
    for raw in filter(None, listed):
        source = REPO / raw.decode()
        if source.is_file():
            destination = target / raw.decode()
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination)


def _equivalents(module: str) -> dict[str, str]:
    """``operator@line:column`` → why that mutant behaves as the original (the listed file)."""
    if not EQUIVALENT.exists():
        return {}
    listed = tomllib.loads(EQUIVALENT.read_text()).get(module, {}).get("mutants", [])
    return {entry["mutant"]: entry["reason"] for entry in listed}


def run_module(module: str) -> Outcome:
    """Mutate ``module`` in a copy of the tree and run its tests against each mutant."""
    tests = MODULES[module]
    outcome = Outcome(module, key_of(module, tests), list(tests))
    started = time.monotonic()
    work = STATE / "work" / _slug(module)
    _copy_tree(work)
    command = " ".join(
        [sys.executable, "-m", "pytest", "-x", "-q", "-n", "0", "-p", "no:cacheprovider",
         *tests]
    )  # fmt: skip
    config = work / "cosmic-ray.toml"
    config.write_text(
        "[cosmic-ray]\n"
        f"module-path = {json.dumps(module)}\n"
        f"timeout = {TIMEOUT}\n"
        "excluded-modules = []\n"
        f"test-command = {json.dumps(command)}\n"
        "[cosmic-ray.distributor]\n"
        'name = "local"\n'
    )
    session = work / "session.sqlite"
    env = {**os.environ, "HYPOTHESIS_PROFILE": "dev", "PYTHONDONTWRITEBYTECODE": "1"}

    def cosmic(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(Path(sys.executable).with_name("cosmic-ray")), *args],
            cwd=work, env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip

    for step in (("init", str(config), str(session)), ("baseline", str(config))):
        done = cosmic(*step)
        if done.returncode != 0:
            outcome.error = f"cosmic-ray {step[0]} failed: {(done.stdout + done.stderr)[-800:]}"
            outcome.seconds = time.monotonic() - started
            return outcome
    cosmic("exec", str(config), str(session))
    dumped = cosmic("dump", str(session)).stdout
    equivalent = _equivalents(module)
    for line in filter(None, dumped.splitlines()):
        job, result = json.loads(line)
        if result is None:
            continue
        mutation = job["mutations"][0]
        line_no, column = mutation["start_pos"]
        name = f"{mutation['operator_name']}@{line_no}:{column}"
        outcome.mutants += 1
        if result["worker_outcome"] == "timeout":
            outcome.timed_out += 1
        elif result["test_outcome"] == "killed":
            outcome.killed += 1
        elif name in equivalent:
            outcome.equivalent += 1
        else:
            outcome.survived += 1
            outcome.survivors.append(f"{name} in {mutation.get('definition_name') or 'the module'}")
    outcome.seconds = time.monotonic() - started
    shutil.rmtree(work, ignore_errors=True)
    return outcome


def _cached(module: str) -> Outcome | None:
    path = STATE / "cache" / f"{_slug(module)}.json"
    if not path.exists():
        return None
    return Outcome(**json.loads(path.read_text()))


def _store(outcome: Outcome) -> None:
    path = STATE / "cache" / f"{_slug(outcome.module)}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(outcome), indent=1))


def table(outcomes: list[Outcome]) -> str:
    """The results as the file keeps them."""
    lines = [
        "Mutation testing (benchmarks/mutation.py, cosmic-ray): per module, the mutants, those",
        "the module's tests killed (a timeout is a kill), those listed as equivalent, those that",
        "survived; the goal is 90 % killed of the killable ones in each module.",
        "",
        f"{'module':<42} {'mutants':>7} {'killed':>7} {'equiv':>6} {'surv':>5} {'t/o':>4}"
        f" {'killed %':>8} {'time':>7}",
    ]
    for o in sorted(outcomes, key=lambda o: o.module):
        if o.error:
            lines.append(f"{o.module:<42} {o.error.splitlines()[0][:60]}")
            continue
        lines.append(
            f"{o.module:<42} {o.mutants:>7} {o.killed:>7} {o.equivalent:>6} {o.survived:>5}"
            f" {o.timed_out:>4} {o.score:>7.1f}% {o.seconds:>6.0f}s"
        )
    for o in sorted(outcomes, key=lambda o: o.module):
        if o.survivors:
            lines += [
                "",
                f"{o.module}: survivors of {', '.join(o.tests)}"
                " (kill each, or list it as equivalent)",
            ]
            lines += [f"  {name}" for name in o.survivors]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the modules asked for (every one by default) and rewrite the results file."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("modules", nargs="*", help="modules to mutate (default: every one)")
    parser.add_argument("--changed", action="store_true", help="only those whose key moved")
    parser.add_argument("--jobs", type=int, default=1, help="modules mutated at once")
    args = parser.parse_args(argv)
    unknown = [m for m in args.modules if m not in MODULES]
    if unknown:
        print(f"mutation: not a module this runs: {', '.join(unknown)}", file=sys.stderr)
        return 2
    wanted = args.modules or list(MODULES)
    done: dict[str, Outcome] = {}
    for module in MODULES:
        cached = _cached(module)
        if cached is not None:
            done[module] = cached
    todo = [
        m
        for m in wanted
        if not (args.changed and m in done and done[m].key == key_of(m, MODULES[m]))
    ]
    with concurrent.futures.ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for outcome in pool.map(run_module, todo):
            said = outcome.error or (
                f"{outcome.killed + outcome.timed_out} of {outcome.mutants} killed, "
                f"{outcome.survived} survived"
            )
            print(f"{outcome.module}: {said}", file=sys.stderr, flush=True)
            done[outcome.module] = outcome
            if not outcome.error:
                _store(outcome)
    RESULTS.write_text(table(list(done.values())))
    print(table([done[m] for m in wanted if m in done]), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
