"""A solver's round from its gathered inputs to its stored artifacts (solver/round_training.py), without a chain."""

from __future__ import annotations

import pytest

from protocol.adapters.artifacts import LocalArtifactStore, get_state
from protocol.commitment import CommitmentDoc
from protocol.config import build_run_config
from protocol.hashing import hash_to_hex
from protocol.outer import get_initial_global_state
from protocol.payload import build_payload_step, decode_payload_doc, make_zero_residual
from protocol.sketch import encode_sketch
from protocol.state import compute_state_hash
from protocol.training import RoundInputs, compute_pseudo_gradient, get_params, train_round_inputs
from solver.round_training import RoundInputsError, SolverRoundInputs, train_into_store
from tests.conftest import RUN_SEED, SOLVER_A

RUN = 7
THETA_HASH = b"\x0e" * 32
CODEC = "int8-b256-top50%"


def _honest(seen: list):
    """The honest `train_records`, recording the inputs it was called with."""

    def train(inputs, writer):
        seen.append(inputs)
        return train_round_inputs(inputs, save_checkpoint=writer.save, in_background=writer.submit)

    return train


def _no_payload(inputs, delta, residual):
    raise AssertionError("a run without a codec builds no payload")


def test_a_round_is_trained_once_from_its_inputs_and_stored_under_the_names_its_document_gives(
    tiny_config, dataset, tmp_path
):
    theta = get_params(get_initial_global_state(tiny_config))
    inputs = SolverRoundInputs(RUN, THETA_HASH, RoundInputs(tiny_config, dataset, 0, SOLVER_A, theta))
    store, seen = LocalArtifactStore(tmp_path / "artifacts"), []
    doc, records = train_into_store(store, inputs, _honest(seen), _no_payload)
    assert len(seen) == 1 and seen[0] is inputs.training  # one training call, with exactly the gathered inputs
    assert isinstance(doc, CommitmentDoc)
    assert (doc.run_id, doc.round, doc.solver, doc.theta_hash) == (RUN, 0, SOLVER_A, THETA_HASH)
    assert [leaf.end_hash for leaf in doc.leaves] == [r.end_hash for r in records]
    for leaf, record in zip(doc.leaves, records, strict=True):
        assert store.has(leaf.start_hash) and store.has(leaf.end_hash)
        assert store.get(leaf.sketch_hash) == encode_sketch(record.sketch)
    end = get_state(store, doc.leaves[-1].end_hash)
    assert doc.delta_hash == compute_state_hash(compute_pseudo_gradient(theta, end))
    # deterministic in its inputs: again (a crash, a corrupt artifact), the same document
    again, _ = train_into_store(LocalArtifactStore(tmp_path / "again"), inputs, _honest(seen), _no_payload)
    assert again == doc


def test_a_codec_round_carries_the_gathered_residual_into_its_payload(corpus, dataset, tmp_path):
    manifest, _ = corpus
    config = build_run_config(
        preset="tiny", run_seed=RUN_SEED, dataset_root=hash_to_hex(manifest.root), overrides={"train": {"codec": CODEC}}
    )
    theta = get_params(get_initial_global_state(config))
    residual = {k: v + 0.5 for k, v in make_zero_residual(theta).items()}
    inputs = SolverRoundInputs(RUN, THETA_HASH, RoundInputs(config, dataset, 1, SOLVER_A, theta), residual)
    built = []

    def build_payload(round_inputs, delta, carried):
        built.append((round_inputs, carried))
        return build_payload_step(delta, carried, CODEC, RUN, round_inputs.round_index, SOLVER_A)

    store = LocalArtifactStore(tmp_path / "artifacts")
    doc, _ = train_into_store(store, inputs, _honest([]), build_payload)
    assert len(built) == 1 and built[0][0] is inputs and built[0][1] is residual
    payload_doc = decode_payload_doc(store.get(doc.delta_hash))
    assert payload_doc.residual_hash == compute_state_hash(residual)
    assert all(store.has(h) for h in (payload_doc.payload_hash, payload_doc.residual_hash))
    assert store.has(payload_doc.next_residual_hash)

    without = SolverRoundInputs(RUN, THETA_HASH, inputs.training)
    trained = []
    with pytest.raises(RoundInputsError, match="residual"):
        train_into_store(store, without, _honest(trained), build_payload)
    assert trained == []  # refused before any step
