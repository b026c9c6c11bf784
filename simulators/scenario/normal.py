"""The normal form in which the event streams of the two modes must agree.

A scenario run with ``--core`` and the same file run through the devices give the same events,
except for what a virtual device and a real one legitimately do differently. The normal form
keeps, for every event, its ``type``, ``rules``, ``severity``, ``needs_confirm``, ``hand_id``
and ``data``, and leaves out (``docs/scenarios.md`` explains each):

* the envelope's ``ts``, ``seq``, ``epoch``, ``event_id`` and ``historical``: where and when it
  was published;
* in ``data``: ``shuffle_id`` and ``commitment`` (a real shuffler numbers its decks from its own
  counter and salts each commitment at random), ``paid_until`` (the end of a period of time
  collection, from the input's clock), and on ``device.status`` the device's own words
  and counters, ``detail``, ``fault_id``, ``boot_id`` and ``kind``;
* ``device.status`` events that cite no rule and report a connection (``health``) or come from a
  reader: the supervisors' start-up and reconnection chatter, and the real reader's zone
  warnings (a seat holding three cards), which the virtual reader does not give.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from controller.table.event_types import DeviceStatus

#: Data keys left out of every event.
VOLATILE = frozenset({"shuffle_id", "commitment", "deck_out_of_service", "paid_until"})
#: Data keys left out of device.status events.
DEVICE_WORDS = frozenset({"detail", "fault_id", "boot_id", "kind"})
SHUFFLER = "shuffler"


def chatter(env: Mapping[str, Any]) -> bool:
    """A device.status event that only says a device connected, or what a reader noticed."""
    if env["type"] != DeviceStatus.TYPE or env.get("rules"):
        return False
    data = env.get("data", {})
    return "health" in data or data.get("device") != SHUFFLER


def normal(env: Mapping[str, Any]) -> dict[str, Any]:
    """One event in normal form."""
    drop = VOLATILE | (DEVICE_WORDS if env["type"] == DeviceStatus.TYPE else frozenset())
    return {
        "type": env["type"],
        "rules": [str(rule) for rule in env.get("rules", [])],
        "severity": env.get("severity"),
        "needs_confirm": env.get("needs_confirm"),
        "hand_id": env.get("hand_id"),
        "data": {k: v for k, v in env.get("data", {}).items() if k not in drop},
    }


def normal_form(envelopes: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A run's events in normal form, in order, without the chatter."""
    return [normal(env) for env in envelopes if not chatter(env)]


def differences(core: list[dict[str, Any]], device: list[dict[str, Any]]) -> list[str]:
    """Where two normal forms part (empty when they agree)."""
    out: list[str] = []
    for index, (a, b) in enumerate(zip(core, device, strict=False)):
        if a != b:
            keys = sorted(k for k in a if a[k] != b.get(k))
            out.append(f"event {index + 1}: core {_short(a, keys)} / device {_short(b, keys)}")
            if len(out) >= 5:
                break
    if len(core) != len(device):
        extra = core[len(device) :] if len(core) > len(device) else device[len(core) :]
        side = "core" if len(core) > len(device) else "device"
        names = ", ".join(e["type"] for e in extra[:8])
        out.append(
            f"{len(core)} events in core mode, {len(device)} on the devices; {side} adds {names}"
        )
    return out


def _short(event: Mapping[str, Any], keys: list[str]) -> str:
    shown = {k: event[k] for k in ("type", *keys) if k in event}
    text = repr(shown)
    return text if len(text) < 300 else text[:297] + "..."
