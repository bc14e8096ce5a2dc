"""What every node's HTTP server refuses before its app sees a request, and what its errors may say.

Found in the field (issue 18): 100,000 nested `[` in a 200 KB vote killed a verifier (py_ecc raises the
recursion limit to 100,000, so the JSON parser recursed until the server thread's C stack overflowed); a 40 MB
body was read in full, parsed on the event loop for 60 s while `/health` and the vote exchange waited, and its
422 echoed the 40 MB back. So every node app is served (`serve_in_thread`) behind `HttpGuard`, an ASGI
middleware that, per request and before routing:

- refuses a declared body larger than the route's limit with 413 at once, without reading it, and a body
  that grows past the limit while it streams in (chunked) as soon as it does; the connection is closed, so
  nothing more of it is read;
- gives the whole body a read deadline (408): a client trickling bytes holds no worker and no slot;
- scans the raw bytes for bracket depth (outside JSON strings) and refuses deeper than `max_json_depth` with
  400, so no parser ever recurses on hostile input;
- runs at most `lane_slots` requests of a lane in the app at once (waiting `lane_wait_s` for a slot, then
  503); the jury vote exchange has its own lane, so a flood of other requests cannot starve it, and the
  lanes together hold fewer threads than the threadpool has, so `/health` always finds one.

`install_error_handlers` makes 422s say where and what is wrong without the input value, and bounds every
error detail. `GuardedH11Protocol` closes a connection whose request head does not arrive within
`head_deadline_s` (uvicorn has no such timeout). The limits and their reasons are in docs/nodes.md.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import h11
from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from uvicorn.protocols.http.h11_impl import H11Protocol

from protocol.bounded_json import MAX_JSON_DEPTH, find_json_depth

logger = logging.getLogger("gradledger.http")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

KIB = 1024
MAX_DETAIL_CHARS = 500
"""The longest error detail (or 422 message) a node sends; longer ones are cut and say so."""
MAX_VALIDATION_ERRORS = 10


@dataclass(frozen=True)
class RouteLimit:
    """Limits for the requests whose method is `method` and whose path starts with `path_prefix` ("": any)."""

    method: str
    path_prefix: str
    max_body_bytes: int
    lane: str


@dataclass(frozen=True)
class HttpLimits:
    """The limits of one server; `serve_in_thread` uses `DEFAULT_LIMITS` (docs/nodes.md, HTTP limits)."""

    max_body_bytes: int = 16 * KIB
    max_json_depth: int = MAX_JSON_DEPTH
    body_deadline_s: float = 10.0
    head_deadline_s: float = 10.0
    keep_alive_s: int = 5
    max_head_bytes: int = 16 * KIB
    max_buffered_bytes: int = 32 * 1024 * KIB
    lane_slots: dict[str, int] = field(default_factory=lambda: {"default": 16, "jury": 8})
    lane_wait_s: float = 5.0
    routes: tuple[RouteLimit, ...] = (RouteLimit("POST", "/jury/votes", 4 * KIB, "jury"),)
    free_paths: tuple[str, ...] = ("/health", "/identity", "/metrics")
    """Cheap reads that take no lane slot, so a full lane never delays them."""

    def route_of(self, method: str, path: str) -> RouteLimit:
        for route in self.routes:
            if method == route.method and path.startswith(route.path_prefix):
                return route
        lane = "jury" if path.startswith("/jury/") else "default"
        return RouteLimit(method, "", self.max_body_bytes, lane)


DEFAULT_LIMITS = HttpLimits()


def bound_text(text: str, limit: int = MAX_DETAIL_CHARS) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit} more characters cut)"


class HttpGuard:
    """ASGI middleware: size, depth, deadline and lane limits before the app sees a request (module doc)."""

    def __init__(self, app: ASGIApp, limits: HttpLimits = DEFAULT_LIMITS) -> None:
        self.app = app
        self.limits = limits
        self.buffered = 0
        self._lanes: dict[str, asyncio.Semaphore] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method, path = scope["method"], scope["path"]
        route = self.limits.route_of(method, path)
        declared = _content_length(scope)
        if declared is not None and declared > route.max_body_bytes:
            await self._refuse(send, scope, 413, _too_large(route), close=True)
            return
        body = await self._read_body(scope, receive, send, route)
        if body is None:
            return
        if body and find_json_depth(body, self.limits.max_json_depth) > self.limits.max_json_depth:
            detail = f"JSON nested deeper than {self.limits.max_json_depth} levels; send a flatter document"
            await self._refuse(send, scope, 400, detail)
            return
        replay = _replay(body, receive)
        if path in self.limits.free_paths:
            await self.app(scope, replay, send)
            return
        lane = self._lanes.setdefault(route.lane, asyncio.Semaphore(self.limits.lane_slots.get(route.lane, 16)))
        try:
            await asyncio.wait_for(lane.acquire(), self.limits.lane_wait_s)
        except TimeoutError:
            await self._refuse(send, scope, 503, f"busy: every {route.lane} slot is taken; retry in a second")
            return
        held = [True]

        async def send_releasing(message: Message) -> None:
            """The handler is done once its response starts: a slow reader of the response holds no slot."""
            if held[0] and message["type"] == "http.response.start":
                held[0] = False
                lane.release()
            await send(message)

        try:
            await self.app(scope, replay, send_releasing)
        finally:
            if held[0]:
                lane.release()

    async def _read_body(self, scope: Scope, receive: Receive, send: Send, route: RouteLimit) -> bytes | None:
        """The whole body within the route's size limit and the read deadline, or None once refused."""
        chunks: list[bytes] = []
        size = 0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.limits.body_deadline_s
        try:
            while True:
                try:
                    message = await asyncio.wait_for(receive(), max(deadline - loop.time(), 0.0))
                except TimeoutError:
                    detail = f"request body not received within {self.limits.body_deadline_s:g} s"
                    await self._refuse(send, scope, 408, detail, close=True)
                    return None
                if message["type"] == "http.disconnect":
                    return None
                chunk = message.get("body", b"")
                size += len(chunk)
                self.buffered += len(chunk)
                if size > route.max_body_bytes:
                    await self._refuse(send, scope, 413, _too_large(route), close=True)
                    return None
                if self.buffered > self.limits.max_buffered_bytes:
                    await self._refuse(send, scope, 503, "busy: too many request bodies in flight; retry", close=True)
                    return None
                chunks.append(chunk)
                if not message.get("more_body", False):
                    return b"".join(chunks)
        finally:
            self.buffered -= size

    async def _refuse(self, send: Send, scope: Scope, status: int, detail: str, close: bool = False) -> None:
        logger.warning(
            "request refused",
            extra={
                "fields": {
                    "status": status,
                    "method": scope["method"],
                    "path": bound_text(scope["path"], 80),
                    "client": _client(scope),
                    "reason": detail,
                }
            },
        )
        body = json.dumps({"detail": detail}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        if close:  # the rest of the body is never read: the connection cannot carry another request
            headers.append((b"connection", b"close"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that hands the app the buffered body, then defers to the server (disconnect)."""
    pending = [True]

    async def replay() -> Message:
        if pending[0]:
            pending[0] = False
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # h11 refuses it before the app; nothing to decide here
    return None


def _too_large(route: RouteLimit) -> str:
    """Names the limit and the route it belongs to, never the request's own path (which may be 16 KiB)."""
    where = f"{route.method} {route.path_prefix}" if route.path_prefix else f"a {route.method} request here"
    return f"request body larger than {route.max_body_bytes} bytes, the limit of {where}"


def _client(scope: Scope) -> str:
    client = scope.get("client")
    return f"{client[0]}:{client[1]}" if client else "?"


# -- error bodies ----------------------------------------------------------------------------------------------


async def validation_error_handler(request: Request, exc: Exception) -> Response:
    """A 422 that says where and what is wrong, never the input (FastAPI's default echoes it whole)."""
    errors = exc.errors() if isinstance(exc, RequestValidationError) else []
    detail = [
        {
            "loc": [bound_text(str(part), 64) if isinstance(part, str) else part for part in error.get("loc", ())][:8],
            "msg": bound_text(str(error.get("msg", "")), 200),
            "type": bound_text(str(error.get("type", "")), 64),
        }
        for error in errors[:MAX_VALIDATION_ERRORS]
    ]
    body: dict[str, Any] = {"detail": detail}
    if len(errors) > MAX_VALIDATION_ERRORS:
        body["more_errors"] = len(errors) - MAX_VALIDATION_ERRORS
    return JSONResponse(body, status_code=422)


async def bounded_http_error_handler(request: Request, exc: Exception) -> Response:
    """An HTTPException's detail cut to `MAX_DETAIL_CHARS`: a detail quoting a path or a value stays small."""
    assert isinstance(exc, StarletteHTTPException)
    if isinstance(exc.detail, str) and len(exc.detail) > MAX_DETAIL_CHARS:
        exc = StarletteHTTPException(exc.status_code, bound_text(exc.detail), exc.headers)
    return await http_exception_handler(request, exc)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, validation_error_handler)
    app.add_exception_handler(StarletteHTTPException, bounded_http_error_handler)
    app.middleware_stack = None  # rebuilt with the handlers on the next request


# -- the request head ------------------------------------------------------------------------------------------


class GuardedH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol plus a deadline for the request head (`HttpLimits.head_deadline_s`).

    uvicorn times out idle keep-alive connections but not a head that trickles in, so a client sending a
    header byte a second would hold its connection forever; this closes it once the deadline passes.
    """

    head_deadline_s = DEFAULT_LIMITS.head_deadline_s
    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._watch_head()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)

    def _watch_head(self) -> None:
        """Arm the deadline while a head is awaited (h11 still IDLE with bytes or a new connection)."""
        if self.conn.their_state is h11.IDLE and (self.cycle is None or self.cycle.response_complete):
            if self._head_timer is None and (self.cycle is None or self.conn.trailing_data[0]):
                self._head_timer = self.loop.call_later(self.head_deadline_s, self._head_expired)
        else:
            self._cancel_head_timer()

    def _head_expired(self) -> None:
        self._head_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            logger.warning("request head not received in time; connection closed",
                           extra={"fields": {"deadline_s": self.head_deadline_s}})  # fmt: skip
            self.transport.close()

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None


def make_protocol(limits: HttpLimits) -> type[GuardedH11Protocol]:
    """The uvicorn protocol class enforcing `limits.head_deadline_s`."""
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {"head_deadline_s": limits.head_deadline_s})
