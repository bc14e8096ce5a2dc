"""Total deadlines for peer transfers (issue 37): a transfer that is not complete by its deadline is abandoned.

A per-read timeout bounds how long one read may wait, not how long a transfer takes: a peer that drips a byte
every second never trips a 30 s read timeout, and a dripped checkpoint took 47.5 s against a 30 s timeout and still
arrived. A cheating solver could so slow-serve its checkpoints until honest verifiers' replays missed the attest
window. Here every peer transfer gets a point on the monotonic clock by which it must be complete:

- `FetchDeadline`: that point, and what the transfer was for (named in errors). `enforced()` makes it the deadline of
  the transfers this thread makes meanwhile through a client of `make_deadline_client`.
- `DeadlineBackend` (the client's network backend) bounds every connect, read and write of such a transfer by the
  time its deadline leaves, and fails it once that is gone: enforced while streaming, whether the peer drips or
  stalls, headers included. The callers (protocol/adapters/artifacts.py `fetch_artifact`, protocol/adapters/http.py
  `get_peer_json`) also check the deadline after every chunk, so a client without this backend is bounded too, up
  to one read.
- `FetchBudget`: seconds that several transfers share (all the fetches of one seat: protocol/fetch_budget.py). Only
  time spent in transfers is charged: a verifier's replays between two fetches cost the solver nothing.

A missed deadline is a `DeadlineMissedError`; the artifact and JSON fetchers raise subclasses that are also their
"unavailable" errors (`ArtifactDeadlineError`, `PeerDeadlineError`), so every caller that turns unavailable data into
a data-availability fail does so for slow data too.
"""

from __future__ import annotations

import contextlib
import contextvars
import ssl
import time
import typing
from collections.abc import Iterator
from dataclasses import dataclass

import httpcore
import httpx

from protocol.errors import GradledgerError

DEFAULT_FETCH_DEADLINE_S = 120.0
"""The deadline of one artifact transfer outside any budget (run definitions, θ, shards): a 1 GB checkpoint at
10 MB/s. Each peer asked gets its own, so a slow peer delays a fetch by this much, never blocks it."""


class DeadlineMissedError(GradledgerError):
    """A peer transfer was not complete by its deadline; the data counts as unavailable from that peer."""


@dataclass(frozen=True)
class FetchDeadline:
    """A point on the monotonic clock (`time.monotonic()`) by which a transfer must be complete.

    # INVARIANT: wall-clock seconds, never chain time (a driven devnet's chain clock stands still while nodes work).
    """

    at: float
    seconds: float
    """The length it was given (for messages)."""
    what: str
    """What it bounds, for messages: "round 0 of solver 0xab..'s artifacts", "artifact 0x12.."."""

    @classmethod
    def after(cls, seconds: float, what: str) -> FetchDeadline:
        """The deadline `seconds` from now."""
        return cls(time.monotonic() + max(seconds, 0.0), seconds, what)

    def remaining_s(self) -> float:
        """Seconds left (0 once it passed)."""
        return max(self.at - time.monotonic(), 0.0)

    def expired(self) -> bool:
        return time.monotonic() >= self.at

    def bound(self, timeout: float | None) -> float:
        """`timeout` (None: unbounded), cut to the seconds left."""
        left = self.remaining_s()
        return left if timeout is None else min(timeout, left)

    def earliest(self, other: FetchDeadline | None) -> FetchDeadline:
        """The earlier of this deadline and `other` (nested deadlines never extend an outer one)."""
        return self if other is None or self.at <= other.at else other

    @contextlib.contextmanager
    def enforced(self) -> Iterator[FetchDeadline]:
        """Make this the deadline of every transfer this thread makes inside the block through a deadline client
        (`make_deadline_client`); an enclosing earlier deadline stays in force."""
        effective = self.earliest(_ACTIVE.get())
        token = _ACTIVE.set(effective)
        try:
            yield effective
        finally:
            _ACTIVE.reset(token)


_ACTIVE: contextvars.ContextVar[FetchDeadline | None] = contextvars.ContextVar("fetch_deadline", default=None)
"""The deadline of the transfer this thread (context) is making; read by `DeadlineStream` at every I/O call."""


class FetchBudget:
    """Seconds that several transfers share: each transfer's deadline is what is left of it when it starts, and the
    time it took is charged when it ends.

    # INVARIANT: only time inside `transfer()` is charged; what the caller does between transfers (a replay) is not.
    Not thread-safe: one budget belongs to one check in one thread.
    """

    def __init__(self, seconds: float, what: str) -> None:
        self.seconds = seconds
        self.what = what
        self.spent_s = 0.0

    def remaining_s(self) -> float:
        return max(self.seconds - self.spent_s, 0.0)

    def exhausted(self) -> bool:
        return self.spent_s >= self.seconds

    @contextlib.contextmanager
    def transfer(self, cap_s: float | None = None) -> Iterator[FetchDeadline]:
        """One transfer charged to this budget: its deadline is the budget left (at most `cap_s`)."""
        seconds = self.remaining_s() if cap_s is None else min(cap_s, self.remaining_s())
        started = time.monotonic()
        try:
            yield FetchDeadline(started + seconds, self.seconds, self.what)
        finally:
            self.spent_s += time.monotonic() - started


def _expired(kind: type[httpcore.TimeoutException], deadline: FetchDeadline) -> httpcore.TimeoutException:
    return kind(f"the {deadline.seconds:g} s deadline of {deadline.what} passed")


class DeadlineStream(httpcore.NetworkStream):
    """A network stream whose every read and write is bounded by the active transfer's deadline (`_ACTIVE`)."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self.inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        deadline = _ACTIVE.get()
        if deadline is None:
            return self.inner.read(max_bytes, timeout)
        if deadline.expired():
            raise _expired(httpcore.ReadTimeout, deadline)
        return self.inner.read(max_bytes, deadline.bound(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        deadline = _ACTIVE.get()
        if deadline is None:
            return self.inner.write(buffer, timeout)
        if deadline.expired():
            raise _expired(httpcore.WriteTimeout, deadline)
        return self.inner.write(buffer, deadline.bound(timeout))

    def close(self) -> None:
        self.inner.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        deadline = _ACTIVE.get()
        bounded = timeout if deadline is None else deadline.bound(timeout)
        return DeadlineStream(self.inner.start_tls(ssl_context, server_hostname, bounded))

    def get_extra_info(self, info: str) -> typing.Any:
        return self.inner.get_extra_info(info)


class DeadlineBackend(httpcore.NetworkBackend):
    """Wraps a network backend (the plain sockets, or the peer host guard): connections are bounded by the active
    deadline and their streams are `DeadlineStream`s."""

    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self.inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        deadline = _ACTIVE.get()
        if deadline is not None:
            if deadline.expired():
                raise _expired(httpcore.ConnectTimeout, deadline)
            timeout = deadline.bound(timeout)
        return DeadlineStream(self.inner.connect_tcp(host, port, timeout, local_address, socket_options))

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        return DeadlineStream(self.inner.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


class DeadlineTransport(httpx.HTTPTransport):
    """httpx's transport with httpx's default pool limits, on a `DeadlineBackend` around `backend`."""

    def __init__(self, backend: httpcore.NetworkBackend | None = None) -> None:
        super().__init__()
        limits = httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=5.0)
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=DeadlineBackend(backend or httpcore.SyncBackend()),
        )


def make_deadline_client(
    timeout_s: float, backend: httpcore.NetworkBackend | None = None, *, trust_env: bool = True
) -> httpx.Client:
    """An httpx client whose transfers inside `FetchDeadline.enforced()` end at that deadline; connections go through
    `backend` (the plain sockets by default; the peer host guard for a node that refuses private peers)."""
    return httpx.Client(timeout=timeout_s, transport=DeadlineTransport(backend), trust_env=trust_env)
