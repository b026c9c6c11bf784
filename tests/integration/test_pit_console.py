"""The pit's web console in a real browser (Debian's chromium driven by Playwright) against a
real mosquitto, real table daemons with their simulated devices and the real pit process.

One rig and one browser for the whole module (they are the costly part): the tests share them
and each raises what it looks at. Screenshots of the floor map, the holds queue and a table page
go to ``$TABLECTL_ARTIFACTS`` (default: the rig's directory).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import shutil
import uuid
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from controller.mqtt import Client
from controller.shell.cli import keyring_entry
from controller.shell.client import DealerClient
from controller.shell.journal import Journal
from controller.signing import Signer, new_key, save_private_key
from tests.integration.broker import Broker, mosquitto_available
from tests.integration.conftest import DaemonProcess
from tests.integration.pit import PASSWORD, USER, PitProcess

CHROMIUM = Path("/usr/bin/chromium")
DEALER, DEALER_PASSWORD = "dealer-dan", "dealer dan's long password"
#: How long the DOM may take to show what the tables did: generous, for a machine whose every core
#: is busy (the latency is measured in benchmarks/pit.py, not asserted here).
SHOWS = 20_000

playwright_api = pytest.importorskip("playwright.sync_api")

pytestmark = [
    pytest.mark.broker,
    # the module's tests run one after the other on one worker (they share the rig:
    # ONE_WORKER_MODULES in tests/conftest.py): about 20 s in all, started early so that the run
    # does not wait for them at its end
    pytest.mark.slow,
    pytest.mark.timeout(300),
    pytest.mark.skipif(not CHROMIUM.exists(), reason="chromium is not installed"),
]


@dataclass
class Rig:
    """The module's broker, table T1, pit, browser, and the pit's console key."""

    directory: Path
    broker: Broker
    table: DaemonProcess
    pit: PitProcess
    browser: Any
    console_key: Signer
    artifacts: Path

    def run(self, work: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
        """Run MQTT work on a thread of its own (Playwright's sync API owns this one's loop)."""
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, work()).result(timeout=60)

    def send(self, command: str, fields: dict[str, Any], sign: Any = None) -> dict[str, Any]:
        """One request to T1, signed by the role that gives it (or by ``sign``); sent again,
        with the same transaction, until answered (the table answers a transaction once)."""
        transaction = uuid.uuid4().hex

        async def work() -> dict[str, Any]:
            async with Client("127.0.0.1", self.broker.port) as client:
                dealer = DealerClient(client, self.table.topics)
                await dealer.start()
                try:
                    async with asyncio.timeout(60):
                        while True:
                            with contextlib.suppress(TimeoutError):
                                return await dealer.send(
                                    command,
                                    fields,
                                    transaction=transaction,
                                    timeout=5.0,
                                    sign=sign or self.table.sign,
                                )
                finally:
                    await dealer.stop()

        answer: dict[str, Any] = self.run(work)
        return answer

    def raise_hold(self) -> str:
        """A hand at T1 (one is started when none runs) held by surveillance: the hold's id."""
        answer = self.send("start_hand", {})
        assert answer["status"] == "ok" or "in progress" in str(answer.get("error")), answer
        held = self.send("hold", {"rule": "SEAT-COUNT", "reason": "two cards seen at seat 2"})
        assert held["status"] == "ok", held
        holds = [e for e in journal(self.table) if e["type"] == "hand.hold"]
        return str(holds[-1]["data"]["hold"])

    def login(self, name: str, password: str, pit: PitProcess | None = None) -> Any:
        """A new browser context (its own cookies) logged in as ``name``, on the floor map (of
        ``pit``, by default the rig's)."""
        url = (pit or self.pit).url
        context = self.browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.goto(f"{url}/")
        assert page.url.endswith("/login?next=/")
        page.get_by_label("User name").fill(name)
        page.get_by_label("Password").fill(password)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(f"{url}/")
        return page

    def shot(self, page: Any, name: str) -> None:
        page.screenshot(path=str(self.artifacts / f"{name}.png"), full_page=True)


def journal(daemon: DaemonProcess) -> list[dict[str, Any]]:
    """Every event of the table's journal, as envelopes."""
    opened = Journal.open_existing(daemon.journal)
    try:
        return [json.loads(row.body) for row in opened.events()]
    finally:
        opened.close()


def console_keyring(daemon: DaemonProcess, directory: Path) -> Signer:
    """Let the pit's key act for the console's people at ``daemon``'s table (keyring
    ``acts_for`` and ``[persons]``); the key's signer."""
    private, public = new_key()
    path = directory / "pit-console.key"
    save_private_key(private, path)
    entry = {
        "person": "pit web console",
        "roles": ["pit", "floor", "dealer"],
        "public_key": public,
        "acts_for": ["*"],
    }
    people = f'\n[persons."{USER}"]\nroles = ["floor"]\n[persons."{DEALER}"]\nroles = ["dealer"]\n'
    with daemon.keys.keyring.open("a") as keyring:
        keyring.write("\n" + keyring_entry("pit-console", entry) + people)
    return Signer(private, "pit-console", "")


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    if not mosquitto_available():
        pytest.skip("mosquitto is not installed")
    directory = tmp_path_factory.mktemp("console")
    (directory / "broker").mkdir()
    broker = Broker(directory / "broker")
    broker.start()
    table = DaemonProcess(directory / "T1", broker, table="T1")
    console_key = console_keyring(table, directory)
    pit = PitProcess(directory / "pit", broker, key=directory / "pit-console.key", secure=True)
    artifacts = Path(os.environ.get("TABLECTL_ARTIFACTS", directory / "artifacts"))
    artifacts.mkdir(parents=True, exist_ok=True)
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            pit.add_user()
            pit.add_user(DEALER, ("dealer",), DEALER_PASSWORD)
            pit.start()
            table.start()
            yield Rig(directory, broker, table, pit, browser, console_key, artifacts)
        finally:
            browser.close()
            table.close()
            pit.close()
            broker.stop()
    shutil.rmtree(directory / "broker", ignore_errors=True)


def test_a_floor_supervisor_sees_a_hold_live_confirms_it_and_the_table_resumes_in_their_name(
    rig: Rig,
) -> None:
    expect = playwright_api.expect
    page = rig.login(USER, PASSWORD)
    expect(page.locator("#tile-T1")).to_have_attribute("data-state", "online", timeout=SHOWS)
    page.get_by_role("navigation").get_by_role("link", name="Holds").click()
    expect(page.locator("#live-state")).to_have_text("● live", timeout=SHOWS)
    page.evaluate("window.sameDocument = true")

    hold = rig.raise_hold()
    shown = page.locator(f'#holds-open li[data-hold="{hold}"]')
    expect(shown).to_be_visible(timeout=SHOWS)  # no reload: the stream brought it
    assert page.evaluate("window.sameDocument") is True
    expect(shown.locator(".rule-id")).to_have_text("SEAT-COUNT")
    expect(shown.locator(".rule-text")).to_contain_text("a seat holding other than two cards")
    expect(shown.locator(".ruling")).to_have_text("continue")
    rig.shot(page, "holds")

    shown.get_by_role("button", name="Confirm").click()
    expect(page.locator("#answer")).to_contain_text("accepted confirm", timeout=SHOWS)
    resolved = page.locator(f'#holds-resolved li[data-hold="{hold}"]')
    expect(resolved.locator(".person")).to_have_text(USER, timeout=SHOWS)
    expect(shown).to_have_count(0)

    resumed = [
        e for e in journal(rig.table) if e["type"] == "hand.resume" and e["data"]["hold"] == hold
    ]
    assert len(resumed) == 1
    assert resumed[0]["by"] == {"person": USER, "role": "floor"}
    assert resumed[0]["data"]["by"] == "confirm"

    page.goto(f"{rig.pit.url}/tables/T1")
    expect(page.locator("#table-events")).to_contain_text("hand.resume", timeout=SHOWS)
    expect(page.locator("#table-events")).to_contain_text(f"by {USER} (floor)")
    expect(page.locator("#live-state")).to_have_text("● live", timeout=SHOWS)
    rig.shot(page, "table")
    page.context.close()


def test_a_dealer_sees_no_cards_and_no_ruling_and_a_forged_ruling_is_refused(rig: Rig) -> None:
    expect = playwright_api.expect
    hold = rig.raise_hold()
    page = rig.login(DEALER, DEALER_PASSWORD)
    page.goto(f"{rig.pit.url}/holds")
    shown = page.locator(f'#holds-open li[data-hold="{hold}"]')
    expect(shown).to_be_visible(timeout=SHOWS)
    expect(shown.get_by_role("button")).to_have_count(0)  # no confirm, reject nor override
    page.goto(f"{rig.pit.url}/tables/T1")
    expect(page.locator("#table-state svg.table-drawing")).to_be_visible()
    expect(page.locator(".hole-cards")).to_have_count(0)
    expect(page.locator("#table-state .seat g.card[data-card]")).to_have_count(0)  # face down
    assert "cards=[" not in page.locator("#table-events").inner_text()

    # the pit refuses a ruling from a dealer's session, CSRF token or not
    csrf = page.locator("body").get_attribute("data-csrf")
    assert csrf
    api = page.context.request
    ruling = f"{rig.pit.url}/api/holds/{hold}/confirm"
    by_dealer = api.post(ruling, form={"csrf": csrf, "table": "T1"})
    assert by_dealer.status == 403
    assert "floor" in by_dealer.json()["detail"]
    page.context.close()

    # a floor session with a forged CSRF token is refused too; the hold stays open
    floor = rig.login(USER, PASSWORD)
    forged = floor.context.request.post(ruling, form={"csrf": "f" * 40, "table": "T1"})
    assert forged.status == 403
    assert "CSRF" in forged.json()["detail"]
    floor.goto(f"{rig.pit.url}/tables/T1")
    # surveillance: the hole cards face up on the drawing
    expect(floor.locator("#table-state .seat g.card[data-card]").first).to_be_visible(timeout=SHOWS)
    floor.context.close()

    # and the table itself refuses the pit's key acting for the dealer
    key = rig.console_key
    signer = Signer(key.private, key.key_id, "T1", on_behalf_of=DEALER)
    refused = rig.send("confirm", {"hold": hold}, sign=signer.sign)
    assert refused["status"] == "error"
    assert "a dealer may not confirm" in refused["error"]
    assert not [
        e for e in journal(rig.table) if e["type"] == "hand.resume" and e["data"]["hold"] == hold
    ]
    refusals = [
        e["data"]["reason"]
        for e in journal(rig.table)
        if e["type"] == "command.rejected" and e["data"]["command"] == "confirm"
    ]
    assert any("a dealer may not confirm" in reason for reason in refusals), refusals


def test_a_browser_that_is_not_logged_in_gets_nothing(rig: Rig) -> None:
    context = rig.browser.new_context()
    page = context.new_page()
    for path in ("/", "/holds", "/tables/T1", "/hands", "/alarms"):
        page.goto(f"{rig.pit.url}{path}")
        assert page.url == f"{rig.pit.url}/login?next={path}"
    api = context.request
    for path in ("/api/live/floor", "/api/live/tables/T1", "/api/tables", "/api/holds"):
        assert api.get(f"{rig.pit.url}{path}").status == 401, path
    assert api.post(f"{rig.pit.url}/api/holds/x/confirm").status == 401
    context.close()


def test_the_floor_map_shows_a_killed_table_offline(rig: Rig) -> None:
    expect = playwright_api.expect
    other = DaemonProcess(rig.directory / "T2", rig.broker, table="T2")
    try:
        other.start()
        page = rig.login(USER, PASSWORD)
        tile = page.locator("#tile-T2")
        expect(tile).to_have_attribute("data-state", "online", timeout=SHOWS)
        other.kill()  # SIGKILL: the broker publishes its Last Will after the keepalive
        expect(tile).to_have_attribute("data-state", "offline", timeout=SHOWS)
        expect(tile.locator(".status")).to_contain_text("Offline")
        expect(page.locator("#live-state")).to_have_text("● live")
        rig.shot(page, "floor-map")
        page.context.close()
    finally:
        other.close()


def test_a_hold_the_other_pit_ingested_shows_live_on_this_ones_pages(rig: Rig) -> None:
    """Two pits on one store (one SQLite file on one host): pit-2 reads no table (its broker
    prefix is nobody's), so what its pages show of T1 the rig's pit ingested, and pit-2's pages
    are woken by that pit's announcement (its safety net's re-read is an hour away)."""
    expect = playwright_api.expect
    viewer = PitProcess(
        rig.directory / "pit-2",
        rig.broker,
        pit_id="pit-2",
        store_url=rig.pit.store_url,
        prefix="nobody",
        live_reread=3600,
    )
    for left in rig.pit.json("/api/holds"):  # a hold another test left open: resolved
        assert rig.send("confirm", {"hold": left["hold"]})["status"] == "ok"
    try:
        viewer.start()
        page = rig.login(USER, PASSWORD, viewer)
        expect(page.locator("#tile-T1")).to_have_attribute("data-state", "online", timeout=SHOWS)
        holds = page.context.new_page()  # the same login, another tab
        holds.goto(f"{viewer.url}/holds")
        for shown in (page, holds):
            expect(shown.locator("#live-state")).to_have_text("● live", timeout=SHOWS)
            shown.evaluate("window.sameDocument = true")
        badges = page.locator("#tile-T1 .hold-badge")
        before = badges.count()

        hold = rig.raise_hold()
        queued = holds.locator(f'#holds-open li[data-hold="{hold}"]')
        expect(queued).to_be_visible(timeout=SHOWS)  # no reload: pit-2's stream brought it
        expect(badges).to_have_count(before + 1, timeout=SHOWS)  # the floor map's tile too
        # resolved at the table (the rig's pit ingests it): gone from pit-2's queue and tile
        assert rig.send("confirm", {"hold": hold})["status"] == "ok"
        expect(queued).to_have_count(0, timeout=SHOWS)
        expect(holds.locator(f'#holds-resolved li[data-hold="{hold}"]')).to_be_visible()
        expect(badges).to_have_count(before, timeout=SHOWS)
        for shown in (page, holds):
            assert shown.evaluate("window.sameDocument") is True
        rig.shot(holds, "holds-other-pit")
        page.context.close()
    finally:
        viewer.close()
