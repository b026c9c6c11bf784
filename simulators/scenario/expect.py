"""Checking a run's events against a scenario's ``[[expect]]`` and ``[[expect_not]]``.

``[[expect]]`` entries must match, in order, a subsequence of the event stream. An entry matches an
event when the type is equal, its ``rules`` are all among the event's rules, its ``data`` is a
subset of the event's data (nested tables are subsets too; lists and values are equal) and any of
``severity``, ``needs_confirm`` and ``hand_id`` it gives are equal. Data is matched against the
surveillance view, so secret fields (hole cards, burns) can be expected too.
``[[expect_not]]`` entries must match no event at all.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from simulators.scenario.model import Expectation


@dataclass(frozen=True)
class Verdict:
    """The outcome of checking one run."""

    failures: list[str]

    @property
    def passed(self) -> bool:
        """True when every expectation held."""
        return not self.failures


def subset(expected: Any, actual: Any) -> bool:
    """Whether ``expected`` is in ``actual`` (mappings by subset, the rest by equality)."""
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(
            str(k) in actual and subset(v, actual[str(k)]) for k, v in expected.items()
        )
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(map(subset, expected, actual))
    return bool(expected == actual)


def differences(exp: Expectation, event: Mapping[str, Any]) -> list[str]:
    """What keeps ``event`` from matching ``exp`` (empty when it matches)."""
    out: list[str] = []
    if event["type"] != exp.type:
        return [f"type is {event['type']!r}"]
    missing = [r for r in exp.rules if r not in event["rules"]]
    if missing:
        out.append(f"rules {event['rules']} lack {missing}")
    for key, value in exp.data.items():
        if key not in event["data"]:
            out.append(f"data.{key} is absent")
        elif not subset(value, event["data"][key]):
            out.append(f"data.{key} is {_short(event['data'][key])}, expected {_short(value)}")
    for key in ("severity", "needs_confirm", "hand_id"):
        wanted = getattr(exp, key)
        if wanted is not None and event[key] != wanted:
            out.append(f"{key} is {event[key]!r}, expected {wanted!r}")
    return out


def check(
    events: Sequence[Mapping[str, Any]],
    expect: Sequence[Expectation],
    expect_not: Sequence[Expectation],
) -> Verdict:
    """Match the expectations against ``events`` (envelopes, surveillance view)."""
    failures: list[str] = []
    position = 0
    for number, exp in enumerate(expect, start=1):
        found = next(
            (i for i in range(position, len(events)) if not differences(exp, events[i])), None
        )
        if found is not None:
            position = found + 1
            continue
        failures.append(_explain_missing(number, exp, events, position))
    for exp in expect_not:
        for event in events:
            if not differences(exp, event):
                failures.append(
                    f"expect_not {_describe(exp)} matched event seq {event['seq']}: "
                    f"{_short(event['data'])}"
                )
                break
    return Verdict(failures)


def _explain_missing(
    number: int, exp: Expectation, events: Sequence[Mapping[str, Any]], position: int
) -> str:
    head = f"expect #{number} {_describe(exp)} not found"
    after = f" after event seq {events[position - 1]['seq']}" if position else ""
    same_type = [e for e in events[position:] if e["type"] == exp.type]
    if not same_type:
        earlier = [e["seq"] for e in events[:position] if e["type"] == exp.type]
        note = f" (earlier ones at seq {earlier})" if earlier else ""
        return f"{head}: no {exp.type} event{after}{note}"
    lines = [f"{head}{after}; the {exp.type} events that came instead:"]
    lines += [f"    seq {e['seq']}: " + "; ".join(differences(exp, e)) for e in same_type[:5]]
    return "\n".join(lines)


def _describe(exp: Expectation) -> str:
    parts = [exp.type]
    if exp.rules:
        parts.append(f"rules={exp.rules}")
    if exp.data:
        parts.append(f"data={_short(exp.data)}")
    return "{" + ", ".join(parts) + "}"


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 160 else text[:157] + "..."
