"""A plugin driver's options are checked with the model it names, before the daemon starts."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.config import DeviceSection
from drivers.registry import option_problems

PLUGIN = """
from pydantic import BaseModel, ConfigDict, Field

from drivers.contract import Device

class GadgetOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    port: int = Field(ge=1, le=65535)

class Gadget(Device):
    options_model = GadgetOptions

class Unchecked(Device):
    pass

class NotASource:
    @classmethod
    def from_options(cls, device_id, options, context): ...
    async def query(self): ...
"""


@pytest.fixture
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Three drivers of an installed distribution (a dist-info directory on sys.path)."""
    dist = tmp_path / "gadget_driver-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: gadget-driver\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[tablectl.drivers]\ngadget = gadget_plugin:Gadget\n"
        "unchecked = gadget_plugin:Unchecked\nnot-a-source = gadget_plugin:NotASource\n"
    )
    (tmp_path / "gadget_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    sys.modules.pop("gadget_plugin", None)


def _problems(driver: str, **options: object) -> list[str]:
    section = DeviceSection(driver=driver, **options)
    return option_problems("aux", section.driver, section.options)


@pytest.mark.usefixtures("plugins")
def test_the_plugin_model_checks_the_options() -> None:
    assert _problems("gadget", port=7070) == []
    assert _problems("gadget", port=0, colour="red") == [
        "devices.aux.port: Input should be greater than or equal to 1",
        "devices.aux.colour: Extra inputs are not permitted",
    ]
    assert _problems("gadget") == ["devices.aux.port: Field required"]


@pytest.mark.usefixtures("plugins")
def test_without_a_model_options_are_left_to_the_driver() -> None:
    assert _problems("unchecked", anything="goes") == []


@pytest.mark.usefixtures("plugins")
def test_a_class_that_is_not_a_source_is_refused() -> None:
    (problem,) = _problems("not-a-source")
    assert problem.startswith("devices.aux.driver: driver 'not-a-source' is registered but is not")
    (unknown,) = _problems("no-such-driver")
    assert unknown.startswith("devices.aux.driver: no driver named 'no-such-driver'")
