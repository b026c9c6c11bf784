"""Logging in and out: ``POST /login`` checks a user's password and sets the session cookie (the
console's form gets a page back, an API client JSON), ``POST /logout`` ends the session,
``/api/me`` says who the credentials are. Who is asking, on every other route: :mod:`.deps`."""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, HTTPException, Request, Response
from fastapi.responses import RedirectResponse

from controller.pit.console.render import render_login
from controller.pit.store import Store
from controller.pit.users import SESSION_COOKIE, new_session, token_digest
from controller.pit.web.deps import (
    Authed,
    LockedOutError,
    PitWeb,
    Web,
    authenticate,
    check_csrf,
)
from controller.pit.web.models import User

router = APIRouter(tags=["session"])


@router.post(
    "/login",
    response_model=User,
    responses={
        303: {"description": "the console's form (with next): to that page"},
        401: {"description": "unknown user or wrong password"},
        429: {"description": "too many wrong passwords from this address: wait (Retry-After)"},
    },
)
async def login(
    request: Request,
    web: Web,
    username: Annotated[str, Form()],
    password: Annotated[str, Form()],
    next: Annotated[str | None, Form(description="the console's page to go to")] = None,
) -> Any:
    """Check a user's password and set the session cookie (HttpOnly, SameSite=Strict)."""
    try:
        checked = await authenticate(request, web, username, password)
    except LockedOutError as exc:
        if next is None:
            raise
        return _login_page(web, str(exc.detail), next, status=429)
    if checked is None:
        if next is None:
            raise HTTPException(status_code=401, detail="unknown user or wrong password")
        return _login_page(web, "Unknown user or wrong password.", next, status=401)
    roles = checked[1]
    expires = time.time() + web.session_hours * 3600
    token = await web.reader.call(new_session, username, expires)
    response: Response
    if next is None:
        response = Response(
            User(username=username, roles=roles).model_dump_json(),
            media_type="application/json",
        )
    else:
        response = RedirectResponse(_local(next), status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        token,
        max_age=int(web.session_hours * 3600),
        httponly=True,
        samesite="strict",
        secure=web.secure_cookie,
    )
    return response


@router.post("/logout", status_code=303, dependencies=[Depends(check_csrf)])
async def logout(request: Request, user: Authed, web: Web) -> RedirectResponse:
    """End the session; to the login page."""
    token = request.state.session_token
    if token is not None:
        await web.reader.call(Store.end_session, token_digest(token))
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE, httponly=True, samesite="strict")
    return response


@router.get("/api/me", response_model=User)
async def me(user: Authed) -> User:
    """Who the credentials are."""
    return user


def _login_page(web: PitWeb, error: str, next: str, status: int) -> Response:
    """The console's login page again, with why."""
    return render_login(web.health_view(), error=error, next=_local(next), status=status)


def _local(path: str) -> str:
    """A path of this site to go to after logging in (anything else: the floor map)."""
    if not path.startswith("/") or path.startswith("//") or "\\" in path:
        return "/"
    return path
