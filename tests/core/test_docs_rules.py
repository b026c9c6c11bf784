"""docs/rules.md names every catalogue rule once, and every test it names exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from controller.rules.ids import Rule, rule_test_fragment

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "rules.md"
_ROW = re.compile(r"^\| `(?P<id>[^`]+)` \|")
_TEST = re.compile(r"`(?P<path>tests/[\w/]+\.py)::(?P<name>\w+)`")


def rows() -> dict[str, str]:
    found: dict[str, str] = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        match = _ROW.match(line)
        if match:
            assert match["id"] not in found, f"{match['id']} has two rows"
            found[match["id"]] = line
    return found


def functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef)  # the station's tests are coroutines
    return {node.name for node in ast.walk(tree) if isinstance(node, kinds)}


def test_every_catalogue_rule_has_exactly_one_row() -> None:
    documented = set(rows())
    catalogue = {rule.value for rule in Rule}
    assert catalogue - documented == set(), "rules without a row"
    assert documented - catalogue == set(), "rows for IDs the catalogue does not have"


def test_every_row_names_tests_that_exist_or_says_why_it_does_not_apply() -> None:
    for rule, line in rows().items():
        tests = list(_TEST.finditer(line))
        if not tests:
            assert "Does not apply in the core:" in line, f"{rule}: no test and no reason"
            continue
        for test in tests:
            path = ROOT / test["path"]
            assert path.is_file(), f"{rule}: {test['path']} does not exist"
            assert test["name"] in functions(path), f"{rule}: no {test['name']} in {test['path']}"


def test_the_tests_a_row_names_are_named_after_its_rule() -> None:
    for rule, line in rows().items():
        names = [t["name"] for t in _TEST.finditer(line)]
        fragment = rule_test_fragment(Rule(rule))
        if names:
            assert any(fragment in name for name in names), f"{rule}: no test named after it"
