"""A solver's own artifacts gone bad: say what they are, re-create them from the round's state, or refuse loudly.

A solver must serve what it committed (its commitment document, the end checkpoint, the sampled start checkpoints,
its Δ): verifiers count what it does not serve as a failed segment (data availability) and the solver is slashed.
A copy on its disk that no longer hashes to its name (a bad disk, a stray edit) is moved aside by the store
(protocol/adapters/artifacts.py) and never served: the artifact API answers 503 with a plain reason. This module
makes the solver act on it:

- it logs an ERROR naming the artifact, what it is ("the start checkpoint of segment 3 of round 1") and what
  happens next (re-created, or: failed and slashed N ETH unless a good copy is put back);
- it re-creates it from its state: training is deterministic, so retraining round r from θ_r (fetched from peers
  if need be) writes the same checkpoints, sketches, Δ and document under the same hashes. It checks that the
  re-created document hashes to the one recorded; if not (another profile, a changed dataset), it says so loudly
  and leaves the round to its fate;
- before opening a commitment it hash-checks everything verifiers will fetch from it (the document, the end
  checkpoint, the sampled start checkpoints, Δ -- in a codec run the payload document and the P_r, e_r and
  e_(r+1) it names) and re-creates what is missing or corrupt, so it never opens a commitment it cannot serve
  without saying so.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import Protocol

from node.logs import log_event
from protocol.adapters.artifacts import ArtifactError
from protocol.adapters.nodestate import NodeState
from protocol.adapters.object_store import ArtifactBackend
from protocol.adapters.runs import RunContext
from protocol.commitment import CommitmentDoc, CommitmentDocError, decode_commitment_doc
from protocol.errors import GradledgerError
from protocol.hashing import Hash32, hash_to_hex, to_hash32
from protocol.ledger import format_eth
from protocol.opening import OpeningError
from protocol.payload import PayloadError, decode_payload_doc, is_compressed
from solver.decide import RoundRecord

CORRUPT_EVENT = "corrupt artifact moved aside"
"""What LocalArtifactStore reports when a read finds a copy that does not hash to its name."""


def describe_in_document(doc: CommitmentDoc, digest: bytes) -> str | None:
    """What `digest` is within a round's commitment document (None when the document does not name it)."""
    if digest == doc.delta_hash:
        return f"the pseudo-gradient Δ of round {doc.round}"
    for leaf in doc.leaves:
        if digest == leaf.end_hash:
            return f"the end checkpoint of segment {leaf.index} of round {doc.round}"
        if digest == leaf.start_hash:
            return f"the start checkpoint of segment {leaf.index} of round {doc.round}"
        if digest == leaf.sketch_hash:
            return f"the update sketch of segment {leaf.index} of round {doc.round}"
    return None


def get_served_hashes(doc: CommitmentDoc, segments: Iterable[int]) -> list[Hash32]:
    """What verifiers fetch from the solver for a commitment whose opened draws are `segments`: the end checkpoint,
    each sampled segment's start checkpoint and Δ (the document itself is read separately)."""
    out = [doc.delta_hash] + ([doc.leaves[-1].end_hash] if doc.leaves else [])
    for segment in sorted(set(segments)):
        if 0 <= segment < len(doc.leaves) and doc.leaves[segment].start_hash not in out:
            out.append(doc.leaves[segment].start_hash)
    return out


class ArtifactOwner(Protocol):
    """What `OwnArtifacts` needs of its solver node (solver/node.py's SolverNode is one): its log, store and state,
    the round records, and a way to retrain a round into the store. A structural type, so this module sits below the
    node that holds it."""

    @property
    def log(self) -> logging.Logger: ...

    @property
    def store(self) -> ArtifactBackend: ...

    @property
    def state(self) -> NodeState: ...

    @property
    def run_id(self) -> int: ...

    def load(self) -> RunContext: ...

    def record_of(self, run_id: int, round_index: int) -> RoundRecord | None: ...

    def recreate_artifacts(self, ctx: RunContext, round_index: int, theta_hash: Hash32) -> Hash32:
        """Retrain round `round_index` from θ_r into the store; the hash its commitment document is stored under."""
        ...


class OwnArtifacts:
    """Hears a solver's store, names its corrupt artifacts, re-creates their rounds (see the module docstring)."""

    def __init__(self, node: ArtifactOwner) -> None:
        self.node = node
        self.log = node.log
        self._lock = threading.Lock()
        self._queued: set[int] = set()
        self._unrepairable: set[int] = set()
        self._local = threading.local()  # re-entrancy guard: describing reads documents, which may be corrupt too
        self.recreated: list[int] = []

    # -- hearing the store -------------------------------------------------------------------

    def on_store_report(self, event: str, level: int, fields: dict[str, object]) -> None:
        """The store's reporter: log what it found; for an artifact of this solver's own rounds, an ERROR saying
        what it is and what happens next, and queue its round for re-creation."""
        log_event(self.log, event, level, **fields)
        if event != CORRUPT_EVENT:
            return
        digest = to_hash32(str(fields["artifact"]), "artifact hash")
        found = self.describe(digest)
        if found is None:  # θ, the run's artifacts, peers' copies: fetched again from peers on the next read
            return
        record, what = found
        with self._lock:
            if record.round not in self._unrepairable:
                self._queued.add(record.round)
        log_event(
            self.log, "own artifact corrupt: not served", level=logging.ERROR, artifact=hash_to_hex(digest),
            what=what, round=record.round, moved_to=fields.get("moved_to", ""),
            consequence=self.consequence(record, recreating=record.round not in self._unrepairable),
        )  # fmt: skip

    def describe(self, digest: bytes) -> tuple[RoundRecord, str] | None:
        """(the round's record, what the artifact is) for an artifact of one of this solver's rounds, else None."""
        nested = getattr(self._local, "active", False)
        self._local.active = True
        try:
            records = self._records()
            for record in records:
                if digest == record.doc_hash:
                    return record, f"the commitment document of round {record.round}"
                if digest == record.delta_hash:
                    return record, f"the pseudo-gradient Δ of round {record.round}"
            if nested:  # reading a document from inside a report about another artifact: the cheap match only
                return None
            for record in records:
                doc = self._read_document(record)
                what = describe_in_document(doc, digest) if doc is not None else None
                if what is not None:
                    return record, what
            return None
        finally:
            self._local.active = nested

    def consequence(self, record: RoundRecord, recreating: bool) -> str:
        """What happens to this solver's money because an artifact of `record`'s round is gone."""

        stake = format_eth(self.node.load().terms.solver_min_stake)
        at_stake = (
            f"verifiers fetch it to check round {record.round}'s commitment: if it is not served when they do, the "
            f"commitment is failed (data availability) or cannot be opened, and this solver is slashed {stake} ETH"
        )
        if recreating:
            return (
                f"re-creating it by retraining round {record.round} from θ_{record.round} (training is deterministic: "
                f"same bytes, same hash); until then it is answered 503. {at_stake}"
            )
        return (
            f"it cannot be re-created here; {at_stake} unless a good copy is put back under its hash in "
            f"{self.node.store.root} (e.g. from a backup)"
        )

    # -- re-creating -------------------------------------------------------------------------

    def run_queued(self) -> None:
        """Re-create every round queued since the last tick (called on the node's own thread)."""
        with self._lock:
            rounds, self._queued = sorted(self._queued - self._unrepairable), set()
        for r in rounds:
            self.recreate_round(r)

    def recreate_round(self, round_index: int) -> bool:
        """Retrain round `round_index` from θ_r into the store; True when its document hashes as recorded.

        A GradledgerError (θ_r not reachable now) re-queues the round and propagates: the tick is retried.
        """
        node = self.node
        ctx = node.load()
        record = node.record_of(ctx.run_id, round_index)
        if record is None or record.doc_hash is None or record.theta_hash is None:
            return False
        log_event(self.log, "re-creating own artifacts", level=logging.WARNING, run=ctx.run_id, round=round_index)
        try:
            doc_hash = node.recreate_artifacts(ctx, round_index, record.theta_hash)
        except GradledgerError:
            with self._lock:
                self._queued.add(round_index)
            raise
        if doc_hash != record.doc_hash:
            with self._lock:
                self._unrepairable.add(round_index)
            log_event(
                self.log, "cannot re-create own artifacts", level=logging.ERROR, run=ctx.run_id, round=round_index,
                why=f"retraining gave document {hash_to_hex(doc_hash)[:18]}, not the committed "
                f"{hash_to_hex(record.doc_hash)[:18]} (another execution profile or dataset?)",
                consequence=self.consequence(record, recreating=False),
            )  # fmt: skip
            return False
        self.recreated.append(round_index)
        log_event(
            self.log, "own artifacts re-created", level=logging.WARNING, run=ctx.run_id, round=round_index,
            document=hash_to_hex(doc_hash)[:18], served_again=True,
        )  # fmt: skip
        return True

    # -- before opening ----------------------------------------------------------------------

    def read_document(self, record: RoundRecord) -> CommitmentDoc:
        """The round's stored commitment document, re-created first if it is corrupt or gone (OpeningError if not)."""
        if record.doc_hash is None:
            raise OpeningError("no commitment document is stored for this round")
        doc = self._read_document(record)
        if doc is None and self._recreate_now(record.round):
            doc = self._read_document(record)
        if doc is None:
            raise OpeningError(
                f"the commitment document {hash_to_hex(record.doc_hash)} of round {record.round} is gone or corrupt "
                "and could not be re-created"
            )
        return doc

    def ensure_served(self, record: RoundRecord, doc: CommitmentDoc, segments: Iterable[int]) -> bool:
        """Hash-check every artifact verifiers will fetch for these opened segments; re-create the round if one is
        missing or corrupt. True when all are good (after re-creating, if it came to that)."""
        served = get_served_hashes(doc, segments)
        missing = [d for d in served + self._payload_hashes(doc) if not self._is_good(d)]
        if not missing:
            return True
        log_event(
            self.log, "own artifacts missing before opening", level=logging.ERROR, round=record.round,
            artifacts=",".join(hash_to_hex(d)[:18] for d in missing),
            consequence=self.consequence(record, recreating=record.round not in self._unrepairable),
        )  # fmt: skip
        return self._recreate_now(record.round) and all(self._is_good(d) for d in missing)

    # -- helpers -----------------------------------------------------------------------------

    def _payload_hashes(self, doc: CommitmentDoc) -> list[Hash32]:
        """In a codec run, what the payload document (the commitment's Δ hash) names: P_r, e_r and e_(r+1), which
        verifiers fetch too (node/payloads.py). None when the document itself is unreadable: it is missing then."""
        if not is_compressed(self.node.load().config.train):
            return []
        try:
            payload_doc = decode_payload_doc(self.node.store.get(doc.delta_hash))
        except (ArtifactError, PayloadError):
            return []
        return [payload_doc.payload_hash, payload_doc.residual_hash, payload_doc.next_residual_hash]

    def _recreate_now(self, round_index: int) -> bool:
        with self._lock:
            if round_index in self._unrepairable:
                return False
            self._queued.discard(round_index)
        return self.recreate_round(round_index)

    def _is_good(self, digest: bytes) -> bool:
        try:
            self.node.store.get(digest)
        except ArtifactError:  # corrupt (moved aside and reported) or not there at all
            return False
        return True

    def _records(self) -> list[RoundRecord]:
        out = []
        for _, raw in self.node.state.list("round"):
            record = RoundRecord.from_json(raw)
            if record.run_id == self.node.run_id and record.doc_hash is not None:
                out.append(record)
        return out

    def _read_document(self, record: RoundRecord) -> CommitmentDoc | None:
        if record.doc_hash is None:
            return None
        try:
            return decode_commitment_doc(self.node.store.get(record.doc_hash))
        except (ArtifactError, CommitmentDocError):
            return None
