"""The auditor's artifact sources over a real S3-compatible server (moto, tests/object_store_fixtures.py) and a
directory: documents found by scanning both, corrupt copies reported with where they are and never moved."""

from __future__ import annotations

import pytest

from auditor.sources import ArtifactSources, SourceError
from protocol.adapters.artifacts import ArtifactCorruptError, ArtifactNotFoundError, LocalArtifactStore
from protocol.adapters.object_store import S3ArtifactStore
from protocol.commitment import CommitmentDoc, encode_commitment_doc
from protocol.hashing import Hash32, hash_to_hex
from protocol.merkle import SegmentLeaf

SOLVER = "0x" + "ab" * 20


def _document(round_index: int) -> bytes:
    leaf = SegmentLeaf(7, round_index, SOLVER, 0, Hash32(b"\1" * 32), Hash32(b"\2" * 32), Hash32(b"\3" * 32), 64)
    return encode_commitment_doc(CommitmentDoc(7, round_index, SOLVER, Hash32(b"\4" * 32), Hash32(b"\5" * 32), (leaf,)))


def test_sources_scan_an_s3_store_and_a_directory_and_report_corrupt_copies(s3_bucket, s3_server, tmp_path):
    bucket_store = S3ArtifactStore(s3_bucket, "run-7")
    in_bucket = bucket_store.put(_document(0))
    blob = bucket_store.put(b"a checkpoint's bytes")
    corrupt = bucket_store.put(b"bytes that will be tampered with")
    key = bucket_store.key_of(corrupt)
    s3_server.make_client().put_object(Bucket=s3_bucket, Key=key, Body=b"X" * 32)  # same name, other bytes
    directory = LocalArtifactStore(tmp_path / "store")
    in_directory = directory.put(_document(1))

    sources = ArtifactSources([f"s3://{s3_bucket}/run-7", tmp_path / "store", f"s3://{s3_bucket}/run-7/"])

    assert sources.locations == [f"s3://{s3_bucket}/run-7", str((tmp_path / "store").resolve())]
    assert sources.read(blob) == b"a checkpoint's bytes"
    found, _ = sources.find_documents(7, 0, SOLVER)
    assert [f.where for f in found] == [f"s3://{s3_bucket}/run-7/{hash_to_hex(in_bucket)[2:]}"]
    found, _ = sources.find_documents(7, 1, SOLVER.upper().replace("0X", "0x"))
    assert [f.where for f in found] == [
        str(tmp_path / "store" / hash_to_hex(in_directory)[2:4] / hash_to_hex(in_directory)[2:])
    ]
    with pytest.raises(ArtifactCorruptError):
        sources.read(corrupt)
    assert [c.where for c in sources.corrupt] == [f"s3://{s3_bucket}/{key}"]
    # read-only: the tampered object is still where it was, not moved aside
    assert s3_server.make_client().get_object(Bucket=s3_bucket, Key=key)["Body"].read() == b"X" * 32
    with pytest.raises(ArtifactNotFoundError, match=f"s3://{s3_bucket}/run-7"):
        sources.read(Hash32(b"\x09" * 32))


def test_sources_refuse_a_missing_bucket_or_directory(s3_bucket, tmp_path):
    with pytest.raises(SourceError, match="does not exist"):
        ArtifactSources([tmp_path / "nowhere"])
    with pytest.raises(Exception, match="no-such-bucket"):
        ArtifactSources(["s3://no-such-bucket/run-7"])
