"""JSON Merge Patch (RFC 7386) as the watch stream sends the view: a patch turns the old view
into the new one, and nothing smaller is sent than what changed."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from controller.shell.merge_patch import apply, diff, without_nulls

keys = st.sampled_from(["a", "b", "c", "seat", "1", "2"])
scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3)
documents: st.SearchStrategy[Any] = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=12,
)
objects = st.dictionaries(keys, documents, max_size=5).map(without_nulls)


@given(objects, objects)
def test_the_patch_turns_the_old_view_into_the_new(
    old: dict[str, Any], new: dict[str, Any]
) -> None:
    assert apply(old, diff(old, new)) == new


@given(objects)
def test_an_unchanged_view_gives_an_empty_patch(view: dict[str, Any]) -> None:
    assert diff(view, view) == {}


@given(objects, objects)
def test_applying_leaves_its_arguments_as_they_were(
    old: dict[str, Any], new: dict[str, Any]
) -> None:
    before = repr(old)
    patch = diff(old, new)
    apply(old, patch)
    assert repr(old) == before


def test_a_patch_names_only_what_changed() -> None:
    old = {"seq": 4, "table": {"seats": {"1": {"stack": 50, "bet": 0}, "2": {"stack": 50}}}}
    new = {"seq": 5, "table": {"seats": {"1": {"stack": 48, "bet": 2}, "2": {"stack": 50}}}}
    assert diff(old, new) == {"seq": 5, "table": {"seats": {"1": {"stack": 48, "bet": 2}}}}


def test_a_member_gone_is_null_in_the_patch_and_removed_by_it() -> None:
    old = {"table": {"hand": {"hand_id": "T1-00001"}, "last_hand": "T1-00000"}}
    new = {"table": {"last_hand": "T1-00001"}}
    patch = diff(old, new)
    assert patch == {"table": {"hand": None, "last_hand": "T1-00001"}}
    assert apply(old, patch) == new


def test_rfc7386_appendix_a_examples() -> None:
    # RFC 7386 Appendix A, a few rows: an object merges, null removes, an array is replaced
    assert apply({"a": "b"}, {"a": "c"}) == {"a": "c"}
    assert apply({"a": "b"}, {"b": "c"}) == {"a": "b", "b": "c"}
    assert apply({"a": "b"}, {"a": None}) == {}
    assert apply({"a": [{"b": "c"}]}, {"a": [1]}) == {"a": [1]}
    assert apply({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}) == {"a": {"b": "d"}}
    assert apply(["a", "b"], {"a": "b"}) == {"a": "b"}
    assert apply({"e": None}, {"a": 1}) == {"e": None, "a": 1}


def test_nulls_are_left_out_of_a_view_but_kept_in_arrays() -> None:
    assert without_nulls({"a": None, "b": {"c": None, "d": 1}, "e": [None, 1]}) == {
        "b": {"d": 1},
        "e": [None, 1],
    }
