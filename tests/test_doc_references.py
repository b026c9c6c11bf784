"""Every file and module the docs and the docstrings name exists.

The README, ``docs/``, the example plugin's README and the source of ``controller/``, ``drivers/``
and ``simulators/`` name files (``controller/table/engine.py``, ``docs/rules.md``) and modules
(``controller.table.codec``, ``controller.aio.retry_forever``). A module moved or renamed
leaves such names behind; this finds them, with the file and the line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOPS = ("benchmarks", "config", "controller", "docs", "drivers", "examples", "simulators", "tests")
_PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(TOPS) + r")/[\w./-]*\w)")
_MODULE = re.compile(r"(?<![\w./-])((?:controller|drivers|simulators)(?:\.[A-Za-z_]\w*)+)")
#: Written as a pattern or a placeholder, not a file.
_NOT_A_PATH = re.compile(r"[*{}<>…]|\.\.\.|/N$|/NAME")


def sources() -> list[Path]:
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    docs += sorted((ROOT / "examples").glob("*/README.md"))
    code = [
        p for top in ("controller", "drivers", "simulators") for p in (ROOT / top).rglob("*.py")
    ]
    return docs + sorted(code)


def mentions(pattern: re.Pattern[str], path: Path) -> Iterator[tuple[int, str, str]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        for match in pattern.finditer(line):
            rest = re.match(r"[^\s`'\"),;]*", line[match.end(1) :])
            yield number, match.group(1), rest.group(0) if rest else ""


def module_file(name: str) -> tuple[Path, list[str]] | None:
    """The file of the longest module prefix of ``name``, and the attribute names after it."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:end])
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate, parts[end:]
    return None


def defines(module: Path, attributes: list[str]) -> bool:
    """Whether ``module`` has the first of ``attributes`` (a module itself when there is none)."""
    if not attributes or attributes[0].startswith("__"):
        return True
    return re.search(rf"\b{re.escape(attributes[0])}\b", module.read_text("utf-8")) is not None


def label(path: Path) -> str:
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name


def missing_paths(path: Path) -> Iterator[str]:
    for number, named, after in mentions(_PATH, path):
        if _NOT_A_PATH.search(named + after):
            continue
        if not (ROOT / named).exists():
            yield f"{label(path)}:{number}: {named} does not exist"


def missing_modules(path: Path) -> Iterator[str]:
    for number, named, after in mentions(_MODULE, path):
        if after.startswith("/") or named.endswith((".py", ".md", ".toml", ".json")):
            continue  # a path, checked above
        found = module_file(named)
        if found is not None and defines(*found):
            continue
        yield f"{label(path)}:{number}: {named} does not exist"


def test_every_file_the_docs_and_docstrings_name_exists() -> None:
    missing = [problem for path in sources() for problem in missing_paths(path)]
    assert not missing, "\n".join(missing)


def test_every_module_the_docs_and_docstrings_name_exists() -> None:
    missing = [problem for path in sources() for problem in missing_modules(path)]
    assert not missing, "\n".join(missing)


def test_the_check_finds_a_file_or_module_that_is_gone(tmp_path: Path) -> None:
    stale = tmp_path / "stale.md"
    stale.write_text(
        "still here: `docs/architecture.md`, `controller.table.engine.apply`\n"
        "gone: `controller/table/hand.py`, `controller.shell.adapters`, "
        "`controller.table.engine.x`\n"
    )
    assert [*missing_paths(stale), *missing_modules(stale)] == [
        "stale.md:2: controller/table/hand.py does not exist",
        "stale.md:2: controller.shell.adapters does not exist",
        "stale.md:2: controller.table.engine.x does not exist",
    ]
