"""Mutation testing (``make mutation``): how many one-token mistakes in each module its tests
catch, with cosmic-ray (a maintained tool: https://cosmic-ray.readthedocs.io). docs/testing.md
says how it works and how to read the results; in short:

cosmic-ray makes each mutant by editing the module's file on disk, runs a test command, and
puts the file back. So every module is mutated in a copy of the working tree of its own, under
``.mutation/work/`` (never in the checkout), and several run at once (``--jobs``). Each set of
tests (``MODULES``, below) first runs once, unmutated, under coverage with a context per test
(``map_tests``): that run is the baseline, and it says which test runs which line. A mutant then
runs only the tests of the statement it changed (``select_tests``), fastest first, stopping at
the first failure, in a fork of a server per module that loaded pytest and the libraries once
(``serve_mutants``); a forked run that pytest itself breaks makes the module's result an error,
never kills.

Results are kept per module in ``.mutation/cache/`` under a key made of the module's text and
its tests' (and the suite's conftest): ``--changed`` runs only the modules whose key moved and
takes the others from the cache. A stopped run keeps its copy and cosmic-ray's session (each
mutant's result as it came) and is taken up where it stopped; ``--shard K/N`` runs one part of
each module's mutants, for several machines, and the parts' figures are merged.

``benchmarks/mutation-results.txt`` has one row per module (mutants, killed, equivalent,
survived, timed out, the share killed) and, under it, every survivor neither in an annotation
nothing evaluates nor listed in ``benchmarks/mutation-equivalent.toml``, which names each
mutant that behaves as the original, with the reason.

    python benchmarks/mutation.py                      # every module (hours)
    python benchmarks/mutation.py drivers/tsp/frame.py # one
    python benchmarks/mutation.py --changed --jobs 2   # what changed since the last run
    python benchmarks/mutation.py --report             # rewrite the results, run nothing
    python benchmarks/mutation.py --shard 2/4          # the second of four parts of each
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import difflib
import hashlib
import importlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import coverage
import pytest

try:  # the mutation extra: make test reads this script's test selection without it
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome, WorkResult
except ImportError:
    pass

REPO = Path(__file__).resolve().parents[1]
STATE = REPO / ".mutation"
RESULTS = REPO / "benchmarks" / "mutation-results.txt"
EQUIVALENT = REPO / "benchmarks" / "mutation-equivalent.toml"
#: Each mutant's test run may take this many seconds (a mutant that loops for ever is a kill).
TIMEOUT = 120.0
#: The least time a test of a mutant is given (see ``_TimeLimits``).
_LEAST_LIMIT = 5.0
#: What a module's copy of the tree holds beside the module: its test map, its unmutated text.
_MAP_FILE = ".mutation-map.json"
_PRISTINE_FILE = ".mutation-pristine"
#: Left by a mutant's run that went wrong for another reason than its tests (``run_mutant``).
_FAULT_FILE = ".mutation-fault"
#: What the last mutant's tests printed.
_LAST_RUN_FILE = ".mutation-last-run.log"
#: How many of its fastest tests a module's server runs on the unmutated module before any
#: mutant, to prove that a forked run passes where the measured run did.
_BASELINE_TESTS = 30

#: The project's own core: every rule, the game, the table's flow and engine.
_CORE_TESTS = ("tests/core",)

#: Everything that speaks TSP/1: the codec, the golden vectors, the link, the drivers and the
#: readers' reporter.
_TSP_TESTS = (
    "tests/drivers",
    "tests/rfid/test_tsp_reader_codec.py",
    "tests/rfid/test_tsp_reporter.py",
)

_PN532_TESTS = tuple(
    str(path.relative_to(REPO))
    for path in sorted((REPO / "tests" / "rfid").glob("test_pn532_*.py"))
)
_FEIG_TESTS = tuple(
    str(path.relative_to(REPO))
    for path in sorted((REPO / "tests" / "rfid").glob("test_feig_*.py"))
    if path.name != "test_feig_soak.py"
)

_CHAIN_TESTS = tuple(
    f"tests/shell/{name}.py"
    for name in (
        "test_chain_breaks",
        "test_chain_connect",
        "test_chain_format",
        "test_integrity",
        "test_integrity_disk",
        "test_journal",
        "test_damaged_journal",
        "test_replay",
        "test_retention",
    )
)

#: Each module mutated, and the tests that must catch its mutants (of which a mutant runs only
#: those that run the lines it changed: see ``select_tests``).
MODULES: dict[str, tuple[str, ...]] = {
    # the codecs of every driver
    **dict.fromkeys(
        ("drivers/tsp/frame.py", "drivers/tsp/cobs.py", "drivers/tsp/crc.py"), _TSP_TESTS
    ),
    "drivers/rfid/pn532/frames.py": _PN532_TESTS,
    "drivers/rfid/feig/frames.py": _FEIG_TESTS,
    "drivers/rfid/feig/protocol.py": _FEIG_TESTS,
    # the journal's chain
    "controller/shell/chain.py": _CHAIN_TESTS,
    # the table's flow and engine
    "controller/table/flow.py": _CORE_TESTS,
    "controller/table/engine.py": _CORE_TESTS,
    # the rules (controller/rules) and the game (controller/game), module by module
    **{
        f"controller/rules/{path.name}": _CORE_TESTS
        for path in sorted((REPO / "controller" / "rules").glob("*.py"))
        if path.name not in ("__init__.py", "ids.py")
    },
    **{
        f"controller/game/{path.name}": _CORE_TESTS
        for path in sorted((REPO / "controller" / "game").glob("*.py"))
        if path.name != "__init__.py"
    },
}


@dataclass
class Outcome:
    """One module's run: its figures and every mutant that survived it (``operator@line:column
    in definition``). Which survivors are equivalent is read when the results are written, from
    the list as it is then, so listing one needs no new run."""

    module: str
    key: str
    tests: list[str] = field(default_factory=list)
    mutants: int = 0
    killed: int = 0
    timed_out: int = 0
    seconds: float = 0.0
    error: str = ""
    survivors: list[str] = field(default_factory=list)
    #: the survivors that changed a type annotation, which the module never evaluates
    in_annotations: list[str] = field(default_factory=list)
    #: every mutant cosmic-ray makes of the module (all shards'): more than ``mutants`` while a
    #: run is under way, was stopped, or some shards have not run
    module_mutants: int = 0
    #: ``K/N`` for the figures of one shard (``--shard``); empty for the whole module
    shard: str = ""

    def complete(self) -> bool:
        """Whether every mutant of the module has run."""
        return self.mutants >= self.module_mutants

    def split_survivors(self) -> tuple[list[str], list[str]]:
        """The survivors that are equivalent (listed, or in an annotation), and the others."""
        listed = _equivalents(self.module)
        equivalent = [
            name
            for name in self.survivors
            if name in self.in_annotations or is_listed(name, listed)
        ]
        return equivalent, [name for name in self.survivors if name not in equivalent]

    def score(self) -> float:
        """Killed (timeouts included) of the mutants that could be killed, in percent."""
        killable = self.mutants - len(self.split_survivors()[0])
        return 100.0 * (self.killed + self.timed_out) / killable if killable else 100.0


def _files(names: tuple[str, ...]) -> list[Path]:
    """The files named, a folder standing for every ``.py`` file under it."""
    found: list[Path] = []
    for name in names:
        path = REPO / name
        found += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return found


def key_of(module: str, tests: tuple[str, ...]) -> str:
    """What a module's result depends on: its text, its tests', the suite's conftest (a change
    to this script itself calls for a whole run)."""
    digest = hashlib.sha256()
    for path in _files((module, *tests, "tests/conftest.py")):
        digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes())
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


def _equivalents(module: str) -> list[dict[str, str]]:
    """The mutants of ``module`` listed as equivalent: ``mutant`` (``operator@line:column``),
    ``reason``, and ``becomes`` (the mutated line) where one position makes several mutants."""
    if not EQUIVALENT.exists():
        return []
    listed: list[dict[str, str]] = (
        tomllib.loads(EQUIVALENT.read_text()).get(module, {}).get("mutants", [])
    )
    return listed


def is_listed(survivor: str, listed: list[dict[str, str]]) -> bool:
    """Whether ``survivor`` (``operator@line:column in definition: the mutated line``) is one
    of ``listed``."""
    name, _, rest = survivor.partition(" in ")
    becomes = rest.partition(": ")[2]
    return any(
        entry["mutant"] == name and entry.get("becomes", becomes) == becomes for entry in listed
    )


@dataclass
class TestMap:
    """Which of a module's tests run which of its lines, from one measured run of them all."""

    #: line → the tests that ran it
    lines: dict[int, list[str]]
    #: the lines run while the module was imported (a change there can reach any test)
    at_import: list[int]
    #: every test that ran any line of the module, the fastest first
    tests: list[str]
    #: each test's time on the unmutated module, in seconds
    durations: dict[str, float] = field(default_factory=dict)
    #: the tests of the files that import the module by name but run none of its lines: they
    #: read what it defines (a constant, a table), which only a change at import reaches
    readers: list[str] = field(default_factory=list)

    @classmethod
    def from_json(cls, text: str) -> TestMap:
        raw = json.loads(text)
        lines = {int(line): tests for line, tests in raw["lines"].items()}
        readers = raw.get("readers", [])
        return cls(lines, raw["at_import"], raw["tests"], raw["durations"], readers)

    def import_tests(self) -> list[str]:
        """What a change at import can reach: the tests that run the module and its readers."""
        return sorted({*self.tests, *self.readers}, key=lambda t: (self.durations.get(t, 0), t))


def changed_lines(pristine: str, mutated: str) -> set[int]:
    """The lines (1-based, of ``pristine``) that ``mutated`` changes."""
    matcher = difflib.SequenceMatcher(
        a=pristine.splitlines(), b=mutated.splitlines(), autojunk=False
    )
    changed: set[int] = set()
    for tag, first, last, _, _ in matcher.get_opcodes():
        if tag != "equal":
            changed.update(range(first + 1, max(last, first + 1) + 1))
    return changed


def _statement_spans(source: str) -> list[tuple[int, int]]:
    """Every statement's lines, first to last, its decorators included."""
    spans = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.stmt):
            decorated = getattr(node, "decorator_list", [])
            first = min([node.lineno, *(d.lineno for d in decorated)])
            spans.append((first, node.end_lineno or node.lineno))
    return spans


def select_tests(pristine: str, mutated: str, table: TestMap) -> list[str]:
    """The tests a mutant must pass, fastest first: those that run the statements it changed.

    Coverage names a statement's first line, so a change on any line of a statement counts
    every test that ran any line of that statement (the innermost one holding the change). A
    statement run at import (a constant, a default, a decorator, a ``def`` line) can reach
    every test that uses the module, so such a change runs them all; no change (the unmutated
    module) runs them all too. A statement no test runs selects none: the mutant survives.
    """
    changed = changed_lines(pristine, mutated)
    if not changed:
        return table.tests
    spans = _statement_spans(pristine)
    chosen: set[str] = set()
    for line in changed:
        holding = [span for span in spans if span[0] <= line <= span[1]]
        first, last = min(holding, key=lambda s: s[1] - s[0]) if holding else (line, line)
        covered = range(first, last + 1)
        if any(number in table.at_import for number in covered):
            return table.import_tests()
        for number in covered:
            chosen.update(table.lines.get(number, ()))
    return [test for test in table.tests if test in chosen]


def annotation_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Where ``source``'s type annotations are, (line, column) to (line, column), when nothing
    evaluates them: the module has ``from __future__ import annotations`` (so they stay strings)
    and no pydantic model (which would read its fields' annotations). A mutant there behaves as
    the original, always."""
    tree = ast.parse(source)
    postponed = any(
        isinstance(node, ast.ImportFrom)
        and node.module == "__future__"
        and any(alias.name == "annotations" for alias in node.names)
        for node in tree.body
    )
    if not postponed or "pydantic" in source:
        return []
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns:
            found.append(node.returns)
        elif isinstance(node, ast.arg | ast.AnnAssign) and node.annotation:
            found.append(node.annotation)
    return [
        ((a.lineno, a.col_offset), (a.end_lineno or a.lineno, a.end_col_offset or 0)) for a in found
    ]


def map_tests(tests: tuple[str, ...], modules: list[str]) -> dict[str, TestMap] | str:
    """Run ``tests`` once under coverage, each test in a context of its own; the map of each
    of ``modules``, or why the run failed (it is every mutant's baseline: it must pass)."""
    slug = hashlib.sha256("\0".join(tests).encode()).hexdigest()[:8]
    work = STATE / "work" / f"map-{slug}"
    _copy_tree(work)
    data_file, durations_file = work / ".mutation-coverage", work / ".mutation-durations.json"
    env = {
        **os.environ,
        "HYPOTHESIS_PROFILE": "mutation",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": str(work / "benchmarks"),
        "MUTATION_COVERAGE_FILE": str(data_file),
        "MUTATION_COVERAGE_SOURCE": f"{work / 'controller'},{work / 'drivers'}",
        "MUTATION_DURATIONS_FILE": str(durations_file),
    }
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
         "-p", "mutation_coverage", *tests],
        cwd=work, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        return f"the unmutated tests failed: {(done.stdout + done.stderr)[-800:]}"
    durations: dict[str, float] = json.loads(durations_file.read_text())
    data = coverage.CoverageData(basename=str(data_file))
    data.read()
    outside = [name for name in data.measured_files() if not name.startswith(str(work))]
    if outside:
        return f"the tests ran the project from outside its copy: {outside[0]}"
    by_file: dict[str, list[str]] = {}
    for test in durations:
        by_file.setdefault(test.split("::")[0], []).append(test)
    texts = {name: (work / name).read_text() for name in by_file}
    maps: dict[str, TestMap] = {}
    for module in modules:
        by_line = data.contexts_by_lineno(str(work / module))
        lines = {line: sorted(c for c in contexts if c) for line, contexts in by_line.items()}
        ran = {test for names in lines.values() for test in names}
        dotted = module.removesuffix(".py").replace("/", ".")
        readers = {
            test
            for name, tests_of_file in by_file.items()
            if dotted in texts[name]
            for test in tests_of_file
            if test not in ran
        }
        maps[module] = TestMap(
            lines={line: names for line, names in lines.items() if names},
            at_import=sorted(line for line, contexts in by_line.items() if "" in contexts),
            tests=sorted(ran, key=lambda test: (durations.get(test, 0.0), test)),
            durations={test: durations.get(test, 0.0) for test in ran | readers},
            readers=sorted(readers),
        )
    shutil.rmtree(work, ignore_errors=True)
    return maps


class _TimeLimits:
    """A mutant that loops for ever is a kill: each test may take ten times its unmutated time
    (and at least ``_LEAST_LIMIT`` seconds) before pytest-timeout fails it, rather than holding
    the run up to cosmic-ray's own limit."""

    def __init__(self, durations: dict[str, float]) -> None:
        self.durations = durations

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            limit = max(_LEAST_LIMIT, 10 * self.durations.get(item.nodeid, _LEAST_LIMIT))
            item.add_marker(pytest.mark.timeout(limit))


def run_mutant(module: str, *, baseline: bool = False) -> int:
    """The tests of the mutant in a module's copy, stopping at the first failure: 0 when it
    survived. ``baseline``: the module's fastest tests on the unmutated module instead, which
    must pass. A run that goes wrong for another reason than a test (pytest's own error, the
    module imported from outside the copy) leaves ``_FAULT_FILE``: its mutants' figures would
    count the fault as kills, so the module's run is an error instead."""
    table = TestMap.from_json(Path(_MAP_FILE).read_text())
    if baseline:
        selected = table.tests[:_BASELINE_TESTS]
    else:
        selected = select_tests(Path(_PRISTINE_FILE).read_text(), Path(module).read_text(), table)
    if not selected:
        return 0
    # The suite imports the project by sys.path (--import-mode=importlib): the copy must come
    # before the checkout that an editable install puts there.
    sys.path.insert(0, str(Path.cwd()))
    # The server loaded libraries that carry pytest plugins (anyio's, with httpx): pytest warns
    # that it cannot rewrite their asserts, which the suite's filterwarnings makes an error.
    quiet = ["-W", "ignore::pytest.PytestAssertRewriteWarning"]
    arguments = ["-x", "-q", "-n", "0", "-p", "no:cacheprovider", *quiet, *selected]
    try:
        code = int(pytest.main(arguments, plugins=[_TimeLimits(table.durations)]))
    except BaseException as error:  # pytest itself broke: not a kill
        Path(_FAULT_FILE).write_text(f"pytest raised {error!r}")
        return 1
    imported = sys.modules.get(module.removesuffix(".py").replace("/", "."))
    if imported is not None and not str(imported.__file__).startswith(str(Path.cwd())):
        Path(_FAULT_FILE).write_text(f"the tests imported {imported.__file__}, not the copy's")
    # Any other failing exit is the mutant's doing (one that breaks an import a conftest makes
    # ends pytest with a usage error): the baseline proved that the unmutated module passes.
    return code


#: Libraries the suite imports, loaded once by a module's test server before it forks for each
#: mutant (never the project's own packages: those each mutant imports afresh, mutated).
_WARM = (
    "hypothesis", "pokerkit", "pydantic", "pydantic_settings", "structlog", "cryptography",
    "aiomqtt", "paho.mqtt.client", "serial", "usb", "fastapi", "starlette", "httpx", "jinja2",
    "argon2", "prometheus_client", "rich",
)  # fmt: skip
_PROJECT = ("controller", "drivers", "simulators", "tests")
_SOCKET_FILE = ".mutation-socket"
#: cosmic-ray's test command runs this file (``python -S``: no site, nothing but the socket):
#: it asks the module's test server to run the mutant's tests and exits with their code.
_CLIENT_FILE = ".mutation-client.py"
_CLIENT = f"""\
import socket, sys
client = socket.socket(socket.AF_UNIX)
client.connect({_SOCKET_FILE!r})
client.sendall(b"?")
sys.exit(int(client.recv(16) or b"1"))
"""


def serve_mutants(module: str) -> int:
    """A module's test server, in its copy: pytest and the libraries loaded once; for each
    mutant cosmic-ray's test command (``--client``) asks, a fork runs ``run_mutant`` and the
    exit code goes back. A fork costs milliseconds where a new interpreter with pytest and its
    plugins costs a second or two, and the project is imported afresh in each fork."""
    for name in _WARM:
        try:
            importlib.import_module(name)
        except ImportError:
            continue
    leaked = [name for name in sys.modules if name.split(".")[0] in _PROJECT]
    if leaked:
        raise SystemExit(f"the test server imported the project ({leaked[0]}): mutants would not")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(_SOCKET_FILE)
    server.listen()
    answered = time.monotonic()
    while True:
        connection, _ = server.accept()
        with connection:
            asked = connection.recv(1)
            child = os.fork()
            if child == 0:
                server.close()
                output = os.open(_LAST_RUN_FILE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
                os.dup2(output, 1)
                os.dup2(output, 2)
                try:
                    os._exit(run_mutant(module, baseline=asked == b"b"))
                except BaseException as error:  # the runner itself broke: not a kill
                    Path(_FAULT_FILE).write_text(f"the mutant's run raised {error!r}")
                    os._exit(1)
            deadline = time.monotonic() + TIMEOUT
            while (done := os.waitpid(child, os.WNOHANG))[0] == 0:
                if time.monotonic() > deadline:
                    os.kill(child, signal.SIGKILL)
                    done = os.waitpid(child, 0)
                    break
                time.sleep(0.01)
            code = os.waitstatus_to_exitcode(done[1])
            connection.sendall(str(code if code >= 0 else 1).encode())
            # a mutant's time runs from the last answer: cosmic-ray's own work on it included
            if asked != b"b":
                with open(_SECONDS_FILE, "a") as seconds:
                    seconds.write(f"{time.monotonic() - answered:.3f}\n")
            answered = time.monotonic()


@dataclass(frozen=True)
class Shard:
    """One of ``count`` parts of a module's mutants (``--shard K/N``), for runs on several
    machines: which part a mutant is in depends only on the mutant (its operator, position and
    occurrence), never on the session's random job ids, so every machine draws the same lines."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        index, _, count = text.partition("/")
        if not (index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count)):
            raise argparse.ArgumentTypeError(f"a shard is K/N with 1 <= K <= N, not {text!r}")
        return cls(int(index), int(count))

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    @property
    def suffix(self) -> str:
        return f".{self.index}of{self.count}" if self.count > 1 else ""

    def holds(self, operator: str, start: tuple[int, int], occurrence: int) -> bool:
        named = f"{operator}@{start[0]}:{start[1]}#{occurrence}".encode()
        part = int.from_bytes(hashlib.sha256(named).digest()[:8], "big") % self.count
        return part == self.index - 1


WHOLE = Shard(1, 1)
#: A module's copy of the tree keeps the key of the run its session belongs to: a stopped run
#: with the same key is taken up where it stopped, one with another key starts again.
_KEY_FILE = ".mutation-key"
_SESSION_FILE = "session.sqlite"
#: The seconds each mutant took (from the answer before it to its own), one per line.
_SECONDS_FILE = ".mutation-seconds"
#: What a stopped run's copy keeps when it is taken up again.
_KEPT = (_SESSION_FILE, _MAP_FILE, _KEY_FILE, _SECONDS_FILE)


def work_dir(module: str, shard: Shard) -> Path:
    return STATE / "work" / f"{_slug(module)}{shard.suffix}"


def resumable(module: str, shard: Shard) -> bool:
    """Whether a stopped run of ``module`` (this shard) can be taken up: its session, its test
    map, and the same key as the module has now."""
    work = work_dir(module, shard)
    return (
        (work / _SESSION_FILE).exists()
        and (work / _MAP_FILE).exists()
        and (work / _KEY_FILE).exists()
        and (work / _KEY_FILE).read_text() == key_of(module, MODULES[module])
    )


def read_session(module: str, work: Path, shard: Shard) -> Outcome:
    """The figures of a module's cosmic-ray session, finished or not: the mutants run so far
    (cosmic-ray runs them in random order, so a part is a fair sample of the whole)."""
    key = (work / _KEY_FILE).read_text() if (work / _KEY_FILE).exists() else ""
    outcome = Outcome(
        module, key, list(MODULES[module]), shard="" if shard == WHOLE else str(shard)
    )
    annotations = annotation_spans((work / _PRISTINE_FILE).read_text())
    if (work / _SECONDS_FILE).exists():
        outcome.seconds = sum(map(float, (work / _SECONDS_FILE).read_text().split()))
    with use_db(str(work / _SESSION_FILE), WorkDB.Mode.open) as db:
        outcome.module_mutants = db.num_work_items
        completed = db.completed_work_items
    for item, result in completed:
        if result.worker_outcome is WorkerOutcome.SKIPPED:  # another shard's
            continue
        mutation = item.mutations[0]
        outcome.mutants += 1
        if result.test_outcome is TestOutcome.KILLED:
            # cosmic-ray records a test command it had to stop as a kill, "timeout" its output
            if result.output == "timeout":
                outcome.timed_out += 1
            else:
                outcome.killed += 1
            continue
        # the mutated line, as the diff gives it: two mutants of one position differ there
        changed = [
            row[1:].strip()
            for row in (result.diff or "").splitlines()
            if row.startswith("+") and not row.startswith("+++")
        ]
        line_no, column = mutation.start_pos
        where_name = mutation.definition_name or "the module"
        survivor = (
            f"{mutation.operator_name}@{line_no}:{column} in {where_name}: "
            f"{changed[0] if changed else '?'}"
        )
        outcome.survivors.append(survivor)
        if any(start <= (line_no, column) < end for start, end in annotations):
            outcome.in_annotations.append(survivor)
    outcome.survivors.sort(key=_by_position)
    outcome.in_annotations.sort(key=_by_position)
    return outcome


def _by_position(survivor: str) -> tuple[int, int, str]:
    where = survivor.partition("@")[2].partition(" ")[0]
    line, _, column = where.partition(":")
    return int(line), int(column), survivor


def _start_session(module: str, work: Path, shard: Shard, table: TestMap) -> str:
    """A new cosmic-ray session of the module's mutants in its fresh copy, those of other shards
    marked as skipped (cosmic-ray's own filters mark what they drop the same way);
    why it failed, or an empty string."""
    (work / _MAP_FILE).write_text(json.dumps(asdict(table)))
    done = _cosmic(work, "init", "cosmic-ray.toml", _SESSION_FILE)
    if done.returncode != 0:
        return f"cosmic-ray init failed: {(done.stdout + done.stderr)[-800:]}"
    if shard != WHOLE:
        with use_db(str(work / _SESSION_FILE), WorkDB.Mode.open) as db:
            others = [
                item.job_id
                for item in db.work_items
                if not shard.holds(
                    item.mutations[0].operator_name,
                    item.mutations[0].start_pos,
                    item.mutations[0].occurrence,
                )
            ]
            db.set_multiple_results(others, WorkResult(worker_outcome=WorkerOutcome.SKIPPED))
    (work / _KEY_FILE).write_text(key_of(module, MODULES[module]))
    return ""


def _identity(mutation: Any) -> tuple[str, int, int, int]:
    """A mutant as any session of the same module text names it (job ids are random)."""
    line, column = mutation.start_pos
    return mutation.operator_name, line, column, mutation.occurrence


def _earlier_kills(module: str, shard: Shard) -> dict[tuple[str, int, int, int], Any]:
    """The kills of an earlier run of the same module text whose tests have changed since (a
    stopped run's, or else the last finished one's): tests are added to kill what survived, so
    a run takes those kills over and runs only the mutants that survived or had not run. A full
    run judges every mutant again: ``--full``."""
    work, kept = work_dir(module, shard), _kept_session(module, shard)
    pristine, session = work / _PRISTINE_FILE, work / _SESSION_FILE
    if not session.exists():
        pristine, session = kept.with_suffix(".pristine"), kept
    if not (session.exists() and pristine.exists()):
        return {}
    if pristine.read_text() != (REPO / module).read_text():
        return {}
    with use_db(str(session), WorkDB.Mode.open) as db:
        return {
            _identity(item.mutations[0]): result
            for item, result in db.completed_work_items
            if result.test_outcome is TestOutcome.KILLED
        }


def _kept_session(module: str, shard: Shard) -> Path:
    """Where a finished run's session is kept, for the next run to take its kills over."""
    return STATE / "cache" / f"{_slug(module)}{shard.suffix}.sqlite"


def _carry_kills(work: Path, kills: dict[tuple[str, int, int, int], Any]) -> None:
    with use_db(str(work / _SESSION_FILE), WorkDB.Mode.open) as db:
        pending = {item.job_id: item for item in db.pending_work_items}
        for job_id, item in pending.items():
            result = kills.get(_identity(item.mutations[0]))
            if result is not None:
                db.set_result(job_id, result)


def _cosmic(work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HYPOTHESIS_PROFILE": "mutation", "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [str(Path(sys.executable).with_name("cosmic-ray")), *args],
        cwd=work, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip


def run_module(
    module: str, table: TestMap | None, shard: Shard = WHOLE, *, full: bool = False
) -> Outcome:
    """Mutate ``module`` in a copy of the tree and run its tests against each mutant (of
    ``shard``). Without a ``table`` (the test map) it takes up a stopped run where it stopped:
    its session keeps each mutant's result as it comes, so a stop loses one mutant's run. With
    one, an earlier run's kills are taken over unless ``full`` (``_earlier_kills``)."""
    work = work_dir(module, shard)
    failed = Outcome(module, key_of(module, MODULES[module]), list(MODULES[module]))
    config = (
        "[cosmic-ray]\n"
        f"module-path = {json.dumps(module)}\n"
        f"timeout = {TIMEOUT}\n"
        "excluded-modules = []\n"
        f"test-command = {json.dumps(f'{sys.executable} -S {_CLIENT_FILE}')}\n"
        "[cosmic-ray.distributor]\n"
        'name = "local"\n'
    )
    # The tree copied afresh (a stop may have left a mutant in the module); taking a stopped
    # run up keeps its session and map.
    kept = {name: (work / name).read_bytes() for name in _KEPT if (work / name).exists()}
    kills = _earlier_kills(module, shard) if table is not None and not full else {}
    _copy_tree(work)
    (work / "cosmic-ray.toml").write_text(config)
    if table is None:
        for name, data in kept.items():
            (work / name).write_bytes(data)
    else:
        failed.error = _start_session(module, work, shard, table)
        if failed.error:
            return failed
        if kills:  # the time shown is this run's: the kills taken over cost it nothing
            _carry_kills(work, kills)
    (work / _PRISTINE_FILE).write_text((work / module).read_text())
    (work / _CLIENT_FILE).write_text(_CLIENT)
    env = {**os.environ, "HYPOTHESIS_PROFILE": "mutation", "PYTHONDONTWRITEBYTECODE": "1"}
    log = work / ".mutation-server.log"
    with log.open("wb") as written:
        server = subprocess.Popen(
            [sys.executable, "benchmarks/mutation.py", "--serve", module],
            cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=written,
        )  # fmt: skip
    try:
        while not (work / _SOCKET_FILE).exists():
            if server.poll() is not None:
                failed.error = f"the test server stopped: {log.read_text()[-800:]}"
                return failed
            time.sleep(0.05)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(str(work / _SOCKET_FILE))
            client.sendall(b"b")
            baseline = int(client.recv(16) or b"1")
        if baseline != 0 or (work / _FAULT_FILE).exists():
            printed = (work / _LAST_RUN_FILE).read_text()[-800:]
            failed.error = f"the unmutated module failed its tests in a forked run: {printed}"
            return failed
        ran = _cosmic(work, "exec", "cosmic-ray.toml", _SESSION_FILE)
    finally:
        server.kill()
        server.wait()
    if (work / _FAULT_FILE).exists():
        # the session is dropped: its results since the fault cannot be trusted
        failed.error = f"a mutant's run went wrong: {(work / _FAULT_FILE).read_text()}"
        (work / _SESSION_FILE).unlink()
        return failed
    with use_db(str(work / _SESSION_FILE), WorkDB.Mode.open) as db:
        pending = db.num_work_items - db.num_results
    if pending:  # kept, to be taken up by the next run
        failed.error = f"cosmic-ray stopped with {pending} mutants to run: {ran.stderr[-600:]}"
        return failed
    outcome = read_session(module, work, shard)
    finished = _kept_session(module, shard)
    finished.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(work / _SESSION_FILE, finished)
    shutil.copyfile(work / _PRISTINE_FILE, finished.with_suffix(".pristine"))
    shutil.rmtree(work, ignore_errors=True)
    return outcome


def _cache_file(module: str, shard: Shard) -> Path:
    return STATE / "cache" / f"{_slug(module)}{shard.suffix}.json"


def _load(path: Path) -> Outcome:
    raw = json.loads(path.read_text())
    outcome = Outcome(**{name: raw[name] for name in Outcome.__dataclass_fields__ if name in raw})
    outcome.module_mutants = outcome.module_mutants or outcome.mutants
    return outcome


def merge(parts: list[Outcome]) -> Outcome:
    """The figures of a module from its shards' (the whole module's once every shard ran)."""
    first = parts[0]
    merged = Outcome(first.module, first.key, first.tests, module_mutants=first.module_mutants)
    for part in parts:
        merged.mutants += part.mutants
        merged.killed += part.killed
        merged.timed_out += part.timed_out
        merged.seconds += part.seconds
        merged.survivors += part.survivors
        merged.in_annotations += part.in_annotations
    merged.survivors.sort(key=_by_position)
    merged.in_annotations.sort(key=_by_position)
    if not merged.complete():
        merged.shard = ", ".join(part.shard for part in parts)
    return merged


def _cached(module: str) -> Outcome | None:
    """The module's latest figures: a finished run of the whole module, or its shards' (from
    this machine's runs, or copied from others' ``.mutation/cache``), or, failing those, a run
    under way or stopped. Figures of the module as it is now come before older ones."""
    slug = _slug(module)
    candidates: list[Outcome] = []
    whole = STATE / "cache" / f"{slug}.json"
    if whole.exists():
        candidates.append(_load(whole))
    shards: dict[tuple[str, int], list[Outcome]] = {}
    for path in sorted((STATE / "cache").glob(f"{slug}.*of*.json")):
        part = _load(path)
        shards.setdefault((part.key, Shard.parse(part.shard).count), []).append(part)
    candidates += [merge(parts) for parts in shards.values()]
    for work in sorted((STATE / "work").glob(f"{slug}*")):
        named = work.name.removeprefix(slug)
        if (work / _SESSION_FILE).exists() and (named == "" or named[0] == "."):
            shard = Shard.parse(named[1:].replace("of", "/")) if named else WHOLE
            try:
                candidates.append(read_session(module, work, shard))
            except Exception:  # a session being written or half made: not figures yet
                continue
    if not candidates:
        return None
    current = key_of(module, MODULES[module])
    return max(candidates, key=lambda o: (o.key == current, o.complete(), o.mutants))


def _store(outcome: Outcome) -> None:
    shard = Shard.parse(outcome.shard) if outcome.shard else WHOLE
    path = _cache_file(outcome.module, shard)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(outcome), indent=1))


def wilson_interval(killed: int, killable: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson score interval, in percent, of the share killed in a module whose
    mutants ``killable`` were drawn at random from (cosmic-ray's order is random)."""
    if killable == 0:
        return 0.0, 100.0
    share = killed / killable
    centre = (share + z * z / (2 * killable)) / (1 + z * z / killable)
    spread = z * ((share * (1 - share) + z * z / (4 * killable)) / killable) ** 0.5
    spread /= 1 + z * z / killable
    return 100 * max(0.0, centre - spread), 100 * min(1.0, centre + spread)


def table(outcomes: list[Outcome]) -> str:
    """The results as the file keeps them."""
    lines = [
        "Mutation testing (benchmarks/mutation.py, cosmic-ray): per module, the mutants, those",
        "the module's tests killed (a timeout is a kill), those listed as equivalent, those that",
        "survived; the goal is 90 % killed of the killable ones in each module. A row that",
        'says "n of m run" is a run under way or stopped: cosmic-ray draws mutants in random',
        "order, so its figures are a sample of the module's, and the interval is where the",
        "module's share killed lies at 95 % confidence (Wilson score).",
        "",
        f"{'module':<42} {'mutants':>7} {'killed':>7} {'equiv':>6} {'surv':>5} {'t/o':>4}"
        f" {'killed %':>8} {'time':>7}",
    ]
    for o in sorted(outcomes, key=lambda o: o.module):
        if o.error:
            lines.append(f"{o.module:<42} {o.error.splitlines()[0][:60]}")
            continue
        equivalent, survived = o.split_survivors()
        # a run under way, stopped, or missing shards: its figures so far, said as such, with
        # how far the module's share may lie from the sample's
        part = ""
        if not o.complete():
            low, high = wilson_interval(o.killed + o.timed_out, o.mutants - len(equivalent))
            part = f"  {o.mutants} of {o.module_mutants} run, 95 % CI {low:.0f}-{high:.0f} %"
            part += f" (shards {o.shard})" if o.shard else ""
        lines.append(
            f"{o.module:<42} {o.mutants:>7} {o.killed:>7} {len(equivalent):>6} {len(survived):>5}"
            f" {o.timed_out:>4} {o.score():>7.1f}% {o.seconds:>6.0f}s{part}"
        )
    for o in sorted(outcomes, key=lambda o: o.module):
        survived = o.split_survivors()[1]
        if survived and not o.error:
            lines += [
                "",
                f"{o.module}: survivors of {', '.join(o.tests)}"
                " (kill each, or list it as equivalent)",
            ]
            lines += [f"  {name}" for name in survived]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the modules asked for (every one by default) and rewrite the results file."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("modules", nargs="*", help="modules to mutate (default: every one)")
    parser.add_argument("--changed", action="store_true", help="only those whose key moved")
    parser.add_argument("--jobs", type=int, default=1, help="test runs at once")
    parser.add_argument(
        "--report", action="store_true", help="rewrite the results from the last runs, run none"
    )
    parser.add_argument(
        "--shard", type=Shard.parse, default=WHOLE, metavar="K/N",
        help="run only the K-th of N parts of each module's mutants (for several machines)",
    )  # fmt: skip
    parser.add_argument(
        "--full", action="store_true",
        help="judge every mutant again (by default a module whose text is unchanged takes over "
        "its earlier run's kills and runs the rest)",
    )  # fmt: skip
    parser.add_argument("--serve", metavar="MODULE", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        return serve_mutants(args.serve)
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
    shard: Shard = args.shard
    todo = [
        m
        for m in wanted
        if not args.report
        and not (
            args.changed
            and m in done
            and done[m].key == key_of(m, MODULES[m])
            and done[m].complete()
        )
    ]
    by_tests: dict[tuple[str, ...], list[str]] = {}
    for module in todo:
        if not resumable(module, shard):
            by_tests.setdefault(MODULES[module], []).append(module)
    with concurrent.futures.ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        # A stopped run is taken up where it stopped; for the others, each test set is measured
        # once (its map, and the baseline), then its modules mutated.
        mutating: dict[concurrent.futures.Future[Outcome], str] = {
            pool.submit(run_module, m, None, shard): m for m in todo if resumable(m, shard)
        }
        measuring = {
            pool.submit(map_tests, tests, modules): modules for tests, modules in by_tests.items()
        }
        while measuring or mutating:
            running: list[concurrent.futures.Future[Any]] = [*measuring, *mutating]
            concurrent.futures.wait(running, return_when="FIRST_COMPLETED")
            for measured in [future for future in measuring if future.done()]:
                modules, result = measuring.pop(measured), measured.result()
                if isinstance(result, dict):
                    mutating.update(
                        {
                            pool.submit(run_module, m, result[m], shard, full=args.full): m
                            for m in modules
                        }
                    )
                    continue
                for module in modules:
                    print(f"{module}: {result}", file=sys.stderr, flush=True)
                    done[module] = Outcome(module, key_of(module, MODULES[module]), error=result)
            for mutated in [future for future in mutating if future.done()]:
                del mutating[mutated]
                outcome = mutated.result()
                said = outcome.error or (
                    f"{outcome.killed + outcome.timed_out} of {outcome.mutants} killed, "
                    f"{len(outcome.survivors)} survived, {outcome.seconds:.0f} s"
                )
                print(f"{outcome.module}: {said}", file=sys.stderr, flush=True)
                if outcome.error:
                    done[outcome.module] = outcome
                else:
                    _store(outcome)
            _write_results(done)
    _write_results(done)
    print(table([done[m] for m in wanted if m in done]), end="")
    return 0


def _write_results(done: dict[str, Outcome]) -> None:
    """The results file from every module's latest figures (finished runs, their shards, runs
    under way or stopped), where this run did not end in an error."""
    for module in MODULES:
        cached = _cached(module)
        if cached is not None and not (module in done and done[module].error):
            done[module] = cached
    RESULTS.write_text(table(list(done.values())))


if __name__ == "__main__":
    sys.exit(main())
