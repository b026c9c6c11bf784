"""The dealer's station in a real browser, by taps: Debian's chromium driven by Playwright with
touch emulation, against a real mosquitto, ``tablectl run`` on a virtual shuffler and a badge
reader, ``tablectl station run`` and the real pit process with its console.

* a dealer logs in with a badge read and the PIN pad and plays a whole hand by taps to the award
  (DE-1552), every event of it journaled in that dealer's name;
* a SEAT-COUNT hold: the dealer calls the floor, the floor sees the call on the console and rules
  there, and the station resumes;
* an illegal raise is refused with the core's reason and nothing reaches the table;
* with the broker stopped the dealer still plays a hand;
* a dealer not logged in can do nothing;
* five wrong PINs lock that badge for a while, not the station;
* axe-core finds no WCAG 2.1 A/AA violation on the station's screens, every button is a touch
  target of 48 px or more, and nothing scrolls sideways at 1280 x 800 nor 1920 x 1080.

Screenshots go to ``$TABLECTL_ARTIFACTS`` (default: the rig's directory), and to docs/img/ when
``TABLECTL_DOC_SHOTS`` is set. One rig and one browser for the module (ONE_WORKER_MODULES in
tests/conftest.py); the tests run in order and each leaves the table between hands.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.integration.broker import Broker, mosquitto_available
from tests.integration.pit import PASSWORD, USER, PitProcess
from tests.integration.test_pit_console import CHROMIUM, console_keyring
from tests.pit.test_console_a11y import report, scrolls_sideways, violations
from tests.station.rig import ANN_BADGE, BOB_BADGE, PINS, Table, served_table
from tests.station.taps import (
    SHOWS,
    mode,
    start_station,
    stop_station,
    tap,
    tap_and_wait,
    tap_pin,
    until_mode,
)

playwright_api = pytest.importorskip("playwright.sync_api")

pytestmark = [
    pytest.mark.broker,
    pytest.mark.slow,
    pytest.mark.timeout(600),
    pytest.mark.skipif(not CHROMIUM.exists(), reason="chromium is not installed"),
]

REPO = Path(__file__).resolve().parents[2]
#: The screens the station is made for (docs/station.md).
SCREENS = ({"width": 1280, "height": 800}, {"width": 1920, "height": 1080})
#: The smallest touch target (CSS px).
TARGET = 48
JSON = {"Content-Type": "application/json"}


@dataclass
class Rig:
    """The module's broker, table, station process, pit and browser."""

    directory: Path
    broker: Broker
    table: Table
    station: subprocess.Popen[bytes]
    url: str
    pit: PitProcess
    browser: Any
    artifacts: Path

    def page(self, viewport: dict[str, int] | None = None) -> Any:
        """A new touch-screen browser context (its own cookies) on the station's page."""
        context = self.browser.new_context(
            viewport=viewport or SCREENS[0], has_touch=True, is_mobile=False
        )
        page = context.new_page()
        page.goto(self.url + "/")
        return page

    def shot(self, page: Any, name: str) -> None:
        """A screenshot of a page (or of one element: a locator) to the artifacts, and to
        docs/img/ when asked."""
        page.screenshot(path=str(self.artifacts / f"{name}.png"))
        if os.environ.get("TABLECTL_DOC_SHOTS"):
            page.screenshot(path=str(REPO / "docs" / "img" / f"{name}.png"))

    def events(self) -> list[dict[str, Any]]:
        """The table's journal."""
        return self.table.events()

    def table_request(self, command: str, **fields: Any) -> dict[str, Any]:
        """A request of another console than the station (surveillance's hold)."""
        # on a thread of its own: Playwright's sync API owns this thread's event loop
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            work = pool.submit(asyncio.run, self.table.request(command, **fields))
            answer: dict[str, Any] = work.result(timeout=60)
        return answer


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    if not mosquitto_available():
        pytest.skip("mosquitto is not installed")
    directory = tmp_path_factory.mktemp("station-browser")
    broker, port, table = served_table(directory)
    console_keyring(table.daemon, directory)
    pit = PitProcess(directory / "pit", broker, key=directory / "pit-console.key", secure=True)
    artifacts = Path(os.environ.get("TABLECTL_ARTIFACTS", directory / "artifacts"))
    artifacts.mkdir(parents=True, exist_ok=True)
    log = (directory / "station.log").open("wb")
    station: subprocess.Popen[bytes] | None = None
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            pit.add_user()
            pit.start()
            table.daemon.start()
            url = f"http://127.0.0.1:{port}"
            station = start_station(table.config, url, log)
            yield Rig(directory, broker, table, station, url, pit, browser, artifacts)
        finally:
            browser.close()
            if station is not None:
                stop_station(station)
            log.close()
            table.daemon.close()
            pit.close()
            broker.stop()
    shutil.rmtree(directory / "broker", ignore_errors=True)


# ----------------------------------------------------------------------------- taps


def log_in_by_badge(rig: Rig, page: Any, badge: str, pin: str, name: str) -> None:
    """A badge laid on the reader, the PIN on the pad, **Log in**: the table screen."""
    expect = playwright_api.expect
    expect(page.locator("#live-state")).to_have_text("● live", timeout=SHOWS)
    rig.table.badge(badge)
    expect(page.locator("#badge")).to_contain_text(name, timeout=SHOWS)
    tap_pin(page, pin)
    tap(page, "Log in")
    expect(page.locator("#status .dealer-name")).to_have_text(name, timeout=SHOWS)


def requested(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events a request caused (a command names who gave it; a refusal is journaled)."""
    return [e for e in events if e.get("by") is not None or e["type"] == "command.rejected"]


def play_hand_by_taps(
    rig: Rig,
    page: Any,
    *,
    raise_once: bool = False,
    shots: bool = False,
    started: bool = False,
    stop_at: str | None = None,
) -> str:
    """**Start hand** (unless ``started``), then whatever the hand waits for, by taps, until it
    is over (or the panel is for ``stop_at``): Check or Call (one Raise by the quick size Min
    when ``raise_once``), Table at the showdown, Confirm RR-SD-4 and **Push award**. The hand's
    id."""
    if not started:
        until_mode(page, "start")
        tap_and_wait(page, "Start hand")
    hand_id: str | None = None
    raised = not raise_once
    award_shot = shots
    for _ in range(200):
        now = until_mode(page, "betting", "showdown", "award", "held", "start")
        hand = page.locator("#facts").inner_text()
        if hand_id is None and "Hand" in hand:
            hand_id = hand.split("Hand", 1)[1].split()[0]
            assert hand_id.startswith("T1-"), hand
        if now in ("start", stop_at):
            assert hand_id is not None
            return hand_id
        if now == "betting":
            pad = page.locator("#pad")
            if not raised and pad.get_by_role("button", name="Raise", exact=True).is_enabled():
                page.get_by_role("group", name="Quick sizes").get_by_role("button").first.tap()
                tap_and_wait(page, "Raise", pad)
                raised = True
            elif pad.get_by_role("button", name="Check", exact=True).is_enabled():
                tap_and_wait(page, "Check", pad)
            else:
                tap_and_wait(page, "Call", pad)
        elif now == "showdown":
            first = page.locator("#pad button.primary").first
            tap_and_wait(page, first.inner_text(), page.locator("#pad"))
        elif now == "held":
            hold = page.locator("#holds article").first
            playwright_api.expect(hold.locator(".rule-id")).to_have_text("RR-SD-4")
            tap_and_wait(page, "Confirm", hold)
        elif now == "award":
            if award_shot:
                rig.shot(page, "station-award")
                award_shot = False
            tap_and_wait(page, "Push award")
    raise AssertionError("the hand did not end")


# ----------------------------------------------------------------------------- the tests


def test_a_dealer_logs_in_by_badge_and_pin_and_plays_a_whole_hand_by_taps_de_1552(
    rig: Rig,
) -> None:
    page = rig.page()
    expect = playwright_api.expect
    expect(page.get_by_label("Dealer")).to_be_visible()
    expect(page.get_by_label("PIN")).to_be_visible()
    expect(page.get_by_role("button", name="Log in", exact=True)).to_be_visible()
    rig.table.badge(ANN_BADGE)
    expect(page.locator("#badge")).to_contain_text("Ann Example", timeout=SHOWS)
    rig.shot(page, "station-login")
    tap_pin(page, PINS["ann"])
    tap(page, "Log in")
    expect(page.locator("#status .dealer-name")).to_have_text("Ann Example", timeout=SHOWS)
    start = len(rig.events())
    hand_id = play_hand_by_taps(rig, page, raise_once=True, shots=True)
    events = [e for e in rig.events()[start:] if e.get("hand_id") == hand_id]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "hand.started"
    assert "pot.awarded" in kinds  # DE-1552: the dealer pushed the award
    assert kinds[-1] == "hand.completed"
    commanded = [e for e in events if e.get("by") is not None]
    assert {e["type"] for e in commanded} >= {"hand.started", "betting.action", "pot.awarded"}
    assert all(e["by"] == {"person": "ann", "role": "dealer"} for e in commanded)
    raises = [e for e in events if e["type"] == "betting.action" and e["data"]["action"] == "raise"]
    assert raises
    assert raises[0]["by"] == {"person": "ann", "role": "dealer"}
    page.context.close()


def betting_as_ann(rig: Rig) -> Any:
    """A new page on which Ann logged in by her badge and started a hand, now in betting."""
    page = rig.page()
    log_in_by_badge(rig, page, ANN_BADGE, PINS["ann"], "Ann Example")
    until_mode(page, "start")
    tap_and_wait(page, "Start hand")
    until_mode(page, "betting")
    return page


def test_a_seat_count_hold_the_dealer_calls_the_floor_who_rules_on_the_console_and_play_resumes(
    rig: Rig,
) -> None:
    expect = playwright_api.expect
    page = betting_as_ann(rig)
    console = floor_console(rig)

    # surveillance holds the hand: two cards seen at seat 2 (SEAT-COUNT, the floor's ruling)
    held = rig.table_request("hold", rule="SEAT-COUNT", reason="seat 2 shows one card", seat=2)
    assert held["status"] == "ok", held
    hold = page.locator("#holds article").first
    expect(hold.locator(".rule-id")).to_have_text("SEAT-COUNT", timeout=SHOWS)
    expect(hold).to_contain_text("The hand goes on as it is.")  # the ruling, in plain words
    expect(hold).to_contain_text("SEAT-COUNT is the floor's ruling")
    assert hold.get_by_role("button", name="Confirm", exact=True).count() == 0
    assert mode(page) == "held"
    rig.shot(page, "station-hold")
    hold_id = str(hold.get_attribute("data-hold"))

    tap(page, "Call the floor", hold)
    expect(page.locator("#answer")).to_have_text("✓ Call the floor", timeout=SHOWS)
    called = [e for e in rig.events() if e["type"] == "floor.called"]
    assert called[-1]["by"] == {"person": "ann", "role": "dealer"}
    assert called[-1]["data"]["hold"] == hold_id
    assert called[-1]["data"]["reason"] == "a ruling on SEAT-COUNT is needed"
    assert called[-1]["rules"] == ["SEAT-COUNT"]

    # the console shows the call on the hold, and chimes once
    queued = console.locator(f'#holds-open li[data-hold="{hold_id}"]')
    expect(queued.locator(".floor-call")).to_contain_text(
        "Floor call from the dealer: a ruling on SEAT-COUNT is needed", timeout=SHOWS
    )
    expect(console.locator("body")).to_have_attribute("data-chimes", "1", timeout=SHOWS)
    rig.shot(queued, "station-console-floor-call")  # the hold's card on the queue
    queued.get_by_role("button", name="Confirm").click()
    expect(console.locator("#answer")).to_contain_text("accepted confirm", timeout=SHOWS)

    # the station resumes: the hold is gone and the seat to act has its pad again
    until_mode(page, "betting")
    expect(page.locator("#holds article")).to_have_count(0)
    resumed = [e for e in rig.events() if e["type"] == "hand.resume"]
    assert resumed[-1]["by"]["person"] == USER
    play_hand_by_taps(rig, page, started=True)
    console.context.close()
    page.context.close()


def floor_console(rig: Rig) -> Any:
    """The floor's console on its holds queue, logged in; the floor supervisor has touched the
    screen (a browser makes a sound only after a gesture)."""
    expect = playwright_api.expect
    console = rig.browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    console.goto(f"{rig.pit.url}/")
    console.get_by_label("User name").fill(USER)
    console.get_by_label("Password").fill(PASSWORD)
    console.get_by_role("button", name="Log in").click()
    console.wait_for_url(f"{rig.pit.url}/")
    console.goto(f"{rig.pit.url}/holds")
    expect(console.locator("#live-state")).to_have_text("● live", timeout=SHOWS)
    console.locator("h1").click()
    return console


def test_a_disputed_award_is_held_until_the_floor_confirms_on_the_console_floor_call(
    rig: Rig,
) -> None:
    expect = playwright_api.expect
    page = rig.page()
    log_in_by_badge(rig, page, ANN_BADGE, PINS["ann"], "Ann Example")
    hand_id = play_hand_by_taps(rig, page, stop_at="award")
    console = floor_console(rig)
    # a player disputes the award: Call the floor on the award's panel
    tap(page, "Call the floor", page.locator("#pad"))
    expect(page.locator("#answer")).to_have_text("✓ Call the floor", timeout=SHOWS)
    until_mode(page, "held")
    expect(page.locator("#pad")).to_contain_text("The floor is called", timeout=SHOWS)
    assert page.locator("#pad").get_by_role("button", name="Push award").count() == 0
    hold = page.locator("#holds article").first
    expect(hold.locator(".rule-id")).to_have_text("FLOOR-CALL", timeout=SHOWS)
    expect(hold).to_contain_text("the award is disputed")
    assert hold.get_by_role("button", name="Confirm", exact=True).count() == 0
    hold_id = str(hold.get_attribute("data-hold"))
    called = [e for e in rig.events() if e["type"] == "floor.called"][-1]
    assert (called["data"]["hold"], called["data"]["rule"]) == (hold_id, "FLOOR-CALL")
    assert called["by"] == {"person": "ann", "role": "dealer"}
    # the console has the call on the hold; the floor confirms there: the award stands
    queued = console.locator(f'#holds-open li[data-hold="{hold_id}"]')
    expect(queued.locator(".floor-call")).to_contain_text(
        "Floor call from the dealer: the award is disputed", timeout=SHOWS
    )
    queued.get_by_role("button", name="Confirm").click()
    expect(console.locator("#answer")).to_contain_text("accepted confirm", timeout=SHOWS)
    until_mode(page, "award")  # Push award again, and the dealer pushes it
    assert play_hand_by_taps(rig, page, started=True) == hand_id
    events = [e for e in rig.events() if e.get("hand_id") == hand_id]
    kinds = [e["type"] for e in events]
    resumed = kinds.index("hand.resume", kinds.index("floor.called"))
    assert events[resumed]["by"]["person"] == USER
    assert kinds.index("pot.awarded") > resumed  # pushed only once the floor had ruled
    console.context.close()
    page.context.close()


def test_an_illegal_raise_is_refused_with_the_cores_reason_and_nothing_reaches_the_table(
    rig: Rig,
) -> None:
    expect = playwright_api.expect
    page = betting_as_ann(rig)
    pad = page.locator("#pad")
    assert pad.get_attribute("data-min") == "4"
    before = len(rig.events())
    tap(page, "3", page.get_by_role("group", name="Keypad"))
    expect(page.get_by_label("Amount")).to_have_value("3")
    tap(page, "Raise", pad)
    expect(page.locator("#answer")).to_have_text(
        "✕ the minimum raise is to 4, not 3", timeout=SHOWS
    )
    rig.shot(page, "station-refused")
    assert not requested(rig.events()[before:])  # refused at the station: nothing was sent
    assert mode(page) == "betting"
    play_hand_by_taps(rig, page, started=True)
    page.context.close()


def test_with_the_broker_stopped_the_dealer_still_plays_a_hand(rig: Rig) -> None:
    expect = playwright_api.expect
    page = rig.page()
    log_in_by_badge(rig, page, ANN_BADGE, PINS["ann"], "Ann Example")
    rig.broker.stop()
    try:
        expect(page.locator("#status")).to_contain_text("Broker: down", timeout=SHOWS)
        start = len(rig.events())
        hand_id = play_hand_by_taps(rig, page)
        kinds = [e["type"] for e in rig.events()[start:] if e.get("hand_id") == hand_id]
        assert kinds[-1] == "hand.completed"
    finally:
        rig.broker.start()
    expect(page.locator("#status")).to_contain_text("Broker: up", timeout=SHOWS)
    page.context.close()


def test_a_dealer_not_logged_in_can_do_nothing(rig: Rig) -> None:
    page = rig.page()
    playwright_api.expect(page.get_by_role("button", name="Log in", exact=True)).to_be_visible()
    for name in ("Start hand", "Fold", "Check", "Call", "Bet", "Raise", "All in", "Confirm"):
        assert page.get_by_role("button", name=name, exact=True).count() == 0, name
    assert page.get_by_role("button", name="Log out", exact=True).count() == 0
    before = len(rig.events())
    for path, body in (
        ("/api/hand/start", {}),
        ("/api/actions/call", {}),
        ("/api/actions/raise", {"amount": 4}),
        ("/api/award", {}),
        ("/api/floor", {"reason": "nobody"}),
    ):
        answer = page.request.post(rig.url + path, data=json.dumps(body), headers=JSON)
        assert answer.status == 401, path
        assert answer.json() == {"error": "log in first"}
    assert not requested(rig.events()[before:])
    page.context.close()


def test_the_screens_pass_axe_fit_the_screen_and_have_touch_sized_targets(rig: Rig) -> None:
    for viewport in SCREENS:
        page = rig.page(viewport)
        checked(page, viewport, "log-in")
        log_in_by_badge(rig, page, ANN_BADGE, PINS["ann"], "Ann Example")
        until_mode(page, "start")
        checked(page, viewport, "between hands")
        tap_and_wait(page, "Start hand")
        until_mode(page, "betting")
        checked(page, viewport, "betting")
        rig.shot(page, f"station-table-{viewport['width']}x{viewport['height']}")
        play_hand_by_taps(rig, page, started=True)
        page.context.close()


def checked(page: Any, viewport: dict[str, int], what: str) -> None:
    """No WCAG 2.1 A/AA violation, nothing sideways, every button 48 px or more."""
    where = f"{what} at {viewport['width']}x{viewport['height']}"
    found = violations(page)
    assert not found, report(where, found)
    assert scrolls_sideways(page) == 0, where
    small = page.evaluate(
        """(least) => Array.from(document.querySelectorAll("button"))
            .filter((b) => b.offsetParent !== null)
            .map((b) => [b.textContent.trim(), b.getBoundingClientRect()])
            .filter(([, r]) => r.width < least || r.height < least)
            .map(([name, r]) => name + " " + Math.round(r.width) + "x" + Math.round(r.height))""",
        TARGET,
    )
    assert small == [], f"{where}: buttons under {TARGET} px: {small}"


def test_five_wrong_pins_lock_that_badge_for_a_while_not_the_station(rig: Rig) -> None:
    expect = playwright_api.expect
    page = rig.page()
    expect(page.locator("#live-state")).to_have_text("● live", timeout=SHOWS)
    rig.table.badge(ANN_BADGE)
    expect(page.locator("#badge")).to_contain_text("Ann Example", timeout=SHOWS)
    answer = page.locator("#answer")
    for attempt in range(1, 6):
        tap_pin(page, "0000")
        tap(page, "Log in")
        expect(answer).to_contain_text("unknown dealer or wrong PIN", timeout=SHOWS)
        if attempt < 5:
            expect(answer).not_to_contain_text("try again")
        answer.evaluate("el => { el.textContent = '' }")
    # five in a row: each further try waits, doubling (1 s, 2 s, 4 s, …), and a try in the wait
    # is refused unread. Wrong PINs until a wait is far longer than a PIN takes to tap on a busy
    # machine (a wrong PIN past a wait doubles it; one in it is refused), then the right one
    waits: list[int] = []
    longest = 0.0  # the longest a try took, tapped and answered
    for _ in range(60):
        began = time.monotonic()
        tap_pin(page, "0000")
        tap(page, "Log in")
        expect(answer).to_contain_text("try again in", timeout=SHOWS)
        longest = max(longest, time.monotonic() - began)
        waits.append(int(answer.inner_text().rsplit("try again in", 1)[1].split()[0]))
        answer.evaluate("el => { el.textContent = '' }")
        if waits[-1] >= max(3.0, 3 * longest):
            break
    assert waits[-1] >= max(3.0, 3 * longest), (waits, longest)
    tap_pin(page, PINS["ann"])
    tap(page, "Log in")
    expect(answer).to_contain_text("try again in", timeout=SHOWS)
    assert "too many wrong PINs" in answer.inner_text()
    assert page.get_by_role("button", name="Log out", exact=True).count() == 0
    rig.shot(page, "station-locked")
    # not the station: another dealer's badge logs in at once
    other = rig.page()
    log_in_by_badge(rig, other, BOB_BADGE, PINS["bob"], "Bob Example")
    other.context.close()
    page.context.close()


def test_a_seat_sits_the_next_hand_out_by_a_tap_missed_blinds(rig: Rig) -> None:
    """Last of the module: seat 3 sat a hand out, and owes its blinds from then on."""
    expect = playwright_api.expect
    page = rig.page()
    log_in_by_badge(rig, page, BOB_BADGE, PINS["bob"], "Bob Example")
    until_mode(page, "start")
    sitting = page.get_by_role("group", name="Sitting the next hand out")
    seat = sitting.get_by_role("button", name="Seat 3")
    seat.tap()
    expect(seat).to_have_attribute("aria-pressed", "true")
    start = len(rig.events())
    tap_and_wait(page, "Start hand")
    until_mode(page, "betting")
    started = [e for e in rig.events()[start:] if e["type"] == "hand.started"][-1]
    assert sorted(started["data"]["seats"]) == [1, 2]  # in the order of the deal
    assert started["by"] == {"person": "bob", "role": "dealer"}
    expect(page.locator('svg [data-seat="3"]')).to_have_attribute("data-state", "sitting out")
    play_hand_by_taps(rig, page, started=True)
    page.context.close()
