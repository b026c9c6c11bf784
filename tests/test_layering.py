"""The parts of tablectl import one another in one direction only (docs/architecture.md).

Every ``import`` of every module of ``controller/``, ``drivers/``, ``simulators/`` and the example
driver plugin is read with :mod:`ast`, those inside functions included (and
``importlib.import_module`` of a literal name), and checked against the layering:

* the core (``controller/table``, ``controller/rules``, ``controller/game``, ``controller/view``
  and the pure modules at the top of ``controller/``) imports only the core: nothing of the
  shell, the drivers or the simulators, and no event loop, device, database or broker library;
* the engine (``controller/table``, ``controller/rules``, ``controller/game``) also reads no
  clock, draws no random number and touches no file: the time comes with each input;
* inside the engine, ``controller/game`` is arithmetic over the core's vocabulary (no state, no
  rule), and of ``controller/table`` only ``engine.py`` imports the rule modules;
* the drivers import the core and each other, never the shell or the simulators;
* the shell (``controller/shell``, the pit service ``controller/pit`` and the top-level modules
  that do I/O) imports no simulator;
* the simulators may import anything;
* ``controller/aio.py``, the generic asyncio helpers (a clock, the backoff, the reconnect loop,
  stopping tasks), is neutral ground: it imports nothing of the project, and every part but the
  core may import it.

A failure names the file, the line and the import.

Nor does any module import itself through others: an import cycle among the project's modules
fails, naming its modules and the imports that close it, but for the few known ones listed in
:data:`KNOWN_CYCLES` with why.
"""

from __future__ import annotations

import ast
import functools
from collections import deque
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "examples" / "tablectl-example-driver"

CORE, SHELL, DRIVERS, SIMULATORS, NEUTRAL = "core", "shell", "drivers", "simulators", "neutral"

#: The packages of the core; the first three are the engine.
ENGINE_PACKAGES = ("controller/table", "controller/rules", "controller/game")
CORE_PACKAGES = (*ENGINE_PACKAGES, "controller/view")
#: The packages of the shell: the daemon's and the pit service's.
SHELL_PACKAGES = ("controller/shell", "controller/pit", "controller/mqtt", "controller/station")
#: The modules at the top of controller/, by part: each new one must be put in one.
CORE_MODULES = frozenset(
    {
        "__init__",
        "authority",
        "cards",
        "deck_order",
        "decks",
        "envelope",
        "keyring",
        "paths",
        "phh",
        "profiles",
        "signing",
        "strict_json",
        "uids",
    }
)
SHELL_MODULES = frozenset(
    {
        "broker_setup",
        "broker_tls",
        "build_identity",
        "cli",
        "config",
        "config_check",
        "credentials",
        "deck_cli",
        "enroll",
        "passwords",
    }
)

#: The modules at the top of controller/ that belong to no part and serve all but the core.
NEUTRAL_MODULES = frozenset({"aio"})

#: Which parts each part may import.
MAY_IMPORT: dict[str, frozenset[str]] = {
    CORE: frozenset({CORE}),
    NEUTRAL: frozenset({NEUTRAL}),
    DRIVERS: frozenset({CORE, NEUTRAL, DRIVERS}),
    SHELL: frozenset({CORE, NEUTRAL, DRIVERS, SHELL}),
    SIMULATORS: frozenset({CORE, NEUTRAL, DRIVERS, SHELL, SIMULATORS}),
}
WHY = {
    CORE: "the core imports only the core",
    NEUTRAL: "the asyncio helpers import nothing of the project",
    DRIVERS: "a driver imports the core and the drivers, never the shell or the simulators",
    SHELL: "the shell imports the core and the drivers, never a simulator",
}

#: Libraries that mean an event loop, a device, a database or a broker: never in the core.
IO_LIBRARIES = frozenset(
    {
        "aiomqtt",
        "paho",
        "asyncio",
        "multiprocessing",
        "selectors",
        "serial",
        "socket",
        "sqlite3",
        "subprocess",
        "threading",
        "usb",
    }
)
#: A clock, randomness, files or logging: never in the engine, whose output is a function of its
#: inputs alone.
IMPURE_LIBRARIES = frozenset(
    {
        "io",
        "logging",
        "os",
        "pathlib",
        "random",
        "secrets",
        "shutil",
        "structlog",
        "time",
        "tomllib",
        "uuid",
    }
)
CLOCK_READS = frozenset({"now", "utcnow", "today"})

#: What controller/game may use of the rest of the engine: the vocabulary, not the state.
GAME_MAY_USE = frozenset(
    {"controller.table.inputs", "controller.table.streets", "controller.rules.ids"}
)

#: Import cycles known and left as they are, each with why: any other cycle fails, and so does one
#: of these that is gone (its line goes).
KNOWN_CYCLES: dict[frozenset[str], str] = {}


class Import(NamedTuple):
    """One import: where it is and the module it brings in."""

    file: str
    line: int
    module: str


class Violation(NamedTuple):
    where: Import
    why: str

    def __str__(self) -> str:
        return f"{self.where.file}:{self.where.line}: imports {self.where.module} ({self.why})"


# ------------------------------------------------------------------ finding the imports


def module_name(path: Path) -> str:
    """``controller/table/engine.py`` → ``controller.table.engine``."""
    base = PLUGIN if path.is_relative_to(PLUGIN) else ROOT
    parts = list(path.relative_to(base).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_of(module: str) -> Path | None:
    """The file of a module of this project (None: a library)."""
    base = ROOT / module.replace(".", "/")
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def owner(module: str) -> Path | None:
    """The file of the module, or of the nearest package holding it (None: a library)."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        found = source_of(".".join(parts[:end]))
        if found is not None:
            return found
    return None


def _absolute(node: ast.ImportFrom, here: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    package = here.split(".") if is_package else here.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports_in(source: str, file: str) -> Iterator[Import]:
    """Every module ``source`` imports, at any depth (inside functions too), once a line."""
    return iter(dict.fromkeys(_imports(source, file)))


def _imports(source: str, file: str) -> Iterator[Import]:
    path = ROOT / file
    here = module_name(path)
    for node in ast.walk(ast.parse(source, filename=file)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(file, node.lineno, alias.name)
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node, here, path.name == "__init__.py")
            for alias in node.names:
                submodule = f"{module}.{alias.name}"
                named = submodule if source_of(submodule) is not None else module
                yield Import(file, node.lineno, named)
        elif (
            isinstance(node, ast.Call)
            and _called(node.func) in {"import_module", "__import__"}
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield Import(file, node.lineno, node.args[0].value)


def _called(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def clock_reads(source: str, file: str) -> Iterator[Import]:
    """Calls of ``….now()``, ``….utcnow()``, ``….today()``: a clock read."""
    for node in ast.walk(ast.parse(source, filename=file)):
        if isinstance(node, ast.Call) and _called(node.func) in CLOCK_READS:
            yield Import(file, node.lineno, f"a clock (.{_called(node.func)}())")


# ------------------------------------------------------------------ the parts


def part_of(path: Path) -> str | None:
    """The part a file of this project belongs to (None: not a part, e.g. tests)."""
    if path.is_relative_to(PLUGIN / "tablectl_example_driver"):
        return DRIVERS  # a plugin driver is a driver
    rel = path.relative_to(ROOT).as_posix()
    top = rel.split("/")[0]
    if top in (DRIVERS, SIMULATORS):
        return top
    if top != "controller":
        return None
    if any(rel.startswith(package + "/") for package in SHELL_PACKAGES):
        return SHELL
    if any(rel.startswith(package + "/") for package in CORE_PACKAGES):
        return CORE
    if "/" not in rel.removeprefix("controller/"):
        name = path.stem
        if name in CORE_MODULES:
            return CORE
        if name in SHELL_MODULES:
            return SHELL
        if name in NEUTRAL_MODULES:
            return NEUTRAL
    return None


def in_engine(path: Path) -> bool:
    rel = path.relative_to(ROOT).as_posix()
    return any(rel.startswith(package + "/") for package in ENGINE_PACKAGES)


def project_files() -> list[Path]:
    files = [p for top in ("controller", DRIVERS, SIMULATORS) for p in (ROOT / top).rglob("*.py")]
    files += (PLUGIN / "tablectl_example_driver").rglob("*.py")
    return sorted(files)


def violations(path: Path, source: str) -> list[Violation]:
    """What in ``source`` (the text of ``path``) breaks the layering."""
    part = part_of(path)
    if part is None:
        return []
    file = path.relative_to(ROOT).as_posix()
    found: list[Violation] = []
    for imported in imports_in(source, file):
        top = imported.module.split(".")[0]
        target = owner(imported.module)
        if target is not None:
            other = part_of(target)
            if other is not None and other not in MAY_IMPORT[part]:
                found.append(Violation(imported, WHY[part]))
                continue
        elif part == CORE and top in IO_LIBRARIES:
            found.append(Violation(imported, "the core runs no event loop and does no I/O"))
            continue
        if in_engine(path):
            found += _engine_violations(file, imported, top)
    if in_engine(path):
        why = "the engine reads no clock: the time comes with each input"
        found += [Violation(read, why) for read in clock_reads(source, file)]
    return found


def _engine_violations(file: str, imported: Import, top: str) -> list[Violation]:
    module = imported.module
    if top in IMPURE_LIBRARIES:
        why = "the engine reads no clock, draws no random number and touches no file"
        return [Violation(imported, why)]
    rule_module = module.startswith("controller.rules") and module != "controller.rules.ids"
    table_module = file.startswith("controller/table/") and file != "controller/table/engine.py"
    engine_module = module.startswith(("controller.table", "controller.rules"))
    if file.startswith("controller/game/") and engine_module and module not in GAME_MAY_USE:
        why = "controller/game is arithmetic: of the engine it uses the vocabulary only"
        return [Violation(imported, why)]
    if table_module and rule_module:
        why = "the table calls no rule: the engine's tables plug the rules in"
        return [Violation(imported, why)]
    if file.startswith("controller/rules/") and module == "controller.table.engine":
        return [Violation(imported, "a rule never calls the engine: the engine calls the rules")]
    return []


# ------------------------------------------------------------------ import cycles


Graph = Mapping[str, Mapping[str, Import]]


def import_graph(sources: Mapping[Path, str]) -> dict[str, dict[str, Import]]:
    """Which module of the project imports which (inside functions too), each by the import of
    the lowest line, from the modules' ``sources`` (file → text)."""
    graph: dict[str, dict[str, Import]] = {}
    for path, source in sources.items():
        here = module_name(path)
        edges = graph.setdefault(here, {})
        found = imports_in(source, path.relative_to(ROOT).as_posix())
        for imported in sorted(found, key=lambda i: i.line):
            target = owner(imported.module)
            if target is not None and module_name(target) != here:
                edges.setdefault(module_name(target), imported)
    return graph


def _reachable(graph: Graph, start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(graph.get(start, ()))
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(graph.get(module, ()))
    return seen


def cycles(graph: Graph) -> list[tuple[str, ...]]:
    """The groups of modules that import one another, each sorted: every module of a group reaches
    every other through imports, and no module outside it does both ways."""
    reach = {module: _reachable(graph, module) for module in graph}
    return sorted(
        {
            tuple(sorted(m for m in reach[start] if start in reach.get(m, ())))
            for start in graph
            if start in reach[start]
        }
    )


def describe(graph: Graph, group: tuple[str, ...]) -> str:
    """A group of modules and a shortest cycle through its first one: each module, and the file
    and line of the import that leads to it."""
    start = group[0]
    paths: dict[str, list[tuple[str, Import]]] = {start: []}
    queue = deque([start])
    while queue:
        module = queue.popleft()
        for target, imported in sorted(graph.get(module, {}).items()):
            step = [*paths[module], (target, imported)]
            if target == start:
                chain = " → ".join(f"{m} ({i.file}:{i.line})" for m, i in step)
                return f"{', '.join(group)}: {start} → {chain}"
            if target in group and target not in paths:
                paths[target] = step
                queue.append(target)
    raise AssertionError(f"no cycle through {start}")


def new_cycles(graph: Graph, known: Mapping[frozenset[str], str]) -> list[str]:
    """The cycles of ``graph`` that are not ``known``, described."""
    return [describe(graph, group) for group in cycles(graph) if frozenset(group) not in known]


@functools.cache
def project_graph() -> dict[str, dict[str, Import]]:
    return import_graph({path: path.read_text("utf-8") for path in project_files()})


# ------------------------------------------------------------------ the tests


def test_every_module_of_controller_belongs_to_one_part() -> None:
    loose = [
        p.relative_to(ROOT).as_posix()
        for p in sorted((ROOT / "controller").rglob("*.py"))
        if part_of(p) is None
    ]
    assert not loose, (
        f"not in any part: {', '.join(loose)}; put each in CORE_MODULES (pure) or SHELL_MODULES "
        "of tests/test_layering.py and in docs/architecture.md"
    )


def test_the_parts_import_one_another_in_one_direction_only() -> None:
    found = [str(v) for path in project_files() for v in violations(path, path.read_text("utf-8"))]
    assert not found, "the layering is broken (docs/architecture.md):\n" + "\n".join(found)


def test_the_check_sees_imports_inside_functions_and_names_file_line_and_import() -> None:
    source = (
        "from controller.cards import Card\n"
        "\n"
        "def later():\n"
        "    import asyncio\n"
        "    from controller.shell import journal\n"
        "    from simulators.deck import x\n"
    )
    found = [str(v) for v in violations(ROOT / "controller/rules/board.py", source)]
    assert found == [
        "controller/rules/board.py:4: imports asyncio "
        "(the core runs no event loop and does no I/O)",
        "controller/rules/board.py:5: imports controller.shell.journal "
        "(the core imports only the core)",
        "controller/rules/board.py:6: imports simulators.deck (the core imports only the core)",
    ]


def test_the_check_knows_each_parts_rules() -> None:
    def why(file: str, source: str) -> list[str]:
        return [v.why for v in violations(ROOT / file, source)]

    assert why("drivers/jsonl.py", "from controller.shell.journal import Journal\n") == [
        WHY[DRIVERS]
    ]
    assert why("drivers/jsonl.py", "from controller.table.inputs import TagArrived\n") == []
    assert why("controller/shell/daemon.py", "import simulators.pty\n") == [WHY[SHELL]]
    assert why("controller/shell/daemon.py", "import drivers.registry\nimport asyncio\n") == []
    assert why("simulators/cli.py", "import controller.shell.daemon\n") == []
    assert why("controller/rules/board.py", "from controller.aio import utc_now\n") == [WHY[CORE]]
    assert why("drivers/tsp/driver.py", "from controller.aio import stop_tasks\n") == []
    assert why("controller/pit/ingest.py", "from controller.aio import Backoff\n") == []
    assert why("controller/aio.py", "from drivers.errors import DeviceError\n") == [WHY[NEUTRAL]]
    assert why("controller/aio.py", "from controller.cards import Card\n") == [WHY[NEUTRAL]]
    assert why("controller/game/pots.py", "from controller.table.state import HandState\n")
    assert why("controller/game/pots.py", "from controller.table.inputs import Purpose\n") == []
    assert why("controller/table/flow.py", "from controller.rules import burns\n")
    assert why("controller/table/engine.py", "from controller.rules import burns\n") == []
    assert why("controller/rules/board.py", "from controller.table.engine import apply\n")
    assert why("controller/table/state.py", "import random\n")
    assert why("controller/table/state.py", "from datetime import datetime\nx = datetime.now()\n")
    assert why("controller/signing.py", "import os\nimport secrets\n") == []  # core, not engine
    assert why("controller/signing.py", "import importlib\nimportlib.import_module('serial')\n")


def test_no_import_cycle_among_the_projects_modules() -> None:
    found = new_cycles(project_graph(), KNOWN_CYCLES)
    assert not found, (
        "import cycles (imports inside functions count): make the imports go one way, e.g. move "
        "what both need to a module of its own:\n" + "\n".join(found)
    )


def test_the_known_import_cycles_are_still_there() -> None:
    found = {frozenset(group) for group in cycles(project_graph())}
    gone = [
        ", ".join(sorted(group))
        for group in KNOWN_CYCLES
        if group not in found and all(source_of(module) for module in group)
    ]
    assert not gone, "no longer a cycle, take it out of KNOWN_CYCLES: " + "; ".join(gone)


def test_the_cycle_check_sees_imports_inside_functions_and_names_the_modules() -> None:
    sources = {
        ROOT / "controller/pit/lockout.py": (
            "import time\n\ndef later():\n    from controller.pit.users import verify\n"
        ),
        ROOT / "controller/pit/users.py": (
            "from controller.pit import rulings\nfrom controller.pit.metrics import PitMetrics\n"
        ),
        ROOT / "controller/pit/rulings.py": "import controller.pit.lockout\n",
        ROOT / "controller/pit/metrics.py": "from controller.pit.health import PitHealth\n",
        ROOT / "controller/pit/health.py": "",
    }
    graph = import_graph(sources)
    group = ("controller.pit.lockout", "controller.pit.rulings", "controller.pit.users")
    assert cycles(graph) == [group]  # metrics and health are imported, and import none back
    assert new_cycles(graph, {}) == [
        "controller.pit.lockout, controller.pit.rulings, controller.pit.users: "
        "controller.pit.lockout → controller.pit.users (controller/pit/lockout.py:4) → "
        "controller.pit.rulings (controller/pit/users.py:1) → "
        "controller.pit.lockout (controller/pit/rulings.py:1)"
    ]
    assert new_cycles(graph, {frozenset(group): "known"}) == []
    # a known cycle that grows is a new one
    sources[ROOT / "controller/pit/health.py"] = "from controller.pit.users import verify\n"
    assert len(new_cycles(import_graph(sources), {frozenset(group): "known"})) == 1
