"""Compressed pseudo-gradients inside the protocol: the payload document and the error-feedback chain.

Why: a run with a codec (`train.codec`, protocol/compression.py) exchanges P_r = C(Δ_r + e_r) instead of the
float32 Δ_r, and solvers rebuild θ_(r+1) from θ_r and the accepted payloads. A lossy codec needs error feedback
(e_(r+1) = Δ_r + e_r - D(P_r) is carried to the next round), and e is the one input no replay produces: a
solver free to choose e could push any update into θ through it. So e is pinned by a chain anyone can check:

- e_r is the e_(r+1) of the solver's *accepted* commitment of round r - 1, or the zero state when it has none
  (round 0, skipped, failed, unopened or planted round): `get_expected_residual_hash`;
- P_r must be exactly C(Δ_r + e_r) for the replay-verified Δ_r = θ_r - c_H, and e_(r+1) must hash to
  Δ_r + e_r - D(P_r): `verify_payload_binding` recomputes both bit for bit (`compress_with_feedback`).

By induction every e that ever enters a payload is what the codec lost on verified Δs, so an update cannot be
injected through e: a forged e_r does not hash to the previous accepted document's e_(r+1) (or to zero), a
payload over Δ + e_r + u is not C(Δ + e_r), and a forged e_(r+1) does not hash to what the codec lost.

The commitment's on-chain Δ hash is, in a codec run, the content hash of the canonical payload document
(`encode_payload_doc`): it binds the codec label, the payload bytes' hash and the hashes of e_r and e_(r+1).
P_r, e_r and e_(r+1) are separate artifacts (raw payload bytes; canonical states), served by the solver like its
checkpoints. With `train.codec = "none"` none of this exists: the Δ hash is the state hash of Δ, as always.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

import torch

from protocol.bounded_json import load_bounded_json
from protocol.compression import Codec, CompressionError, compress_with_feedback, decode, parse_codec
from protocol.config import TrainConfig
from protocol.errors import GradledgerError
from protocol.hashing import Hash32, compute_content_hash, hash_to_hex, to_hash32
from protocol.state import compute_state_hash

State = Mapping[str, torch.Tensor]

NO_CODEC = "none"
PAYLOAD_DOC_KIND = "gradledger/payload-v1"


class PayloadError(GradledgerError):
    """A payload document or payload is malformed, or does not fit the run, round or solver."""


@dataclass(frozen=True)
class PayloadDoc:
    """What a codec run's commitment binds instead of Δ: the payload and both ends of the e-chain step."""

    run_id: int
    round: int
    solver: str
    codec: str
    payload_hash: Hash32
    """Content hash of the payload bytes P_r = C(Δ_r + e_r)."""
    residual_hash: Hash32
    """State hash of e_r, the error feedback carried into this round."""
    next_residual_hash: Hash32
    """State hash of e_(r+1) = Δ_r + e_r - D(P_r), carried into the solver's next round if this one is accepted."""


@dataclass(frozen=True)
class PayloadStep:
    """One round's compressed contribution as the solver builds it (and a verifier rebuilds it)."""

    doc: PayloadDoc
    payload: bytes
    decoded: dict[str, torch.Tensor]
    next_residual: dict[str, torch.Tensor]


# ---------------------------------------------------------------------------------------------
# The run's codec


def is_compressed(train: TrainConfig) -> bool:
    """Whether the run exchanges payloads (a codec) rather than float32 Δ states."""
    return train.codec != NO_CODEC


def get_run_codec(train: TrainConfig) -> Codec:
    """The run's codec; a PayloadError for a run without one (callers check `is_compressed` first)."""
    if not is_compressed(train):
        raise PayloadError("this run has no codec (train.codec is 'none'): its Δs are exchanged as states")
    return parse_codec(train.codec)


# ---------------------------------------------------------------------------------------------
# The document


def encode_payload_doc(doc: PayloadDoc) -> bytes:
    """Canonical JSON (sorted keys, no spaces): the artifact whose content hash is the committed Δ hash."""
    body = {
        "kind": PAYLOAD_DOC_KIND,
        "run_id": doc.run_id,
        "round": doc.round,
        "solver": doc.solver.lower(),
        "codec": doc.codec,
        "payload_hash": hash_to_hex(doc.payload_hash),
        "residual_hash": hash_to_hex(doc.residual_hash),
        "next_residual_hash": hash_to_hex(doc.next_residual_hash),
    }
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def compute_payload_doc_hash(doc: PayloadDoc) -> Hash32:
    """The committed Δ hash of a codec run: SHA-256 of the canonical document (its artifact name)."""
    return compute_content_hash(encode_payload_doc(doc))


def decode_payload_doc(data: bytes) -> PayloadDoc:
    """Parse a payload document; anything but the canonical bytes of a well-formed one is a PayloadError.

    Canonical only, so one document has one hash: a solver cannot serve two encodings of one commitment.
    """
    try:
        body = load_bounded_json(data)
        if not isinstance(body, dict) or body.get("kind") != PAYLOAD_DOC_KIND:
            raise PayloadError(f"not a payload document (kind must be {PAYLOAD_DOC_KIND!r})")
        for key in ("run_id", "round"):
            if not isinstance(body[key], int) or isinstance(body[key], bool) or body[key] < 0:
                raise PayloadError(f"{key} must be a non-negative integer")
        if not isinstance(body["solver"], str) or not isinstance(body["codec"], str):
            raise PayloadError("solver and codec must be strings")
        doc = PayloadDoc(
            body["run_id"],
            body["round"],
            body["solver"],
            body["codec"],
            to_hash32(body["payload_hash"], "payload_hash"),
            to_hash32(body["residual_hash"], "residual_hash"),
            to_hash32(body["next_residual_hash"], "next_residual_hash"),
        )
    except PayloadError as exc:
        raise PayloadError(f"malformed payload document: {exc}") from None
    except (ValueError, KeyError, TypeError, GradledgerError) as exc:
        raise PayloadError(f"malformed payload document: {exc!r}") from None
    if encode_payload_doc(doc) != bytes(data):
        raise PayloadError("malformed payload document: not in canonical form (sorted keys, no spaces, lowercase)")
    return doc


def verify_payload_doc(doc: PayloadDoc, run_id: int, round_index: int, solver: str, codec: str) -> str | None:
    """Why the document does not belong to this commitment of this run, or None."""
    if (doc.run_id, doc.round, doc.solver.lower()) != (run_id, round_index, solver.lower()):
        return "payload document is for another run, round or solver"
    if doc.codec != codec:
        return f"payload document names codec {doc.codec!r}, the run's is {codec!r}"
    return None


# ---------------------------------------------------------------------------------------------
# The e-chain


def make_zero_residual(delta_like: State) -> dict[str, torch.Tensor]:
    """e = 0 for a solver with no accepted commitment in the previous round: float32 zeros of Δ's names."""
    return {name: torch.zeros(tuple(t.shape), dtype=torch.float32) for name, t in delta_like.items()}


def get_expected_residual_hash(previous: PayloadDoc | None, zero_hash: Hash32) -> Hash32:
    """The only e_r a commitment may carry: the previous round's accepted e_(r+1), else the zero state's hash.

    `previous` is the payload document of the solver's commitment of round r - 1 when that commitment was
    accepted (its payload entered θ_r), else None; `zero_hash` is `compute_state_hash(make_zero_residual(Δ))`.
    """
    return previous.next_residual_hash if previous is not None else zero_hash


def verify_residual_fits(residual: State, delta: State) -> str | None:
    """Why e_r cannot be added to Δ (other tensors, shapes or dtype), or None."""
    if set(residual) != set(delta):
        return "e_r covers other tensors than Δ"
    for name, value in residual.items():
        if not isinstance(value, torch.Tensor) or value.dtype != torch.float32:
            return f"e_r entry {name!r} is not a float32 tensor"
        if tuple(value.shape) != tuple(delta[name].shape):
            return f"e_r entry {name!r} has shape {tuple(value.shape)}, Δ has {tuple(delta[name].shape)}"
    return None


# ---------------------------------------------------------------------------------------------
# Building and checking a round's payload


def build_payload_step(
    delta: State, residual: State, codec: str, run_id: int, round_index: int, solver: str
) -> PayloadStep:
    """P_r = C(Δ_r + e_r), e_(r+1) = Δ_r + e_r - D(P_r) and the document binding them (solver and verifier alike)."""
    problem = verify_residual_fits(residual, delta)
    if problem is not None:
        raise PayloadError(f"{problem}: e_r must be the previous accepted e_(r+1) or zero")
    step = compress_with_feedback(delta, parse_codec(codec), residual)
    doc = PayloadDoc(
        run_id,
        round_index,
        solver.lower(),
        codec,
        compute_content_hash(step.payload),
        compute_state_hash(residual),
        compute_state_hash(step.residual),
    )
    return PayloadStep(doc, step.payload, step.decoded, step.residual)


def verify_payload_binding(
    doc: PayloadDoc,
    delta: State,
    residual: State,
    payload: bytes,
    expected_residual_hash: Hash32,
) -> str | None:
    """Why the committed payload is not the codec step of the verified Δ and the e-chain, or None.

    `delta` is the replay-verified Δ_r = θ_r - c_H; `residual` the e_r the solver serves under `doc.residual_hash`;
    `payload` the bytes it serves under `doc.payload_hash`; `expected_residual_hash` from
    `get_expected_residual_hash`. Checked in the order that names the cause: e_r, P_r, e_(r+1).
    """
    if doc.residual_hash != expected_residual_hash:
        return (
            "e_r does not follow from the previous round: it is neither the e_(r+1) of the solver's accepted "
            "commitment of round r - 1 nor zero"
        )
    if compute_state_hash(residual) != doc.residual_hash:
        return "served e_r does not hash to the document's residual hash"
    if compute_content_hash(payload) != doc.payload_hash:
        return "served payload does not hash to the document's payload hash"
    try:
        rebuilt = build_payload_step(delta, residual, doc.codec, doc.run_id, doc.round, doc.solver)
    except (PayloadError, CompressionError) as exc:
        return f"the payload cannot be rebuilt from Δ and e_r: {exc}"
    if rebuilt.payload != bytes(payload):
        return "payload P_r is not the codec of the verified Δ plus e_r"
    if rebuilt.doc.next_residual_hash != doc.next_residual_hash:
        return "committed e_(r+1) is not Δ + e_r - D(P_r)"
    return None


def decode_payload_update(doc: PayloadDoc, payload: bytes) -> dict[str, torch.Tensor]:
    """D(P_r): what an accepted commitment contributes to the outer step (hash-checked against the document)."""
    if compute_content_hash(payload) != doc.payload_hash:
        raise PayloadError(
            f"payload bytes do not hash to {hash_to_hex(doc.payload_hash)}, the payload the document names"
        )
    try:
        return decode(payload)
    except CompressionError as exc:
        raise PayloadError(f"payload of {doc.solver} round {doc.round} cannot be decoded: {exc}") from None
