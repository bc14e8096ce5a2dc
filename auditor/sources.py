"""Where the auditor reads artifacts from: artifact stores (directories or s3:// object stores) and peers, read-only.

An audit may see several copies of one artifact (a solver's checkpoint is also cached by the
verifier that replayed it, a Δ by the coordinator that averaged it). Artifacts are
content-addressed, so any good copy will do; but a copy that does not hash to its name is a
store serving tampered or corrupt bytes, and the audit reports every such copy it meets
(`corrupt`). Local copies are all checked; peers are asked only when no local store holds a
good copy. Nothing is ever written: fetched bytes are not cached into anyone's store.

Commitment documents are not named on-chain (the chain holds their Merkle root), so they are
found by scanning the stores for documents (canonical JSON that starts with
`{"delta_hash":`) or asked from the solver's node (`GET /commitments/{run}/{round}`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from protocol.adapters.artifacts import ArtifactCorruptError, ArtifactNotFoundError
from protocol.adapters.http import PeerError, PeerSet
from protocol.adapters.object_store import ArtifactBackend, is_object_store_url, open_artifact_store
from protocol.commitment import CommitmentDoc, CommitmentDocError, decode_commitment_doc
from protocol.errors import GradledgerError
from protocol.hashing import hash_to_hex, to_hash32

DOC_PREFIX = b'{"delta_hash":'


class SourceError(GradledgerError):
    """An artifact store given to the audit does not exist or cannot be read."""


@dataclass(frozen=True)
class CorruptCopy:
    digest: str
    where: str


@dataclass(frozen=True)
class FoundDocument:
    doc: CommitmentDoc
    where: str


def find_home_stores(home: Path) -> list[Path]:
    """The stores a gradledger home holds: the creator's, every solver's and every verifier's."""
    found = []
    for pattern in ("creator/artifacts", "solvers/*/artifacts", "verifiers/*/artifacts"):
        found.extend(sorted(p for p in home.glob(pattern) if p.is_dir()))
    return found


class ArtifactSources:
    """Read-only access to artifacts across stores and peers, recording corrupt copies.

    `stores`: directories and `s3://BUCKET/PREFIX` URLs (credentials and endpoint from the AWS environment, as for
    every node); none is ever written to, and a corrupt copy is reported, never moved aside."""

    def __init__(self, stores: Sequence[str | Path], peers: Sequence[str] = (), timeout_s: float = 30.0) -> None:
        self.locations: list[str] = []
        self.stores: list[ArtifactBackend] = []
        for spec in stores:
            if is_object_store_url(spec):
                where = str(spec).rstrip("/")
            else:
                path = Path(spec)
                if not path.is_dir():
                    raise SourceError(f"artifact directory {path} does not exist (check --artifacts)")
                where = str(path.resolve())
            if where not in self.locations:
                self.locations.append(where)
                self.stores.append(open_artifact_store(spec, read_only=True))
        self.peer_urls = tuple(peers)
        self.peers = PeerSet(peers, timeout_s=timeout_s) if peers else None
        self.corrupt: list[CorruptCopy] = []
        self._corrupt_seen: set[tuple[str, str]] = set()
        self._documents: dict[tuple[int, int, str], list[FoundDocument]] | None = None
        self.bytes_read = 0

    def describe(self) -> str:
        return f"{len(self.stores)} store(s) and {len(self.peer_urls)} peer(s)"

    def _note_corrupt(self, digest: str, where: str) -> None:
        if (digest, where) not in self._corrupt_seen:
            self._corrupt_seen.add((digest, where))
            self.corrupt.append(CorruptCopy(digest, where))

    def read(self, digest: bytes | str, what: str = "artifact") -> bytes:
        """The bytes named `digest`, hash-checked; every local copy is checked, peers are the fallback.

        Raises ArtifactNotFoundError (no copy anywhere) or ArtifactCorruptError (only bad copies),
        each naming the artifact and where it was looked for.
        """
        name = hash_to_hex(to_hash32(digest, what))
        raw = to_hash32(digest, what)
        good: bytes | None = None
        bad: list[str] = []
        for store in self.stores:
            if not store.has(raw):
                continue
            try:
                data = store.get(raw)
            except ArtifactCorruptError:
                where = store.locate(raw)
                bad.append(where)
                self._note_corrupt(name, where)
                continue
            self.bytes_read += len(data)
            good = good if good is not None else data
        if good is not None:
            return good
        if self.peers is not None:
            try:
                data = self.peers.fetch(raw)
                self.bytes_read += len(data)
                return data
            except ArtifactNotFoundError as exc:
                peer_problem = str(exc)
        else:
            peer_problem = "no peers given"
        if bad:
            raise ArtifactCorruptError(f"{what} {name}: every copy is corrupt ({', '.join(bad)}); {peer_problem}")
        raise ArtifactNotFoundError(
            f"{what} {name} is missing: not in {len(self.stores)} store(s) "
            f"({', '.join(self.locations) or 'none'}); {peer_problem}"
        )

    def problem(self, digest: bytes | str, what: str = "artifact") -> str | None:
        """None when a good copy exists, else why not (missing / corrupt)."""
        try:
            self.read(digest, what)
        except (ArtifactNotFoundError, ArtifactCorruptError) as exc:
            return str(exc)
        return None

    # -- commitment documents ---------------------------------------------------------------

    def _scan_documents(self) -> dict[tuple[int, int, str], list[FoundDocument]]:
        if self._documents is not None:
            return self._documents
        found: dict[tuple[int, int, str], list[FoundDocument]] = {}
        for store in self.stores:
            for digest in store.list_digests():
                if store.read_head(digest, len(DOC_PREFIX)) != DOC_PREFIX:
                    continue
                try:
                    data = store.get(digest)
                except ArtifactCorruptError:
                    self._note_corrupt(hash_to_hex(digest), store.locate(digest))
                    continue
                except ArtifactNotFoundError:  # gone since it was listed
                    continue
                try:
                    doc = decode_commitment_doc(data)
                except CommitmentDocError:
                    continue
                found.setdefault((doc.run_id, doc.round, doc.solver.lower()), []).append(
                    FoundDocument(doc, store.locate(digest))
                )
        self._documents = found
        return found

    def find_documents(self, run_id: int, round_index: int, solver: str) -> tuple[list[FoundDocument], str]:
        """Commitment documents of (run, round, solver): local ones, else the solver's node's.

        Returns (documents, where it looked) -- the second names the places for a clear report.
        """
        local = self._scan_documents().get((run_id, round_index, solver.lower()), [])
        if local:
            return local, ""
        searched = f"{len(self.stores)} store(s)"
        if self.peers is None:
            return [], f"{searched}, no peers"
        url = self.peers.url_of(solver)
        if url is None:
            return [], f"{searched}; no peer answers /identity as {solver}"
        try:
            raw = self.peers.get_json(url, f"/commitments/{run_id}/{round_index}")["document"]
            doc = decode_commitment_doc(str(raw).encode())
        except (PeerError, CommitmentDocError, KeyError, TypeError, ValueError) as exc:
            return [], f"{searched}; peer {url}: {exc}"
        return [FoundDocument(doc, f"{url}/commitments/{run_id}/{round_index}")], ""
