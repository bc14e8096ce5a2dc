"""S3ArtifactStore against a real S3-compatible server (moto, tests/object_store_fixtures.py), and store URLs."""

from __future__ import annotations

import socket

import botocore.exceptions
import pytest
import torch
from fastapi import FastAPI
from fastapi.testclient import TestClient

from protocol.adapters.artifacts import (
    ArtifactCorruptError,
    ArtifactNotFoundError,
    BackgroundStateWriter,
    LocalArtifactStore,
    get_state,
    make_artifact_router,
    put_state,
    read_through,
)
from protocol.adapters.object_store import (
    CORRUPT_EVENT,
    AccessDeniedError,
    BucketMissingError,
    EndpointUnreachableError,
    ObjectStoreError,
    S3ArtifactStore,
    S3Location,
    make_s3_client,
    open_artifact_store,
    parse_s3_url,
)
from protocol.hashing import compute_content_hash, hash_to_hex
from protocol.state import compute_state_hash, encode_state
from tests.object_store_fixtures import DropFirstConnections

MIB = 1 << 20


def make_store(bucket: str, **kwargs) -> S3ArtifactStore:
    return S3ArtifactStore(bucket, "run-1/artifacts", **kwargs)


def test_round_trip_keys_has_delete(s3_bucket, s3_server):
    store = make_store(s3_bucket)
    digest = store.put(b"hello")
    assert digest == compute_content_hash(b"hello")
    assert store.get(digest) == b"hello" and store.has(digest)
    key = f"run-1/artifacts/{digest.hex()}"
    assert store.key_of(digest) == key
    assert s3_server.make_client().get_object(Bucket=s3_bucket, Key=key)["Body"].read() == b"hello"
    store.delete(digest)
    assert not store.has(digest)


def test_missing_key_is_not_found(s3_bucket):
    store = make_store(s3_bucket)
    digest = compute_content_hash(b"never stored")
    assert not store.has(digest)
    with pytest.raises(ArtifactNotFoundError, match=f"{hash_to_hex(digest)}.*run-1/artifacts/{digest.hex()}"):
        store.get(digest)


def test_corrupt_object_is_refused_moved_aside_and_healed(s3_bucket, s3_server):
    heard: list[tuple[str, dict]] = []
    store = make_store(s3_bucket, reporter=lambda event, level, fields: heard.append((event, fields)))
    data = b"checkpoint bytes " * 1000
    digest = store.put(data)
    key = store.key_of(digest)
    raw = s3_server.make_client()
    raw.put_object(Bucket=s3_bucket, Key=key, Body=b"X" + data[1:])  # same size, other bytes
    assert store.put(data) == digest, "idempotent: same name and size is not uploaded again"
    reader = make_store(s3_bucket, quarantine_corrupt=False)
    with pytest.raises(ArtifactCorruptError, match=key):
        reader.get(digest)
    assert store.has(digest), "a read-only store leaves the object where it is"
    with pytest.raises(ArtifactCorruptError, match=f"{key}.*moved aside"):
        store.get(digest)
    assert not store.has(digest)
    assert [event for event, _ in heard] == [CORRUPT_EVENT]
    moved = raw.list_objects_v2(Bucket=s3_bucket, Prefix="run-1/artifacts-quarantine/")["Contents"]
    assert len(moved) == 1 and moved[0]["Key"].startswith(f"run-1/artifacts-quarantine/{digest.hex()}.")
    assert read_through(store, digest, lambda name: data) == data  # healed from a "peer"
    assert store.get(digest) == data


def test_multipart_state_and_background_writer(s3_bucket, s3_server):
    store = make_store(s3_bucket, part_bytes=5 * MIB, concurrency=2)
    state = {"a.weight": torch.arange(3 * MIB, dtype=torch.float32), "b": torch.ones(7)}  # ~12 MiB: 3 parts
    digest = put_state(store, state)
    assert digest == compute_state_hash(state)
    head = s3_server.make_client().head_object(Bucket=s3_bucket, Key=store.key_of(digest))
    assert head["ETag"].strip('"').endswith("-3"), "uploaded in 3 parts"
    assert torch.equal(get_state(store, digest)["a.weight"], state["a.weight"])
    nudged = {**state, "b": torch.zeros(7)}
    with BackgroundStateWriter(store) as writer:
        hashed = writer.save(0, nudged)
    assert hashed.result() == compute_state_hash(nudged) and store.has(hashed.result())
    heard = []
    streamed = store.put_stream([encode_state(state)[:100], encode_state(state)[100:]], on_hash=heard.append)
    assert streamed == digest and heard == [digest]


def test_transient_connection_resets_are_retried(s3_bucket, s3_server):
    relay = DropFirstConnections(s3_server.port, drop=2)
    slept: list[float] = []
    try:
        client = make_s3_client(request_attempts=1, endpoint_url=relay.endpoint_url)  # botocore does not retry
        store = make_store(s3_bucket, client=client, attempts=4, sleep=slept.append)
        digest = store.put(b"survives two resets")
    finally:
        relay.close()
    assert relay.dropped == 2
    assert slept and slept == [0.25 * 2**i for i in range(len(slept))], "exponential backoff between attempts"
    assert make_store(s3_bucket).get(digest) == b"survives two resets"


def test_typed_errors(s3_bucket):
    with pytest.raises(BucketMissingError, match=r"no-such-bucket.*create it"):
        open_artifact_store("s3://no-such-bucket/x")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    client = make_s3_client(request_attempts=1, endpoint_url=f"http://127.0.0.1:{closed}")
    store = make_store(s3_bucket, client=client, attempts=2, sleep=lambda _s: None)
    with pytest.raises(EndpointUnreachableError, match="AWS_ENDPOINT_URL"):
        store.has(compute_content_hash(b"x"))
    denied = botocore.exceptions.ClientError(
        {"Error": {"Code": "AccessDenied"}, "ResponseMetadata": {"HTTPStatusCode": 403}}, "HeadBucket"
    )
    with pytest.raises(AccessDeniedError, match="AWS_ACCESS_KEY_ID"):
        make_store(s3_bucket)._raise_typed(denied, "checking bucket")


def test_http_api_serves_an_object_store(s3_bucket, s3_server):
    store = make_store(s3_bucket)
    digest = store.put(b"served from S3")
    app = FastAPI()
    app.include_router(make_artifact_router(store))
    http = TestClient(app)
    assert http.get(f"/artifacts/{hash_to_hex(digest)}").content == b"served from S3"
    s3_server.make_client().put_object(Bucket=s3_bucket, Key=store.key_of(digest), Body=b"tampered bytes")
    answer = http.get(f"/artifacts/{hash_to_hex(digest)}")
    assert answer.status_code == 503 and b"tampered" not in answer.content
    assert http.get(f"/artifacts/{hash_to_hex(compute_content_hash(b'none'))}").status_code == 404


def test_store_urls(tmp_path, s3_bucket):
    assert parse_s3_url("s3://bucket/a/b/") == S3Location("bucket", "a/b")
    assert parse_s3_url("s3://bucket") == S3Location("bucket", "")
    assert S3Location("bucket", "a/b").url == "s3://bucket/a/b"
    for bad in ("s3://", "s3://Bad_Bucket/x", "s3://ab/x", "s3://bucket/a//b", "s3://bucket/../x", "/tmp/x"):
        with pytest.raises(ObjectStoreError):
            parse_s3_url(bad)
    with pytest.raises(ObjectStoreError, match="unsupported store URL"):
        open_artifact_store("gs://bucket/x")
    local = open_artifact_store(tmp_path / "artifacts")
    assert isinstance(local, LocalArtifactStore) and local.root == tmp_path / "artifacts"
    assert isinstance(open_artifact_store(str(tmp_path / "b"), read_only=True), LocalArtifactStore)
    remote = open_artifact_store(f"s3://{s3_bucket}/p", read_only=True)
    assert isinstance(remote, S3ArtifactStore) and remote.url == f"s3://{s3_bucket}/p"
    assert not remote.quarantine_corrupt
