"""`/health` tells a dead worker from a working or finished one (HTTP 503 vs 200), on a real HTTP server."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import httpx

from node.bootstrap import RunNode
from node.logs import get_logger
from node.money_watch import MoneyWatch
from protocol.adapters.artifacts import LocalArtifactStore
from protocol.adapters.http import make_node_app, serve_in_thread


def _node(finished: bool) -> SimpleNamespace:
    """The attributes RunNode.get_health reads, without a chain."""
    return SimpleNamespace(
        finished=finished, run_id=7, skips=2, last_error="", get_activity=lambda: {"idle": False, "block": -1},
        loop_thread=None, money=MoneyWatch(None, None, 7, "0x" + "11" * 20, get_logger("test")),  # nothing read yet
        get_profile_health=lambda: None,  # no run loaded, so no golden self-check yet
    )  # fmt: skip


def _thread(alive: bool) -> threading.Thread:
    release = threading.Event()
    thread = threading.Thread(target=release.wait, daemon=True)
    thread.start()
    if not alive:
        release.set()
        thread.join()
    return thread


def _get(tmp_path, health) -> httpx.Response:
    server = serve_in_thread(make_node_app("verifier", "0x" + "11" * 20, LocalArtifactStore(tmp_path), health))
    try:
        return httpx.get(f"{server.url}/health", timeout=10)
    finally:
        server.stop()


def test_dead_worker_is_unhealthy_with_503(tmp_path):
    response = _get(tmp_path, lambda: RunNode.get_health(_node(finished=False), _thread(alive=False)))
    assert response.status_code == 503
    assert response.json()["status"] == "unhealthy" and response.json()["worker_alive"] is False
    assert response.json()["worker"] == "dead" and "worker thread is dead" in response.json()["reasons"][0]


def test_working_or_finished_worker_is_healthy(tmp_path):
    for finished, alive in ((False, True), (True, False)):
        node, thread = _node(finished=finished), _thread(alive=alive)
        response = _get(tmp_path, lambda n=node, t=thread: RunNode.get_health(n, t))
        assert response.status_code == 200 and response.json()["status"] == "ok", (finished, alive)
        assert response.json()["skips"] == 2
