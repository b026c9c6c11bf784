"""The reports the pit serves, in the order the console lists them (design §3.16)."""

from __future__ import annotations

from typing import Any

from controller.pit.reports import dealers, devices, drop, rulings, shufflers
from controller.pit.reports.registry import Report

REPORTS: tuple[Report[Any], ...] = (
    drop.REPORT,
    rulings.REPORT,
    dealers.REPORT,
    devices.REPORT,
    shufflers.REPORT,
)
BY_NAME: dict[str, Report[Any]] = {report.name: report for report in REPORTS}
