"""The operator surface as one Starlette application.

* ``GET /metrics``: the registry's exposition (``prometheus_client``'s ASGI app), always open;
* ``GET /api/memory/search`` and ``GET /api/memory/profile``: the operator API (JSON);
* ``GET /``, ``/static/...``: the memory page's shell, script and style (they hold no data);
* ``/page/...``: the page's views (``GET``, HTML fragments) and corrections (``POST``).

The API needs a bearer token when one is configured; the page always does (the shell asks for
it once and sends it as a header, so no cookie exists for another site to ride). A token sees
only its guilds, and only the guilds this process serves; any other guild is "not found".
Before the app has started, the API and the page answer 503 with ``Retry-After``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import date
from importlib.resources import files
from typing import Any, Protocol
from urllib.parse import parse_qsl

import structlog
from prometheus_client import CollectorRegistry, make_asgi_app
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from vivy.web import views
from vivy.web.memory import CHART_DAYS, MemorySource
from vivy.web.tokens import OPERATOR_LABEL, Access, Tokens

__all__ = [
    "DEFAULT_SEARCH_LIMIT",
    "MAX_ID",
    "MAX_IN_FLIGHT",
    "MAX_SEARCH_LIMIT",
    "MAX_URL_BYTES",
    "NOT_READY",
    "RETRY_AFTER_S",
    "OperatorAPI",
    "Surface",
    "operator_app",
]

#: Largest ``limit`` the search route accepts.
MAX_SEARCH_LIMIT = 50
#: Largest id accepted: Discord snowflakes are unsigned 64-bit, SQLite's integers signed.
MAX_ID = 2**63 - 1
#: ``limit`` used when the search request gives none.
DEFAULT_SEARCH_LIMIT = 10
#: Longest request target (path and query) served; longer ones get 414.
MAX_URL_BYTES = 8192
#: Requests served at once; more get 503 at once instead of queueing.
MAX_IN_FLIGHT = 32
#: Longest request body read (a correction's form is a few bytes).
MAX_BODY_BYTES = 4096
#: What the API and the page answer (503) before the app serves them.
NOT_READY = (
    "Vivy is starting (opening its database and, on PostgreSQL, waiting for its shard leases); "
    "the operator API answers once it runs"
)
#: Seconds a client is asked to wait before trying again while Vivy is starting.
RETRY_AFTER_S = 5
#: The page's content security policy: its own script and style only, nothing inline.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
)

_log = structlog.get_logger(__name__)
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_STATIC = {"page.js": "text/javascript", "page.css": "text/css"}


class OperatorAPI(Protocol):
    """Data behind the operator API's routes, awaited on the event loop the server runs in
    (the one that owns the storage); implementations return JSON-serialisable values."""

    async def search(self, guild_id: int, q: str, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` memory hits for ``q`` in guild ``guild_id``, best first."""
        ...

    async def profile(self, guild_id: int, user_id: int) -> dict[str, Any] | None:
        """The profile of ``user_id`` in guild ``guild_id``, or ``None`` if there is none."""
        ...


@dataclass
class Surface:
    """What the server serves; the app fills ``api`` and ``memory`` once it runs."""

    registry: CollectorRegistry
    tokens: Tokens = field(default_factory=Tokens)
    api: OperatorAPI | None = None
    memory: MemorySource | None = None
    #: The guilds this process serves (None: every guild in its database).
    guilds: frozenset[int] | None = None


def _error(status: int, message: str, headers: Mapping[str, str] | None = None) -> Response:
    return JSONResponse(
        {"error": message}, status, headers={"Cache-Control": "no-store", **(headers or {})}
    )


class _Guard:
    """Request limits before routing: target length, methods, and requests in flight."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app
        self._in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        target = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"")
        path: str = scope["path"]
        allowed = (
            "POST" if path.startswith("/page/") and path.endswith(("/remove", "/forget")) else "GET"
        )
        if target > MAX_URL_BYTES:
            answer = _error(414, f"the request target is longer than {MAX_URL_BYTES} bytes")
        elif scope["method"] != allowed:
            answer = _error(405, f"only {allowed} is allowed", {"Allow": allowed})
        elif self._in_flight >= MAX_IN_FLIGHT:
            answer = _error(503, "too many requests at once", {"Retry-After": "1"})
        else:
            self._in_flight += 1
            try:
                await self._app(scope, receive, send)
            finally:
                self._in_flight -= 1
            return
        await answer(scope, receive, send)


class _Metrics:
    """``prometheus_client``'s ASGI app as a Starlette endpoint."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._app = make_asgi_app(registry)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app(scope, receive, send)


def operator_app(surface: Surface) -> ASGIApp:
    """The Starlette application serving ``surface``, behind the request limits."""

    async def api_search(request: Request) -> Response:
        api, access = _api(request)
        params = _params(request)
        guild_id = _id(params, "guild_id")
        q = _required(params, "q").strip()
        if not q:
            raise HTTPException(400, "parameter 'q' must not be blank")
        limit = _limit(params)
        _guild(access, guild_id, surface)
        results = await api.search(guild_id, q, limit)
        return _json({"results": results})

    async def api_profile(request: Request) -> Response:
        api, access = _api(request)
        params = _params(request)
        guild_id = _id(params, "guild_id")
        user_id = _id(params, "user_id")
        _guild(access, guild_id, surface)
        found = await api.profile(guild_id, user_id)
        if found is None:
            raise HTTPException(404, "no profile for this user in this guild")
        return _json({"profile": found})

    def _api(request: Request) -> tuple[OperatorAPI, Access]:
        access = _authorised(request, surface.tokens, page=False)
        if surface.api is None:
            raise HTTPException(503, NOT_READY, {"Retry-After": str(RETRY_AFTER_S)})
        return surface.api, access

    def _memory(request: Request) -> tuple[MemorySource, Access, int | None]:
        access = _authorised(request, surface.tokens, page=True)
        if surface.memory is None:
            raise HTTPException(503, NOT_READY, {"Retry-After": str(RETRY_AFTER_S)})
        guild = request.path_params.get("guild")
        if guild is not None:
            _guild(access, int(guild), surface)
        return surface.memory, access, None if guild is None else int(guild)

    def view(
        build: Callable[[MemorySource, Access, int, Request], Awaitable[str]],
    ) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            memory, access, guild = _memory(request)
            html = await build(memory, access, guild or 0, request)
            return HTMLResponse(html, headers={"Cache-Control": "no-store"})

        return endpoint

    async def guilds(memory: MemorySource, access: Access, _: int, r: Request) -> str:
        shown = [g for g in await memory.guild_ids() if access.sees(g) and _served(g, surface)]
        names = await memory.guild_names() if shown else {}
        return views.render("guilds.html", guilds=shown, names=names, who=access.label)

    async def timeline(memory: MemorySource, _: Access, guild: int, r: Request) -> str:
        last = r.query_params.get("day")
        if last is not None and (not _DAY.match(last) or not _valid_day(last)):
            raise HTTPException(400, "parameter 'day' must be a date like 2026-03-02")
        found = await memory.timeline(guild, last)
        bars = views.chart_bars(found.chart, found.last, CHART_DAYS)
        return views.render("timeline.html", guild=guild, view=found, bars=bars)

    async def search(memory: MemorySource, _: Access, guild: int, r: Request) -> str:
        q = " ".join(r.query_params.get("q", "").split())[:300]
        found = await memory.search(guild, q) if q else None
        return views.render("search.html", guild=guild, query=q, found=found)

    async def members(memory: MemorySource, _: Access, guild: int, r: Request) -> str:
        return views.render("members.html", guild=guild, members=await memory.members(guild))

    async def profile(memory: MemorySource, _: Access, guild: int, r: Request) -> str:
        found = await memory.profile(guild, _path_id(r, "user"))
        if found is None:
            raise HTTPException(404, "this guild has no such member")
        return views.render("profile.html", guild=guild, view=found)

    async def note(memory: MemorySource, _: Access, guild: int, r: Request) -> str:
        found = await memory.note(guild, _path_id(r, "note"))
        if found is None:
            raise HTTPException(404, "this guild has no such note")
        return views.render("note.html", guild=guild, view=found)

    async def health(memory: MemorySource, _: Access, guild: int, r: Request) -> str:
        status, kept, jobs = await memory.health(guild)
        return views.render("health.html", guild=guild, status=status, kept=kept, jobs=jobs)

    async def corrections(memory: MemorySource, _: Access, guild: int, r: Request) -> str:
        log = await memory.corrections(guild)
        return views.render("corrections.html", guild=guild, log=log)

    async def remove_fact(memory: MemorySource, access: Access, guild: int, r: Request) -> str:
        form = await _form(r)
        user = _id(form, "user_id")
        text = await memory.remove_fact(guild, user, _path_id(r, "fact"), access.label)
        if text is None:
            raise HTTPException(404, "this member has no such active fact")
        _log.info("memory_page_correction", action="remove_fact", guild_id=guild, who=access.label)
        return views.render("done.html", message=f"Removed the fact “{text}”.")

    async def remove_note(memory: MemorySource, access: Access, guild: int, r: Request) -> str:
        removed = await memory.remove_note(guild, _path_id(r, "note"), access.label)
        if removed is None:
            raise HTTPException(404, "this guild has no such note")
        _log.info("memory_page_correction", action="remove_note", guild_id=guild, who=access.label)
        extra = removed - 1
        more = f" and {extra} topic cluster{'s' if extra != 1 else ''} built on it" if extra else ""
        return views.render("done.html", message=f"Removed the note{more}.")

    async def forget(memory: MemorySource, access: Access, guild: int, r: Request) -> str:
        report = await memory.forget_member(guild, _path_id(r, "user"), access.label)
        _log.info(
            "memory_page_correction", action="forget_member", guild_id=guild, who=access.label
        )
        return views.render(
            "done.html",
            message=f"Forgot the member: {report.facts} facts, {report.notes} notes and "
            f"{report.messages} buffered messages removed.",
        )

    async def shell(request: Request) -> Response:
        html = (files("vivy.web") / "static" / "index.html").read_text(encoding="utf-8")
        return HTMLResponse(html, headers=_page_headers())

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _STATIC:
            raise HTTPException(404, f"no route for {request.url.path}")
        body = (files("vivy.web") / "static" / name).read_bytes()
        return Response(body, media_type=_STATIC[name], headers=_page_headers())

    guild_path = "/page/g/{guild:int}"
    routes = [
        Route("/metrics", _Metrics(surface.registry)),
        Route("/api/memory/search", api_search),
        Route("/api/memory/profile", api_profile),
        Route("/", shell),
        Route("/static/{name}", static),
        Route("/page/guilds", view(guilds)),
        Route(f"{guild_path}/timeline", view(timeline)),
        Route(f"{guild_path}/search", view(search)),
        Route(f"{guild_path}/members", view(members)),
        Route(f"{guild_path}/member/{{user:int}}", view(profile)),
        Route(f"{guild_path}/note/{{note:int}}", view(note)),
        Route(f"{guild_path}/health", view(health)),
        Route(f"{guild_path}/corrections", view(corrections)),
        Route(f"{guild_path}/fact/{{fact:int}}/remove", view(remove_fact), methods=["POST"]),
        Route(f"{guild_path}/note/{{note:int}}/remove", view(remove_note), methods=["POST"]),
        Route(f"{guild_path}/member/{{user:int}}/forget", view(forget), methods=["POST"]),
    ]
    app = Starlette(
        routes=routes,
        exception_handlers={HTTPException: _http_error, Exception: _internal_error},
    )
    return _Guard(app)


def _page_headers() -> dict[str, str]:
    return {
        "Content-Security-Policy": CSP,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
    }


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404 and exc.detail == "Not Found":
        return _error(404, f"no route for {request.url.path}")
    return _error(exc.status_code, str(exc.detail), exc.headers)


async def _internal_error(request: Request, exc: Exception) -> Response:
    _log.error("operator_request_failed", path=request.url.path, exc_info=exc)
    return _error(500, "internal error")


def _json(body: Mapping[str, Any]) -> Response:
    payload = json.dumps(body, default=str, ensure_ascii=False).encode()
    return Response(payload, media_type="application/json", headers={"Cache-Control": "no-store"})


def _authorised(request: Request, tokens: Tokens, *, page: bool) -> Access:
    """The request's access; 401 without the right token (the page always needs one)."""
    if not tokens.required:
        if page:
            raise HTTPException(403, "the memory page needs a token: set VIVY_API_TOKEN")
        return Access(OPERATOR_LABEL, None)
    access = tokens.access(request.headers.get("Authorization", ""))
    if access is None:
        raise HTTPException(
            401, "missing or wrong bearer token", {"WWW-Authenticate": 'Bearer realm="vivy"'}
        )
    return access


def _served(guild_id: int, surface: Surface) -> bool:
    return surface.guilds is None or guild_id in surface.guilds


def _guild(access: Access, guild_id: int, surface: Surface) -> None:
    """404 for a guild the token may not see or the process does not serve."""
    if not (access.sees(guild_id) and _served(guild_id, surface)):
        raise HTTPException(404, "no such guild for this token")


def _params(request: Request) -> dict[str, str]:
    """The query parameters, each given at most once."""
    items = request.query_params.multi_items()
    names = [name for name, _ in items]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise HTTPException(400, f"parameter {repeated[0]!r} is given more than once")
    return dict(items)


def _required(params: Mapping[str, str], name: str) -> str:
    try:
        return params[name]
    except KeyError:
        raise HTTPException(400, f"missing parameter {name!r}") from None


def _id(params: Mapping[str, str], name: str) -> int:
    """A parameter holding a Discord id: a decimal integer from 1 to 2**63 - 1."""
    text = _required(params, name)
    if not (text.isascii() and text.isdigit()) or not 0 < int(text) <= MAX_ID:
        raise HTTPException(
            400,
            f"parameter {name!r} must be a positive integer up to {MAX_ID} (a Discord id), "
            f"got {text!r}",
        )
    return int(text)


def _path_id(request: Request, name: str) -> int:
    value = int(request.path_params[name])
    if not 0 < value <= MAX_ID:
        raise HTTPException(404, f"no such {name}")
    return value


def _limit(params: Mapping[str, str]) -> int:
    if "limit" not in params:
        return DEFAULT_SEARCH_LIMIT
    text = params["limit"]
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_SEARCH_LIMIT:
        raise HTTPException(
            400, f"parameter 'limit' must be an integer from 1 to {MAX_SEARCH_LIMIT}, got {text!r}"
        )
    return int(text)


def _valid_day(text: str) -> bool:
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


async def _form(request: Request) -> dict[str, str]:
    """A correction's small URL-encoded body."""
    body = b""
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY_BYTES:
                raise HTTPException(413, f"the request body is longer than {MAX_BODY_BYTES} bytes")
    except ClientDisconnect:  # dropped mid-body (silent too long): no one to answer, no error
        raise HTTPException(400, "the client left before its request body arrived") from None
    try:
        return dict(parse_qsl(body.decode(), strict_parsing=False))
    except UnicodeDecodeError:
        raise HTTPException(400, "the request body is not UTF-8") from None
