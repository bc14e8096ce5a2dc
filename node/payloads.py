"""A codec run's payloads, read from the chain and the artifact stores (the rules are protocol/payload.py).

One place for what the solver, the checker (verifiers, whistleblowers, jurors) and the outer step
(node/theta.py: coordinators, whistleblowers, jurors of a claim) fetch, so they cannot disagree about which
e_r a commitment may carry or which D(P_r) enters θ_(r+1):

- `get_previous_payload_doc`: the payload document of the solver's accepted commitment of round r - 1, or None
  (e_r must then be zero);
- `fetch_payload_evidence`: everything `protocol.verdict.check_payload_binding` needs, with anything the
  solver does not serve named as a problem (a failed commitment, like an unserved checkpoint);
- `get_payload_update`: D(P_r) of an accepted commitment, for the outer step.
"""

from __future__ import annotations

import torch

from protocol.adapters.artifacts import ArtifactError, ArtifactStore
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.http import PeerSet
from protocol.adapters.runs import RunContext, get_artifact
from protocol.errors import GradledgerError, StateEncodingError
from protocol.hashing import hash_to_hex, to_hash32
from protocol.history.fold import fold_run_history
from protocol.history.records import Commitment
from protocol.payload import (
    PayloadDoc,
    PayloadError,
    decode_payload_doc,
    decode_payload_update,
    make_zero_residual,
)
from protocol.state import compute_state_hash, decode_state
from protocol.training import State, get_params
from protocol.verdict import PayloadEvidence


def get_previous_payload_doc(
    protocol: ProtocolClient,
    store: ArtifactStore,
    peers: PeerSet | None,
    ctx: RunContext,
    round_index: int,
    solver: str,
) -> PayloadDoc | None:
    """The payload document of `solver`'s accepted commitment of round `round_index - 1`, or None when it has none
    (round 0, or it did not commit, or the commitment was not accepted: its payload did not enter θ_r).

    Raises ArtifactError when the document cannot be fetched and PayloadError when it is malformed (an accepted
    commitment's document was checked when it was verified: either is the solver's failure to serve it).
    """
    if round_index == 0:
        return None
    delta_hash = get_accepted_delta_hash(protocol, ctx, round_index - 1, solver)
    if delta_hash is None:
        return None
    prefer = peers.url_of(solver) if peers is not None else None
    return decode_payload_doc(get_artifact(store, peers, delta_hash, prefer))


class RoundNotSettledError(GradledgerError):
    """A chain link was asked of a round whose settlement is not in the events read so far: retry later."""


def get_accepted_delta_hash(protocol: ProtocolClient, ctx: RunContext, round_index: int, solver: str) -> bytes | None:
    """The Δ hash of `solver`'s commitment of settled round `round_index` if it was accepted (its payload entered
    θ_(r+1)), else None (`get_accepted_commitment`)."""
    accepted = get_accepted_commitment(protocol, ctx, round_index, solver)
    return None if accepted is None else to_hash32(accepted.delta_hash)


def get_accepted_commitment(
    protocol: ProtocolClient, ctx: RunContext, round_index: int, solver: str
) -> Commitment | None:
    """`solver`'s commitment of settled round `round_index` if it was accepted (its Δ or payload entered θ_(r+1)), else
    None: the link of the e-chain here and of the moments chain (node/moments.py). RoundNotSettledError while the
    round is not settled in the events read so far (a node that reads events a few confirmations behind must not
    take "not settled yet" for "not accepted": it would start the next round from zeros its verifiers reject).

    Read from the run's events (protocol/history, as the auditor reads them), not from Verification's status view:
    a status with nothing left to pay is overwritten once its solver commits again, so the view forgets a past
    round's acceptance, and both chains must be decidable the same way by the solver, the round's verifiers and a
    jury months later. Acceptance of a settled round no longer changes (no dispute stays open past settlement), so
    settled rounds are kept in `ctx.accepted_in_settled_rounds` and the events are folded again only for a round
    not settled when last read.
    """
    known = ctx.accepted_in_settled_rounds
    if round_index not in known:
        history = fold_run_history(protocol.chain.get_events(ctx.created_block), ctx.run_id)
        for index, rnd in enumerate(history.rounds):
            if rnd.settled and index not in known:
                known[index] = {c.solver.lower(): c for c in rnd.commitments if rnd.is_accepted(c.solver)}
        if round_index not in known:  # not settled yet (or its event not read yet): nothing is final about it
            raise RoundNotSettledError(
                f"round {round_index} of run {ctx.run_id} is not settled in the events read so far, so whether "
                f"{solver}'s commitment was accepted is not decided yet: retry once its RoundSettled event is final"
            )
    return known[round_index].get(solver.lower())


def fetch_payload_evidence(
    protocol: ProtocolClient,
    store: ArtifactStore,
    peers: PeerSet | None,
    ctx: RunContext,
    round_index: int,
    solver: str,
    delta_hash: bytes,
    theta_params: State,
) -> PayloadEvidence:
    """Fetch the payload document the commitment's Δ hash names, its payload, its e_r and the previous accepted
    document; a missing or malformed one is the evidence's `problem` (the solver must serve all of them)."""
    codec = ctx.config.train.codec
    prefer = peers.url_of(solver) if peers is not None else None
    try:
        previous = get_previous_payload_doc(protocol, store, peers, ctx, round_index, solver)
    except (ArtifactError, PayloadError) as exc:
        problem = f"payload document of the solver's accepted round {round_index - 1} not served: {exc}"
        return PayloadEvidence(codec, problem=problem)
    try:
        document = get_artifact(store, peers, delta_hash, prefer)
    except ArtifactError as exc:
        return PayloadEvidence(codec, previous=previous, problem=f"payload document not served: {exc}")
    try:
        doc = decode_payload_doc(document)
    except PayloadError:  # the verdict decodes it again and names the problem
        return PayloadEvidence(codec, document=document, previous=previous)
    try:
        payload = get_artifact(store, peers, doc.payload_hash, prefer)
    except ArtifactError as exc:
        return PayloadEvidence(codec, document=document, previous=previous, problem=f"payload not served: {exc}")
    residual = None
    zero_hash = compute_state_hash(make_zero_residual(get_params(theta_params)))
    if doc.residual_hash != zero_hash:  # e_r = 0 needs no download: everyone can build the zero state
        try:
            residual = decode_state(get_artifact(store, peers, doc.residual_hash, prefer))
        except ArtifactError as exc:
            problem = f"e_r {hash_to_hex(doc.residual_hash)[:18]} not served: {exc}"
            return PayloadEvidence(codec, document=document, payload=payload, previous=previous, problem=problem)
        except StateEncodingError as exc:
            problem = f"e_r is not a canonical state: {exc}"
            return PayloadEvidence(codec, document=document, payload=payload, previous=previous, problem=problem)
    return PayloadEvidence(codec, document, payload, residual, previous)


def get_payload_update(
    store: ArtifactStore, peers: PeerSet | None, delta_hash: bytes, prefer: str | None = None
) -> dict[str, torch.Tensor]:
    """D(P_r) of a commitment whose Δ hash names a payload document (raises ArtifactError / PayloadError)."""
    doc = decode_payload_doc(get_artifact(store, peers, delta_hash, prefer))
    return decode_payload_update(doc, get_artifact(store, peers, doc.payload_hash, prefer))
