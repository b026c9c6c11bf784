"""The console's accessibility in a real browser (Debian's chromium driven by Playwright) against
a real mosquitto, a real table daemon with its simulated shuffler and the real pit process:

* axe-core (the copy the ``axe-playwright-python`` package ships: nothing is fetched at test
  time) finds no WCAG 2.1 A or AA violation on any page: login, floor, table, hands, hand,
  holds, alarms; a failure prints each violation and the elements at fault;
* nothing scrolls sideways at 200 % zoom of 1280 px (640 CSS px) nor at 320 px (WCAG 1.4.10),
  and the override form stays inside its hold's card;
* the keyboard focus never falls to ``<body>``: not while a ruling is out (its buttons
  disabled), not after it, not when a live update replaces the section that holds it.

One rig and one browser for the module (ONE_WORKER_MODULES in tests/conftest.py).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from tests.integration.broker import Broker, mosquitto_available
from tests.integration.conftest import DaemonProcess
from tests.integration.pit import PASSWORD, USER, PitProcess
from tests.integration.test_pit_console import CHROMIUM, SHOWS, Rig, console_keyring, journal

playwright_api = pytest.importorskip("playwright.sync_api")

pytestmark = [
    pytest.mark.broker,
    pytest.mark.slow,
    pytest.mark.timeout(300),
    pytest.mark.skipif(not CHROMIUM.exists(), reason="chromium is not installed"),
]

#: The rules axe-core runs: WCAG 2.0 and 2.1, levels A and AA.
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
#: Widths no page may scroll sideways at: 1280 px at 200 % zoom, and a small phone.
NARROW = (640, 320)


def axe_source() -> str:
    """axe-core as the ``axe-playwright-python`` package ships it (the dev extra installs it)."""
    return (resources.files("axe_playwright_python") / "axe.min.js").read_text(encoding="utf-8")


def violations(page: Any) -> list[dict[str, Any]]:
    """axe-core's WCAG 2.1 A/AA violations on ``page``. Playwright's ``evaluate`` runs the
    script as the browser's own tools do, so the page's Content-Security-Policy (no inline
    script) stays as it is."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(axe_source())
    results: dict[str, Any] = page.evaluate(
        "(tags) => axe.run(document, {runOnly: {type: 'tag', values: tags},"
        " resultTypes: ['violations']})",
        WCAG_TAGS,
    )
    # the rules did run: those that passed are named too (without their elements)
    assert len(results["passes"]) > 10, results["passes"]
    found: list[dict[str, Any]] = results["violations"]
    return found


def report(path: str, found: list[dict[str, Any]]) -> str:
    """Each violation and the elements at fault, to read in the failure."""
    lines = [f"{path}: {len(found)} WCAG 2.1 A/AA violation(s)"]
    for v in found:
        lines.append(f"- {v['id']} ({v['impact']}): {v['help']} {v['helpUrl']}")
        for node in v["nodes"][:10]:
            lines.append(f"    {', '.join(map(str, node['target']))}: {node['html'][:200]}")
            lines.append(f"      {node.get('failureSummary', '')}".replace("\n", " "))
    return "\n".join(lines)


def scrolls_sideways(page: Any) -> int:
    """How many CSS pixels the page is wider than its viewport (0: none)."""
    return int(
        page.evaluate(
            "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
    )


def focused(page: Any) -> str:
    """What has the keyboard focus: ``tag#id``."""
    return str(
        page.evaluate(
            "() => document.activeElement.tagName.toLowerCase() + '#' + document.activeElement.id"
        )
    )


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    if not mosquitto_available():
        pytest.skip("mosquitto is not installed")
    directory = tmp_path_factory.mktemp("a11y")
    (directory / "broker").mkdir()
    broker = Broker(directory / "broker")
    broker.start()
    table = DaemonProcess(
        directory / "T1", broker, table="T1", stacks="{ 1 = 100, 2 = 100, 3 = 100, 4 = 150 }"
    )
    console_key = console_keyring(table, directory)
    pit = PitProcess(directory / "pit", broker, key=directory / "pit-console.key", secure=True)
    artifacts = Path(os.environ.get("TABLECTL_ARTIFACTS", directory / "artifacts"))
    artifacts.mkdir(parents=True, exist_ok=True)
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            pit.add_user()
            pit.start()
            table.start()
            yield Rig(directory, broker, table, pit, browser, console_key, artifacts)
        finally:
            browser.close()
            table.close()
            pit.close()
            broker.stop()
    shutil.rmtree(directory / "broker", ignore_errors=True)


def play(rig: Rig) -> None:
    """A hand at T1 with chips in front of the seats: button 3, blinds 4 and 1, seat 2 raises,
    seat 3 calls."""
    answer = rig.send("start_hand", {})
    assert answer["status"] == "ok" or "in progress" in str(answer.get("error")), answer
    deadline = time.monotonic() + SHOWS / 1000
    while not [e for e in journal(rig.table) if e["type"] == "deal.complete"]:
        assert time.monotonic() < deadline, "the shuffler did not deal the hole cards"
        time.sleep(0.05)  # polling the journal (a file) for the condition
    for seat, action, amount in ((2, "raise", 6), (3, "call", 6)):
        done = rig.send("action", {"seat": seat, "action": action, "amount": amount})
        assert done["status"] == "ok", done.get("error")


def pages(rig: Rig, page: Any) -> list[str]:
    """Every console page a logged-in user sees, one hand's page among them."""
    page.goto(f"{rig.pit.url}/hands")
    hand = page.locator("table.hands tbody th a").first
    playwright_api.expect(hand).to_be_visible(timeout=SHOWS)
    href = hand.get_attribute("href")
    assert href
    return ["/", "/tables/T1", "/hands", href, "/holds", "/alarms"]


def test_no_console_page_has_a_wcag_2_1_a_or_aa_violation(rig: Rig) -> None:
    play(rig)
    rig.raise_hold()  # the holds queue with its buttons, the table page with its hold
    context = rig.browser.new_context(viewport={"width": 1280, "height": 800})
    login = context.new_page()
    login.goto(f"{rig.pit.url}/login")
    found = {"/login": violations(login)}
    context.close()
    page = rig.login(USER, PASSWORD)
    playwright_api.expect(page.locator("#tile-T1")).to_have_attribute(
        "data-state", "online", timeout=SHOWS
    )
    for path in pages(rig, page):
        page.goto(f"{rig.pit.url}{path}")
        playwright_api.expect(page.locator("#live-state")).not_to_have_text(
            "○ connecting", timeout=SHOWS
        )
        if path == "/tables/T1":
            page.locator("#table-events details").first.click()  # a raw envelope opened too
            page.locator("#seats-table-summary").click()
            page.screenshot(path=str(rig.artifacts / "console-table.png"), full_page=True)
        found[path] = violations(page)
    page.context.close()
    failing = {path: v for path, v in found.items() if v}
    assert not failing, "\n".join(report(path, v) for path, v in failing.items())


def test_no_page_scrolls_sideways_at_200_percent_zoom_nor_on_a_small_phone(rig: Rig) -> None:
    if not rig.pit.json("/api/holds"):
        rig.raise_hold()
    page = rig.login(USER, PASSWORD)
    paths = pages(rig, page)
    wide: dict[str, int] = {}
    for width in NARROW:
        page.set_viewport_size({"width": width, "height": 800})
        for path in [*paths, "/login"]:
            if path == "/login":
                other = rig.browser.new_context(viewport={"width": width, "height": 800})
                shown = other.new_page()
                shown.goto(f"{rig.pit.url}/login")
                wide[f"{width} px {path}"] = scrolls_sideways(shown)
                other.close()
                continue
            page.goto(f"{rig.pit.url}{path}")
            # every raw envelope and the seats' table open: the widest the page can be
            page.evaluate(
                "() => document.querySelectorAll('details').forEach((d) => { d.open = true; })"
            )
            wide[f"{width} px {path}"] = scrolls_sideways(page)
            if path == "/tables/T1":
                # the drawing keeps its labels legible (it scrolls in its own box instead)
                smallest = page.evaluate(
                    "() => Math.min(...[...document.querySelectorAll('.table-drawing text')]"
                    ".map((t) => t.getBoundingClientRect().height))"
                )
                assert smallest >= 10, f"{width} px: a label of the drawing {smallest:.1f} px high"
        # the override form inside its hold's card, measured in one turn of the page: the live
        # stream may replace the holds' section between two looks from here
        page.goto(f"{rig.pit.url}/holds")
        playwright_api.expect(page.locator("#holds-open li.hold").first).to_be_visible(
            timeout=SHOWS
        )
        spills = page.evaluate(
            """(parts) => {
                const hold = document.querySelector('#holds-open li.hold');
                const card = hold.getBoundingClientRect();
                return Object.fromEntries(parts.map((part) => {
                    const found = hold.querySelector(part);
                    return [part, found ? found.getBoundingClientRect().right - card.right : null];
                }));
            }""",
            ["form.override", "form.override select", "form.override button"],
        )
        for part, spill in spills.items():
            assert spill is not None, f"{width} px: no {part} in the hold's card"
            wide[f"{width} px /holds: {part} past its card"] = max(0, round(spill))
    page.context.close()
    assert not {k: v for k, v in wide.items() if v > 0}, json.dumps(wide, indent=1)


def test_the_focus_stays_off_body_through_a_ruling(rig: Rig) -> None:
    expect = playwright_api.expect
    if not rig.pit.json("/api/holds"):
        rig.raise_hold()
    page = rig.login(USER, PASSWORD)
    page.goto(f"{rig.pit.url}/holds")
    expect(page.locator("#live-state")).to_have_text("● live", timeout=SHOWS)
    hold = page.locator("#holds-open li.hold").first
    expect(hold).to_be_visible(timeout=SHOWS)
    key = "-".join(str(hold.get_attribute(a)) for a in ("data-table", "data-epoch", "data-hold"))

    # a refusal (the pit's answer made here, with Playwright's public routing): every button of
    # the hold is disabled while it is out, and the focus is back on the button pressed after
    seen: dict[str, Any] = {}

    def refuse(route: Any) -> None:
        seen["while out"] = page.evaluate(
            "(id) => [document.activeElement.id, Array.from("
            "document.getElementById(id).querySelectorAll('button')).every((b) => b.disabled)]",
            f"hold-{key}",
        )
        route.fulfill(status=409, json={"detail": "the table left that journal"})

    page.route("**/api/holds/*/reject", refuse)
    page.locator(f"#reject-{key}").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#answer")).to_contain_text("Refused by the pit", timeout=SHOWS)
    assert seen["while out"] == ["answer", True]
    expect(page.locator(f"#reject-{key}")).to_be_focused()
    expect(page.locator(f"#reject-{key}")).to_be_enabled()
    page.unroute("**/api/holds/*/reject")

    # accepted: the hold leaves the queue, the focus stays on the answer that says so
    page.locator(f"#confirm-{key}").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#answer")).to_contain_text("accepted confirm", timeout=SHOWS)
    expect(page.locator(f"#hold-{key}")).to_have_count(0, timeout=SHOWS)
    assert focused(page) == "p#answer"
    page.context.close()


def change(rig: Rig) -> None:
    """Change what T1's tile and page show: its open holds confirmed, or one raised."""
    held = rig.pit.json("/api/holds")
    for left in held:
        assert rig.send("confirm", {"hold": left["hold"]})["status"] == "ok"
    if not held:
        rig.raise_hold()


def test_a_live_update_gives_the_focus_back_to_the_same_element(rig: Rig) -> None:
    expect = playwright_api.expect
    page = rig.login(USER, PASSWORD)
    expect(page.locator("#live-state")).to_have_text("● live", timeout=SHOWS)
    # the floor map: the table's tile is put in place anew when the table changes
    page.locator("#tile-link-T1").focus()
    page.evaluate("document.getElementById('tile-T1').dataset.before = '1'")
    change(rig)
    page.wait_for_function(
        "() => !document.getElementById('tile-T1').dataset.before", timeout=SHOWS
    )
    assert focused(page) == "a#tile-link-T1"

    # the table page: the seats' table opened and its summary focused, then the table acts
    page.goto(f"{rig.pit.url}/tables/T1")
    expect(page.locator("#live-state")).to_have_text("● live", timeout=SHOWS)
    page.locator("#seats-table-summary").click()
    page.locator("#seats-table-summary").focus()
    page.evaluate("document.getElementById('table-state').dataset.before = '1'")
    change(rig)
    page.wait_for_function(
        "() => !document.getElementById('table-state').dataset.before", timeout=SHOWS
    )
    assert focused(page) == "summary#seats-table-summary"
    assert page.evaluate("document.getElementById('seats-table').open") is True
    page.context.close()
