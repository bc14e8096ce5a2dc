"""Artifacts in any S3-compatible object store (AWS S3, MinIO, Ceph, R2, moto...), chosen by URL.

`open_artifact_store("s3://bucket/prefix")` is an `S3ArtifactStore`; a path is a `LocalArtifactStore`. Both name an
artifact by the SHA-256 of its bytes, and an S3 object is `<prefix>/<64 hex>`. The contract is the local store's:

- every read is hash-checked: an object whose bytes do not hash to its key is an `ArtifactCorruptError` naming the
  key and is never returned; a writable store moves it aside to `<prefix>-quarantine/` (told to its `reporter` as the
  local store does), so `read_through` re-fetches a good copy from peers instead of failing on it every tick;
- a put is idempotent: an object already there under its hash with the right size is not uploaded again;
- large artifacts go up in parts (s3transfer multipart upload, `part_bytes` per part, `concurrency` at once) and come
  down in ranged parts; a state is streamed from its tensors (hashed first, then uploaded), never assembled in memory;
- transient failures (5xx, throttling, dropped connections, a body cut short) are retried with exponential backoff,
  by botocore per request and by this store around a whole transfer (a transfer restarts from its first byte).

Endpoint, credentials and region come from the usual AWS environment variables or profile (AWS_ENDPOINT_URL,
AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_PROFILE, AWS_REGION), never from a command line,
where other users of the machine could read them. docs/storage.md has the details and measured speeds.
"""

from __future__ import annotations

import base64
import contextlib
import io
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import torch

from protocol.adapters.artifacts import (
    ARTIFACT_NAME,
    ArtifactCorruptError,
    ArtifactError,
    ArtifactNotFoundError,
    ArtifactReporter,
    LocalArtifactStore,
)
from protocol.adapters.s3_client import (
    DEFAULT_CONCURRENCY,
    AccessDeniedError,
    BucketMissingError,
    ChunksFile,
    EndpointUnreachableError,
    NoCloseFile,
    ObjectStoreError,
    S3Location,
    get_s3_error_code,
    is_object_store_url,
    is_transient,
    make_s3_client,
    parse_s3_url,
)
from protocol.hashing import Hash32, hash_to_hex, new_content_hasher, to_hash32
from protocol.state import iter_state_chunks

T = TypeVar("T")

DEFAULT_PART_BYTES = 256 << 20
"""Multipart threshold and part size: a state up to 256 MiB (a large-preset checkpoint is ~198 MB) goes up and down
in one request, bigger ones in 256 MiB parts (10,000 parts allow 2.5 TiB). Measured on the local server, one request
moved a 198 MB state 2-4x faster than 16-64 MiB parts (docs/storage.md, "Multipart")."""
DEFAULT_ATTEMPTS = 4
"""Whole-transfer attempts on transient errors (botocore also retries each request, `REQUEST_ATTEMPTS`)."""
BACKOFF_S = 0.25
"""First backoff between whole-transfer attempts; doubled each time (0.25, 0.5, 1 s), capped at MAX_BACKOFF_S."""
MAX_BACKOFF_S = 8.0
CORRUPT_EVENT = "corrupt artifact moved aside"
"""The event a store reports when it moved a corrupt copy aside (the same as LocalArtifactStore's)."""


class S3ArtifactStore:
    """Artifacts as objects `<prefix>/<64 hex>` in one bucket of an S3-compatible service (module docstring).

    `client` is a boto3 S3 client (default: one built from the AWS environment variables or profile, with botocore's
    standard retry mode). `quarantine_corrupt=False` is for read-only users (the auditor): a corrupt object is
    reported as such and left where it is.
    """

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        *,
        client: Any = None,
        part_bytes: int = DEFAULT_PART_BYTES,
        concurrency: int = DEFAULT_CONCURRENCY,
        attempts: int = DEFAULT_ATTEMPTS,
        quarantine_corrupt: bool = True,
        reporter: ArtifactReporter | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        from boto3.s3.transfer import TransferConfig

        if part_bytes < 5 << 20:
            raise ObjectStoreError(f"part size {part_bytes} bytes is below S3's 5 MiB minimum part size")
        self.location = S3Location(bucket, prefix.strip("/"))
        self.client = client if client is not None else make_s3_client()
        self.part_bytes = part_bytes
        self.transfer = TransferConfig(
            multipart_threshold=part_bytes, multipart_chunksize=part_bytes, max_concurrency=concurrency,
            use_threads=concurrency > 1, max_io_queue=1000,
        )  # fmt: skip
        self.attempts = max(1, attempts)
        self.quarantine_corrupt = quarantine_corrupt
        self.reporter = reporter
        """Set by the node that owns the store (node/bootstrap.py): its log hears every corrupt object found."""
        self.sleep = sleep

    # -- naming --------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return self.location.url

    @property
    def root(self) -> str:
        """Where this store is, for messages (a LocalArtifactStore's `root` is its directory)."""
        return self.url

    @property
    def endpoint(self) -> str:
        return str(getattr(self.client.meta, "endpoint_url", "") or "AWS S3")

    def key_of(self, digest: bytes) -> str:
        name = to_hash32(digest, "artifact hash").hex()
        return f"{self.location.prefix}/{name}" if self.location.prefix else name

    def quarantine_key_of(self, digest: bytes) -> str:
        """`<prefix>-quarantine/<64 hex>.<UTC time>.<ns>`: outside the store's prefix, so never listed or served."""
        name = to_hash32(digest, "artifact hash").hex()
        stamp = f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}.{time.time_ns()}"
        return f"{self.location.prefix or 'artifacts'}-quarantine/{name}.{stamp}"

    def describe_key(self, key: str) -> str:
        return f"s3://{self.location.bucket}/{key}"

    # -- errors and retries --------------------------------------------------------------------

    def report(self, event: str, level: int, **fields: object) -> None:
        """Tell the owning node (if any) what this store found; a reporter error never breaks a read."""
        if self.reporter is not None:
            with contextlib.suppress(Exception):  # a logging hook must not turn a read into a crash
                self.reporter(event, level, fields)

    def _raise_typed(self, exc: BaseException, what: str) -> NoReturn:
        """Turn a botocore error into an ObjectStoreError that says what is wrong and what to do."""
        from botocore.exceptions import EndpointConnectionError, NoCredentialsError, PartialCredentialsError

        code, status = get_s3_error_code(exc)
        bucket = self.location.bucket
        if isinstance(exc, NoCredentialsError | PartialCredentialsError):
            raise AccessDeniedError(
                f"{what}: no S3 credentials found ({exc}); set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or "
                "AWS_PROFILE naming a profile in ~/.aws/credentials"
            ) from exc
        if code == "NoSuchBucket" or (code in ("404", "NotFound") and what.startswith("checking bucket")):
            raise BucketMissingError(
                f"{what}: bucket {bucket!r} does not exist at {self.endpoint}; create it (e.g. `aws s3 mb "
                f"s3://{bucket}`), or fix the bucket in --store or the endpoint in AWS_ENDPOINT_URL"
            ) from exc
        if status == 403 or code in ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "403"):
            raise AccessDeniedError(
                f"{what}: access to bucket {bucket!r} at {self.endpoint} was denied ({code or status}); check "
                "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or AWS_PROFILE) and that the key may read and write "
                f"s3://{bucket}/{self.location.prefix}"
            ) from exc
        if isinstance(exc, EndpointConnectionError) or is_transient(exc):
            raise EndpointUnreachableError(
                f"{what}: the object store at {self.endpoint} did not answer after {self.attempts} attempt(s) "
                f"({type(exc).__name__}: {exc}); check AWS_ENDPOINT_URL and that the service is up"
            ) from exc
        raise ObjectStoreError(f"{what}: the object store at {self.endpoint} refused: {exc}") from exc

    def _call(self, what: str, op: Callable[[], T]) -> T:
        """Run `op`, retrying transient failures with exponential backoff; other failures become typed errors.

        ArtifactErrors (not found, corrupt) pass through untouched: they are answers, not failures.
        """
        delay = BACKOFF_S
        for attempt in range(1, self.attempts + 1):
            try:
                return op()
            except ArtifactError:
                raise
            except Exception as exc:
                if attempt == self.attempts or not is_transient(exc):
                    self._raise_typed(exc, what)
                self.report(
                    "object store call failed, retrying", logging.WARNING, what=what, attempt=attempt,
                    error=f"{type(exc).__name__}: {exc}", retry_in_s=delay,
                )  # fmt: skip
                self.sleep(delay)
                delay = min(delay * 2, MAX_BACKOFF_S)
        raise AssertionError("unreachable")  # pragma: no cover

    # -- the store -----------------------------------------------------------------------------

    def check(self) -> None:
        """Fail early, with a typed error saying what to do, when the bucket is missing or not ours to use."""
        self._call(f"checking bucket {self.url}", lambda: self.client.head_bucket(Bucket=self.location.bucket))

    def _size_of(self, key: str) -> int | None:
        """The object's size, or None when there is no object under `key`."""

        def head() -> int | None:
            try:
                return int(self.client.head_object(Bucket=self.location.bucket, Key=key)["ContentLength"])
            except Exception as exc:
                code, status = get_s3_error_code(exc)
                if status == 404 or code in ("404", "NoSuchKey", "NotFound"):
                    return None
                raise

        return self._call(f"looking up {self.describe_key(key)}", head)

    def has(self, digest: bytes) -> bool:
        return self._size_of(self.key_of(digest)) is not None

    def locate(self, digest: bytes) -> str:
        """Where the copy named `digest` is (for reports)."""
        return self.describe_key(self.key_of(digest))

    def list_digests(self) -> list[Hash32]:
        """Every artifact under the prefix, sorted (the quarantine prefix is outside it): for the auditor's scan."""
        prefix = f"{self.location.prefix}/" if self.location.prefix else ""

        def list_all() -> list[Hash32]:
            names = []
            for page in self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.location.bucket, Prefix=prefix
            ):
                names += [item["Key"][len(prefix) :] for item in page.get("Contents", [])]
            return [Hash32(bytes.fromhex(n)) for n in sorted(names) if ARTIFACT_NAME.match(n)]

        return self._call(f"listing {self.url}", list_all)

    def read_head(self, digest: bytes, size: int) -> bytes:
        """The first `size` bytes of the object, unchecked (b"" without one): a ranged GET, to pick what to read."""
        key = self.key_of(digest)

        def read() -> bytes:
            try:
                reply = self.client.get_object(
                    Bucket=self.location.bucket, Key=key, Range=f"bytes=0-{max(size, 1) - 1}"
                )
            except Exception as exc:
                code, status = get_s3_error_code(exc)
                if status == 404 or code in ("404", "NoSuchKey", "NotFound"):
                    return b""
                raise
            return bytes(reply["Body"].read())[:size]

        return self._call(f"reading the start of {self.describe_key(key)}", read)

    def put(self, data: bytes) -> Hash32:
        hasher = new_content_hasher()
        hasher.update(data)
        return self._upload(Hash32(hasher.digest()), len(data), lambda: io.BytesIO(data))

    def put_stream(
        self, chunks: Iterable[bytes | memoryview], on_hash: Callable[[Hash32], None] | None = None
    ) -> Hash32:
        """Store chunks that can be read once: spooled to a temporary file while hashed (the key needs the hash
        before the first byte goes up), then uploaded from it. A state is better given to `put_state`."""
        import tempfile

        with tempfile.TemporaryFile(prefix="gradledger-s3-") as spool:
            hasher, size = new_content_hasher(), 0
            for chunk in chunks:
                hasher.update(chunk)
                size += spool.write(chunk)
            digest = Hash32(hasher.digest())
            if on_hash is not None:
                on_hash(digest)

            def rewind() -> Any:
                spool.seek(0)
                return NoCloseFile(spool)

            return self._upload(digest, size, rewind)

    def put_state(self, state: Mapping[str, torch.Tensor], on_hash: Callable[[Hash32], None] | None = None) -> Hash32:
        """Store a state under its state hash: one pass hashes its canonical bytes, a second streams them up straight
        from the tensors (no copy of the whole state). `on_hash` hears the hash before the upload starts."""
        hasher, size = new_content_hasher(), 0
        for chunk in iter_state_chunks(state):
            hasher.update(chunk)
            size += memoryview(chunk).nbytes
        digest = Hash32(hasher.digest())
        if on_hash is not None:
            on_hash(digest)
        return self._upload(digest, size, lambda: ChunksFile(iter_state_chunks(state)))

    def _upload(self, digest: Hash32, size: int, open_body: Callable[[], Any]) -> Hash32:
        """Upload the body `open_body()` gives under `digest` unless an object of `size` bytes is there already.

        Up to `part_bytes` it is one PutObject whose `x-amz-checksum-sha256` is `digest` itself -- the artifact's name
        is the SHA-256 of its bytes, so the client need not hash them again to sign the payload, and a service that
        checks checksums (AWS S3, MinIO, R2, Ceph) refuses a body that does not match its name. Bigger artifacts go up
        in parts, each with a SHA-256 checksum botocore computes. Either way every read hashes what it gets.
        """
        key = self.key_of(digest)
        if self._size_of(key) == size:
            return digest  # idempotent: same name, same size -- the same bytes unless corrupt, which reads catch
        bucket = self.location.bucket

        def single() -> None:
            self.client.put_object(
                Bucket=bucket, Key=key, Body=open_body(), ContentLength=size,
                ChecksumSHA256=base64.b64encode(to_hash32(digest)).decode("ascii"),
            )  # fmt: skip

        def parts() -> None:
            extra = {"ChecksumAlgorithm": "SHA256"}
            self.client.upload_fileobj(open_body(), bucket, key, Config=self.transfer, ExtraArgs=extra)

        self._call(f"uploading {self.describe_key(key)} ({size} bytes)", single if size <= self.part_bytes else parts)
        return digest

    def get(self, digest: bytes) -> bytes:
        key = self.key_of(digest)

        def download() -> bytes:
            buffer = io.BytesIO()
            try:
                self.client.download_fileobj(self.location.bucket, key, buffer, Config=self.transfer)
            except Exception as exc:
                code, status = get_s3_error_code(exc)
                if status == 404 or code in ("404", "NoSuchKey", "NotFound"):
                    raise ArtifactNotFoundError(
                        f"artifact {hash_to_hex(digest)} is not in the store at {self.url} (no object "
                        f"{self.describe_key(key)})"
                    ) from None
                raise
            return buffer.getvalue()

        data = self._call(f"downloading {self.describe_key(key)}", download)
        hasher = new_content_hasher()
        hasher.update(data)
        if hasher.digest() != to_hash32(digest):
            self._refuse_corrupt(digest, key)
        return data

    def _refuse_corrupt(self, digest: bytes, key: str) -> NoReturn:
        """Raise ArtifactCorruptError naming the object, moving it aside first unless the store is read-only."""
        name = hash_to_hex(digest)
        where = self.describe_key(key)
        if not self.quarantine_corrupt:
            raise ArtifactCorruptError(
                f"artifact {name} at {where} does not match its hash (corruption or tampering in the object store); "
                "delete the object and fetch it again from a peer"
            )
        moved = self.quarantine(digest)
        self.report(
            CORRUPT_EVENT, logging.WARNING, artifact=name, path=where, moved_to=moved or "",
            why="its bytes no longer hash to its name (corruption or tampering in the object store)",
        )  # fmt: skip
        raise ArtifactCorruptError(
            f"artifact {name} at {where} does not match its hash (corruption or tampering in the object store); "
            f"the bad object was moved aside to {moved or 'nowhere (another reader moved it first)'}; it is fetched "
            "again from a peer (or re-created by its owner) on the next read"
        )

    def quarantine(self, digest: bytes) -> str | None:
        """Copy the object named `digest` under the quarantine prefix and delete it; its new URL (None if gone)."""
        key, target = self.key_of(digest), self.quarantine_key_of(digest)
        bucket = self.location.bucket

        def move() -> str | None:
            try:
                self.client.copy_object(Bucket=bucket, Key=target, CopySource={"Bucket": bucket, "Key": key})
            except Exception as exc:
                code, status = get_s3_error_code(exc)
                if status == 404 or code in ("NoSuchKey", "404"):
                    return None
                raise
            self.client.delete_object(Bucket=bucket, Key=key)
            return self.describe_key(target)

        return self._call(f"moving corrupt {self.describe_key(key)} aside", move)

    def delete(self, digest: bytes) -> None:
        key = self.key_of(digest)
        self._call(
            f"deleting {self.describe_key(key)}",
            lambda: self.client.delete_object(Bucket=self.location.bucket, Key=key),
        )


ArtifactBackend = LocalArtifactStore | S3ArtifactStore
"""What `open_artifact_store` returns: every backend a node, a creator or the auditor can be given."""


def open_artifact_store(
    spec: str | Path,
    *,
    read_only: bool = False,
    check: bool = True,
    reporter: ArtifactReporter | None = None,
    client: Any = None,
    **s3_options: Any,
) -> ArtifactBackend:
    """The store `spec` names: `s3://bucket/prefix` -> S3ArtifactStore, anything else -> a LocalArtifactStore directory.

    `read_only` stores never move a corrupt copy aside (the auditor). `check` makes sure an object store's bucket
    exists and is usable now, so a typo fails at start with a clear error instead of on the first artifact.
    """
    if is_object_store_url(spec):
        where = parse_s3_url(str(spec))
        store = S3ArtifactStore(
            where.bucket, where.prefix, client=client, quarantine_corrupt=not read_only, reporter=reporter,
            **s3_options,
        )  # fmt: skip
        if check:
            store.check()
        return store
    text = str(spec)
    if "://" in text:
        raise ObjectStoreError(f"unsupported store URL {text!r}: use s3://BUCKET/PREFIX or a directory path")
    return LocalArtifactStore(Path(text).expanduser(), quarantine_corrupt=not read_only, reporter=reporter)
