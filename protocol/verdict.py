"""The verdict on a commitment: pure functions of the document, the chain's values and fetched states.

Verifiers attest with it, whistleblowers re-check attestations with it, jurors decide disputes with it
and the auditor checks accepted work with it, so no two roles can disagree about what honest work is.
The checker that fetches the inputs is `node/checker.py`; everything that decides is here. Order
(DESIGN section 3):

1. the document: it must be the one for (run, round, solver), hash to the committed root, carry the
   committed Δ hash and token count, and train from the round's θ (`check_document`);
2. the trajectory: leaf 0 starts at c_0 of θ_r (with the carried AdamW moments in a run that carries them,
   node/moments.py), each leaf starts where the previous ended, and
   Δ = θ_r - c_H for the committed end checkpoint (`check_trajectory`);
3. each sampled segment is replayed with the one training step and judged exactly (`check_sample`);
4. `decide_attestation` turns the findings into pass or fail (naming the first bad draw, or draw 0 when
   the document or trajectory is wrong as a whole).

Every draw is provable on-chain: only opened commitments are checked, and the opening (protocol/opening.py)
put each sampled leaf and its proof on-chain. So a document or checkpoint the solver does not serve counts
as a failed segment (data availability), never as a reason to abstain.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import torch

from protocol.commitment import CommitmentDoc, verify_commitment_doc
from protocol.config import RunConfig
from protocol.data import TokenDataset
from protocol.errors import GradledgerError
from protocol.hashing import Hash32, compute_content_hash
from protocol.merkle import SegmentLeaf
from protocol.payload import (
    PayloadDoc,
    PayloadError,
    decode_payload_doc,
    get_expected_residual_hash,
    make_zero_residual,
    verify_payload_binding,
    verify_payload_doc,
)
from protocol.replay import judge_exact, judge_tolerance, replay_segment, verify_leaf_chain
from protocol.state import compute_state_hash
from protocol.training import CheckpointError, compute_pseudo_gradient, compute_segment_sketch, make_start_checkpoint
from protocol.types import Commitment

State = Mapping[str, torch.Tensor]
TOLERANCE_PREFIX = "tolerance verdict (this machine does not reproduce the execution profile)"


@dataclass(frozen=True)
class SampleCheck:
    """The outcome of checking one sampled segment."""

    sample_index: int
    segment: int
    accepted: bool
    reason: str


@dataclass(frozen=True)
class AttestationDecision:
    kind: Literal["pass", "fail"]
    sample_index: int
    segment: int
    reason: str


def decide_attestation(document_problem: str | None, checks: Sequence[SampleCheck]) -> AttestationDecision:
    """Pass when every sample replays; fail on the first bad sample, or on the first draw (`checks[0]`) when the
    document is wrong as a whole (`document_problem`): the opened leaf of any draw proves the fail on-chain."""
    if not checks:
        raise GradledgerError("a verdict needs at least one sampled draw")
    if document_problem is not None:
        first = checks[0]
        return AttestationDecision("fail", first.sample_index, first.segment, document_problem)
    for check in checks:
        if not check.accepted:
            return AttestationDecision("fail", check.sample_index, check.segment, check.reason)
    by_tolerance = sum(check.reason.startswith(TOLERANCE_PREFIX) for check in checks)
    if by_tolerance:
        return AttestationDecision(
            "pass", -1, -1, f"{len(checks)} sampled segment(s) passed, {by_tolerance} within the run's tolerances "
            "(this machine does not reproduce the execution profile)",
        )  # fmt: skip
    return AttestationDecision("pass", -1, -1, f"{len(checks)} sampled segment(s) replayed bit-identically")


def check_document(
    doc: CommitmentDoc, commitment: Commitment, run_id: int, round_index: int, solver: str, round_theta_hash: Hash32
) -> str | None:
    """Why the document does not match the on-chain commitment (wrong run, root, Δ, tokens, θ), or None."""
    problem = verify_commitment_doc(
        doc, run_id, round_index, solver, commitment.root, commitment.delta_hash, commitment.tokens
    )
    if problem is not None:
        return problem
    if doc.theta_hash != round_theta_hash:
        return "document trains from another θ than the round's"
    return None


def _get_verified_delta(theta_params: State, end_checkpoint: State | None) -> tuple[State | None, str | None]:
    """(Δ = θ_r - c_H, None), or (None, why it cannot be formed from what the solver served)."""
    if end_checkpoint is None:
        return None, "end checkpoint not served"
    try:
        return compute_pseudo_gradient(theta_params, end_checkpoint), None
    except KeyError as exc:
        return None, f"end checkpoint does not fit θ_r: missing {exc}"


def check_delta_binding(theta_params: State, end_checkpoint: State | None, delta_hash: Hash32) -> str | None:
    """Δ must equal θ_r - c_H for the committed end checkpoint (no spoofed pseudo-gradient)."""
    delta, problem = _get_verified_delta(theta_params, end_checkpoint)
    if delta is None:
        return problem
    if compute_state_hash(delta) != delta_hash:
        return "committed delta hash is not θ_r - c_H"
    return None


@dataclass(frozen=True)
class PayloadEvidence:
    """A codec run's inputs to the Δ binding (protocol/payload.py), as fetched by node/checker.py or the auditor.

    `previous` is the payload document of the solver's accepted commitment of round r - 1 (None when it has none:
    e_r must then be zero). `residual` None with a document naming the zero state's hash means "not fetched, use
    zeros". `problem` says why something the solver must serve could not be had: a failed commitment (data
    availability), like a checkpoint it does not serve.
    """

    codec: str
    document: bytes | None = None
    payload: bytes | None = None
    residual: State | None = None
    previous: PayloadDoc | None = None
    problem: str | None = None


def check_payload_binding(
    doc: CommitmentDoc, theta_params: State, end_checkpoint: State | None, evidence: PayloadEvidence
) -> str | None:
    """In a codec run, the committed Δ hash must name a payload document whose P_r is C(Δ + e_r) for the verified
    Δ = θ_r - c_H and the e_r the e-chain allows, and whose e_(r+1) is what the codec lost; None when it does."""
    delta, problem = _get_verified_delta(theta_params, end_checkpoint)
    if delta is None:
        return problem
    if evidence.problem is not None:
        return evidence.problem
    if evidence.document is None:
        return "payload document not served"
    if compute_content_hash(evidence.document) != doc.delta_hash:
        return "committed delta hash is not the hash of the served payload document"
    try:
        payload_doc = decode_payload_doc(evidence.document)
    except PayloadError as exc:
        return str(exc)
    problem = verify_payload_doc(payload_doc, doc.run_id, doc.round, doc.solver, evidence.codec)
    if problem is not None:
        return problem
    zero = make_zero_residual(delta)
    expected = get_expected_residual_hash(evidence.previous, compute_state_hash(zero))
    residual = evidence.residual if evidence.residual is not None else zero
    if evidence.payload is None:
        return "payload not served"
    return verify_payload_binding(payload_doc, delta, residual, evidence.payload, expected)


@dataclass(frozen=True)
class MomentsEvidence:
    """The AdamW moments a commitment's c_0 must carry, in a run with `train.carry_moments` (node/moments.py).

    `moments` None means fresh ones (the solver has no accepted commitment of round r - 1). `problem` says why the
    moments could not be had: the previous document or end checkpoint not served (a failed commitment, like a
    checkpoint it does not serve)."""

    moments: State | None = None
    problem: str | None = None


def get_start_hash(theta_params: State, moments: MomentsEvidence | None) -> tuple[Hash32 | None, str | None]:
    """(state hash of the round's c_0, None), or (None, why c_0 cannot be formed): θ_r's parameters plus fresh
    AdamW moments, or plus the carried ones."""
    if moments is not None and moments.problem is not None:
        return None, f"carried optimizer moments not served: {moments.problem}"
    try:
        start = make_start_checkpoint(theta_params, moments.moments if moments is not None else None)
    except CheckpointError as exc:
        return None, str(exc)
    return compute_state_hash(start), None


def check_trajectory(
    doc: CommitmentDoc,
    theta_params: State,
    end_checkpoint: State | None,
    num_segments: int,
    end_problem: str | None = None,
    payload: PayloadEvidence | None = None,
    moments: MomentsEvidence | None = None,
) -> str | None:
    """The leaves chain from c_0 of θ_r, and Δ binds to the committed end checkpoint; None when they do.

    `end_problem` says why the end checkpoint could not be fetched (when `end_checkpoint` is None). `payload` is
    given in a codec run: the Δ hash then binds a payload document (`check_payload_binding`), not Δ itself.
    `moments` is given in a run that carries AdamW moments: c_0 then holds them instead of fresh ones.
    """
    start_hash, problem = get_start_hash(theta_params, moments)
    if start_hash is None:
        return problem
    problem = verify_leaf_chain(list(doc.leaves), doc.run_id, doc.round, doc.solver, start_hash, num_segments)
    if problem is not None:
        return problem
    if end_checkpoint is None and end_problem is not None:
        return f"end checkpoint not served: {end_problem}"
    if payload is not None:
        return check_payload_binding(doc, theta_params, end_checkpoint, payload)
    return check_delta_binding(theta_params, end_checkpoint, doc.delta_hash)


def check_sample(
    config: RunConfig,
    dataset: TokenDataset,
    doc: CommitmentDoc,
    sample_index: int,
    segment: int,
    start_checkpoint: State | None,
    fetch_problem: str = "",
    plant_secret: Hash32 | None = None,
    *,
    exact: bool = True,
    end_checkpoint: State | None = None,
    end_problem: str = "",
) -> SampleCheck:
    """Replay segment `segment` from its served start checkpoint and judge it exactly; with the revealed
    `plant_secret`, as the planted training it claims to be (a plant dispute).

    `start_checkpoint` None means the solver did not serve it (`fetch_problem` says why): a failed segment.
    `exact` False is a node whose machine does not reproduce the profile's golden hashes (node/profile_check.py):
    a bit-identical replay still passes, but a replay that differs is judged by the run's tolerances against the
    committed end checkpoint (`end_checkpoint`, None when not served: `end_problem` says why).
    """
    if start_checkpoint is None:
        return SampleCheck(
            sample_index, segment, False, f"start checkpoint of segment {segment} not served: {fetch_problem}"
        )
    if not 0 <= segment < len(doc.leaves):
        return SampleCheck(sample_index, segment, False, f"the document has no leaf for sampled segment {segment}")
    leaf = doc.leaves[segment]
    try:
        replayed = replay_segment(config, dataset, doc.round, doc.solver, segment, start_checkpoint, plant_secret)
    except GradledgerError as exc:  # e.g. a checkpoint of another model: the solver's fault, not the verifier's
        reason = f"start checkpoint of segment {segment} cannot be replayed: {exc}"
        return SampleCheck(sample_index, segment, False, reason)
    verdict = judge_exact(config, leaf, start_checkpoint, replayed)
    if exact or verdict.accepted or verdict.method == "precheck":
        return SampleCheck(sample_index, segment, verdict.accepted, verdict.reason)
    # INVARIANT: a node that does not reproduce the profile never fails a segment on an exact mismatch: its bits may
    # differ from an honest solver's (another BLAS path, another CPU). Only the tolerances can fail it here.
    return _check_by_tolerance(
        config, leaf, sample_index, segment, start_checkpoint, replayed, end_checkpoint, end_problem
    )


def _check_by_tolerance(
    config: RunConfig,
    leaf: SegmentLeaf,
    sample_index: int,
    segment: int,
    start: State,
    replayed: State,
    end: State | None,
    end_problem: str,
) -> SampleCheck:
    """The cross-profile verdict (protocol/replay.py `judge_tolerance`) on a replay that is not bit-identical."""
    prefix = TOLERANCE_PREFIX
    if end is None:
        return SampleCheck(
            sample_index, segment, False, f"{prefix}: end checkpoint of segment {segment} not served: {end_problem}"
        )
    if compute_state_hash(end) != leaf.end_hash:
        return SampleCheck(sample_index, segment, False, f"{prefix}: served end checkpoint is not the leaf's end hash")
    committed_sketch = compute_segment_sketch(start, end, config.get_sketch_spec())
    verdict = judge_tolerance(config, leaf, committed_sketch, start, replayed, end)
    return SampleCheck(sample_index, segment, verdict.accepted, f"{prefix}: {verdict.reason}")
