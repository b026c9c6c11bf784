"""Secrets handed over by systemd: ``$CREDENTIALS_DIRECTORY/NAME`` in a config file.

The units run with ``DynamicUser=yes``: the daemon's user exists only while it runs, so it cannot
own the broker password, the TLS key or the pit's signing key, which stay root's, mode 0600.
systemd's ``LoadCredential=NAME:/etc/tablectl/FILE`` copies such a file, as root, into a
directory only the service's user can read, and names that directory in the service's
environment as ``$CREDENTIALS_DIRECTORY`` (systemd.exec(5), "Credentials";
https://systemd.io/CREDENTIALS/). A config value written ``$CREDENTIALS_DIRECTORY/NAME`` is read
from there.

The expansion is of that prefix only, in any string of the config, and nothing else is expanded:
a config is not a shell script. Without the variable (a config checked by hand), the value is a
problem that says so, and how to check the files anyway.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

VARIABLE = "CREDENTIALS_DIRECTORY"
PREFIX = "$" + VARIABLE + "/"


def expand_credentials(
    data: dict[str, Any], environ: Mapping[str, str] | None = None
) -> tuple[dict[str, Any], list[str]]:
    """``data`` with every string starting ``$CREDENTIALS_DIRECTORY/`` made a path in that
    directory, and the problems (``key: what``) of those that cannot be."""
    directory = (os.environ if environ is None else environ).get(VARIABLE)
    problems: list[str] = []

    def walk(value: Any, key: str) -> Any:
        if isinstance(value, dict):
            return {k: walk(v, f"{key}.{k}" if key else str(k)) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, f"{key}[{i}]") for i, v in enumerate(value)]
        if not isinstance(value, str) or not value.startswith(PREFIX):
            return value
        name = value.removeprefix(PREFIX)
        if not name or "/" in name or name in (".", ".."):
            problems.append(f"{key}: {value}: a credential is one name in the directory")
        elif not directory:
            problems.append(
                f"{key}: {value}: {VARIABLE} is not set (systemd sets it for a unit with "
                f"LoadCredential=; to check the files by hand, set it to where they are, e.g. "
                f"{VARIABLE}=/etc/tablectl)"
            )
        else:
            return os.path.join(directory, name)
        return value

    return walk(data, ""), problems
