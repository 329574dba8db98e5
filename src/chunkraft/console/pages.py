"""The console's HTML: a shell per page (the script fills it in) and the login page.

No inline script or style: everything the page loads comes from ``/ui/static`` and ``/ui/api``
of this controller, and :data:`SECURITY_HEADERS` (a Content-Security-Policy of ``'self'``) makes
the browser refuse anything else, so a page can never fetch from another host. Every value
written into the HTML is escaped.
"""

from __future__ import annotations

from html import escape

__all__ = ["NAV", "SCRIPTS", "SECURITY_HEADERS", "login_page", "page_shell"]

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; frame-src 'self'; frame-ancestors 'self'; form-action 'self'; "
        "base-uri 'none'; object-src 'none'"),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # "no-referrer" would make the Origin of a form post "null"
    "Cache-Control": "no-store",
}

SCRIPTS = ("timeline.js", "console_common.js", "topic_page.js", "console.js")
"""The pages' scripts, in the order they run (each ``defer``, so in document order): the
timeline drawing, the shared helpers, the topic page, then the other pages and the start."""

NAV = (("cluster", "/ui", "Cluster"), ("brokers", "/ui/brokers", "Brokers"),
       ("topics", "/ui/topics", "Topics"), ("configs", "/ui/configs", "Configs"),
       ("acls", "/ui/acls", "ACLs"), ("audit", "/ui/audit", "Audit"))


def _head(title: str) -> str:
    return ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(title)} · chunkraft</title>"
            # No favicon request: the browser would ask /favicon.ico, which needs credentials.
            "<link rel=\"icon\" href=\"data:,\">"
            "<link rel=\"stylesheet\" href=\"/ui/static/console.css\">")


def page_shell(page: str, title: str, *, principal: str, csrf: str, cluster_id: str,
               node_id: int, data: dict[str, str] | None = None) -> str:
    """A console page: the header (navigation, who is logged in, which controller answers),
    an empty ``<main>`` for ``console.js`` and what it needs in ``data-*`` attributes."""
    current = ' class="current"'
    links = "".join(
        f"<a href=\"{href}\"{current if key == page else ''}>{label}</a>"
        for key, href, label in NAV)
    attributes = "".join(f" data-{escape(k)}=\"{escape(v)}\"" for k, v in (data or {}).items())
    return (
        _head(title)
        + f"<meta name=\"csrf-token\" content=\"{escape(csrf)}\">"
        + f"<meta name=\"cluster-id\" content=\"{escape(cluster_id)}\">"
        + "".join(f"<script src=\"/ui/static/{name}\" defer></script>" for name in SCRIPTS)
        + "</head>"
        + f"<body data-page=\"{escape(page)}\"{attributes}>"
        + "<header><span class=\"brand\">chunkraft</span><nav>" + links + "</nav>"
        + f"<span class=\"who\">{escape(principal)} · controller {node_id}"
        + " <span id=\"live\" class=\"live\" title=\"metadata offset this page reflects\">"
        + "</span> <button id=\"logout\" type=\"button\">Log out</button></span></header>"
        + f"<main id=\"main\"><h1>{escape(title)}</h1><p class=\"muted\">Loading…</p></main>"
        + "</body></html>")


def login_page(*, next_path: str, error: str | None, certificate: str | None,
               tokens: bool) -> str:
    """The login form: a bearer token (when the controller accepts tokens) and, when the
    connection presented a verified client certificate, a button to log in as it."""
    parts = [_head("Log in"), "</head><body class=\"login\"><main><h1>chunkraft console</h1>"]
    if error:
        parts.append(f"<p class=\"error\" id=\"login-error\">{escape(error)}</p>")
    target = f"<input type=\"hidden\" name=\"next\" value=\"{escape(next_path)}\">"
    if tokens:
        parts.append(
            "<form method=\"post\" action=\"/ui/login\" id=\"token-login\">" + target
            + "<label>Bearer token <input type=\"password\" name=\"token\" id=\"token\" "
            "autocomplete=\"off\" required></label> <button type=\"submit\" id=\"login\">"
            "Log in</button></form>")
    if certificate:
        parts.append(
            "<form method=\"post\" action=\"/ui/login\" id=\"certificate-login\">" + target
            + "<input type=\"hidden\" name=\"method\" value=\"certificate\">"
            f"<button type=\"submit\">Log in as {escape(certificate)} (client certificate)"
            "</button></form>")
    if not tokens and not certificate:
        parts.append("<p>This controller accepts neither bearer tokens nor, on this "
                     "connection, a client certificate.</p>")
    parts.append("<p class=\"muted\">The session lasts until you log out, after an hour "
                 "idle, or after eight hours.</p></main></body></html>")
    return "".join(parts)
