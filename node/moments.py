"""Carried AdamW moments (`train.carry_moments`): which optimizer state a solver's round starts from.

Why: with a fresh AdamW state every round a solver pays Adam's warm-up every round; carrying each solver's moments
from one of its rounds into the next (DiLoCo as published) brought DiLoCo at M = 4, H = 25 from 2.24% to 0.08%
above synchronous training (docs/training.md). The moments are the one input of c_0 no replay produces, so, like
the error feedback of a codec run (protocol/payload.py), they are pinned by a chain anyone can check:

- round r of a solver starts from the moments of the end checkpoint c_H of its *accepted* commitment of round
  r - 1 (accepted as `node.payloads.get_accepted_commitment` reads it from the events), found by that commitment's
  document (checked against the on-chain root) and its last leaf's end hash; with no accepted commitment of round
  r - 1 (round 0, skipped, failed, unopened or planted round) from fresh ones;
- c_0 = θ_r's parameters + those moments must hash to the first leaf's start hash (`protocol.verdict.
  check_trajectory`), so a commitment that starts anywhere else fails like a broken trajectory.

INVARIANT: every moment a round starts from came out of the solver's own accepted, replay-checkable training of its
previous round (or is zero): by induction a solver cannot choose its moments, so it cannot steer an update through
them. A solver that cannot serve its previous document or end checkpoint fails the round (data availability).

The rule itself is protocol/moments.py's (`find_carried_commitment`, `get_carried_checkpoint_hash`): one function
decides for the solver (which moments to train from), the checker (verifiers, whistleblowers, jurors) and the auditor
(auditor/artifact_reads.py `compute_start_hashes`, on the history it folded). This module is the node's I/O around it:
`fetch_start_moments` reads acceptance from the chain's events and fetches the document and the end checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable

from node.payloads import get_accepted_commitment
from protocol.adapters.artifacts import ArtifactStore
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.http import PeerSet
from protocol.adapters.runs import RunContext, get_artifact
from protocol.commitment import CommitmentDocError, decode_commitment_doc, verify_commitment_doc
from protocol.hashing import to_hash32
from protocol.moments import find_carried_commitment, get_carried_checkpoint_hash
from protocol.state import decode_state
from protocol.training import State, get_moments

DocumentFetcher = Callable[[int, int, str], bytes]
"""(run id, round, solver) -> the solver's published commitment document of that round."""


def fetch_start_moments(
    protocol: ProtocolClient,
    store: ArtifactStore,
    peers: PeerSet | None,
    ctx: RunContext,
    round_index: int,
    solver: str,
    fetch_document: DocumentFetcher,
) -> State | None:
    """The AdamW moments `solver`'s round `round_index` starts from: None for fresh ones (no carrying, round 0, or
    no accepted commitment of round r - 1), else those of that commitment's end checkpoint.

    Raises ArtifactError / PeerError when the previous document or end checkpoint cannot be had, CommitmentDocError
    when the document does not match its on-chain commitment, StateEncodingError when the checkpoint is not a
    canonical state: all the solver's to serve.
    """
    previous = find_carried_commitment(
        ctx.config.train.carry_moments, round_index, solver, lambda r, s: get_accepted_commitment(protocol, ctx, r, s)
    )
    if previous is None:
        return None
    doc = decode_commitment_doc(fetch_document(ctx.run_id, previous.round, solver))
    problem = verify_commitment_doc(
        doc, ctx.run_id, previous.round, solver, to_hash32(previous.root), to_hash32(previous.delta_hash),
        previous.tokens,
    )  # fmt: skip
    if problem is not None:
        raise CommitmentDocError(f"document of the accepted round {previous.round}: {problem}")
    prefer = peers.url_of(solver) if peers is not None else None
    return get_moments(decode_state(get_artifact(store, peers, get_carried_checkpoint_hash(doc), prefer)))
