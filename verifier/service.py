"""`gradledger verifier serve`: the HTTP API and the background worker of a verifier.

The worker (verifier/worker.py) runs in its own thread, so replays never block the event loop.
The API serves health, the attestations this verifier made, Prometheus metrics, its artifact
store, and the jury vote exchange (`POST /jury/votes`, `GET /jury/votes/{dispute_id}`,
`GET /jury/disputes`). Bad input gets a 4xx that says what is wrong: a vote from a seat that is
not eligible, or whose signature does not verify under the seat's registered key, is a 403.
"""

from __future__ import annotations

import re
import threading

from fastapi import HTTPException
from prometheus_client import generate_latest

from protocol.adapters.http import ServerHandle, make_node_app, serve_in_thread
from verifier.jury import VoteRejectedError
from verifier.worker import VerifierWorker

_ID = re.compile(r"^(\d+):(\d+):(0x[0-9a-fA-F]{40}):(\d+)$")


def make_verifier_app(worker: VerifierWorker, worker_thread: threading.Thread | None = None):
    def health() -> dict:
        """The node's health (RunNode.get_health: worker, missed windows, money) and its attestation count."""
        return {**worker.get_health(worker_thread), "attestations": len(worker.list_attestations())}

    def metrics() -> bytes:
        """The verifier's replay and attestation metrics, then what touched its money (node/money_watch.py)."""
        return generate_latest(worker.metrics.registry) + worker.get_metrics()

    app = make_node_app("verifier", worker.address, worker.store, health, metrics)

    @app.get("/attestations")
    def list_attestations() -> list[dict]:
        return worker.list_attestations()

    @app.get("/attestations/{identifier}")
    def get_attestation(identifier: str) -> dict:
        match = _ID.match(identifier)
        if not match:
            shape = "RUN:ROUND:SOLVER_ADDRESS:SLOT (e.g. 1:0:0xabc...:0)"  # not echoed: http_guard.py
            raise HTTPException(400, f"attestation id must be {shape}; got {len(identifier)} characters that are not")
        run_id, round_index, solver, slot = match.groups()
        record = worker.get_attestation(f"{int(run_id)}:{int(round_index)}:{solver.lower()}:{int(slot)}")
        if record is None:
            raise HTTPException(404, f"this verifier made no attestation {identifier}")
        return record

    @app.post("/jury/votes")
    def post_vote(payload: dict) -> dict:
        """A juror's signed vote; kept only if it is from an eligible seat and verifies (else 4xx).

        A vote is ~400 bytes: the guard (protocol/adapters/http_guard.py) refuses bodies over 4 KiB or nested
        deeper than 32 before this JSON is parsed, and runs votes in their own lane of threads, so a flood of
        other requests cannot keep a peer's vote waiting. `def`, not `async def`: checking a vote reads the
        chain and verifies a BLS signature, which must not block the event loop.
        """
        if worker.jury is None:
            raise HTTPException(404, "this verifier does not sit on juries (started with --no-jury or an adversary)")
        try:
            return worker.jury.accept_vote(payload)
        except VoteRejectedError as exc:
            raise HTTPException(exc.status, str(exc)) from None

    @app.get("/jury/votes/{dispute_id}")
    def get_votes(dispute_id: str) -> list[dict]:
        """Every vote this node holds for a dispute (its own and the checked votes of other jurors)."""
        if worker.jury is None:
            raise HTTPException(404, "this verifier does not sit on juries (started with --no-jury or an adversary)")
        try:
            return worker.jury.list_votes(dispute_id)
        except VoteRejectedError as exc:
            raise HTTPException(exc.status, str(exc)) from None

    @app.get("/jury/disputes")
    def get_disputes() -> list[dict]:
        """The disputes of the watched run this node follows, with its seat and verdict."""
        return worker.jury.list_disputes() if worker.jury is not None else []

    return app


def start_verifier_service(worker: VerifierWorker, host: str, port: int) -> tuple[ServerHandle, threading.Thread]:
    """Start the worker thread and the HTTP API; returns both handles."""
    thread = threading.Thread(target=worker.run, name="verifier-worker", daemon=True)
    handle = serve_in_thread(make_verifier_app(worker, thread), host, port)
    thread.start()
    return handle, thread
