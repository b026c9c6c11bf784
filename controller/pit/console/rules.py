"""The rule catalogue's texts, for the holds queue: what the controller does under each rule ID.

They are read from the catalogue as implemented, ``docs/rules.md`` (one table row per rule ID:
ID, source, what the controller does, house-rule key, tests). The wheel ships a copy of that file
in this package (pyproject: force-include); a checkout reads it from ``docs/``.
"""

from __future__ import annotations

import functools
import re
from importlib import resources
from pathlib import Path

_ROW = re.compile(r"^\|\s*`(?P<id>[^`]+)`\s*\|(?P<source>[^|]*)\|(?P<text>[^|]*)\|")


@functools.cache
def rule_texts() -> dict[str, str]:
    """Rule ID → what the controller does under it (empty when the catalogue is not found)."""
    shipped = resources.files("controller.pit.console") / "rules.md"
    checkout = Path(__file__).resolve().parents[3] / "docs" / "rules.md"
    if shipped.is_file():
        text = shipped.read_text(encoding="utf-8")
    elif checkout.is_file():
        text = checkout.read_text(encoding="utf-8")
    else:
        return {}
    texts: dict[str, str] = {}
    for line in text.splitlines():
        found = _ROW.match(line)
        if found:
            texts[found["id"]] = found["text"].strip().replace("`", "")
    return texts


def rule_text(rule: str | None) -> str:
    """What the controller does under ``rule`` ("" when it is not in the catalogue)."""
    return rule_texts().get(rule or "", "")
