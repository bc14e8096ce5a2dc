"""HTTP plumbing shared by every node: the app skeleton, serving it, and talking to peers.

Every node (solver, verifier, whistleblower) answers `GET /health`, `GET /metrics`, `GET /identity` (its role
and address, so peers can map chain addresses to URLs) and serves its artifact store at
`GET /artifacts/{hash}`. `serve_in_thread` runs uvicorn in a background thread on a given or
free port, behind the request limits of protocol/adapters/http_guard.py, and returns once it
accepts connections. Everything a node reads from a peer (`PeerSet`, `get_peer_json`) ends by a total
deadline, not only a per-read timeout (protocol/adapters/deadlines.py); a checker charges a seat's fetches
to one budget (`PeerSet.budgeted`), so a solver that serves slowly is judged as one that does not serve.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI
from fastapi.responses import JSONResponse, Response
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from protocol.adapters.artifacts import (
    ArtifactDeadlineError,
    ArtifactError,
    ArtifactNotFoundError,
    ArtifactReporter,
    ArtifactStore,
    fetch_artifact,
    make_artifact_router,
)
from protocol.adapters.deadlines import (
    DEFAULT_FETCH_DEADLINE_S,
    DeadlineMissedError,
    FetchBudget,
    FetchDeadline,
    make_deadline_client,
)
from protocol.adapters.http_guard import DEFAULT_LIMITS, HttpGuard, HttpLimits, install_error_handlers, make_protocol
from protocol.adapters.peer_guard import PeerHostGuard
from protocol.bounded_json import load_bounded_json
from protocol.errors import GradledgerError
from protocol.hashing import hash_to_hex
from protocol.peer_hosts import PrivatePeerError, RefusedPeerUrlError


class PeerError(GradledgerError):
    """No peer could provide what was asked."""


class PeerDeadlineError(PeerError, DeadlineMissedError):
    """A peer did not finish a JSON answer (a commitment document, an identity) by its deadline: unavailable."""


MAX_PEER_JSON_BYTES = 16 * 1024 * 1024
"""The largest JSON answer read from a peer (a commitment document of 10,000 segments is about 3 MB)."""
DEFAULT_PEER_JSON_DEADLINE_S = 30.0
"""The deadline of a JSON answer when neither the call nor the client names a timeout."""


def get_peer_json(
    client: httpx.Client, url: str, timeout_s: float | None = None, deadline: FetchDeadline | None = None
) -> Any:
    """GET `url` and parse its JSON answer as untrusted input: read at most MAX_PEER_JSON_BYTES, refuse JSON nested
    deeper than MAX_JSON_DEPTH unparsed (protocol/bounded_json.py: a hostile peer's 100,000 `[` would otherwise
    overflow the stack and kill this node). PeerError on any failure, naming the peer and what it did.

    # INVARIANT: the whole answer arrives by `deadline` (default: `timeout_s`, else the client's read timeout, from
    now), however the peer paces it: a peer dripping its answer cannot hold this node (PeerDeadlineError).
    """
    seconds = timeout_s if timeout_s is not None else (client.timeout.read or DEFAULT_PEER_JSON_DEADLINE_S)
    deadline = deadline or FetchDeadline.after(seconds, f"the answer of {url}")

    def missed(received: int) -> PeerDeadlineError:
        return PeerDeadlineError(
            f"peer {url} did not answer within the {deadline.seconds:g} s deadline of {deadline.what} "
            f"({received:,} bytes received): counted as unavailable; its operator must serve faster "
            '(docs/nodes.md, "Fetch deadlines")'
        )

    if deadline.expired():
        raise missed(0)
    body = bytearray()
    try:
        with deadline.enforced(), client.stream("GET", url, timeout=deadline.bound(seconds)) as response:
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_PEER_JSON_BYTES:
                    raise PeerError(f"peer {url} answered more than {MAX_PEER_JSON_BYTES:,} bytes: not read further")
                if deadline.expired():
                    raise missed(len(body))
            status = response.status_code
    except httpx.HTTPError as exc:
        if deadline.expired():
            raise missed(len(body)) from exc
        raise PeerError(f"peer {url} unreachable: {exc}") from exc
    if status != 200:
        raise PeerError(f"peer {url} answered {status}: {bytes(body[:200]).decode(errors='replace')}")
    try:
        return load_bounded_json(bytes(body))
    except ValueError as exc:
        raise PeerError(f"peer {url} answered malformed JSON: {str(exc)[:200]}") from None


def make_node_app(
    role: str,
    address: str,
    store: ArtifactStore,
    health: Callable[[], dict] | None = None,
    metrics: Callable[[], bytes] | None = None,
) -> FastAPI:
    """The FastAPI app every node starts from; `metrics` (Prometheus text) is served at `GET /metrics` when given."""
    app = FastAPI(title=f"gradledger {role}", version="1")

    @app.get("/health")
    def get_health() -> JSONResponse:
        """200 while the node works; 503 when `health()` says "status": "unhealthy" (its worker died, or it missed
        a window it was due in), with `reasons` saying why."""
        body = {"status": "ok", "role": role, "address": address, "reasons": [], **(health() if health else {})}
        return JSONResponse(body, status_code=503 if body["status"] == "unhealthy" else 200)

    if metrics is not None:
        scrape = metrics

        @app.get("/metrics")
        def get_metrics() -> Response:
            """The node's Prometheus metrics: what touched its money (docs/nodes.md), and the role's own."""
            return Response(scrape(), media_type=CONTENT_TYPE_LATEST)

    @app.get("/identity")
    def get_identity() -> dict:
        return {"role": role, "address": address}

    app.include_router(make_artifact_router(store))
    return app


@dataclass
class ServerHandle:
    server: uvicorn.Server
    thread: threading.Thread
    url: str

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def serve_in_thread(
    app: FastAPI, host: str = "127.0.0.1", port: int = 0, limits: HttpLimits = DEFAULT_LIMITS
) -> ServerHandle:
    """Run `app` with uvicorn in a daemon thread behind the HTTP guard; return when it is listening.

    Every node is served here, so this is where the guard goes (protocol/adapters/http_guard.py): body size,
    JSON depth and read-deadline limits before the app, bounded error bodies that never echo the input, a
    deadline for the request head, and uvicorn's keep-alive timeout.
    """
    install_error_handlers(app)
    config = uvicorn.Config(
        HttpGuard(app, limits), host=host, port=port, log_level="warning", access_log=False,
        http=make_protocol(limits), timeout_keep_alive=limits.keep_alive_s,
        h11_max_incomplete_event_size=limits.max_head_bytes,
    )  # fmt: skip
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="http", daemon=True)
    thread.start()
    started = threading.Event()
    while not server.started:
        if not thread.is_alive():
            raise GradledgerError(f"HTTP server failed to start on {host}:{port} (port taken?)")
        started.wait(0.01)
    bound = server.servers[0].sockets[0].getsockname()[1]
    return ServerHandle(server, thread, f"http://{host}:{bound}")


class PeerSet:
    """The peers a node knows (base URLs), their identities, and artifact fetching across them.

    URLs come from the operator (`urls`, `add`: `--peer`, peers.txt) or from other accounts' announcements
    (`set_announced`). Unless `allow_private_peers`, an announced URL whose host is or resolves to a loopback,
    private, link-local or other non-public address is refused (never fetched from, reported once through
    `reporter`), and every connection to a host the operator did not name is checked again where it is made
    (protocol/adapters/peer_guard.py; issue 36, finding 10). Devnets and tests on one machine allow them.
    """

    def __init__(
        self,
        urls: Sequence[str],
        timeout_s: float = 30.0,
        *,
        allow_private_peers: bool = False,
        fetch_deadline_s: float = DEFAULT_FETCH_DEADLINE_S,
    ) -> None:
        self.guard = None if allow_private_peers else PeerHostGuard(report=self._report_refused)
        # every transfer ends by its deadline (protocol/adapters/deadlines.py); no proxy from the environment for a
        # guarded client (a proxy would resolve and connect out of the guard's sight)
        self.client = make_deadline_client(timeout_s, self.guard, trust_env=self.guard is None)
        self.fetch_deadline_s = fetch_deadline_s
        """The deadline of each peer's attempt at an artifact; inside `budgeted` the budget's remainder, if shorter."""
        self._scope = threading.local()
        self.urls: list[str] = []
        self._by_address: dict[str, str] = {}
        self._roles: dict[str, tuple[str, str]] = {}
        self.announced: dict[str, str] = {}
        """Where accounts said on-chain that they serve (PeerDirectory; lower-case address -> URL)."""
        self.refused: dict[str, str] = {}
        """Accounts whose announced URL this node refuses to fetch from (lower-case address -> URL)."""
        self.resolve: Callable[[str], str] | None = None
        """Where an account says it serves (PeerDirectory), asked when no known peer is that account."""
        self.reporter: ArtifactReporter | None = None
        """Hears (event, log level, fields) of each refused peer once; the node logs it (node/bootstrap.py)."""
        self._reported: set[tuple[str, str]] = set()
        self.add(urls)

    def add(self, urls: Sequence[str]) -> None:
        """Learn peers the operator named (kept in order, no duplicates): never refused, whatever their address."""
        for url in urls:
            if self.guard is not None:
                self.guard.trust(url)
            self._learn(url)

    def _learn(self, url: str) -> None:
        if url.rstrip("/") not in self.urls:
            self.urls.append(url.rstrip("/"))

    def set_announced(self, address: str, url: str) -> bool:
        """Record `address`'s on-chain announced URL and learn it as a peer; False (and reported once) when this node
        refuses to fetch from it (`allow_private_peers` off and a non-public host)."""
        key, url = address.lower(), url.rstrip("/")
        if self.guard is not None:
            try:
                self.guard.check_announced(url)
            except RefusedPeerUrlError as exc:
                self.announced.pop(key, None)
                self.refused[key] = url
                if (key, url) not in self._reported:
                    self._reported.add((key, url))
                    self._report("peer refused", {"account": address, "url": url, "why": exc.why})
                return False
        self.refused.pop(key, None)
        self.announced[key] = url
        self._learn(url)
        return True

    def _report(self, event: str, fields: dict[str, object]) -> None:
        if self.reporter is not None:
            with contextlib.suppress(Exception):  # a logging hook must not break a fetch
                self.reporter(event, logging.WARNING, fields)

    def _report_refused(self, error: PrivatePeerError) -> None:
        """A connection the guard refused (a name that resolved to a private address after it was announced)."""
        self._report("peer connection refused", {"host": error.host, "address": error.address, "why": error.why})

    def url_of(self, address: str) -> str | None:
        """The URL of the peer with this chain address (identities are fetched lazily).

        # INVARIANT: an account's own on-chain announcement wins over any peer's `/identity` answer. Identities
        are self-declared: a peer claiming an honest solver's address could otherwise serve in its place,
        withhold its commitment document and have it failed. `/identity` decides only for accounts that
        announced nothing (peers given by `--peer` or peers.txt); an account whose announcement this node refuses
        has no URL."""
        key = address.lower()
        if key not in self.announced and key not in self.refused and self.resolve is not None:
            announced = self.resolve(address)  # announced since this node last looked
            if announced:
                self.set_announced(address, announced)
        if key in self.announced:
            return self.announced[key]
        if key in self.refused:
            return None
        if key not in self._by_address:
            for url in self.urls:
                try:
                    identity = get_peer_json(self.client, f"{url}/identity", 5)
                except PeerError:
                    continue
                if not isinstance(identity, dict):
                    continue
                self._by_address[str(identity.get("address", "")).lower()] = url
        return self._by_address.get(key)

    # -- fetching, within deadlines ------------------------------------------------------------

    @contextlib.contextmanager
    def budgeted(self, budget: FetchBudget | None) -> Iterator[FetchBudget | None]:
        """Charge every artifact (`fetch`) and JSON object (`get_json`) fetched in this thread inside the block to
        `budget` (None: to no budget, e.g. θ_r inside a seat's check: not the solver's to serve). Scopes nest; the
        innermost wins. A fetch the budget runs out on fails as unavailable (ArtifactDeadlineError,
        PeerDeadlineError): how a checker turns a slow-serving solver into a data-availability fail."""
        previous = getattr(self._scope, "budget", None)
        self._scope.budget = budget
        try:
            yield budget
        finally:
            self._scope.budget = previous

    def current_budget(self) -> FetchBudget | None:
        """The budget this thread's fetches are charged to now (`budgeted`), if any."""
        return getattr(self._scope, "budget", None)

    def fetch(self, digest: bytes, prefer: str | None = None) -> bytes:
        """The artifact from the preferred peer first, then any other; checked against its hash.

        # INVARIANT: every peer's attempt ends by its deadline: `fetch_deadline_s` after it starts, so a slow peer
        delays a fetch but cannot block it, and inside `budgeted(budget)` no later than the budget lasts. A fetch the
        budget ran out on is an ArtifactDeadlineError: unavailable data, like an artifact nobody has.
        """
        name = hash_to_hex(digest)
        order = ([prefer] if prefer else []) + [u for u in self.urls if u != prefer]
        budget = self.current_budget()
        errors = []
        for url in order:
            if budget is not None and budget.exhausted():
                break
            try:
                with self._attempt(budget, f"artifact {name}") as deadline:
                    return fetch_artifact(url, digest, client=self.client, deadline=deadline)
            except ArtifactError as exc:
                errors.append(str(exc))
        if budget is not None and budget.exhausted():
            detail = "; ".join(errors) or "the budget was spent on earlier fetches before this one began"
            raise ArtifactDeadlineError(
                f"artifact {name} not served within the {budget.seconds:g} s fetch budget of {budget.what}: {detail}"
            )
        detail = "; ".join(errors) or "no peers configured"
        raise ArtifactNotFoundError(f"artifact {name} unavailable from every peer: {detail}")

    def _attempt(self, budget: FetchBudget | None, what: str) -> contextlib.AbstractContextManager[FetchDeadline]:
        """The deadline of one peer's attempt at an artifact: its own, cut to what `budget` has left (and charged)."""
        if budget is None:
            return contextlib.nullcontext(FetchDeadline.after(self.fetch_deadline_s, what))
        return budget.transfer(self.fetch_deadline_s)

    def get_json(self, url: str, path: str) -> dict:
        """A peer's JSON object (bounded: `get_peer_json`); PeerError when it is down, refuses or answers no object.
        Inside `budgeted(budget)` it is charged to the budget and ends when that is spent (PeerDeadlineError)."""
        budget = self.current_budget()
        if budget is None:
            body = get_peer_json(self.client, f"{url}{path}")
        else:
            with budget.transfer() as deadline:
                body = get_peer_json(self.client, f"{url}{path}", deadline=deadline)
        if not isinstance(body, dict):
            raise PeerError(f"peer {url}{path} answered {type(body).__name__}, not a JSON object")
        return body

    def find_role(self, role: str, exclude_address: str = "", timeout_s: float = 3.0) -> list[str]:
        """URLs of the peers whose `/identity` says `role` (other than `exclude_address`); identities cached."""
        for url in self.urls:
            if url in self._roles:
                continue
            try:
                identity = get_peer_json(self.client, f"{url}/identity", timeout_s)
            except PeerError:
                continue
            if not isinstance(identity, dict):
                continue
            self._roles[url] = (str(identity.get("role", "")), str(identity.get("address", "")).lower())
            self._by_address.setdefault(self._roles[url][1], url)
        return [u for u, (r, a) in self._roles.items() if r == role and a != exclude_address.lower()]

    def post_json(self, url: str, path: str, payload: dict, timeout_s: float = 10.0) -> bool:
        """POST a JSON body to a peer; True when it answered 2xx (a peer that is down or refuses is not an error)."""
        try:
            with FetchDeadline.after(timeout_s, f"POST {url}{path}").enforced():  # the whole exchange, not each read
                return self.client.post(f"{url}{path}", json=payload, timeout=timeout_s).is_success
        except httpx.HTTPError:
            return False

    def get_json_list(self, url: str, path: str, timeout_s: float = 10.0) -> list:
        """GET a JSON list from a peer; [] when it is down, answers non-200 or not a list."""
        try:
            body = get_peer_json(self.client, f"{url}{path}", timeout_s)
        except PeerError:
            return []
        return body if isinstance(body, list) else []
