"""Scenario files (tablectl.scenario/1): model, parser and runners."""
