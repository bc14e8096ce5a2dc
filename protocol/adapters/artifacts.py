"""Content-addressed artifact store: checkpoints, pseudo-gradients, leaves, sketches, shards.

Every artifact is named by the SHA-256 of its bytes and the name is checked on every read,
wherever the bytes came from (local disk or a peer over HTTP): a corrupt or substituted
artifact is an `ArtifactCorruptError`, never silently used. Writes are atomic (temp file in
the same directory, fsync, rename), so a crash never leaves a half-written artifact under a
valid name.

`ArtifactStore` is the interface; `LocalArtifactStore` (a directory) is the default backend.
An object-store backend (S3-compatible) implements the same four methods. Nodes serve their
store read-only over HTTP with `make_artifact_router`, and fetch from peers with
`fetch_artifact`, whose whole transfer ends by a deadline (protocol/adapters/deadlines.py): an
artifact a peer does not finish serving in time is an `ArtifactDeadlineError`, i.e. unavailable.

A copy that no longer hashes to its name (a bad disk, a stray edit) is moved aside by the store
that finds it (`<root>-quarantine/`, kept for inspection, never served, never deleted) and the
read fails with `ArtifactCorruptError`; `read_through` -- the one fetch-through path every node's
reads of run artifacts, θ and peers' checkpoints take -- then fetches a good copy from peers and
stores it, so a corrupt cached file heals instead of failing every tick. The HTTP router answers
503 with a plain reason for a corrupt artifact, never the bytes and never a traceback. What a store
finds is told to its `reporter` (node/ logs it; adapters do not log).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import NoReturn, Protocol, TypeVar

import httpx
import torch
from fastapi import APIRouter, HTTPException
from fastapi.responses import FileResponse, Response, StreamingResponse

from protocol.adapters.deadlines import DEFAULT_FETCH_DEADLINE_S, DeadlineMissedError, FetchDeadline
from protocol.errors import GradledgerError
from protocol.hashing import Hash32, compute_content_hash, hash_to_hex, new_content_hasher, to_hash32
from protocol.state import decode_state, encode_state, iter_state_chunks

T = TypeVar("T")


ARTIFACT_NAME = re.compile(r"^[0-9a-f]{64}$")
"""How a stored artifact is named: its SHA-256 in lowercase hex (both backends)."""


class ArtifactError(GradledgerError):
    """An artifact cannot be stored or retrieved."""


class ArtifactNotFoundError(ArtifactError):
    """No artifact with that hash is available from this source."""


class ArtifactDeadlineError(ArtifactNotFoundError, DeadlineMissedError):
    """A peer did not finish serving an artifact by its fetch deadline: unavailable data, exactly as if it had answered
    404 (a slow-serving solver's checkpoint is failed like a withheld one; protocol/adapters/deadlines.py)."""


class ArtifactCorruptError(ArtifactError):
    """Bytes were found but do not hash to the requested name.

    `quarantined` is where a local store moved the bad copy (None for a peer's bytes, which are never kept).
    """

    def __init__(self, message: str, quarantined: Path | None = None) -> None:
        super().__init__(message)
        self.quarantined = quarantined


ArtifactReporter = Callable[[str, int, dict[str, object]], None]
"""Hears what a store found or did: (event, logging level, fields). Nodes log it (node/logs.py); adapters never log."""

QUARANTINE_SUFFIX = "-quarantine"
SERVE_CHUNK_BYTES = 1 << 20
"""Pieces in which a served artifact is hashed before it is streamed: memory per request stays at this."""
"""A store rooted at `<dir>/artifacts` moves corrupt copies to `<dir>/artifacts-quarantine/` (outside the store, so
nothing lists, serves or audits them as artifacts)."""


class ArtifactStore(Protocol):
    """What every backend provides. Names are SHA-256 content hashes."""

    def put(self, data: bytes) -> Hash32: ...
    def get(self, digest: bytes) -> bytes: ...
    def has(self, digest: bytes) -> bool: ...
    def delete(self, digest: bytes) -> None: ...


class PacedArtifactStore(ArtifactStore, Protocol):
    """A store that paces its own HTTP answers (the slow-serving adversary of adversary/solver.py): the artifact
    router streams `stream_artifact(digest)` instead of the bytes of `get`."""

    def stream_artifact(self, digest: bytes) -> AsyncIterator[bytes]:
        """The body to stream for `digest`; raises ArtifactNotFoundError / ArtifactCorruptError before returning (the
        router answers 404 / 503 then, as for `get`), never once streaming started."""
        ...


class LocalArtifactStore:
    """Artifacts as files `<root>/<first 2 hex>/<64 hex>`, written atomically.

    A read that finds a copy not hashing to its name moves it aside (`quarantine`) before it raises, so the
    next read misses and re-fetches instead of failing on the same bytes forever. `quarantine_corrupt=False`
    is for read-only tools (the auditor), which report corrupt copies and must not move a node's files.
    """

    def __init__(
        self, root: Path, *, quarantine_corrupt: bool = True, reporter: ArtifactReporter | None = None
    ) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.quarantine_corrupt = quarantine_corrupt
        self.reporter = reporter
        """Set by the node that owns the store (node/bootstrap.py): its log hears every corrupt copy found."""

    @property
    def quarantine_dir(self) -> Path:
        return self.root.parent / f"{self.root.name}{QUARANTINE_SUFFIX}"

    def report(self, event: str, level: int, **fields: object) -> None:
        """Tell the owning node (if any) what this store found; a reporter error never breaks a read."""
        if self.reporter is not None:
            with contextlib.suppress(Exception):  # a logging hook must not turn a read into a crash
                self.reporter(event, level, fields)

    def _path(self, digest: bytes) -> Path:
        name = to_hash32(digest, "artifact hash").hex()
        return self.root / name[:2] / name

    def put(self, data: bytes) -> Hash32:
        return self.put_stream([data])

    def put_stream(
        self, chunks: Iterable[bytes | memoryview], on_hash: Callable[[Hash32], None] | None = None
    ) -> Hash32:
        """Write chunks to a temp file while hashing them, then rename it to its hash.

        One pass over the bytes (a multi-megabyte checkpoint is never assembled in memory);
        fsync before the rename, so a name always holds complete bytes. `on_hash` hears the
        hash as soon as the last byte is hashed, before the fsync: the hash is final then, only
        durability is pending (and this call returns once it is there). Once durable, the file's
        pages are dropped from the page cache: artifacts are read back rarely (a peer's fetch),
        and a solver writing 100 MB checkpoints otherwise makes every later write fault in fresh
        pages (on the reference VM a 100 MB write took 0.15-0.27 s instead of 0.02-0.03 s).
        """
        self.root.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".tmp-")
        try:
            hasher = new_content_hasher()
            with os.fdopen(fd, "wb") as handle:
                for chunk in chunks:
                    hasher.update(chunk)
                    handle.write(chunk)
                digest = Hash32(hasher.digest())
                if on_hash is not None:
                    on_hash(digest)
                handle.flush()
                os.fsync(handle.fileno())
                if hasattr(os, "posix_fadvise"):  # not on macOS; only a cache hint
                    os.posix_fadvise(handle.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
            path = self._path(digest)
            if path.exists():
                Path(tmp).unlink()
                return digest
            path.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return digest

    def get(self, digest: bytes) -> bytes:
        path = self._path(digest)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise ArtifactNotFoundError(f"artifact {hash_to_hex(digest)} is not in the store at {self.root}") from None
        if compute_content_hash(data) != to_hash32(digest):
            self._refuse_corrupt(digest, path)
        return data

    def get_verified_path(self, digest: bytes) -> Path:
        """The file of `digest`, hashed in SERVE_CHUNK_BYTES pieces and checked against its name first: what the
        HTTP API streams (a 100 MB checkpoint served to 16 peers at once is never held in memory 16 times).
        Missing or corrupt: the same errors (and quarantine) as `get`."""
        path = self._path(digest)
        hasher = new_content_hasher()
        try:
            with path.open("rb") as handle:
                while chunk := handle.read(SERVE_CHUNK_BYTES):
                    hasher.update(chunk)
        except FileNotFoundError:
            raise ArtifactNotFoundError(f"artifact {hash_to_hex(digest)} is not in the store at {self.root}") from None
        if hasher.digest() != to_hash32(digest):
            self._refuse_corrupt(digest, path)
        return path

    def _refuse_corrupt(self, digest: bytes, path: Path) -> NoReturn:
        """Raise ArtifactCorruptError for the copy at `path`, moving it aside first unless the store is read-only."""
        name = hash_to_hex(digest)
        if not self.quarantine_corrupt:
            raise ArtifactCorruptError(
                f"artifact {name} at {path} does not match its hash (disk corruption or tampering); move the "
                "file aside and fetch it again from a peer"
            )
        moved = self.quarantine(digest)
        self.report(
            "corrupt artifact moved aside", logging.WARNING, artifact=name, path=str(path),
            moved_to=str(moved) if moved else "", why="its bytes no longer hash to its name (bad disk or edit)",
        )  # fmt: skip
        raise ArtifactCorruptError(
            f"artifact {name} at {path} does not match its hash (disk corruption or tampering); the bad copy "
            f"was moved aside to {moved or 'nowhere (another reader moved it first)'}; it is fetched again from "
            "a peer (or re-created by its owner) on the next read",
            moved,
        )

    def quarantine(self, digest: bytes) -> Path | None:
        """Move the copy named `digest` to the quarantine directory; its new path (None if it was gone already).

        Never deletes: an operator may want to see what the disk did. Each move gets its own name, so a file that
        goes bad twice keeps both copies.
        """
        path = self._path(digest)
        self.quarantine_dir.mkdir(parents=True, exist_ok=True)
        target = self.quarantine_dir / f"{path.name}.{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}.{time.time_ns()}"
        try:
            os.replace(path, target)
        except FileNotFoundError:  # another thread (the HTTP server, the worker) moved it first
            return None
        return target

    def has(self, digest: bytes) -> bool:
        return self._path(digest).exists()

    def locate(self, digest: bytes) -> str:
        """Where the copy named `digest` is (for reports)."""
        return str(self._path(digest))

    def list_digests(self) -> list[Hash32]:
        """Every artifact this store holds, sorted: for tools that scan a store (the auditor finding documents)."""
        found: list[Hash32] = []
        for sub in sorted(self.root.iterdir()) if self.root.is_dir() else ():
            if sub.is_dir() and len(sub.name) == 2:
                found += [Hash32(bytes.fromhex(p.name)) for p in sorted(sub.iterdir()) if ARTIFACT_NAME.match(p.name)]
        return found

    def read_head(self, digest: bytes, size: int) -> bytes:
        """The first `size` bytes of the copy, unchecked (b"" without one): to pick what to read in full."""
        try:
            with open(self._path(digest), "rb") as handle:
                return handle.read(size)
        except OSError:
            return b""

    def delete(self, digest: bytes) -> None:
        self._path(digest).unlink(missing_ok=True)


def read_through(store: ArtifactStore, digest: bytes, fetch: Callable[[Hash32], bytes] | None) -> bytes:
    """The artifact from `store`, else from `fetch` (hash-checked, then stored): the one fetch-through read.

    A stored copy that no longer hashes to its name is moved aside by the store (`LocalArtifactStore.get`); this
    then fetches a good copy and stores it -- the cache heals, the caller goes on, and nobody deletes a file by
    hand. Without `fetch` (or when no peer has it yet) the read fails with an error that says so; the next read
    fetches again, since the bad copy is gone from the store.
    """
    name = to_hash32(digest, "artifact hash")
    corrupt: ArtifactCorruptError | None = None
    if store.has(name):
        try:
            return store.get(name)
        except ArtifactCorruptError as exc:
            corrupt = exc
    if fetch is None:
        if corrupt is not None:
            raise corrupt
        return store.get(name)  # raises ArtifactNotFoundError naming the store
    try:
        data = fetch(name)
    except ArtifactError as exc:
        if corrupt is None:
            raise
        raise ArtifactCorruptError(
            f"{corrupt}; no peer could provide a good copy yet ({exc})", corrupt.quarantined
        ) from exc
    if store.put(data) != name:  # the fetcher checks; storing re-hashes anyway, so this costs nothing
        raise ArtifactCorruptError(f"artifact {hash_to_hex(name)}: the fetched bytes do not match the hash")
    report = getattr(store, "report", None)  # a local or an object store tells its node
    if corrupt is not None and callable(report):
        report(
            "corrupt artifact healed from a peer", logging.WARNING, artifact=hash_to_hex(name),
            moved_to=str(corrupt.quarantined or ""), bytes=len(data),
        )  # fmt: skip
    return data


def put_state(store: ArtifactStore, state: Mapping[str, torch.Tensor]) -> Hash32:
    """Store a state under the hash of its canonical bytes, which is its state hash."""
    if isinstance(store, LocalArtifactStore):
        return store.put_stream(iter_state_chunks(state))
    streams = getattr(store, "put_state", None)  # an object store streams it from the tensors (object_store.py)
    if callable(streams):
        return streams(state)
    return store.put(encode_state(state))


class BackgroundStateWriter:
    """Store states from a writer thread, so hashing and disk writes overlap training.

    `save(index, state)` returns a future of the state hash, resolved as soon as the state is
    hashed (before its fsync), so the caller can go on (build leaves, store Δ) while the last
    checkpoint reaches the disk. The caller must not mutate `state` afterwards (training hands
    over fresh copies). One worker keeps writes in order. Use as a context manager: leaving it
    waits for every write to be durable and raises the first write error.
    # INVARIANT: nothing is committed on-chain before this context is left (every checkpoint a
    # commitment names is on disk, fsynced, under its hash).
    """

    def __init__(self, store: ArtifactStore) -> None:
        self.store = store
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="checkpoint-writer")
        self.writes: list[Future[Hash32]] = []

    def save(self, _index: int, state: Mapping[str, torch.Tensor]) -> Future[Hash32]:
        hashed: Future[Hash32] = Future()

        def write() -> Hash32:
            try:
                streams = getattr(self.store, "put_state", None)  # an object store: hashed, then uploaded
                if isinstance(self.store, LocalArtifactStore):
                    digest = self.store.put_stream(iter_state_chunks(state), on_hash=hashed.set_result)
                elif callable(streams):
                    digest = streams(state, on_hash=hashed.set_result)
                else:
                    digest = put_state(self.store, state)
                    hashed.set_result(digest)
            except BaseException as exc:
                if not hashed.done():
                    hashed.set_exception(exc)
                raise
            return digest

        self.writes.append(self.pool.submit(write))
        return hashed

    def submit(self, work: Callable[[], T]) -> Future[T]:
        """Run `work` on the writer thread, in order with the saves (a solver's segment sketches).

        Its errors surface from the returned future; leaving the context waits for it too.
        """
        return self.pool.submit(work)

    def __enter__(self) -> BackgroundStateWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.pool.shutdown(wait=True)
        for write in self.writes:
            write.result()  # a failed write (disk full, ...) surfaces here, before any commit


def get_state(store: ArtifactStore, digest: bytes) -> dict[str, torch.Tensor]:
    """Load a state by hash (checked), parsing only canonical bytes (never pickle)."""
    return decode_state(store.get(digest))


def fetch_artifact(
    base_url: str,
    digest: bytes,
    *,
    timeout_s: float = 30.0,
    client: httpx.Client | None = None,
    deadline: FetchDeadline | None = None,
) -> bytes:
    """GET an artifact from a peer's artifact API and check it against its hash, all of it by `deadline`.

    # INVARIANT: the whole transfer -- connecting, the answer's head and every byte of its body -- ends by the deadline
    (default: DEFAULT_FETCH_DEADLINE_S from now), however the peer paces it; `timeout_s` only bounds each read. Missed,
    it is an `ArtifactDeadlineError` (unavailable data). A client of `make_deadline_client` (the peer set's) cuts a
    read that waits past the deadline; any other client is checked after every chunk.
    """
    name = hash_to_hex(to_hash32(digest, "artifact hash"))
    url = f"{base_url.rstrip('/')}/artifacts/{name}"
    deadline = deadline or FetchDeadline.after(DEFAULT_FETCH_DEADLINE_S, f"artifact {name}")
    body = bytearray()
    status, expected = 0, ""

    def missed(detail: str) -> ArtifactDeadlineError:
        got = f"{len(body):,} of {expected or '?'} bytes" if status == 200 else "no answer"
        return ArtifactDeadlineError(
            f"peer {base_url} did not serve artifact {name} within the {deadline.seconds:g} s deadline of "
            f"{deadline.what} ({got} received{detail}): counted as unavailable; its operator must serve faster "
            '(docs/nodes.md, "Fetch deadlines")'
        )

    if deadline.expired():
        raise missed(": no time was left")
    try:
        with deadline.enforced(), (client or httpx).stream("GET", url, timeout=deadline.bound(timeout_s)) as response:
            status, expected = response.status_code, response.headers.get("content-length", "")
            if status == 200:
                for chunk in response.iter_bytes():
                    body += chunk
                    if deadline.expired():
                        raise missed("")
    except httpx.HTTPError as exc:
        if deadline.expired():
            raise missed(f": {exc}") from exc
        raise ArtifactNotFoundError(f"cannot fetch {name} from {base_url}: {exc}") from exc
    if status == 404:
        raise ArtifactNotFoundError(f"peer {base_url} does not have artifact {name}")
    if status != 200:
        raise ArtifactNotFoundError(f"peer {base_url} answered {status} for artifact {name}")
    data = bytes(body)
    if compute_content_hash(data) != to_hash32(digest):
        raise ArtifactCorruptError(f"peer {base_url} served bytes for {name} that do not match the hash")
    return data


def fetch_into_store(store: ArtifactStore, base_url: str, digest: bytes, **kwargs) -> bytes:
    """The artifact from the local store, or fetched from a peer, checked and cached (a corrupt copy healed)."""
    return read_through(store, digest, lambda name: fetch_artifact(base_url, name, **kwargs))


CORRUPT_RETRY_AFTER_S = 30
"""What a 503 for a corrupt artifact tells the fetcher: its owner re-fetches or re-creates it meanwhile."""


def make_artifact_router(store: ArtifactStore) -> APIRouter:
    """Read-only HTTP access to a store: GET /artifacts/{0x-hex sha256}."""
    router = APIRouter()

    @router.get("/artifacts/{digest}", response_class=Response)
    def read_artifact(digest: str) -> Response:
        try:
            name = to_hash32(digest, "artifact hash")
        except GradledgerError as exc:
            raise HTTPException(status_code=400, detail=str(exc)) from None
        try:
            paced = getattr(store, "stream_artifact", None)
            if callable(paced):  # a store that paces its own answers (PacedArtifactStore)
                return StreamingResponse(paced(name), media_type="application/octet-stream")
            if isinstance(store, LocalArtifactStore):  # checked, then streamed from disk (never whole in memory)
                return FileResponse(store.get_verified_path(name), media_type="application/octet-stream")
            data = store.get(name)  # a store that serves bytes it computes (the adversaries' wrappers)
        except ArtifactNotFoundError:
            raise HTTPException(status_code=404, detail=f"no artifact {hash_to_hex(name)} here") from None
        except ArtifactCorruptError:
            # INVARIANT: bytes that do not hash to their name are never served. The store moved them aside and told
            # its node (which logs it and re-creates or re-fetches); the body names no local path.
            raise HTTPException(
                status_code=503,
                detail=f"artifact {hash_to_hex(name)} is corrupt on this node (its bytes no longer match their hash) "
                "and is not served; the node re-creates or re-fetches it: ask another peer or retry later",
                headers={"Retry-After": str(CORRUPT_RETRY_AFTER_S)},
            ) from None
        return Response(content=data, media_type="application/octet-stream")

    return router
