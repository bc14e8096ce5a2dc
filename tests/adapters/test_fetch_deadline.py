"""Peer transfers end by a total deadline (issue 37): a dripping or stalling peer is abandoned, as unavailable.

A real node app (protocol/adapters/http.py `make_node_app`, behind the HTTP guard) serves on a free port of 127.0.0.1
from a store whose HTTP answers the test paces (the artifact router's `stream_artifact` hook, as the slow-serving
adversary does). Each body generator sets an event when it stops, so the tests see the server let go of a transfer
the fetcher abandoned without waiting on a timer; the drip's own pauses are the server's pacing, not waits.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field

import pytest
from fastapi.responses import StreamingResponse

from adversary.solver import drip
from protocol.adapters.artifacts import (
    ArtifactDeadlineError,
    ArtifactNotFoundError,
    LocalArtifactStore,
    fetch_artifact,
)
from protocol.adapters.deadlines import DeadlineMissedError, FetchBudget, FetchDeadline, make_deadline_client
from protocol.adapters.http import PeerDeadlineError, PeerSet, make_node_app, serve_in_thread
from protocol.hashing import Hash32, to_hash32

DEADLINE_S = 1.0
"""The deadline the slow transfers are given."""
SLACK_S = 0.75
"""How far past its deadline a fetch may return: one read's wake-up, closing the connection, a loaded CI host."""
READ_TIMEOUT_S = 10.0
"""The per-read timeout: far longer than the deadline, so only the total deadline can end the slow transfers."""
DRIP_S = 60.0
"""How long a dripped transfer would take in full (100 pieces: a piece every 0.6 s, well inside READ_TIMEOUT_S)."""


STALL_DEADLINE_S = 2.0
"""The stalling peer's fetch deadline: it drips for 1.5 s of it, then stalls."""


async def stall(_data: bytes) -> AsyncIterator[bytes]:
    """Headers, a byte every 0.1 s for 1.5 s, then nothing (until the server cancels it on the fetcher's disconnect):
    a read that starts 1.5 s into a 2 s deadline must end with it, not a whole read timeout later."""
    for _ in range(15):
        yield b"x"
        await asyncio.sleep(0.1)
    await asyncio.Event().wait()


@dataclass
class PacedStore:
    """A store whose HTTP answers for the digests in `paced` come from `body(data)`; the rest at once."""

    inner: LocalArtifactStore
    body: Callable[[bytes], AsyncIterator[bytes]]
    paced: set[Hash32] = field(default_factory=set)
    released: threading.Event = field(default_factory=threading.Event)
    """Set when a paced body generator stops (finished, or cancelled because the fetcher went away)."""

    def has(self, digest: bytes) -> bool:
        return self.inner.has(digest)

    def get(self, digest: bytes) -> bytes:
        return self.inner.get(digest)

    def put(self, data: bytes) -> Hash32:
        return self.inner.put(data)

    def delete(self, digest: bytes) -> None:
        self.inner.delete(digest)

    def stream_artifact(self, digest: bytes) -> AsyncIterator[bytes]:
        data = self.inner.get(digest)
        return self._watched(self.body(data)) if to_hash32(digest) in self.paced else _at_once(data)

    async def _watched(self, body: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        try:
            async for chunk in body:
                yield chunk
        finally:
            self.released.set()


async def _at_once(data: bytes) -> AsyncIterator[bytes]:
    yield data


@pytest.fixture
def serve(tmp_path) -> Iterator[Callable[[Callable[[bytes], AsyncIterator[bytes]]], tuple[PacedStore, str]]]:
    """Start a node app over a PacedStore with the given pacing; returns (store, base URL). Stopped at teardown."""
    handles = []

    def start(body: Callable[[bytes], AsyncIterator[bytes]]) -> tuple[PacedStore, str]:
        store = PacedStore(LocalArtifactStore(tmp_path / f"store-{len(handles)}"), body)
        app = make_node_app("solver", "0x" + "00" * 20, store)

        @app.get("/slow-json")
        def slow_json() -> StreamingResponse:
            return StreamingResponse(store._watched(drip(b'{"document": "' + b"a" * 200 + b'"}', DRIP_S)))

        handles.append(serve_in_thread(app))
        return store, handles[-1].url

    yield start
    for handle in handles:
        handle.stop()


def checkpoint_bytes(label: str) -> bytes:
    return f"checkpoint {label} ".encode() * 2000  # 26 KB: 100 dripped pieces of ~260 bytes


def test_dripped_artifact_misses_its_deadline_and_the_server_lets_go(serve):
    store, url = serve(lambda data: drip(data, DRIP_S))
    digest = store.put(checkpoint_bytes("dripped"))
    store.paced.add(digest)
    client = make_deadline_client(READ_TIMEOUT_S)
    started = time.monotonic()
    with pytest.raises(ArtifactDeadlineError, match=r"did not serve artifact .* within the 1 s deadline") as caught:
        fetch_artifact(url, digest, client=client, deadline=FetchDeadline.after(DEADLINE_S, "the test's fetch"))
    elapsed = time.monotonic() - started
    assert DEADLINE_S <= elapsed < DEADLINE_S + SLACK_S, elapsed
    assert isinstance(caught.value, ArtifactNotFoundError) and isinstance(caught.value, DeadlineMissedError)
    assert "counted as unavailable" in str(caught.value) and "the test's fetch" in str(caught.value)
    # the fetcher closed the connection: the server cancels the drip instead of feeding it for a minute
    assert store.released.wait(10), "the dripping body kept running after the fetcher gave up"


def test_stalled_body_is_cut_inside_a_blocked_read(serve):
    """The peer drips, then stalls: the read waiting when the deadline comes is cut at the deadline by the deadline
    client's network backend. (Any client's reads are bounded by the time left when the transfer starts, 2 s: a plain
    httpx client would end this fetch 1.5 + 2 = 3.5 s in.)"""
    store, url = serve(stall)
    digest = store.put(checkpoint_bytes("stalled"))
    store.paced.add(digest)
    client = make_deadline_client(READ_TIMEOUT_S)
    started = time.monotonic()
    with pytest.raises(ArtifactDeadlineError):
        fetch_artifact(url, digest, client=client, deadline=FetchDeadline.after(STALL_DEADLINE_S, "a stalled fetch"))
    assert STALL_DEADLINE_S <= time.monotonic() - started < STALL_DEADLINE_S + SLACK_S
    assert store.released.wait(10), "the stalled body kept running after the fetcher gave up"


def test_normal_fetches_succeed_within_deadlines_and_budgets(serve):
    store, url = serve(lambda data: drip(data, DRIP_S))
    data = checkpoint_bytes("honest")
    digest = store.put(data)
    assert fetch_artifact(url, digest) == data  # the default deadline
    assert fetch_artifact(url, digest, deadline=FetchDeadline.after(DEADLINE_S, "a quick fetch")) == data
    peers = PeerSet([url], allow_private_peers=True)
    budget = FetchBudget(5.0, "the test's seat")
    with peers.budgeted(budget):
        assert peers.fetch(digest, prefer=url) == data
        assert peers.get_json(url, "/identity")["role"] == "solver"
    assert 0 < budget.spent_s < 1.0
    assert not store.released.is_set()  # nothing was paced


def test_a_seat_budget_is_shared_by_its_fetches_and_spent_by_a_drip(serve):
    """One budget for all of a seat's fetches: a dripped checkpoint spends it, then even a checkpoint served at once
    is unavailable in that check (no time is left), and the JSON fetcher misses it the same way."""
    store, url = serve(lambda data: drip(data, DRIP_S))
    dripped, quick = store.put(checkpoint_bytes("dripped")), store.put(checkpoint_bytes("quick"))
    store.paced.add(dripped)
    peers = PeerSet([url], allow_private_peers=True)
    budget = FetchBudget(DEADLINE_S, "solver X's artifacts of round 0")
    started = time.monotonic()
    with peers.budgeted(budget):
        with pytest.raises(ArtifactDeadlineError, match="fetch budget of solver X's artifacts of round 0"):
            peers.fetch(dripped, prefer=url)
        assert time.monotonic() - started < DEADLINE_S + SLACK_S
        assert budget.exhausted()
        with pytest.raises(ArtifactDeadlineError, match="1 s fetch budget"):
            peers.fetch(quick, prefer=url)
        with pytest.raises(PeerDeadlineError):
            peers.get_json(url, "/identity")
    assert peers.current_budget() is None
    assert peers.fetch(quick, prefer=url) == checkpoint_bytes("quick")  # outside the budget: its own deadline


def test_dripped_json_answer_misses_its_deadline(serve):
    store, url = serve(lambda data: drip(data, DRIP_S))
    peers = PeerSet([url], allow_private_peers=True)
    started = time.monotonic()
    with (
        pytest.raises(PeerDeadlineError, match="did not answer within the 1 s deadline"),
        peers.budgeted(FetchBudget(DEADLINE_S, "a seat")),
    ):
        peers.get_json(url, "/slow-json")
    assert time.monotonic() - started < DEADLINE_S + SLACK_S
    assert store.released.wait(10)
