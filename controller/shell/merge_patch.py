"""JSON Merge Patch (RFC 7386): the difference between two views of the table, and applying it.

The console socket's watch stream (:mod:`controller.shell.watch`) sends the table's view once,
then only what changed, as a merge patch: an object whose members replace the target's, ``null``
removes a member, and an object patches the object it replaces member by member (RFC 7386 §2).
A merge patch cannot set a member to ``null``, so the views it carries never hold one: a member
that would be ``null`` is left out (:func:`without_nulls`), and a reader treats a missing member
as ``null``. Arrays are replaced whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def without_nulls(value: Any) -> Any:
    """``value`` with every ``null`` member of every object left out (array items are kept)."""
    if isinstance(value, Mapping):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [without_nulls(v) for v in value]
    return value


def diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """The merge patch that turns ``old`` into ``new`` (both without ``null`` members);
    ``{}`` when they are equal."""
    patch: dict[str, Any] = {}
    for key in old:
        if key not in new:
            patch[key] = None
    for key, after in new.items():
        before = old.get(key)
        if before == after and key in old:
            continue
        if isinstance(before, Mapping) and isinstance(after, Mapping):
            inner = diff(before, after)
            if inner:
                patch[key] = inner
        else:
            patch[key] = after
    return patch


def apply(target: Any, patch: Any) -> Any:
    """``target`` with ``patch`` applied (RFC 7386 §2, MergePatch); neither is changed."""
    if not isinstance(patch, Mapping):
        return patch
    result = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply(result.get(key), value)
    return result
