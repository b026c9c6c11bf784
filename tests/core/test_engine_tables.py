"""The engine's tables: every input has its handler and every ruling its function."""

from __future__ import annotations

from controller.table import engine, inputs
from controller.table.state import Ruling


def test_every_input_type_has_a_handler() -> None:
    subclasses = [
        cls
        for cls in (*inputs.DeviceInput.__subclasses__(), *inputs.DealerInput.__subclasses__())
        # the shell's own requests never reach the core (controller/shell/maintenance.py); they
        # are subclasses only once the shell was imported in this process
        if not cls.__module__.startswith("controller.shell.")
    ]
    every = {getattr(inputs, cls.__name__) for cls in subclasses}  # the module's, not a draft
    assert len(every) > 30
    assert every == set(engine._HANDLERS)


def test_every_ruling_is_registered_and_what_rejecting_settles_is_a_ruling_too() -> None:
    assert set(engine._RULINGS.decide) == set(Ruling)
    assert set(engine._RULINGS.on_reject) <= set(Ruling)
    assert engine._RULINGS.after, "cards held back during a ruling are released after it"
