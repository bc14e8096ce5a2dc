"""Artifact store: content addressing, atomic writes, hash checks on read, HTTP serving."""

from __future__ import annotations

import threading

import httpx
import pytest
import torch
import uvicorn
from fastapi import FastAPI

from protocol.adapters.artifacts import (
    SERVE_CHUNK_BYTES,
    ArtifactCorruptError,
    ArtifactNotFoundError,
    BackgroundStateWriter,
    LocalArtifactStore,
    fetch_artifact,
    fetch_into_store,
    get_state,
    make_artifact_router,
    put_state,
)
from protocol.hashing import compute_content_hash, hash_to_hex
from protocol.outer import get_initial_global_state
from protocol.state import compute_state_hash
from protocol.training import get_params, train_round
from tests.conftest import SOLVER_A as SOLVER


def test_put_get_roundtrip_and_idempotence(tmp_path):
    store = LocalArtifactStore(tmp_path)
    digest = store.put(b"hello")
    assert digest == compute_content_hash(b"hello")
    assert store.put(b"hello") == digest
    assert store.get(digest) == b"hello" and store.has(digest)
    assert not list(tmp_path.rglob(".tmp-*")), "no temp files left behind"


def test_states_are_stored_under_their_state_hash(tmp_path):
    store = LocalArtifactStore(tmp_path)
    state = {"w": torch.arange(6.0).reshape(2, 3)}
    digest = put_state(store, state)
    assert digest == compute_state_hash(state)
    assert torch.equal(get_state(store, digest)["w"], state["w"])


def test_background_writer_hashes_early_and_is_durable_on_exit(tmp_path):
    store = LocalArtifactStore(tmp_path)
    states = [{"w": torch.full((64, 64), float(i))} for i in range(3)]
    with BackgroundStateWriter(store) as writer:
        futures = [writer.save(i, state) for i, state in enumerate(states)]
        hashes = [f.result() for f in futures]
    assert hashes == [compute_state_hash(state) for state in states]
    for digest, state in zip(hashes, states, strict=True):
        assert torch.equal(get_state(store, digest)["w"], state["w"])
    assert not list(tmp_path.rglob(".tmp-*")), "no temp files left behind"


def test_background_writer_failure_surfaces_on_exit(tmp_path):
    store = LocalArtifactStore(tmp_path / "store")
    if store.root.exists():
        store.root.rmdir()
    store.root.write_text("a file where the store's directory should be")  # every write now fails
    writer = BackgroundStateWriter(store)
    future = writer.save(0, {"w": torch.ones(3)})
    with pytest.raises(OSError):
        future.result()
    with pytest.raises(OSError):
        writer.__exit__(None, None, None)


def test_background_writer_round_matches_a_foreground_round(tmp_path, tiny_config, dataset):
    """A solver's round (checkpoints and sketches off the training thread) commits what a replayer computes."""
    theta = get_params(get_initial_global_state(tiny_config))
    expected, expected_end = train_round(tiny_config, dataset, theta, 0, SOLVER)
    store = LocalArtifactStore(tmp_path)
    with BackgroundStateWriter(store) as writer:
        records, end = train_round(
            tiny_config, dataset, theta, 0, SOLVER, save_checkpoint=writer.save, in_background=writer.submit
        )
    assert records == expected
    assert compute_state_hash(end) == compute_state_hash(expected_end)
    assert all(store.has(record.end_hash) for record in records), "every checkpoint is stored under its hash"


def test_background_writer_submit_surfaces_errors(tmp_path):
    def fail() -> None:
        raise ValueError("sketch failed")

    with BackgroundStateWriter(LocalArtifactStore(tmp_path)) as writer:
        future = writer.submit(fail)
        with pytest.raises(ValueError, match="sketch failed"):
            future.result()


def test_tampered_file_is_detected_on_read(tmp_path):
    store = LocalArtifactStore(tmp_path)
    digest = store.put(b"checkpoint bytes")
    path = tmp_path / digest.hex()[:2] / digest.hex()
    path.write_bytes(b"checkpoint bytez")
    with pytest.raises(ArtifactCorruptError, match="does not match its hash"):
        store.get(digest)


def test_missing_artifact_and_bad_name_are_clear_errors(tmp_path):
    store = LocalArtifactStore(tmp_path)
    with pytest.raises(ArtifactNotFoundError, match="is not in the store"):
        store.get(compute_content_hash(b"nope"))
    with pytest.raises(Exception, match="32 bytes"):
        store.get(b"short")


@pytest.fixture
def served_store(tmp_path):
    store = LocalArtifactStore(tmp_path / "served")
    app = FastAPI()
    app.include_router(make_artifact_router(store))
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("artifact server failed to start")
        threading.Event().wait(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield store, f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


def test_http_serving_and_fetching_checks_hashes(served_store, tmp_path):
    store, url = served_store
    digest = store.put(b"segment 3 checkpoint")
    assert fetch_artifact(url, digest) == b"segment 3 checkpoint"
    local = LocalArtifactStore(tmp_path / "local")
    assert fetch_into_store(local, url, digest) == b"segment 3 checkpoint"
    assert local.has(digest)
    with pytest.raises(ArtifactNotFoundError, match="does not have artifact"):
        fetch_artifact(url, compute_content_hash(b"absent"))
    assert httpx.get(f"{url}/artifacts/0x1234").status_code == 400


def test_peer_serving_wrong_bytes_is_caught(served_store):
    store, url = served_store
    digest = store.put(b"honest bytes")
    (store.root / digest.hex()[:2] / digest.hex()).write_bytes(b"forged bytes")
    # The serving node notices its own corruption: 503 with a plain reason, never the bytes, never a traceback;
    # the bad copy is moved aside (then 404). A fetcher would reject substituted bytes too.
    response = httpx.get(f"{url}/artifacts/{hash_to_hex(digest)}")
    assert response.status_code == 503 and "is corrupt on this node" in response.json()["detail"]
    assert b"forged" not in response.content and str(store.root) not in response.text
    with pytest.raises(ArtifactNotFoundError, match="does not have artifact"):
        fetch_artifact(url, digest)


def test_large_artifact_is_streamed_intact_across_hash_chunks(served_store):
    """Served from disk after a chunked hash check (SERVE_CHUNK_BYTES at a time), never assembled in memory: the
    bytes, their length and their hash survive chunk boundaries, and a flipped byte in the last chunk is caught."""
    store, url = served_store
    data = bytes(range(256)) * (5 * SERVE_CHUNK_BYTES // 2 // 256 + 3)  # 2.5 chunks and a bit
    digest = store.put(data)
    response = httpx.get(f"{url}/artifacts/{hash_to_hex(digest)}")
    assert response.status_code == 200 and response.headers["content-length"] == str(len(data))
    assert response.content == data
    path = store.root / digest.hex()[:2] / digest.hex()
    path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    assert httpx.get(f"{url}/artifacts/{hash_to_hex(digest)}").status_code == 503
