"""``/ui``: the console's pages, its login and logout, its static files and the audit report.

A page is a shell (:func:`~.pages.page_shell`) that ``console.js`` fills from ``/ui/api``; it
needs a console session (the middleware sends a request without one to the login page). The
login takes a bearer token (checked against the credentials file) or the connection's verified
client certificate, and answers with the session cookie: HttpOnly, SameSite=Strict, Secure on
https, for the whole controller (``Path=/``, so the pages' calls to ``/v3`` carry it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from importlib import resources
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, Request, Response
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse

from chunkraft.api.authentication import Authenticator, principal_of
from chunkraft.api.context import ControllerContext
from chunkraft.api.errors import error_response
from chunkraft.console.access import ConsoleAccess
from chunkraft.console.audit_report import newest_report
from chunkraft.console.pages import NAV, SCRIPTS, SECURITY_HEADERS, login_page, page_shell
from chunkraft.console.session_middleware import certificate_of, own_origin, session_of
from chunkraft.console.sessions import Session, SessionStore, cookie_name
from chunkraft.error_codes import Errors
from chunkraft.protocol.acls import AclOperation

__all__ = ["MAX_LOGIN_BODY", "router", "safe_next"]

router = APIRouter(prefix="/ui", include_in_schema=False)

MAX_LOGIN_BODY = 8192
STATIC_TYPES = {**{name: "text/javascript; charset=utf-8" for name in SCRIPTS},
                "console.css": "text/css; charset=utf-8"}
_static_cache: dict[str, bytes] = {}


def _context(request: Request) -> ControllerContext:
    context: ControllerContext = request.app.state.context
    return context


def _store(request: Request) -> SessionStore:
    store: SessionStore = request.app.state.console_sessions
    return store


def safe_next(value: str | None) -> str:
    """Where a login may send the browser: a console path of this controller, else ``/ui``
    (never another site: ``//host`` and ``/\\host`` are refused)."""
    if (not value or not value.startswith("/ui") or value.startswith("//")
            or "\\" in value or any(ord(c) < 32 for c in value)):
        return "/ui"
    return value


def _html(text: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(text, status_code=status, headers=dict(SECURITY_HEADERS))


def _login_answer(request: Request, *, next_path: str, error: str | None,
                  status: int = 200) -> HTMLResponse:
    authenticator: Authenticator | None = _context(request).authenticator
    tokens = authenticator is None or authenticator.credentials is not None
    certificates = authenticator is not None and authenticator.certificates
    certificate = certificate_of(request.scope) if certificates else None
    return _html(login_page(next_path=next_path, error=error, certificate=certificate,
                            tokens=tokens), status)


@router.get("/login")
async def login_form(request: Request, next: str | None = None) -> Response:
    return _login_answer(request, next_path=safe_next(next), error=None)


@router.post("/login")
async def login(request: Request) -> Response:
    """A form post: ``token`` (or ``method=certificate``) and ``next``. From another origin it
    is refused (a login forged by another site would log the victim in as someone else)."""
    origin = request.headers.get("origin")
    if origin is not None and origin != own_origin(request.scope):
        return error_response(Errors.INVALID_REQUEST, "a login from another origin is "
                              "refused", 403)
    body = b""
    async for piece in request.stream():
        body += piece
        if len(body) > MAX_LOGIN_BODY:
            return error_response(Errors.MESSAGE_TOO_LARGE, "the login form is too large",
                                  413)
    form = {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace")).items() if v}
    next_path = safe_next(form.get("next"))
    context = _context(request)
    authenticator = context.authenticator
    store = _store(request)
    if form.get("method") == "certificate":
        name = certificate_of(request.scope)
        if authenticator is None or not authenticator.certificates or name is None:
            return _login_answer(request, next_path=next_path, status=401,
                                 error="no verified client certificate on this connection")
        session = store.create(name, None)
    else:
        token = form.get("token", "").strip()
        credentials = authenticator.credentials if authenticator is not None else None
        name = credentials.principal_for(token) if credentials is not None and token else None
        if name is None:
            return _login_answer(request, next_path=next_path, status=401,
                                 error="invalid bearer token")
        session = store.create(name, token)
    answer = RedirectResponse(next_path, status_code=303)
    _set_cookie(answer, request, context, session)
    return answer


def _set_cookie(answer: Response, request: Request, context: ControllerContext,
                session: Session) -> None:
    answer.set_cookie(cookie_name(context.node_id), session.session_id, httponly=True,
                      samesite="strict", secure=request.url.scheme == "https", path="/")


@router.post("/logout")
async def logout(request: Request) -> Response:
    """Ends the session (the middleware has checked its CSRF token)."""
    session = session_of(request.scope)
    if session is not None:
        _store(request).end(session.session_id)
    answer = Response(status_code=204)
    answer.delete_cookie(cookie_name(_context(request).node_id), path="/")
    return answer


@router.get("/static/{name}")
async def static(name: str) -> Response:
    media_type = STATIC_TYPES.get(name)
    if media_type is None:
        return Response(status_code=404)
    data = _static_cache.get(name)
    if data is None:
        data = resources.files("chunkraft.console").joinpath("static", name).read_bytes()
        _static_cache[name] = data
    return Response(data, media_type=media_type,
                    headers={"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"})


def _page(request: Request, page: str, title: str, **data: str) -> Response:
    session = session_of(request.scope)
    if session is None:  # credentials of its own but no session: pages need one (CSRF)
        return RedirectResponse("/ui/login?next=" + quote(request.url.path, safe=""),
                                status_code=303)
    context = _context(request)
    return _html(page_shell(page, title, principal=principal_of(request).name,
                            csrf=session.csrf, cluster_id=context.cluster_id_text,
                            node_id=context.node_id, data=data))


def _plain_page(page: str, title: str) -> Callable[[Request], Awaitable[Response]]:
    async def handler(request: Request) -> Response:
        return _page(request, page, title)

    handler.__name__ = f"{page}_page"
    return handler


# The navigation's pages that need nothing but their shell (the audit page names its report).
for _page_key, _path, _title in NAV:
    if _page_key != "audit":
        router.add_api_route(_path.removeprefix("/ui"), _plain_page(_page_key, _title),
                             methods=["GET"])


@router.get("/topics/{topic_name}")
async def topic_page(request: Request, topic_name: str) -> Response:
    return _page(request, "topic", f"Topic {topic_name}", topic=topic_name)


@router.get("/audit")
async def audit_page(request: Request) -> Response:
    context = _context(request)
    directory = context.export_dir
    report = newest_report(directory) if directory is not None else None
    return _page(request, "audit", "Audit", export_dir=str(directory or ""),
                 report="/ui/audit/report.html" if report is not None else "")


@router.get("/audit/report.html")
async def audit_report(request: Request) -> Response:
    """The newest report.html under the export directory (DESCRIBE on the cluster: a report
    names every topic)."""
    context = _context(request)
    access = ConsoleAccess(context.controller.image, principal_of(request), context.authorizer)
    if not access.cluster(AclOperation.DESCRIBE):
        return error_response(Errors.CLUSTER_AUTHORIZATION_FAILED,
                              f"{access.principal.name} may not DESCRIBE the cluster", 403)
    directory = context.export_dir
    report = newest_report(directory) if directory is not None else None
    if report is None:
        return error_response(Errors.INVALID_REQUEST, "no audit report under the export "
                              "directory", 404)
    # The report's own inline styles are allowed; nothing it names may load from elsewhere.
    return FileResponse(report, media_type="text/html; charset=utf-8", headers={
        "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
        "img-src data:; frame-ancestors 'self'; sandbox",
        "X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"})
