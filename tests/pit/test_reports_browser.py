"""The report pages in a real browser (Debian's chromium driven by Playwright, never a downloaded
one) on the real app and the small floor of tests/pit/reports_floor.py: each page draws its
charts with a bar or a point per value of the seeded data, within the console's CSP; axe-core
finds no WCAG 2.1 A/AA violation; printed, the charts stay and the navigation goes; the period
form works without script."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from controller.pit.store import Store
from tests.pit.reports_floor import seed
from tests.pit.test_reports_api import USERS, reports_pit
from tests.pit.web import PASSWORD, new_store

CHROMIUM = Path("/usr/bin/chromium")
SPAN = "since=2026-01-05&until=2026-01-06"
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]

pytest.importorskip("playwright.async_api")

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(not CHROMIUM.exists(), reason="chromium is not installed"),
]

#: Each page's charts and the marks each draws for the seeded floor (day by day, two days).
EXPECTED = {
    "drop": {
        # rake, jackpot and time for each of the two days
        "#figure-drop-floor rect.bar": 6,
        # a line per table (three), a point per day
        "svg[data-chart^='drop-table-']": 3,
        "svg[data-chart^='drop-table-'] circle.point": 6,
    },
    "rulings": {
        # four rules, four series each (holds, confirmed, rejected, overridden)
        "#figure-rulings-rules rect.bar": 16,
        # T1's reader seat:3, T2's shuffler, T3's reader seat:5
        "#figure-rulings-devices rect.bar": 3,
        # the four rules settled (BOXED by its hand's end), average and longest
        "#figure-rulings-time rect.bar": 8,
    },
    "dealers": {
        # Dana and Eli (the hands of nobody named are not a dealer's), and the floor's line
        "#figure-dealers-rate rect.bar": 2,
        "#figure-dealers-rate g.reference": 1,
    },
    "devices": {
        # faults, jams, stale and lost for each of the two days
        "#figure-devices-events rect.bar": 8,
        # T1, T2, T3
        "#figure-devices-uptime rect.bar": 3,
    },
}


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[str]:
    url = new_store(tmp_path, USERS)
    store = Store(url)
    seed(store)
    store.close()
    async with reports_pit(url) as client:
        yield str(client.base_url).rstrip("/")


async def axe_violations(page: Any) -> list[dict[str, Any]]:
    """axe-core's WCAG 2.1 A/AA violations (the copy ``axe-playwright-python`` ships)."""
    from tests.pit.test_console_a11y import axe_source

    if not await page.evaluate("() => typeof window.axe === 'object'"):
        await page.evaluate(axe_source())
    results: dict[str, Any] = await page.evaluate(
        "(tags) => axe.run(document, {runOnly: {type: 'tag', values: tags},"
        " resultTypes: ['violations']})",
        WCAG_TAGS,
    )
    assert len(results["passes"]) > 10  # the rules did run
    found: list[dict[str, Any]] = results["violations"]
    return found


async def test_each_report_page_draws_its_charts_for_the_seeded_floor(served: str) -> None:
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox"]
        )
        try:
            page = await browser.new_page()
            refused: list[str] = []
            page.on("console", lambda m: refused.append(m.text) if "Security" in m.text else None)
            await page.goto(f"{served}/login")
            await page.get_by_label("User name").fill("ann")
            await page.get_by_label("Password").fill(PASSWORD)
            await page.get_by_role("button", name="Log in").click()
            await page.wait_for_url(f"{served}/")
            await page.get_by_role("link", name="Reports").click()
            await page.wait_for_url(f"{served}/reports")
            for name, marks in EXPECTED.items():
                await page.goto(f"{served}/reports/{name}?{SPAN}")
                for selector, count in marks.items():
                    assert await page.locator(selector).count() == count, (name, selector)
                first = page.locator("svg.chart").first
                box = await first.bounding_box()
                assert box is not None
                assert box["width"] > 300  # drawn, and to the page's width
                assert await page.locator("figure.report-chart details table").count() == (
                    await page.locator("svg.chart").count()
                )
                found = await axe_violations(page)
                assert not found, [(v["id"], v["nodes"][0]["html"][:120]) for v in found]
                await page.emulate_media(media="print")
                assert not await page.locator("header.top").is_visible()
                assert not await page.locator("form.report-form").is_visible()
                assert await first.is_visible()
                await page.emulate_media(media="screen")
            assert refused == []  # nothing the Content-Security-Policy had to refuse
        finally:
            await browser.close()


async def test_the_period_form_works_without_script(served: str) -> None:
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox"]
        )
        try:
            context = await browser.new_context(java_script_enabled=False)
            page = await context.new_page()
            await page.goto(f"{served}/login")
            await page.get_by_label("User name").fill("ann")
            await page.get_by_label("Password").fill(PASSWORD)
            await page.get_by_role("button", name="Log in").click()
            await page.wait_for_url(f"{served}/")
            await page.goto(f"{served}/reports/drop")
            await page.get_by_role("textbox", name="From", exact=True).fill("2026-01-05")
            await page.get_by_role("textbox", name="to", exact=True).fill("2026-01-06")
            await page.get_by_role("textbox", name="Tables", exact=True).fill("T2")
            await page.get_by_label("per", exact=True).select_option("shift")
            await page.get_by_role("button", name="Show").click()
            await page.wait_for_url("**/reports/drop?since=2026-01-05*")
            assert "group=shift" in page.url
            # T2 alone: one line, a point per shift of the two days (and the night before)
            assert await page.locator("svg[data-chart^='drop-table-']").count() == 1
            assert await page.locator("svg[data-chart^='drop-table-'] circle.point").count() == 7
        finally:
            await browser.close()
