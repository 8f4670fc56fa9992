"""The dashboard's web app (Starlette): pages, live events, actions and `/metrics`.

Reading needs nothing. Acting (approve a review, cancel a task, nudge, reverse a decision) needs the login
token `groove ui` prints: `/login?token=...` sets an HttpOnly, SameSite=Strict cookie, and every action is a
POST that carries the page's CSRF token and, when the browser sends one, an Origin of this server. A request
without them is refused with 403 and changes nothing. The coordinator checks the dashboard's own key as it
checks any client's: actions need a key of the curator role when it runs with CURVE.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.resources import files
from typing import Any
from urllib.parse import quote, urlsplit

import anyio.to_thread
from markupsafe import Markup
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from groove.protocol.ids import is_uuid7
from groove.ui import charts, pages
from groove.ui.actions import ACTIONS
from groove.ui.live import Hub, Recorder, Sample
from groove.ui.metrics import CoordinatorCollector
from groove.ui.source import CoordinatorDown, Missing, Refused, Source

log = logging.getLogger(__name__)

COOKIE = "groove_session"
MAX_TOPICS = 32  # boards watched live at once: each costs the coordinator a poll a second
_HERE = files("groove.ui")
templates = Jinja2Templates(directory=str(_HERE / "templates"))


def _when(ms: int | None) -> str:
    return "never" if ms is None else datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _duration(seconds: float) -> str:
    sign, seconds = ("-" if seconds < 0 else ""), abs(seconds)
    if seconds < 120:
        return f"{sign}{seconds:.0f} s"
    if seconds < 7200:
        return f"{sign}{seconds / 60:.0f} min"
    return f"{sign}{seconds / 3600:.1f} h"


def _spark(samples: list[Sample], name: str) -> Markup:
    return charts.sparkline([float(getattr(s, name)) for s in samples], label=name)


templates.env.filters |= {"when": _when, "duration": _duration}
templates.env.globals["spark"] = _spark


def _mac(token: str, purpose: bytes) -> str:
    return hmac.new(token.encode(), purpose, hashlib.sha256).hexdigest()


@dataclass
class Dashboard:
    """What every request of one app shares."""

    source: Source
    token: str
    actor: str  # who the dashboard's actions are recorded as (reviewer, sender, reverser)
    hub: Hub
    recorder: Recorder

    def logged_in(self, request: Request) -> bool:
        return hmac.compare_digest(request.cookies.get(COOKIE, ""), _mac(self.token, b"session"))

    @property
    def csrf(self) -> str:
        return _mac(self.token, b"csrf")


def _safe_next(target: str | None) -> str:
    """A same-site path to go back to; anything else (another host, `//host`) goes to the overview."""
    if not target or not target.startswith("/") or target.startswith("//") or urlsplit(target).netloc:
        return "/"
    return target


def build(source: Source, token: str, actor: str = "dashboard", sample_every: float = 5.0) -> Starlette:
    """The app over one coordinator's `source`."""
    hub = Hub(lambda topic: render_topic(dash, topic))
    dash = Dashboard(source, token, actor, hub, Recorder(source, sample_every))
    registry = CollectorRegistry(auto_describe=False)
    registry.register(CoordinatorCollector(source, lambda: dash.recorder.tasks))

    def said(request: Request, key: str) -> str | None:
        """An action's outcome carried back in the URL, shown only with its signature: a link made elsewhere
        cannot put words on these pages."""
        text, signature = request.query_params.get(key), request.query_params.get("sig", "")
        if text is None or not hmac.compare_digest(signature, _mac(token, f"{key}:{text}".encode())):
            return None
        return text

    def page(name: str, request: Request, data: dict[str, Any], status: int = 200) -> HTMLResponse:
        context = data | {"logged_in": dash.logged_in(request), "csrf": dash.csrf, "path": request.url.path}
        context |= {"flash": said(request, "done"), "refusal": said(request, "refused")}
        return templates.TemplateResponse(request, name, context, status_code=status)

    def back_with(back: str, key: str, text: str) -> RedirectResponse:
        signature = _mac(token, f"{key}:{text}".encode())
        joiner = "&" if "?" in back else "?"
        return RedirectResponse(f"{back}{joiner}{key}={quote(text)}&sig={signature}", status_code=303)

    def shown(name: str, gather: Callable[[Request], dict[str, Any]]) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            try:
                data = await anyio.to_thread.run_sync(gather, request)
            except Missing as exc:
                return page("missing.html", request, {"message": str(exc)}, 404)
            except CoordinatorDown as exc:
                return page("down.html", request, {"message": str(exc)}, 503)
            except Refused as exc:
                return page("refused.html", request, {"message": str(exc)}, 400)
            return page(name, request, data)

        return endpoint

    async def login(request: Request) -> Response:
        given = request.query_params.get("token", "")
        if not hmac.compare_digest(given.encode(), token.encode()):
            return page("refused.html", request, {"message": "wrong or missing token: the pages stay read-only"}, 403)
        response = RedirectResponse(_safe_next(request.query_params.get("next")), status_code=303)
        response.set_cookie(COOKIE, _mac(token, b"session"), httponly=True, samesite="strict")
        return response

    async def act(request: Request) -> Response:
        form = await request.form()
        origin = request.headers.get("origin")
        if not dash.logged_in(request) or not hmac.compare_digest(str(form.get("csrf", "")), dash.csrf):
            return page("refused.html", request, {"message": "log in with the token `groove ui` printed"}, 403)
        if origin is not None and urlsplit(origin).netloc != request.url.netloc:
            return page("refused.html", request, {"message": f"an action from another site ({origin})"}, 403)
        action = ACTIONS.get(request.path_params["action"])
        if action is None:
            return page("missing.html", request, {"message": "no such action"}, 404)
        fields = {k: str(v) for k, v in form.items() if k != "csrf"}
        back = _safe_next(fields.pop("back", None))
        try:
            done = await anyio.to_thread.run_sync(lambda: source.call(lambda c: action(c, fields, actor)))
        except (Refused, Missing) as exc:
            return back_with(back, "refused", str(exc))
        except CoordinatorDown as exc:
            return page("down.html", request, {"message": str(exc)}, 503)
        return back_with(back, "done", done)

    async def events(request: Request) -> Response:
        topic = request.path_params["topic"]
        if topic != "overview" and not (topic.startswith("board:") and is_uuid7(topic.removeprefix("board:"))):
            return Response("no such topic", status_code=404)
        if topic not in hub.watched() and len(hub.watched()) >= MAX_TOPICS:
            return Response(f"{MAX_TOPICS} boards are watched already", status_code=503)
        headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
        return StreamingResponse(hub.listen(topic), media_type="text/event-stream", headers=headers)

    async def metrics(_: Request) -> Response:
        body = await anyio.to_thread.run_sync(generate_latest, registry)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    async def not_found(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 404
        return page("missing.html", request, {"message": f"nothing at {request.url.path}"}, status)

    async def failed(request: Request, exc: Exception) -> Response:
        log.exception("%s failed", request.url.path, exc_info=exc)
        return page("refused.html", request, {"message": "the dashboard failed on this page (see its log)"}, 500)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> Any:
        async with anyio.create_task_group() as group:
            group.start_soon(dash.recorder.run)
            yield
            dash.recorder.stop()
        source.close()

    def query(request: Request) -> dict[str, str]:
        return dict(request.query_params)

    routes = [
        Route("/", shown("overview.html", lambda r: render_data(dash, "overview"))),
        Route("/learnings", shown("learnings.html", lambda r: pages.learnings(source, query(r)))),
        Route("/learnings/{id}", shown("learning.html", lambda r: pages.learning(source, r.path_params["id"]))),
        Route(
            "/sessions",
            shown("sessions.html", lambda r: pages.sessions(source, _injection_id(r.query_params.get("before")))),
        ),
        Route("/board", shown("memories.html", lambda r: pages.memories(source))),
        Route("/board/{id}", shown("board.html", lambda r: render_data(dash, f"board:{r.path_params['id']}", r))),
        Route("/events/{topic:path}", events),
        Route("/metrics", metrics),
        Route("/login", login),
        Route("/actions/{action}", act, methods=["POST"]),
        Mount("/static", StaticFiles(directory=str(_HERE / "static")), name="static"),
    ]
    return Starlette(routes=routes, lifespan=lifespan, exception_handlers={404: not_found, 405: not_found, 500: failed})


def _injection_id(raw: str | None) -> str | None:
    """A page's `before`: an injection id, or none (the newest page) for anything else."""
    return raw if raw is not None and is_uuid7(raw) else None


def render_data(dash: Dashboard, topic: str, request: Request | None = None) -> dict[str, Any]:
    """The data of a live topic's part of its page."""
    if topic == "overview":
        return pages.overview(dash.source) | {"samples": list(dash.recorder.samples), "topic": topic}
    memory_id = topic.removeprefix("board:")
    notes = request.query_params.get("notes", "") if request is not None else ""
    return pages.board(dash.source, memory_id, notes) | {"topic": topic}


def render_topic(dash: Dashboard, topic: str) -> str:
    """A live topic's fragment: the same template part its page includes."""
    name = "overview_body.html" if topic == "overview" else "board_body.html"
    context = render_data(dash, topic) | {"csrf": dash.csrf}
    return templates.get_template(name).render(context)
