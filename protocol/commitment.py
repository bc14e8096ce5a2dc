"""The document a solver publishes with each commitment, and the checks a verifier runs on it.

On-chain a commitment is a Merkle root, a Δ hash and a token count. Off-chain the solver
serves this document: every segment leaf (start/end state hashes, sketch hash, tokens) plus θ_r's
hash. A verifier checks, before any replay, that the leaves hash to the committed root, that the
tokens add up, and that the trajectory chains from θ_r's start checkpoint (protocol/replay.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from protocol.bounded_json import load_bounded_json
from protocol.errors import GradledgerError
from protocol.hashing import Hash32, hash_to_hex, to_hash32
from protocol.merkle import SegmentLeaf, build_merkle_tree, compute_leaf_hash


class CommitmentDocError(GradledgerError):
    """A published commitment document is malformed or does not match the chain."""


@dataclass(frozen=True)
class CommitmentDoc:
    run_id: int
    round: int
    solver: str
    theta_hash: Hash32
    delta_hash: Hash32
    leaves: tuple[SegmentLeaf, ...]

    @property
    def tokens(self) -> int:
        return sum(leaf.tokens for leaf in self.leaves)

    @property
    def root(self) -> Hash32:
        return build_merkle_tree([compute_leaf_hash(leaf) for leaf in self.leaves]).root


def encode_commitment_doc(doc: CommitmentDoc) -> bytes:
    """Canonical JSON (sorted keys, no spaces): the artifact a solver stores and serves."""
    body = {
        "run_id": doc.run_id,
        "round": doc.round,
        "solver": doc.solver.lower(),
        "theta_hash": hash_to_hex(doc.theta_hash),
        "delta_hash": hash_to_hex(doc.delta_hash),
        "leaves": [
            {
                "index": leaf.index,
                "start_hash": hash_to_hex(leaf.start_hash),
                "end_hash": hash_to_hex(leaf.end_hash),
                "sketch_hash": hash_to_hex(leaf.sketch_hash),
                "tokens": leaf.tokens,
            }
            for leaf in doc.leaves
        ],
    }
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def decode_commitment_doc(data: bytes) -> CommitmentDoc:
    """Parse a document; any missing or malformed field is a CommitmentDocError."""
    try:
        body = load_bounded_json(data)  # a solver serves it: never parsed before its depth is known
        leaves = tuple(
            SegmentLeaf(
                run_id=body["run_id"],
                round=body["round"],
                solver=body["solver"],
                index=item["index"],
                start_hash=to_hash32(item["start_hash"]),
                end_hash=to_hash32(item["end_hash"]),
                sketch_hash=to_hash32(item["sketch_hash"]),
                tokens=item["tokens"],
            )
            for item in body["leaves"]
        )
        return CommitmentDoc(
            body["run_id"],
            body["round"],
            body["solver"],
            to_hash32(body["theta_hash"]),
            to_hash32(body["delta_hash"]),
            leaves,
        )
    except (ValueError, KeyError, TypeError, GradledgerError) as exc:
        raise CommitmentDocError(f"malformed commitment document: {exc}") from None


def verify_commitment_doc(
    doc: CommitmentDoc, run_id: int, round_index: int, solver: str, root: bytes, delta_hash: bytes, tokens: int
) -> str | None:
    """Reason the document does not match the on-chain commitment, or None when it does."""
    if (doc.run_id, doc.round, doc.solver.lower()) != (run_id, round_index, solver.lower()):
        return "document is for another run, round or solver"
    if not doc.leaves:
        return "document has no leaves"
    if doc.root != to_hash32(root):
        return "leaves do not hash to the committed root"
    if doc.delta_hash != to_hash32(delta_hash):
        return "document's delta hash differs from the committed one"
    if doc.tokens != tokens:
        return f"leaves add up to {doc.tokens} tokens, the commitment claims {tokens}"
    return None
