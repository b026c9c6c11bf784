"""What ships works where it is installed: the sdist and wheel built, the wheel installed into a
fresh venv outside the checkout, and its commands run from there; then the example driver plugin
installed beside it, found by its entry point, checked by ``tablectl config check``, tested, and
run by the installed daemon against the pit's broker.

The tests share one venv (building and installing take most of the time) and run in file order
on one worker (``ONE_WORKER_MODULES`` in tests/conftest.py): tablectl alone first, then with the
plugin.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from controller import __version__
from controller.shell.topics import Topics
from tests.integration.broker import Broker, mosquitto_available
from tests.integration.conftest import Collector
from tests.packaging.venv import EXAMPLE, REPO, Dists, Venv

# the first test of a worker builds the wheel and a venv: minutes when every core is busy
pytestmark = [
    pytest.mark.slow(weight=2),
    pytest.mark.timeout(600),
]

SCENARIO = "normal-hand-4-seats.toml"
PY = f"python{sys.version_info[0]}.{sys.version_info[1]}"


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory, dists: Dists) -> Iterator[Venv]:
    """A fresh venv with the wheel (and its dependencies) installed."""
    root = tmp_path_factory.mktemp("installed")
    env = Venv.create(root / "venv", root / "work")
    env.pip_install(dists.wheel)
    yield env
    # some 80 MB, and pytest keeps the last three runs' directories: the working directory
    # (configs, logs) stays for a look after a failure, the venv goes
    shutil.rmtree(env.path, ignore_errors=True)


@pytest.fixture(scope="module")
def plugin(venv: Venv, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """The same venv with the example plugin (and what its tests need) installed too."""
    source = tmp_path_factory.mktemp("example") / EXAMPLE.name
    # a copy: pip and pytest write caches and build files beside what they are given
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns(".*", "__pycache__"))
    venv.pip_install(f"{source}[test]")
    return venv


# --------------------------------------------------------------------------- the distributions


def _repo_files(directory: str, pattern: str = "*") -> set[str]:
    base = REPO / directory
    return {
        str(p.relative_to(base))
        for p in base.rglob(pattern)
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_the_wheel_holds_the_packages_and_every_data_file(dists: Dists) -> None:
    with zipfile.ZipFile(dists.wheel) as wheel:
        names = wheel.namelist()
        entry_points = wheel.read(f"tablectl-{__version__}.dist-info/entry_points.txt").decode()
    tops = {name.split("/")[0] for name in names}
    assert tops == {
        "controller",
        "drivers",
        "simulators",
        f"tablectl-{__version__}.dist-info",
        f"tablectl-{__version__}.data",
    }
    data = f"tablectl-{__version__}.data/data/share/tablectl/"

    def shipped(directory: str) -> set[str]:
        prefix = data + directory + "/"
        return {n.removeprefix(prefix) for n in names if n.startswith(prefix)}

    assert shipped("config") == _repo_files("config")
    assert shipped("systemd") == _repo_files("systemd")
    assert shipped("docs") == _repo_files("docs")  # where the units' Documentation= points
    assert shipped("scenarios") == _repo_files("tests/scenarios", "*.toml")
    assert {"controller/py.typed", "drivers/py.typed", "simulators/py.typed"} <= set(names)
    # the pit console's templates, script, style and rule texts (docs/rules.md) go with its code
    console = "controller/pit/console/"
    assert {f"{console}{n}" for n in ("templates/floor.html", "static/console.js", "rules.md")} <= (
        set(names)
    )
    assert "[console_scripts]\ntablectl = controller.cli:main" in entry_points


def test_the_sdist_holds_the_tests_docs_and_the_example(dists: Dists) -> None:
    with tarfile.open(dists.sdist) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    assert {"pyproject.toml", "README.md", "Makefile", f"tests/scenarios/{SCENARIO}"} <= names
    assert "examples/tablectl-example-driver/pyproject.toml" in names
    assert "docs/drivers.md" in names
    hidden = {name for name in names if any(p.startswith(".") for p in name.split("/"))}
    assert hidden == {".gitignore"}  # no caches, no venv, no .hypothesis


# --------------------------------------------------------------------------- tablectl alone


def test_everything_comes_from_the_venv(venv: Venv) -> None:
    code = (
        "import controller, drivers, simulators, json\n"
        "from controller.paths import config_dir\n"
        "from drivers.paths import config_dir as drivers_config\n"
        "print(json.dumps([m.__file__ for m in (controller, drivers, simulators)]"
        " + [str(config_dir()), str(drivers_config())]))\n"
    )
    *modules, config, drivers_config = json.loads(venv.run("python", "-c", code).stdout)
    site = venv.path / "lib" / PY / "site-packages"
    assert all(Path(m).parent.parent == site for m in modules), modules
    assert Path(config) == Path(drivers_config) == venv.share / "config"


def test_tablectl_help_and_version(venv: Venv) -> None:
    done = venv.run("tablectl", "--help")
    assert done.stdout.startswith("usage: tablectl")
    for verb in ("run", "config", "scenario", "sim", "demo", "deck", "journal", "tail", "dealer"):
        assert f"    {verb} " in done.stdout, verb
    assert venv.run("tablectl", "--version").stdout.strip() == f"tablectl {__version__}"


def test_the_installed_build_is_the_wheels_and_every_file_is_as_shipped(
    venv: Venv, dists: Dists
) -> None:
    shipped = json.loads(venv.run("tablectl", "version", "--wheel", dists.wheel, "--json").stdout)
    installed = json.loads(venv.run("tablectl", "version", "--json").stdout)
    assert installed == shipped  # the wheel's files, wherever it was installed
    assert installed["version"] == __version__
    assert len(installed["record_sha256"]) == 64
    assert installed["editable"] is False
    done = venv.run("tablectl", "version", "--verify")
    assert done.stdout.splitlines()[-1].endswith("files checked: every file as shipped")


def test_verify_names_each_file_changed_missing_or_added_and_fails(venv: Venv) -> None:
    site = venv.path / "lib" / PY / "site-packages"
    changed, missing = site / "controller" / "cards.py", site / "drivers" / "jsonl.py"
    added = site / "simulators" / "dropped_in.py"
    original, kept = changed.read_bytes(), missing.read_bytes()
    try:
        changed.write_bytes(original + b"\n# one more line\n")
        missing.unlink()
        added.write_text("print('not shipped')\n")
        done = venv.run("tablectl", "version", "--verify", check=False)
        assert done.returncode == 1, done.stdout + done.stderr
        lines = done.stdout.splitlines()
        assert "changed: controller/cards.py" in lines
        assert "missing: drivers/jsonl.py" in lines
        assert f"added: {added.resolve()}" in lines
        assert lines[-1].endswith("files checked: NOT as shipped")
        # what the daemon's birth says: three files not as shipped (the pit raises an alarm)
        birth = venv.run("python", "-c", _BIRTH_BUILD).stdout
        assert json.loads(birth)["modified"] == 3
        found = json.loads(
            venv.run("tablectl", "version", "--verify", "--json", check=False).stdout
        )
        assert (found["changed"], found["missing"]) == (
            ["controller/cards.py"],
            ["drivers/jsonl.py"],
        )
    finally:
        changed.write_bytes(original)
        missing.write_bytes(kept)
        added.unlink(missing_ok=True)
    assert venv.run("tablectl", "version", "--verify").returncode == 0


_BIRTH_BUILD = (
    "import json\n"
    "from controller.build_identity import birth_build\n"
    "print(json.dumps(birth_build()))\n"
)


def test_a_development_checkout_has_nothing_to_verify_against() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "controller.cli", "version", "--verify"],
        check=False,
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert done.returncode == 3
    assert "nothing to verify against" in done.stderr


def test_config_check_of_the_shipped_example(venv: Venv) -> None:
    example = venv.share / "config" / "table.example.toml"
    # the example's journal and shuffler memory are under /var/lib/tablectl: here, where this
    # user can make them
    state = venv.workdir / "state"
    env = venv.env(
        TABLECTL_JOURNAL__PATH=str(state / "journal.sqlite"),
        TABLECTL_DEVICES__SHUFFLER__STATE_FILE=str(state / "shuffler.json"),
    )
    done = venv.run("tablectl", "config", "check", "--config", example, env=env)
    assert done.stdout.strip() == f"{example}: ok (table T7, devices: shuffler (virtual))"
    broken = venv.workdir / "broken.toml"
    broken.write_text(example.read_text().replace('deck = "house-a"', 'deck = "house-z"'))
    refused = venv.run("tablectl", "config", "check", "--config", broken, check=False, env=env)
    assert refused.returncode == 1
    assert "table.deck:" in refused.stderr
    assert "house-z" in refused.stderr


#: Where docs/operations.md installs the venv, and the config.
INSTALLED_VENV = "/opt/tablectl/venv"
ETC = "/etc/tablectl"


def test_the_units_documentation_is_where_the_wheel_installs_it(venv: Venv) -> None:
    units = sorted((venv.share / "systemd").glob("*.service"))
    assert units
    for unit in units:
        pages = [
            line.removeprefix("Documentation=")
            for line in unit.read_text().splitlines()
            if line.startswith("Documentation=")
        ]
        assert pages, f"{unit.name} names no documentation"
        for page in pages:
            assert page.startswith(f"file://{INSTALLED_VENV}/"), page
            installed = venv.path / page.removeprefix(f"file://{INSTALLED_VENV}/")
            assert installed.is_file(), f"{unit.name}: {page} is not installed"


def test_the_install_steps_of_the_guide_give_a_config_that_checks(venv: Venv) -> None:
    """docs/operations.md, "Install": what it copies into /etc/tablectl (the example config,
    its keyring) is run, in a directory of the test's, and the result passes config check."""
    guide = (REPO / "docs" / "operations.md").read_text()
    block = guide.split("## Install", 1)[1].split("```", 2)[1]
    steps = [
        line.split("#", 1)[0].strip()
        for line in block.splitlines()
        if line.startswith(("install -d", "cp ")) and f" {ETC}" in line
    ]
    assert any("keyring" in step for step in steps), steps  # the config's keyring goes too
    etc = venv.workdir / "etc-tablectl"
    script = "\n".join(
        step.replace(INSTALLED_VENV, str(venv.path)).replace(ETC, str(etc)) for step in steps
    )
    subprocess.run(["bash", "-euc", script], check=True, timeout=60)
    state = venv.workdir / "installed-state"
    env = venv.env(
        TABLECTL_JOURNAL__PATH=str(state / "journal.sqlite"),
        TABLECTL_DEVICES__SHUFFLER__STATE_FILE=str(state / "shuffler.json"),
    )
    config = etc / "table.toml"
    done = venv.run("tablectl", "config", "check", "--config", config, env=env)
    assert done.stdout.strip().startswith(f"{config}: ok (table T7")


def test_a_shipped_scenario_passes(venv: Venv) -> None:
    scenario = venv.share / "scenarios" / SCENARIO
    done = venv.run("tablectl", "scenario", "run", "--core", "--json", scenario)
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.stderr.strip() == f"PASS {scenario} ({len(events)} events)"
    assert events[0]["type"] == "hand.started"
    assert events[-1]["type"] == "hand.completed"


def test_the_shuffler_simulator_finds_its_firmware(venv: Venv) -> None:
    link = venv.workdir / "shuffler.tty"
    sim = subprocess.Popen(
        [venv.bin("tablectl"), "sim", "shuffler", "--link", str(link), "--seed", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=venv.workdir,
        env=venv.env(),
    )
    try:
        assert sim.stdout is not None
        assert sim.stdout.readline().startswith("/dev/pts/"), sim.stderr
        assert link.is_symlink()
    finally:
        sim.terminate()
        sim.communicate(timeout=20)


def test_data_files_are_found_under_another_prefix(venv: Venv, dists: Dists) -> None:
    # pip --prefix (like --user, or a system pip writing to /usr/local) puts the data files
    # somewhere other than sys.prefix; the distribution's RECORD still says where. (This copy
    # comes first on the path; the venv's own copy and its data must not be taken instead.)
    prefix = venv.workdir / "elsewhere"
    venv.pip_install("--no-deps", "--ignore-installed", "--prefix", prefix, dists.wheel)
    site = prefix / "lib" / PY / "site-packages"
    code = "import controller.paths as p; print(p.__file__); print(p.config_dir())"
    elsewhere = venv.env(PYTHONPATH=str(site))
    module, config = venv.run("python", "-c", code, env=elsewhere).stdout.split()
    assert Path(module).is_relative_to(site)
    assert Path(config) == (prefix / "share" / "tablectl" / "config").resolve()
    scenario = prefix / "share" / "tablectl" / "scenarios" / SCENARIO
    check = venv.run(
        "python", "-m", "controller.cli", "scenario", "run", "--core", "-q", scenario,
        env=elsewhere,
    )  # fmt: skip
    assert check.stdout.startswith("PASS")


# --------------------------------------------------------------------------- with the plugin

PLUGIN_TABLE = (
    '[table]\nid = "{table}"\nstacks = {{ 1 = 100, 2 = 100 }}\nbutton = 1\nblinds = [1, 2]\n'
    'dispense = "dealer"\n'  # a table of readers: no shuffler to command
    "[security]\nrequire_signed = false\n"
    '[devices.reader]\ndriver = "tag-bridge"\nhost = "127.0.0.1"\nport = {port}\n'
    'antennas = {{ A0 = "seat:1", A1 = "board" }}\n'
)


def test_the_plugin_is_found_by_its_entry_point(plugin: Venv) -> None:
    code = (
        "from drivers.registry import available_drivers, load_driver\n"
        "print(available_drivers()['tag-bridge']); print(load_driver('tag-bridge').__module__)"
    )
    assert plugin.run("python", "-c", code).stdout.split() == [
        "tablectl_example_driver.driver:TagBridge",
        "tablectl_example_driver.driver",
    ]


def test_config_check_accepts_the_plugin_and_checks_its_options(plugin: Venv) -> None:
    good, bad = plugin.workdir / "plugin.toml", plugin.workdir / "plugin-bad.toml"
    text = PLUGIN_TABLE.format(table="T1", port=7070)
    text += f'[journal]\npath = "{plugin.workdir / "check.sqlite"}"\n'
    good.write_text(text)
    bad.write_text(text.replace("A1 =", "A1 = 3, A2 ="))
    done = plugin.run("tablectl", "config", "check", "--config", good)
    assert done.stdout.strip() == f"{good}: ok (table T1, devices: reader (tag-bridge))"
    refused = plugin.run("tablectl", "config", "check", "--config", bad, check=False)
    assert refused.returncode == 1
    assert "devices.reader.antennas.A1: Input should be a valid string" in refused.stderr


def test_the_plugins_own_tests_pass_where_it_is_installed(plugin: Venv) -> None:
    # its tests and pytest settings, away from its sources: they import the installed package
    suite = plugin.workdir / "example-tests"
    shutil.copytree(EXAMPLE / "tests", suite / "tests", ignore=shutil.ignore_patterns("__pyc*"))
    shutil.copy(EXAMPLE / "pyproject.toml", suite)
    done = plugin.run("pytest", "-q", "-p", "no:cacheprovider", cwd=suite, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = done.stdout.strip().splitlines()[-1]
    assert " passed" in summary
    assert "skipped" not in summary, summary
    loaded = plugin.run(
        "python", "-c", "import tablectl_example_driver as m; print(m.__file__)", cwd=suite
    )
    assert Path(loaded.stdout.strip()).is_relative_to(plugin.path)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    """A mosquitto of this test's own."""
    if not mosquitto_available():
        pytest.skip("mosquitto is not installed")
    directory = tmp_path / "broker"
    directory.mkdir()
    instance = Broker(directory)
    instance.start()
    yield instance
    instance.stop()


@pytest.fixture
async def bridge(plugin: Venv) -> AsyncIterator[tuple[asyncio.subprocess.Process, int]]:
    """``tablectl-tag-bridge-sim`` from the venv: the process and its port."""
    sim = await asyncio.create_subprocess_exec(
        plugin.bin("tablectl-tag-bridge-sim"), "--antenna", "A0", "--antenna", "A1",
        "--model", "ACME-R9", "--firmware", "2.1",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        cwd=plugin.workdir, env=plugin.env(),
    )  # fmt: skip
    assert sim.stdout is not None
    words = (await asyncio.wait_for(sim.stdout.readline(), 30)).decode().split()
    assert words[:2] == ["listening", "127.0.0.1"], words
    yield sim, int(words[2])
    if sim.returncode is None:
        sim.kill()
    # its output read to its end: an asyncio subprocess's transport closes once the process
    # exited and its pipes did; wait() returns at the exit, and a transport left open when the
    # test's loop closes is collected in a later test ("unclosed transport")
    await sim.communicate()


@pytest.mark.broker
async def test_the_installed_daemon_runs_the_plugin(
    plugin: Venv, broker: Broker, bridge: tuple[asyncio.subprocess.Process, int]
) -> None:
    sim, port = bridge
    assert sim.stdin is not None
    assert sim.stdout is not None
    config = plugin.workdir / "daemon.toml"
    journal = plugin.workdir / "journal.sqlite"
    config.write_text(
        PLUGIN_TABLE.format(table="TP", port=port)
        + f'[broker]\nhost = "127.0.0.1"\nport = {broker.port}\n'
        f'[journal]\npath = "{journal}"\n[log]\nformat = "json"\n'
    )
    topics = Topics("tables", "TP")
    log = (plugin.workdir / "daemon.log").open("wb")
    daemon = subprocess.Popen(
        [plugin.bin("tablectl"), "run", "--config", str(config)],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=plugin.workdir,
        env=plugin.env(),
    )
    log.close()
    try:
        async with Collector(broker, topics) as collector:

            def reader_online(c: Collector) -> bool:
                return any(
                    e["type"] == "device.status" and e["data"].get("device") == "reader"
                    for e in c.public
                )

            await collector.wait_for(reader_online, timeout=60)
            sim.stdin.write(b"place A1 04c0ffee000002\n")
            assert await asyncio.wait_for(sim.stdout.readline(), 10) == b"ok 1\n"
            await collector.wait_for(
                lambda c: any(e["type"] == "integrity.alarm" for e in c.secure), timeout=30
            )
        alarm = next(e for e in collector.secure if e["type"] == "integrity.alarm")
        assert alarm["rules"] == ["FOUL-FOREIGN"]
        assert alarm["data"]["zone"] == "board"
        assert alarm["data"]["uid"] == "04c0ffee000002"
        status = next(e for e in collector.public if e["type"] == "device.status")
        assert status["data"]["health"] == "online"
        identity = await _retained(broker, topics.device("reader"))
        assert identity["health"] == "online"
        assert identity["identity"]["model"] == "ACME-R9"
        assert identity["identity"]["zones"] == {"A0": "seat:1", "A1": "board"}
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(30) == 0
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait(10)
        print((plugin.workdir / "daemon.log").read_text(errors="replace")[-3000:])


async def _retained(broker: Broker, topic: str) -> dict[str, Any]:
    async with aiomqtt.Client("127.0.0.1", broker.port) as client:
        await client.subscribe(topic, qos=1)
        async with asyncio.timeout(10):
            async for message in client.messages:
                assert isinstance(message.payload, bytes)
                body: dict[str, Any] = json.loads(message.payload)
                return body
    raise AssertionError(f"nothing retained on {topic}")
