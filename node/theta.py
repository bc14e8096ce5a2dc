"""θ_(r+1) as every honest party computes it, read from the chain and the artifact stores.

Coordinators post this hash; whistleblowers and jurors compare a posted claim with it. The
arithmetic is `protocol.outer.compute_outer_step`; this module only gathers its inputs.
"""

from __future__ import annotations

import torch

from node.payloads import get_payload_update
from protocol.adapters.artifacts import ArtifactStore
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.http import PeerSet
from protocol.adapters.runs import RunContext, get_global_state
from protocol.hashing import Hash32
from protocol.outer import compute_outer_step
from protocol.payload import is_compressed
from protocol.state import compute_state_hash


def compute_next_theta(
    protocol: ProtocolClient, store: ArtifactStore, peers: PeerSet | None, ctx: RunContext, round_index: int
) -> tuple[dict[str, torch.Tensor], Hash32, tuple[str, ...]]:
    """θ_(r+1) as every honest party computes it: the outer step from θ_r over the accepted Δs (in a codec run, over
    the decoded payloads D(P_r) of the accepted commitments: protocol/payload.py).

    Accepted = Verification's rule (a standing pass, no standing fault), read once every attestation
    dispute of the round is closed. Returns (state, its state hash, the accepted solvers in order).
    Coordinators post this hash; whistleblowers and jurors compare a posted claim with it.
    """

    global_state = get_global_state(store, peers, protocol.theta_of(ctx.run_id, round_index))
    deltas = {}
    for solver, commitment in sorted(protocol.get_commitments(ctx.run_id, round_index, ctx.created_block).items()):
        if protocol.is_accepted(ctx.run_id, round_index, solver):
            prefer = peers.url_of(solver) if peers is not None else None
            if is_compressed(ctx.config.train):  # D(P_r): solvers download payloads, not Δ states
                deltas[solver] = get_payload_update(store, peers, commitment.delta_hash, prefer)
            else:
                deltas[solver] = get_global_state(store, peers, commitment.delta_hash, prefer)
    next_state = compute_outer_step(global_state, deltas, ctx.config.train)
    return next_state, compute_state_hash(next_state), tuple(deltas)
