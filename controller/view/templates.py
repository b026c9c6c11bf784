"""The one way the web apps (the pit's console, the dealer's station) load their templates:
escaped HTML, an undefined name an error rather than an empty string, blocks without the blank
lines their tags leave."""

from __future__ import annotations

import jinja2


def environment(package: str) -> jinja2.Environment:
    """The templates of ``package`` (its ``templates`` folder)."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader(package, "templates"),
        autoescape=jinja2.select_autoescape(["html"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
