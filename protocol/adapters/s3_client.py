"""The S3 side of the object store (protocol/adapters/object_store.py): store URLs, the typed errors, which failures
are transient, the boto3 client, and the file objects an upload's body is read from.

Why a module of its own: this is what talks S3 as such -- botocore's errors and configuration, bucket and prefix
naming, the file protocol s3transfer reads bodies through -- while `S3ArtifactStore` holds the artifact contract on
top (hash-checked reads, idempotent puts, quarantine, retries of whole transfers). Nothing here knows an artifact.

# INVARIANT: every failure this side raises is an `ObjectStoreError` (an `ArtifactError`, so under the one root
`GradledgerError`), and `is_transient` is the one rule for which failures a store retries.
"""

from __future__ import annotations

import bisect
import io
import itertools
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from protocol.adapters.artifacts import ArtifactError

S3_SCHEME = "s3://"
DEFAULT_CONCURRENCY = 4
"""Parts in flight at once, up and down (the client's connection pool is sized for it)."""
REQUEST_ATTEMPTS = 5
"""Attempts botocore makes of each request (its standard retry mode), inside a store's whole-transfer attempts."""


class ObjectStoreError(ArtifactError):
    """The object store cannot be used as configured (bucket, credentials, endpoint)."""


class BucketMissingError(ObjectStoreError):
    """The bucket named in the store URL does not exist at the endpoint."""


class AccessDeniedError(ObjectStoreError):
    """The credentials are missing, wrong, or not allowed to use the bucket."""


class EndpointUnreachableError(ObjectStoreError):
    """The endpoint did not answer (after retries)."""


@dataclass(frozen=True)
class S3Location:
    """Where an `s3://bucket/prefix` URL points: the bucket and the key prefix (no slashes at either end)."""

    bucket: str
    prefix: str

    @property
    def url(self) -> str:
        return f"{S3_SCHEME}{self.bucket}/{self.prefix}" if self.prefix else f"{S3_SCHEME}{self.bucket}"


def is_object_store_url(spec: str | Path) -> bool:
    """True for an `s3://...` store URL, False for a directory path."""
    return isinstance(spec, str) and spec.lower().startswith(S3_SCHEME)


def parse_s3_url(url: str) -> S3Location:
    """`s3://bucket/some/prefix` -> S3Location("bucket", "some/prefix"); a clear ObjectStoreError for anything else."""
    if not is_object_store_url(url):
        raise ObjectStoreError(f"{url!r} is not an object store URL: write s3://BUCKET or s3://BUCKET/PREFIX")
    rest = url[len(S3_SCHEME) :]
    bucket, _, prefix = rest.partition("/")
    prefix = prefix.strip("/")
    if not bucket or not (3 <= len(bucket) <= 63) or bucket != bucket.lower() or not bucket[0].isalnum():
        raise ObjectStoreError(
            f"{url!r}: {bucket!r} is not a bucket name (3-63 lower-case letters, digits, dots and hyphens, starting "
            "with a letter or digit); write s3://BUCKET/PREFIX"
        )
    if any(part in ("", ".", "..") for part in prefix.split("/")) and prefix:
        raise ObjectStoreError(f"{url!r}: the prefix {prefix!r} has an empty, '.' or '..' part; write s3://BUCKET/a/b")
    return S3Location(bucket, prefix)


class ChunksFile(io.RawIOBase):
    """A read-only, seekable file over byte chunks held in memory (a state's header pieces and tensor buffers): the
    body of a state's upload without a copy of the whole state. Seekable, so botocore can rewind it for a retry."""

    def __init__(self, chunks: Iterable[bytes | memoryview]) -> None:
        self._chunks = [memoryview(chunk).cast("B") for chunk in chunks]
        self._starts = list(itertools.accumulate((len(c) for c in self._chunks), initial=0))
        self._size = self._starts[-1]
        self._position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._size}[whence]
        self._position = min(max(base + offset, 0), self._size)
        return self._position

    def readinto(self, buffer: Any) -> int:
        target = memoryview(buffer).cast("B")
        filled = 0
        index = bisect.bisect_right(self._starts, self._position) - 1
        while filled < len(target) and self._position < self._size:
            chunk = self._chunks[index]
            inside = self._position - self._starts[index]
            n = min(len(target) - filled, len(chunk) - inside)
            target[filled : filled + n] = chunk[inside : inside + n]
            filled += n
            self._position += n
            index += 1
        return filled


def get_s3_error_code(exc: BaseException) -> tuple[str, int]:
    """(S3 error code, HTTP status) of a botocore ClientError; ("", 0) for anything else."""
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return "", 0
    code = str(response.get("Error", {}).get("Code", ""))
    status = int(response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    return code, status


TRANSIENT_CODES = frozenset(
    {"SlowDown", "RequestTimeout", "RequestTimeTooSkewed", "InternalError", "ServiceUnavailable", "Throttling",
     "ThrottlingException", "RequestLimitExceeded", "BadDigest", "IncompleteBody"}
)  # fmt: skip


def is_transient(exc: BaseException) -> bool:
    """Whether a failed S3 call is worth retrying: connection trouble, a body cut short, 5xx or throttling."""
    import botocore.exceptions as boto
    from s3transfer.exceptions import RetriesExceededError

    if isinstance(
        exc,
        boto.ConnectionError
        | boto.HTTPClientError
        | boto.IncompleteReadError
        | boto.ResponseStreamingError
        | RetriesExceededError,
    ):
        return True
    code, status = get_s3_error_code(exc)
    return status >= 500 or code in TRANSIENT_CODES


class NoCloseFile(io.RawIOBase):
    """A view of a file s3transfer may close without closing the file (a retry reads it again)."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        return self._handle.readinto(buffer)

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._handle.seek(offset, whence)

    def tell(self) -> int:
        return self._handle.tell()


def make_s3_client(request_attempts: int = REQUEST_ATTEMPTS, **overrides: Any) -> Any:
    """A boto3 S3 client from the AWS environment (AWS_ENDPOINT_URL, AWS_PROFILE, AWS_REGION, keys), with botocore's
    standard retry mode (exponential backoff with jitter on throttling, 5xx and connection errors).

    Integrity is this store's SHA-256 of every artifact: an upload carries it as its `x-amz-checksum-sha256` (a
    signed header) instead of botocore hashing the body a second time to sign it (`payload_signing_enabled` off),
    botocore's optional CRC checksums are only computed where the service requires them, and every read is hashed.
    """
    import boto3
    from botocore.config import Config

    config = Config(
        retries={"max_attempts": request_attempts, "mode": "standard"},
        max_pool_connections=max(10, 2 * DEFAULT_CONCURRENCY),
        connect_timeout=10,
        read_timeout=120,
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
        s3={"payload_signing_enabled": False},
    )
    session = boto3.session.Session(profile_name=os.environ.get("AWS_PROFILE") or None)
    region = overrides.pop("region_name", None) or session.region_name or "us-east-1"
    return session.client("s3", region_name=region, config=config, **overrides)
