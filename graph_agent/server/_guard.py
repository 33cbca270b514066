"""What keeps a page of another origin from using the server through the browser of the
person who visits it (a thread made, an agent run, a paused payment approved).

A browser says where a request comes from: ``Origin`` (on every request that is not a plain
``GET``/``HEAD``, and on any cross-origin ``fetch``) and ``Sec-Fetch-Site``. A request whose
origin is not the server's own (the scheme, host and port it was sent to) is refused (403),
unless ``allow_origins`` names it; those origins also get CORS headers, so their pages can
read the answers (CORS is off otherwise). Clients that are not browsers (curl, the SDKs)
send neither header and are let in. And a request body must be declared as JSON
(``Content-Type: application/json``, else 415): a page cannot send that to another origin
without the browser asking the server first, which an origin not allowed is refused.
With ``allow_hosts`` (``graph-agent serve`` on a loopback address: ``localhost``,
``127.0.0.1``, ``::1``), a request whose ``Host`` names another host is refused too: a page
of another site that reaches the server through DNS rebinding is same-origin, but its
requests name that site's host.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ._http import BearerAuth

__all__ = ["JsonBodies", "SameOrigin", "host_name", "origin_of", "protect"]

_DEFAULT_PORTS: Final = {"http": "80", "https": "443"}
_CHANGING: Final = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# what the answers carry that the clients read (the stream to rejoin, a page's total)
_EXPOSED: Final = ("Location", "Content-Location", "X-Pagination-Total")


def origin_of(url: str) -> str:
    """``url`` as an origin, ``scheme://host[:port]`` (lower case, default port dropped);
    ``ValueError`` for what is not one (a path, a query, no host, ``*``)."""
    parts = urlsplit(url.strip())
    if (
        parts.scheme not in _DEFAULT_PORTS
        or not parts.hostname
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
        or parts.username is not None
    ):
        raise ValueError(
            f"{url!r} is not an origin: give scheme://host[:port], as a browser sends it "
            "(http://localhost:3000), one origin each"
        )
    try:
        parts.port  # noqa: B018 (it checks the port)
    except ValueError:
        raise ValueError(f"{url!r} is not an origin: its port is not a number") from None
    return _origin(parts.scheme, parts.netloc.lower())


def _origin(scheme: str, netloc: str) -> str:
    """``scheme://netloc`` with the scheme's default port dropped, as browsers send it."""
    host, port = netloc, ""
    if netloc.startswith("["):  # an IPv6 address
        end = netloc.find("]") + 1
        host, port = netloc[:end], netloc[end + 1 :]
    elif ":" in netloc:
        host, _, port = netloc.rpartition(":")
    if not port or port == _DEFAULT_PORTS.get(scheme):
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def host_name(host: str) -> str:
    """The name a ``Host`` header gives (``[::1]:8123`` -> ``::1``), in lower case."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host[1:]
    return host.rpartition(":")[0] if host.count(":") == 1 else host


class SameOrigin:
    """ASGI middleware refusing (403) a browser's request from a page of another origin
    than the server's own, unless it is one of ``allowed``; with ``hosts``, also any request
    whose ``Host`` is not one of them (a page of another site that reaches a server on the
    loopback by DNS rebinding is same-origin, but names its own host)."""

    def __init__(
        self, app: ASGIApp, allowed: Iterable[str] = (), hosts: Iterable[str] | None = None
    ) -> None:
        self.app = app
        self.allowed = frozenset(allowed)
        self.hosts = None if hosts is None else frozenset(host_name(h) for h in hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refused = self._refused(scope)
            if refused is not None:
                await JSONResponse({"detail": refused}, 403)(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _refused(self, scope: Scope) -> str | None:
        headers = Headers(scope=scope)
        if self.hosts is not None:
            name = host_name(headers.get("host", ""))
            if name not in self.hosts:
                return (
                    f"this server does not answer to the host {name!r} (it answers to "
                    f"{', '.join(sorted(self.hosts))}); to serve under that name (behind a "
                    f"proxy), serve with --allow-host {name} (create_app(allow_hosts=[...]))"
                )
        origin = headers.get("origin")
        if origin is None:
            # a browser's request without Origin (a plain GET): its Sec-Fetch-Site says
            # whether a page of another site made it
            site = headers.get("sec-fetch-site")
            if site in ("cross-site", "same-site"):
                return (
                    "a page of another origin may not call this server; serve it with "
                    "--allow-origin (create_app(allow_origins=[...])) naming the page's origin, "
                    "and fetch in CORS mode"
                )
            return None
        origin = origin.strip().lower()
        if origin in self.allowed or origin in _own_origins(scope, headers):
            return None
        return (
            f"a page of another origin ({origin}) may not call this server; to let it in, "
            f"serve with --allow-origin {origin} (create_app(allow_origins=[{origin!r}]))"
        )


def _own_origins(scope: Scope, headers: Headers) -> set[str]:
    """The origins the request was sent to: the scheme with ``Host`` (and, behind a proxy,
    ``X-Forwarded-Proto``/``-Host``, which a page cannot set without asking first)."""
    schemes = {str(scope.get("scheme", "http"))}
    hosts = {headers.get("host", "")}
    forwarded_proto = headers.get("x-forwarded-proto")
    if forwarded_proto:
        schemes.add(forwarded_proto.split(",")[0].strip().lower())
    forwarded_host = headers.get("x-forwarded-host")
    if forwarded_host:
        hosts.add(forwarded_host.split(",")[0].strip())
    return {_origin(s, h.lower()) for s in schemes for h in hosts if h}


class JsonBodies:
    """ASGI middleware refusing (415) a request that changes something and sends a body
    not declared as JSON (``Content-Type: application/json``, with or without a charset)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in _CHANGING:
            headers = Headers(scope=scope)
            length = headers.get("content-length")
            has_body = "transfer-encoding" in headers or (length is not None and length != "0")
            given = headers.get("content-type", "")
            if has_body and given.partition(";")[0].strip().lower() != "application/json":
                detail = (
                    "the request body must be JSON, sent with Content-Type: application/json"
                    f" (got {given or 'no Content-Type'!r})"
                )
                await JSONResponse({"detail": detail}, 415)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def protect(
    app: Starlette,
    *,
    token: str | None,
    allow_origins: Iterable[str],
    allow_hosts: Iterable[str] | None = None,
) -> None:
    """Add to ``app`` (innermost first): the token check (with ``token``), the JSON body
    rule, CORS for ``allow_origins`` (when there are any), and the origin check outside
    them all, so that a preflight of an origin not allowed is refused as JSON too."""
    allowed = sorted({origin_of(origin) for origin in allow_origins})
    if token:
        app.add_middleware(BearerAuth, token=token, open_paths=("/ok",))
    app.add_middleware(JsonBodies)
    if allowed:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=allowed,
            allow_methods=["GET", "POST", "PATCH", "PUT", "DELETE"],
            allow_headers=["*"],
            expose_headers=_EXPOSED,
        )
    app.add_middleware(SameOrigin, allowed=allowed, hosts=allow_hosts)
