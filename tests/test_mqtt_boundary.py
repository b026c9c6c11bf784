"""MQTT has one home: controller/mqtt/ is the only package that imports paho-mqtt or aiomqtt, and
it uses their public API only (docs/architecture.md).

A library's underscore names change without notice between its releases; code that reaches into
them pins the library's version and breaks on the next one. The client in controller/mqtt/ runs
paho's documented external-loop API, so nothing in the project may name a private module,
attribute or function of either library.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIBRARIES = ("paho", "aiomqtt")
HOME = "controller/mqtt/"


def _library(module: str) -> bool:
    return module.split(".", maxsplit=1)[0] in LIBRARIES


def problems(source: str, file: str) -> list[str]:
    """Imports of the libraries outside their home, and any private name of theirs anywhere."""
    tree = ast.parse(source, filename=file)
    found = []
    library_names: set[str] = set()  # local names bound to the libraries' modules and objects
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
            )
            for module in modules:
                if not _library(module):
                    continue
                if not file.startswith(HOME):
                    found.append(f"{file}:{node.lineno}: imports {module} outside {HOME}")
                if any(part.startswith("_") for part in module.split(".")):
                    found.append(f"{file}:{node.lineno}: imports the private module {module}")
                for alias in node.names:
                    if alias.name.startswith("_"):
                        found.append(f"{file}:{node.lineno}: imports the private {alias.name}")
                    library_names.add((alias.asname or alias.name).split(".")[0])
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and isinstance(node.value, ast.Name)
            and node.value.id in library_names
        ):
            found.append(f"{file}:{node.lineno}: uses the private {node.value.id}.{node.attr}")
    return found


def test_only_controller_mqtt_imports_paho_or_aiomqtt_and_nothing_private_of_them() -> None:
    found = []
    for top in ("controller", "drivers", "simulators"):
        for path in sorted((ROOT / top).rglob("*.py")):
            file = path.relative_to(ROOT).as_posix()
            found += problems(path.read_text("utf-8"), file)
    assert not found, "\n".join(found)


def test_the_check_sees_imports_outside_home_and_private_names() -> None:
    source = (
        "import aiomqtt\n"
        "from paho.mqtt import _packet\n"
        "import paho.mqtt.client as mqtt\n"
        "x = mqtt._socketpair_compat()\n"
    )
    assert problems(source, "controller/shell/x.py") == [
        "controller/shell/x.py:1: imports aiomqtt outside controller/mqtt/",
        "controller/shell/x.py:2: imports paho.mqtt outside controller/mqtt/",
        "controller/shell/x.py:2: imports the private _packet",
        "controller/shell/x.py:3: imports paho.mqtt.client outside controller/mqtt/",
        "controller/shell/x.py:4: uses the private mqtt._socketpair_compat",
    ]
    assert (
        problems("import paho.mqtt.client as paho\npaho.Client()\n", "controller/mqtt/c.py") == []
    )
