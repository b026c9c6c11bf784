"""The console's HTML: its templates rendered into pages and into the sections the live streams
put in place, every page with the same security headers and the pit's own health."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import structlog
from fastapi.responses import HTMLResponse

from controller import __version__
from controller.pit.console.streams import CSRF_MARK, Snapshot
from controller.pit.console.views import Viewer
from controller.view.templates import environment

log = structlog.get_logger("tablectl.pit.console")

_env = environment("controller.pit.console")
_env.filters["tojson_compact"] = lambda v: json.dumps(v, separators=(",", ":"), default=str)

#: Every page: its script, style and streams from this site only, never framed by another.
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; "
    "form-action 'self'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
#: Seconds between two loads of the page shown while the store is lost.
UNAVAILABLE_RETRY = 5


def render(template: str, **context: Any) -> str:
    """A template of the console, rendered."""
    return _env.get_template(template).render(version=__version__, **context)


def page(
    template: str,
    health: Mapping[str, Any],
    *,
    viewer: Viewer | None = None,
    live: str | None = None,
    status_code: int = 200,
    headers: Mapping[str, str] = PAGE_HEADERS,
    **context: Any,
) -> HTMLResponse:
    """A page for ``viewer`` (None: nobody logged in), its banner saying the pit's ``health``
    (:func:`.views.health_view`); ``live`` names the page's stream."""
    html = render(template, viewer=viewer, live=live, health=health, **context)
    return HTMLResponse(html, status_code, headers=headers)


def render_login(health: Mapping[str, Any], *, error: str, next: str, status: int) -> HTMLResponse:
    """The login page."""
    return page("login.html", health, status_code=status, error=error, next=next)


def render_unavailable(health: Mapping[str, Any]) -> HTMLResponse:
    """What a page is while the store does not answer (every page is read from it, the login
    too): 503, the banner naming the store and since when, and the page loads itself again."""
    headers = {**PAGE_HEADERS, "Retry-After": str(UNAVAILABLE_RETRY)}
    return page(
        "unavailable.html", health, status_code=503, headers=headers, retry=UNAVAILABLE_RETRY
    )


def health_event(health: Mapping[str, Any]) -> str:
    """The live streams' ``health`` event: whether the pit is live, the indicator's words when
    not, and the banner's HTML to put in place."""
    data = {
        "live": health["live"],
        "indicator": health["indicator"],
        "banner": render("_health.html", health=health),
    }
    return f"event: health\ndata: {json.dumps(data)}\n\n"


def render_section(target: str, template: str, context: dict[str, Any]) -> str:
    """A section of a page; one that cannot be rendered is a visible "malformed" marker."""
    try:
        return render(template, **context)
    except Exception:
        log.exception("pit.console.section_failed", target=target[:100], template=template)
        return render("_malformed.html", target=target, tile=target.startswith("tile-"))


def sections_html(snapshot: Snapshot, viewer: Viewer) -> dict[str, str]:
    """The sections of a page for ``viewer`` (their forms with the session's CSRF token)."""
    csrf = viewer.csrf
    return {
        target: section.html if csrf is None else section.html.replace(CSRF_MARK, csrf)
        for target, section in snapshot.sections.items()
    }
