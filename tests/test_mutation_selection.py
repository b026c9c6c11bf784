"""``make mutation`` runs, for each mutant, only the tests that run the statement it changed
(benchmarks/mutation.py, ``select_tests``): a wrong choice there would count mutants as
survivors that the suite kills, or skip tests that would have killed them. Its shards and
the figures it merges from them are pinned here too."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st


def _load() -> ModuleType:
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "mutation.py"
    spec = importlib.util.spec_from_file_location("mutation_script", script)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


mutation = _load()

SOURCE = """\
LIMIT = 4


@staticmethod
def helper(x):
    return x


def check(value):
    if value > LIMIT:
        return (
            value
            + 1
        )
    return value


def unused():
    return 0
"""

# Lines as coverage records them: import-time lines under the empty context, and the
# statements each test ran (a multi-line statement recorded on its first line only).
TABLE = mutation.TestMap(
    lines={6: ["t_helper"], 10: ["t_small", "t_big"], 11: ["t_big"], 15: ["t_small"]},
    at_import=[1, 4, 5, 9, 18],
    tests=["t_small", "t_helper", "t_big"],
    durations={"t_small": 0.1, "t_helper": 0.2, "t_reads_limit": 0.3, "t_big": 2.0},
    readers=["t_reads_limit"],
)


def _mutate(line: int, old: str, new: str) -> str:
    lines = SOURCE.splitlines()
    assert old in lines[line - 1]
    lines[line - 1] = lines[line - 1].replace(old, new)
    return "\n".join(lines) + "\n"


def test_the_unmutated_module_runs_every_test_fastest_first() -> None:
    assert mutation.select_tests(SOURCE, SOURCE, TABLE) == ["t_small", "t_helper", "t_big"]


def test_a_change_in_a_function_runs_only_the_tests_that_ran_that_statement() -> None:
    assert mutation.select_tests(SOURCE, _mutate(10, ">", ">="), TABLE) == ["t_small", "t_big"]
    assert mutation.select_tests(SOURCE, _mutate(15, "value", "None"), TABLE) == ["t_small"]


def test_a_change_on_a_continuation_line_runs_the_tests_of_its_whole_statement() -> None:
    # line 13 ("+ 1") is never recorded: its statement starts on line 11
    assert mutation.select_tests(SOURCE, _mutate(13, "+", "-"), TABLE) == ["t_big"]


@pytest.mark.parametrize(
    ("line", "old", "new"),
    [(1, "4", "5"), (4, "@staticmethod", ""), (9, "value", "value=None")],
    ids=["constant", "decorator", "def-line"],
)
def test_a_change_to_what_runs_at_import_runs_every_test_and_those_that_only_read_it(
    line: int, old: str, new: str
) -> None:
    # t_reads_limit runs no line of the module: it reads LIMIT, which only an import reaches
    assert mutation.select_tests(SOURCE, _mutate(line, old, new), TABLE) == [
        "t_small",
        "t_helper",
        "t_reads_limit",
        "t_big",
    ]


def test_a_change_no_test_runs_selects_none_so_the_mutant_survives() -> None:
    assert mutation.select_tests(SOURCE, _mutate(19, "0", "1"), TABLE) == []


def test_changed_lines_names_the_lines_of_the_original_a_mutant_differs_on() -> None:
    assert mutation.changed_lines(SOURCE, _mutate(13, "+", "-")) == {13}
    assert mutation.changed_lines(SOURCE, SOURCE) == set()
    assert mutation.changed_lines("a\nb\nc\n", "a\nc\n") == {2}


ANNOTATED = """\
from __future__ import annotations


def check(flags: int | None, *, size: int = 1) -> str | None:
    count: int = 2
    return None
"""


def test_annotation_spans_are_where_a_mutant_changes_nothing_under_postponed_annotations() -> None:
    lines = ANNOTATED.splitlines()
    spans = sorted(mutation.annotation_spans(ANNOTATED))
    assert all(start[0] == end[0] for start, end in spans)
    assert [lines[start[0] - 1][start[1] : end[1]] for start, end in spans] == [
        "int | None",
        "int",
        "str | None",
        "int",
    ]


@pytest.mark.parametrize(
    "source",
    [ANNOTATED.replace("from __future__ import annotations", ""), ANNOTATED + "import pydantic\n"],
    ids=["evaluated-at-import", "pydantic-reads-them"],
)
def test_annotations_something_evaluates_are_not_spared(source: str) -> None:
    assert mutation.annotation_spans(source) == []


def test_a_listed_equivalent_names_one_mutant_of_a_position_by_what_its_line_becomes() -> None:
    listed = [
        {"mutant": "core/NumberReplacer@3:8", "becomes": "del buf[:3]", "reason": "…"},
        {"mutant": "core/AddNot@9:4", "reason": "…"},
    ]
    assert mutation.is_listed("core/NumberReplacer@3:8 in step: del buf[:3]", listed)
    assert not mutation.is_listed("core/NumberReplacer@3:8 in step: del buf[:5]", listed)
    assert mutation.is_listed("core/AddNot@9:4 in step: if not x:", listed)
    assert not mutation.is_listed("core/AddNot@9:5 in step: if not x:", listed)


# Shards (``--shard K/N``): each machine draws its part from the mutant alone, so N machines
# with the same tree run every mutant exactly once between them.


@given(
    count=st.integers(min_value=1, max_value=9),
    operator=st.sampled_from(["core/NumberReplacer", "core/ReplaceOrWithAnd", "core/AddNot"]),
    line=st.integers(min_value=1, max_value=2000),
    column=st.integers(min_value=0, max_value=120),
    occurrence=st.integers(min_value=0, max_value=50),
)
def test_every_mutant_is_in_exactly_one_shard(
    count: int, operator: str, line: int, column: int, occurrence: int
) -> None:
    shards = [mutation.Shard(index, count) for index in range(1, count + 1)]
    holding = [s for s in shards if s.holds(operator, (line, column), occurrence)]
    assert len(holding) == 1


def test_shards_split_a_module_roughly_evenly() -> None:
    mutants = [("core/NumberReplacer", (line, 4), 0) for line in range(1, 401)]
    sizes = [sum(mutation.Shard(index, 4).holds(*m) for m in mutants) for index in range(1, 5)]
    assert sum(sizes) == 400
    assert min(sizes) > 60


@pytest.mark.parametrize("text", ["0/2", "3/2", "2", "a/b", "1/0", "-1/2"])
def test_a_shard_that_is_not_k_of_n_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="K/N"):
        mutation.Shard.parse(text)


def test_a_shard_round_trips_through_its_text_and_names_its_files() -> None:
    shard = mutation.Shard.parse("2/3")
    assert (str(shard), shard.suffix) == ("2/3", ".2of3")
    assert mutation.WHOLE.suffix == ""


def _part(shard: str, mutants: int, killed: int, survivors: list[str]) -> Any:
    return mutation.Outcome(
        "drivers/tsp/crc.py", "k", ["t"], mutants=mutants, killed=killed,
        survivors=survivors, module_mutants=10, shard=shard, seconds=1.0,
    )  # fmt: skip


def test_every_shard_merged_is_the_whole_module_with_survivors_in_line_order() -> None:
    merged = mutation.merge(
        [
            _part("1/2", 6, 5, ["core/AddNot@30:4 in f: not x"]),
            _part("2/2", 4, 3, ["core/AddNot@7:1 in g: not y"]),
        ]
    )
    assert (merged.mutants, merged.killed, merged.seconds) == (10, 8, 2.0)
    assert merged.complete()
    assert merged.shard == ""
    assert merged.survivors == ["core/AddNot@7:1 in g: not y", "core/AddNot@30:4 in f: not x"]


def test_a_missing_shard_leaves_the_figures_partial_and_the_results_say_so() -> None:
    merged = mutation.merge([_part("1/2", 6, 6, [])])
    assert not merged.complete()
    assert merged.shard == "1/2"
    row = next(line for line in mutation.table([merged]).splitlines() if "crc" in line)
    assert row.endswith("6 of 10 run, 95 % CI 61-100 % (shards 1/2)")


@pytest.mark.parametrize(
    ("killed", "killable", "low", "high"),
    # reference values of the Wilson score interval at z = 1.96
    [(0, 10, 0.0, 27.75), (10, 10, 72.25, 100.0), (81, 100, 72.2, 87.5), (5, 10, 23.66, 76.34)],
)
def test_a_sample_of_mutants_gives_the_wilson_interval_of_the_module_s_share(
    killed: int, killable: int, low: float, high: float
) -> None:
    assert mutation.wilson_interval(killed, killable) == (
        pytest.approx(low, abs=0.05),
        pytest.approx(high, abs=0.05),
    )
