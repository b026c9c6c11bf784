"""MQTT has one home: controller/mqtt/, the project's own MQTT 5 codec and client
(docs/architecture.md). No module of the product imports paho-mqtt or aiomqtt: they are the
tests' independent clients, a second implementation the project's bytes are checked against,
and a product that imported one beside its own client would have two shapes for one thing.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIBRARIES = ("paho", "aiomqtt")


def _library(module: str) -> bool:
    return module.split(".", maxsplit=1)[0] in LIBRARIES


def problems(source: str, file: str) -> list[str]:
    """Every import of the libraries in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source, filename=file)):
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
            )
            found += [
                f"{file}:{node.lineno}: imports {module}" for module in modules if _library(module)
            ]
    return found


def test_no_module_of_the_product_imports_paho_or_aiomqtt() -> None:
    found = []
    for top in ("controller", "drivers", "simulators"):
        for path in sorted((ROOT / top).rglob("*.py")):
            file = path.relative_to(ROOT).as_posix()
            found += problems(path.read_text("utf-8"), file)
    assert not found, "\n".join(found)


def test_the_check_sees_every_import_of_them() -> None:
    source = (
        "import aiomqtt\n"
        "from paho.mqtt import client\n"
        "import paho.mqtt.client as mqtt\n"
        "import json\n"
    )
    assert problems(source, "controller/mqtt/x.py") == [
        "controller/mqtt/x.py:1: imports aiomqtt",
        "controller/mqtt/x.py:2: imports paho.mqtt",
        "controller/mqtt/x.py:3: imports paho.mqtt.client",
    ]
