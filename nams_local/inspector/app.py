"""``create_inspector``: the memory inspector, a small Starlette app the server mounts at /ui.

Pages are rendered on the server (Jinja2, autoescaped) and work without JavaScript; there
is no script at all. A browser logs in once with the same token it would send to ``/v1``
(see ``sessions.py``); every page then reads the workspace that token selects, through the
``Gate`` the server provides. Every action is a POST carrying the session's CSRF token,
first answered with a confirm page (nothing written), then applied when the confirm form
comes back, answered with what changed. ``docs/inspector.md`` has the whole design.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Scope

from nams_local.asgi_unexpected import CatchUnexpected
from nams_local.backend import MemoryBackend
from nams_local.errors import AuthenticationError, InvalidInputError, NamsError

from . import views
from .actions import ACTIONS
from .forms import MAX_FIELD_CHARS, page_param, query_param, read_form
from .gate import Gate
from .render import page
from .sessions import Session, SessionStore

__all__ = ["LOGIN_COOKIE", "SESSION_COOKIE", "create_inspector"]

logger = logging.getLogger("nams_local.inspector")

SESSION_COOKIE = "nams_ui_session"
#: Double-submit token of the login form (there is no session yet to bind it to).
LOGIN_COOKIE = "nams_ui_login"
_ID_CHARS = 200


@dataclass
class Visit:
    """One authenticated page view: where the inspector is mounted, the session, the
    workspace the session's token selects."""

    base: str
    session: Session
    workspace_id: str
    backend: MemoryBackend

    def context(self, **values: Any) -> dict[str, Any]:
        return {
            "base": self.base,
            "csrf": self.session.csrf,
            "workspace_id": self.workspace_id,
            **values,
        }


def _base(request: Request) -> str:
    root: str = request.scope.get("root_path", "")
    return root.rstrip("/")


def _path_id(request: Request, name: str) -> str:
    value: str = request.path_params[name]
    if not value or len(value) > _ID_CHARS or not value.isprintable():
        raise InvalidInputError(f"malformed {name.replace('_', ' ')}")
    return value


def _same_origin(request: Request) -> bool:
    """A POST whose ``Origin`` names another site (or is opaque, ``null``) is refused:
    SameSite=Strict already keeps the cookie off it; this also covers browsers without
    SameSite. (``Referrer-Policy: same-origin``, not ``no-referrer``, which would make a
    browser send ``Origin: null`` on our own forms.)"""
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return origin is None
    host = request.headers.get("host", "")
    return urlsplit(origin).netloc == host


class Inspector:
    """The pages' handlers, over one ``Gate`` and one ``SessionStore``. Every handler
    resolves the visit first and answers the login page when there is none, so no page
    or action ever runs without the workspace a valid token selects."""

    def __init__(self, gate: Gate, sessions: SessionStore) -> None:
        self.gate = gate
        self.sessions = sessions

    # -- sessions --------------------------------------------------------------------
    async def visit(self, request: Request) -> Visit | None:
        session = self.sessions.get(request.cookies.get(SESSION_COOKIE))
        if session is None:
            return None
        try:
            opened = await self.gate.open(session.token, session.workspace_header)
        except AuthenticationError:
            self.sessions.drop(request.cookies.get(SESSION_COOKIE))
            return None
        return Visit(_base(request), session, opened.workspace_id, opened.backend)

    def _to_login(self, request: Request, error: str | None = None) -> Response:
        return self._login_page(request, error, status_code=401 if error else 200)

    def _login_page(self, request: Request, error: str | None, *, status_code: int) -> Response:
        nonce = secrets.token_urlsafe(24)
        response = page(
            "login.html",
            {
                "base": _base(request),
                "nonce": nonce,
                "error": error,
                "csrf": "",
                "workspace_id": None,
            },
            status_code=status_code,
        )
        self._cookie(request, response, LOGIN_COOKIE, nonce, max_age=3600)
        return response

    def _cookie(
        self, request: Request, response: Response, name: str, value: str, *, max_age: int | None
    ) -> None:
        response.set_cookie(
            name,
            value,
            max_age=max_age,
            path=_base(request) or "/",
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )

    async def login_form(self, request: Request) -> Response:
        if await self.visit(request) is not None:
            return RedirectResponse(f"{_base(request)}/", status_code=303)
        return self._to_login(request)

    async def login(self, request: Request) -> Response:
        form = await read_form(request)
        nonce = request.cookies.get(LOGIN_COOKIE)
        sent = form.get("nonce")
        if (
            not _same_origin(request)
            or not nonce
            or not sent
            or not secrets.compare_digest(nonce.encode(), sent.encode())
        ):
            return self._login_page(request, "the login form expired: try again", status_code=403)
        token = (form.get("token", max_chars=MAX_FIELD_CHARS) or "").strip()
        workspace = (form.get("workspace", max_chars=MAX_FIELD_CHARS) or "").strip() or None
        if token.lower().startswith("bearer "):
            token = token[7:].strip()
        try:
            if not token:
                raise AuthenticationError("give the API key (the token your client sends)")
            await self.gate.open(token, workspace)
        except (AuthenticationError, InvalidInputError) as exc:
            return self._to_login(request, exc.message)
        session_id, _ = self.sessions.create(token, workspace)
        response = RedirectResponse(f"{_base(request)}/", status_code=303)
        self._cookie(request, response, SESSION_COOKIE, session_id, max_age=None)
        response.delete_cookie(LOGIN_COOKIE, path=_base(request) or "/")
        return response

    async def logout(self, request: Request) -> Response:
        visit = await self.visit(request)
        form = await read_form(request)
        if visit is not None and visit.session.csrf_matches(form.get("csrf")):
            self.sessions.drop(request.cookies.get(SESSION_COOKIE))
        response = RedirectResponse(f"{_base(request)}/login", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path=_base(request) or "/")
        return response

    # -- read views ------------------------------------------------------------------
    async def home(self, request: Request) -> Response:
        visit = await self.visit(request)
        if visit is None:
            return self._to_login(request)
        return page("home.html", visit.context(**await views.home_view(visit.backend)))

    async def users(self, request: Request) -> Response:
        visit = await self.visit(request)
        if visit is None:
            return self._to_login(request)
        user = query_param(request, "user")
        return page("users.html", visit.context(**await views.users_view(visit.backend, user)))

    async def conversation(self, request: Request) -> Response:
        visit = await self.visit(request)
        if visit is None:
            return self._to_login(request)
        data = await views.conversation_view(visit.backend, _path_id(request, "conversation_id"))
        return page("conversation.html", visit.context(**data))

    async def entities(self, request: Request) -> Response:
        visit = await self.visit(request)
        if visit is None:
            return self._to_login(request)
        data = await views.entities_view(
            visit.backend,
            query_param(request, "type"),
            query_param(request, "q"),
            page_param(request),
        )
        return page("entities.html", visit.context(**data))

    async def entity(self, request: Request) -> Response:
        visit = await self.visit(request)
        if visit is None:
            return self._to_login(request)
        raw_depth = request.query_params.get("depth", "1")
        if raw_depth not in ("1", "2", "3"):
            raise InvalidInputError("depth must be 1, 2 or 3")
        data = await views.entity_view(
            visit.backend, _path_id(request, "entity_id"), int(raw_depth)
        )
        return page("entity.html", visit.context(**data))

    async def graph(self, request: Request) -> Response:
        visit = await self.visit(request)
        if visit is None:
            return self._to_login(request)
        return page("graph.html", visit.context(**await views.graph_view(visit.backend)))

    # -- actions ---------------------------------------------------------------------
    async def action(self, request: Request) -> Response:
        name = _path_id(request, "action")
        chosen = ACTIONS.get(name)
        if chosen is None:
            raise HTTPException(404, "no such action")
        form = await read_form(request)
        visit = await self.visit(request)
        if visit is None:
            return self._to_login(request, "log in again: your session ended")
        if not _same_origin(request) or not visit.session.csrf_matches(form.get("csrf")):
            return page(
                "error.html",
                visit.context(
                    status=403,
                    message="the form is stale or came from another site: reload and retry",
                ),
                status_code=403,
            )
        carried = [(k, v) for k, v in form.items() if k not in ("csrf", "confirm")]
        if form.get("confirm") != "yes":
            change = await chosen.preview(visit.backend, form)
            return page(
                "confirm.html",
                visit.context(action=name, label=chosen.label, change=change, fields=carried),
            )
        change = await chosen.apply(visit.backend, form)
        logger.info("inspector action %s applied", name)
        return page("done.html", visit.context(action=name, change=change))

    # -- errors ----------------------------------------------------------------------
    async def nams_error(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, NamsError)
        return await self._error(request, exc.status_code, exc.message)

    async def http_error(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return await self._error(request, exc.status_code, str(exc.detail))

    async def _error(self, request: Request, status: int, message: str) -> Response:
        session = self.sessions.get(request.cookies.get(SESSION_COOKIE))
        return page(
            "error.html",
            {
                "base": _base(request),
                "csrf": session.csrf if session else "",
                "workspace_id": None,
                "status": status,
                "message": message,
            },
            status_code=status,
        )


def _internal_error_page(scope: Scope) -> ASGIApp:
    """What a person sees when a handler fails unexpectedly: an HTML page in the
    inspector's look, with nothing of the exception (no traceback, no message: those go to
    the log only); ``/v1`` keeps its JSON body."""
    root: str = scope.get("root_path", "")
    return page(
        "error.html",
        {
            "base": root.rstrip("/"),
            "csrf": "",
            "workspace_id": None,
            "status": 500,
            "message": "internal error: the server logged it; reload to try again",
        },
        status_code=500,
    )


def create_inspector(gate: Gate, *, sessions: SessionStore | None = None) -> Starlette:
    """The inspector app over ``gate``; mount it (``app.mount("/ui", ...)``)."""
    inspector = Inspector(gate, sessions or SessionStore())
    routes = [
        Route("/", inspector.home, methods=["GET"]),
        Route("/login", inspector.login_form, methods=["GET"]),
        Route("/login", inspector.login, methods=["POST"]),
        Route("/logout", inspector.logout, methods=["POST"]),
        Route("/users", inspector.users, methods=["GET"]),
        Route("/conversations/{conversation_id}", inspector.conversation, methods=["GET"]),
        Route("/entities", inspector.entities, methods=["GET"]),
        Route("/entities/{entity_id}", inspector.entity, methods=["GET"]),
        Route("/graph", inspector.graph, methods=["GET"]),
        Route("/actions/{action}", inspector.action, methods=["POST"]),
        Mount(
            "/static",
            StaticFiles(packages=[("nams_local.inspector", "static")]),
            name="static",
        ),
    ]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(CatchUnexpected, answer=_internal_error_page, logger=logger)],
        exception_handlers={
            NamsError: inspector.nams_error,
            HTTPException: inspector.http_error,
        },
    )
    return app
