"""The suite's own scheduling (tests/conftest.py): the tests of a module that share a costly
fixture go to one worker, every other test is a unit of its own."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import ONE_WORKER_MODULES, scope_of


def test_the_tests_of_a_one_worker_module_are_one_unit() -> None:
    ids = [
        "tests/packaging/test_installed.py::test_tablectl_help_and_version",
        "tests/packaging/test_installed.py::test_the_installed_daemon_runs_the_plugin",
    ]
    assert {scope_of(i) for i in ids} == {"tests/packaging/test_installed.py"}


def test_every_other_test_is_a_unit_of_its_own() -> None:
    ids = [
        "tests/core/test_differential.py::test_random_hands_match_pokerkit_stacks[rrop-cash]",
        "tests/core/test_differential.py::test_random_hands_match_pokerkit_stacks[de-charitable]",
        "tests/integration/test_pit.py::test_messages_the_broker_dropped_are_replayed_by_the_table",
    ]
    assert [scope_of(i) for i in ids] == ids


def test_the_one_worker_modules_exist() -> None:
    root = Path(__file__).resolve().parents[1]
    assert all((root / module).is_file() for module in ONE_WORKER_MODULES)
