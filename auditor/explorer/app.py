"""`gradledger explorer`: a live web page of a deployment's runs, served by FastAPI behind the nodes' HTTP guard.

Pages (one HTML document; its script routes on the URL's fragment): the runs; a run (rounds and phases, held-out loss
per round drawn with uPlot, commitments with their status, attestations, disputes and verdicts, slashes with reasons,
shares and ETH per account); an account (stake, credits, shares and revenue as the contracts hold them now, and its
part in each run). JSON under /api/ is what the page draws, so scripts and tests read the same numbers.

Live: a background task polls the RPC for its latest block (`LiveRuns.poll`, one request while nothing happens) and
`/api/stream` announces every change as a server-sent event (`event: change`, data: the block and a version); the page
fetches its JSON again on each. The charting library is served from the pinned npm package under `web/` (`make
setup` installs it), never from a CDN: the page loads nothing from outside this server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse, StreamingResponse

from auditor.explorer.live import LiveRuns
from auditor.explorer.losses import LossBook
from auditor.explorer.views import build_account_history, build_run_view, build_runs_view, with_wei_strings
from auditor.sources import ArtifactSources
from node.account_view import read_account
from node.logs import get_logger, log_event
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.event_index import EventIndex
from protocol.adapters.http import HttpLimits, ServerHandle, serve_in_thread
from protocol.errors import GradledgerError
from protocol.history.events import to_address

HERE = Path(__file__).parent
STATIC = HERE / "static"
UPLOT = HERE / "web" / "node_modules" / "uplot" / "dist"
STATIC_FILES = {
    "explorer.js": (STATIC / "explorer.js", "text/javascript"),
    "explorer.css": (STATIC / "explorer.css", "text/css"),
    "uPlot.iife.min.js": (UPLOT / "uPlot.iife.min.js", "text/javascript"),
    "uPlot.min.css": (UPLOT / "uPlot.min.css", "text/css"),
}
KEEPALIVE_S = 15.0
"""An SSE comment this often keeps proxies from closing a quiet stream."""

logger = get_logger("explorer")


class ExplorerError(GradledgerError):
    """The explorer cannot start (its page's files are missing)."""


def check_static_files() -> None:
    """ExplorerError naming the first missing file of the page, and the command that installs it."""
    for name, (path, _) in STATIC_FILES.items():
        if not path.is_file():
            raise ExplorerError(
                f"the explorer's {name} is missing ({path}); run `make setup` (it installs the pinned uPlot)"
            )


class Changes:
    """A version number bumped on every change, awaited by the event streams (bumped from any thread)."""

    def __init__(self) -> None:
        self.version = 0
        self.loop: asyncio.AbstractEventLoop | None = None
        self.event: asyncio.Event | None = None

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop, self.event = loop, asyncio.Event()

    def bump(self) -> None:
        self.version += 1
        if self.loop is not None and self.event is not None:
            self.loop.call_soon_threadsafe(self.event.set)

    async def wait(self, seen: int, timeout_s: float) -> int:
        """The version, once it differs from `seen` or `timeout_s` passed."""
        if self.event is not None and self.version == seen:
            self.event.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.event.wait(), timeout_s)
        return self.version


def create_explorer_app(live: LiveRuns, losses: LossBook, changes: Changes, poll_s: float) -> FastAPI:
    """The explorer's app; `poll_s`: seconds between polls of the RPC's latest block."""
    client = ProtocolClient(live.chain)
    chain_lock = threading.Lock()  # one request at a time on the shared RPC client (poller and account reads)

    def poll_once() -> None:
        with chain_lock:
            try:
                live.poll()
            except Exception as exc:  # the page keeps its last view, and says why it is not moving
                error = str(exc) if isinstance(exc, GradledgerError) else f"{type(exc).__name__}: {exc}"
                if live.error != error:
                    log_event(logger, "chain read failed", error=error)
                    live.error = error
                    changes.bump()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        changes.bind(asyncio.get_running_loop())

        async def follow() -> None:
            while True:
                await asyncio.to_thread(poll_once)
                await asyncio.sleep(poll_s)

        task = asyncio.create_task(follow())
        try:
            yield
        finally:
            task.cancel()
            losses.stop()

    app = FastAPI(title="gradledger explorer", lifespan=lifespan)

    @app.get("/", response_class=HTMLResponse)
    def index() -> HTMLResponse:
        return HTMLResponse((STATIC / "index.html").read_text())

    @app.get("/static/{name}")
    def static(name: str) -> FileResponse:
        if name not in STATIC_FILES:
            raise HTTPException(404, f"no static file {name!r}")
        path, media = STATIC_FILES[name]
        return FileResponse(path, media_type=media)

    @app.get("/api/health")
    def health() -> dict[str, Any]:
        return {**live.status(), "version": changes.version}

    @app.get("/api/runs")
    def runs() -> dict[str, Any]:
        head, summaries, _ = live.snapshot()
        return build_runs_view(summaries, head.block, head.time)

    @app.get("/api/runs/{run_id}")
    def run(run_id: int) -> dict[str, Any]:
        head, summaries, histories = live.snapshot()
        if run_id not in histories:
            known = ", ".join(str(s.run_id) for s in summaries) or "none"
            raise HTTPException(404, f"run {run_id} does not exist in this deployment (runs: {known})")
        history = histories[run_id]
        known_losses = losses.losses_of(history)
        return build_run_view(history, head.time, head.block, known_losses.losses, known_losses.note)

    @app.get("/api/accounts/{address}")
    def account(address: str) -> dict[str, Any]:
        try:
            checksummed = to_address(address)
        except ValueError:
            raise HTTPException(400, f"{address!r} is not an address: give 0x and 40 hex digits") from None
        head, _, histories = live.snapshot()
        part = build_account_history([histories[r] for r in sorted(histories)], checksummed)
        with chain_lock:
            now = read_account(client, checksummed, [p["run_id"] for p in part])
        return {"block": head.block, "address": checksummed, "contracts": with_wei_strings(now), "runs": part}

    @app.get("/api/stream")
    async def stream(request: Request) -> StreamingResponse:
        async def events() -> AsyncIterator[str]:
            seen = -1
            while not await request.is_disconnected():
                version = await changes.wait(seen, KEEPALIVE_S)
                if version == seen:
                    yield ": keepalive\n\n"
                    continue
                seen = version
                yield f"event: change\ndata: {json.dumps({**live.status(), 'version': version})}\n\n"

        return StreamingResponse(events(), media_type="text/event-stream", headers={"Cache-Control": "no-store"})

    return app


@dataclass
class RunningExplorer:
    """A served explorer: its server, the runs it follows, its loss book."""

    handle: ServerHandle
    live: LiveRuns
    losses: LossBook

    @property
    def url(self) -> str:
        return self.handle.url

    def stop(self) -> None:
        self.handle.stop()
        self.losses.stop()


def start_explorer(
    index: EventIndex,
    sources: ArtifactSources | None,
    labels: Mapping[str, str],
    host: str = "127.0.0.1",
    port: int = 0,
    poll_s: float = 1.0,
) -> RunningExplorer:
    """Catch the index up, then serve the explorer in a background thread behind the HTTP guard (an open event
    stream takes no request slot: `free_paths`)."""
    check_static_files()
    changes = Changes()
    losses = LossBook(sources, changes.bump)
    live = LiveRuns(index, labels, changes.bump)
    live.poll()  # the index caught up before the first page is served
    app = create_explorer_app(live, losses, changes, poll_s)
    handle = serve_in_thread(app, host, port, HttpLimits(free_paths=("/api/health", "/api/stream")))
    return RunningExplorer(handle, live, losses)
