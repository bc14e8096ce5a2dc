"""A solver's round from its gathered inputs to its stored artifacts and commitment document.

The node first gathers everything the round is a function of into one `RoundInputs` (solver/node.py
`gather_round_inputs`: θ_r, the plant secret, the carried moments, the codec's residual e_r); this module then trains
once from it and stores what the commitment names: every checkpoint c_0 .. c_H (hashed once, on the writer's
thread), every segment sketch, and Δ = θ_r - c_H -- or, in a codec run, the payload P_r, e_r, e_(r+1) and the payload
document binding them (protocol/payload.py).

INVARIANT: deterministic in its inputs. Run again (a crash, a corrupt checkpoint: solver/own_artifacts.py) it stores
the same bytes under the same hashes and returns the same document; nothing here reads the chain or a peer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from protocol.adapters.artifacts import ArtifactStore, BackgroundStateWriter, put_state
from protocol.commitment import CommitmentDoc
from protocol.errors import GradledgerError
from protocol.hashing import Hash32
from protocol.payload import PayloadStep, encode_payload_doc, is_compressed
from protocol.sketch import encode_sketch
from protocol.training import RoundInputs, SegmentRecord, State, compute_pseudo_gradient


@dataclass(frozen=True)
class SolverRoundInputs:
    """One solver's round, gathered before training starts: what training reads (`training`: θ_r, the plant secret,
    the carried moments, the run's config and data) and what the commitment names besides (the run, θ_r's hash, and in
    a codec run the residual e_r its payload carries)."""

    run_id: int
    theta_hash: Hash32
    training: RoundInputs
    residual: State | None = None
    """e_r in a codec run (protocol/payload.py): the payload is C(Δ + e_r); None in a run without a codec."""

    @property
    def round_index(self) -> int:
        return self.training.round_index


TrainRecords = Callable[[RoundInputs, BackgroundStateWriter], tuple[list[SegmentRecord], State]]
"""How a round is trained into a writer: the node's `train_records` hook (honest, or an adversary's)."""
BuildPayload = Callable[[SolverRoundInputs, State, State], PayloadStep]
"""How a codec run's payload is built from the round, Δ and e_r: the node's `build_payload` hook."""


class RoundInputsError(GradledgerError):
    """A round's gathered inputs lack what storing its outputs needs (e_r in a codec run)."""


def train_into_store(
    store: ArtifactStore, inputs: SolverRoundInputs, train: TrainRecords, build_payload: BuildPayload
) -> tuple[CommitmentDoc, list[SegmentRecord]]:
    """Train the round once from `inputs`, store every checkpoint, sketch and Δ; return its commitment document (not
    yet stored: the node stores it last, `SolverNode.record_trained`) and the segment records. RoundInputsError,
    before any step, when the inputs lack what storing the outputs needs."""
    verify_inputs_complete(inputs)
    with BackgroundStateWriter(store) as writer:
        records, end = train(inputs.training, writer)
        # while c_H is fsynced by the writer; leaving the block waits for every checkpoint
        for record in records:
            store.put(encode_sketch(record.sketch))
        delta_hash = store_update(store, inputs, end, build_payload)
    run, r, solver = inputs.run_id, inputs.round_index, inputs.training.solver
    leaves = tuple(rec.to_leaf(run, r, solver) for rec in records)
    return CommitmentDoc(run, r, solver, inputs.theta_hash, delta_hash, leaves), records


def verify_inputs_complete(inputs: SolverRoundInputs) -> None:
    """Refuse a round gathered without what its outputs need: in a codec run, the residual e_r it carries."""
    if is_compressed(inputs.training.config.train) and inputs.residual is None:
        raise RoundInputsError(f"round {inputs.round_index} of a codec run was gathered without its residual e_r")


def store_update(store: ArtifactStore, inputs: SolverRoundInputs, end: State, build_payload: BuildPayload) -> Hash32:
    """Store what the commitment's Δ hash names and return that hash: Δ = θ_r - c_H itself, or in a codec run
    (protocol/payload.py) the payload document, after its payload P_r, e_r and e_(r+1) (all served to verifiers;
    e_(r+1) is this solver's e for round r + 1 if the commitment is accepted)."""
    delta = compute_pseudo_gradient(inputs.training.theta, end)
    if not is_compressed(inputs.training.config.train):
        return put_state(store, delta)
    if inputs.residual is None:
        raise RoundInputsError(f"round {inputs.round_index} of a codec run was gathered without its residual e_r")
    step = build_payload(inputs, delta, inputs.residual)
    store.put(step.payload)
    put_state(store, inputs.residual)
    put_state(store, step.next_residual)
    return store.put(encode_payload_doc(step.doc))
