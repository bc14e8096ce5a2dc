"""S3ArtifactStore against real S3-compatible servers -- every test runs against moto and against the JuiceFS S3
gateway (MinIO's S3 code, which checks signatures; devnet/s3server.py) -- and store URLs."""

from __future__ import annotations

import base64
import io
import socket
from collections.abc import Iterator

import botocore.exceptions
import pytest
import torch
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from devnet.s3server import SERVERS
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
from protocol.adapters.s3_client import ChunksFile
from protocol.hashing import compute_content_hash, hash_to_hex
from protocol.state import compute_state_hash, encode_state
from tests.object_store_fixtures import DropFirstConnections

MIB = 1 << 20


@pytest.fixture(scope="module", params=sorted(SERVERS))
def s3_server(request) -> Iterator:
    """This module's tests run once per local server (overrides the session's moto-only fixture)."""
    with SERVERS[request.param]() as server:
        yield server


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
    parts: list[int] = []
    store.client.meta.events.register(
        "before-parameter-build.s3.UploadPart", lambda params, **_: parts.append(params["PartNumber"])
    )
    state = {"a.weight": torch.arange(3 * MIB, dtype=torch.float32), "b": torch.ones(7)}  # ~12 MiB: 3 parts
    digest = put_state(store, state)
    assert digest == compute_state_hash(state)
    assert sorted(parts) == [1, 2, 3], "uploaded in 3 parts"
    assert torch.equal(get_state(store, digest)["a.weight"], state["a.weight"])
    nudged = {**state, "b": torch.zeros(7)}
    with BackgroundStateWriter(store) as writer:
        hashed = writer.save(0, nudged)
    assert hashed.result() == compute_state_hash(nudged) and store.has(hashed.result())
    heard: list = []
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


def test_upload_carries_its_name_as_checksum_instead_of_hashing_again(s3_bucket):
    """A single-part upload sends the artifact's SHA-256 (its name) as the signed x-amz-checksum-sha256 header and
    an unsigned payload: botocore does not hash the bytes a second time."""
    store = make_store(s3_bucket)
    sent: list[dict] = []
    store.client.meta.events.register("before-send.s3.PutObject", lambda request, **_: sent.append(request.headers))
    digest = store.put(b"named by its hash")
    assert len(sent) == 1
    headers = sent[0]
    assert headers["x-amz-checksum-sha256"] == base64.b64encode(digest)
    assert headers["X-Amz-Content-SHA256"] == b"UNSIGNED-PAYLOAD"
    assert b"x-amz-checksum-sha256" in headers["Authorization"], "the checksum header is signed"
    assert store.get(digest) == b"named by its hash"


def test_wrong_secret_is_access_denied(s3_bucket, s3_server):
    if s3_server.name == "moto":
        pytest.skip("moto does not check signatures")
    client = make_s3_client(aws_access_key_id=s3_server.env()["AWS_ACCESS_KEY_ID"], aws_secret_access_key="wrong")
    with pytest.raises(AccessDeniedError, match="AWS_SECRET_ACCESS_KEY"):
        open_artifact_store(f"s3://{s3_bucket}/x", client=client)


@given(
    st.lists(st.binary(max_size=40), max_size=6),
    st.lists(st.tuples(st.integers(-5, 250), st.integers(0, 64)), max_size=8),
)
def test_chunks_file_reads_and_seeks_like_the_joined_bytes(chunks, moves):
    joined = io.BytesIO(b"".join(chunks))
    body = ChunksFile(chunks)
    assert body.read() == joined.read()
    for offset, size in moves:
        assert body.seek(offset) == joined.seek(min(max(offset, 0), len(joined.getbuffer())))
        assert body.read(size) == joined.read(size) and body.tell() == joined.tell()
    assert body.seek(-3, io.SEEK_END) == joined.seek(max(len(joined.getbuffer()) - 3, 0))


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
