"""Compressed payloads in the protocol: the canonical payload document, its hash binding and the e-chain rules.

Pure: tiny tensors, no chain. The verdict function under test (`check_payload_binding`) is the one verifiers,
whistleblowers, jurors and the auditor run (node/checker.py, auditor/audit.py).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from protocol.commitment import CommitmentDoc
from protocol.config import build_run_config, compute_config_hash, encode_config
from protocol.errors import ConfigError
from protocol.hashing import compute_content_hash
from protocol.outer import compute_outer_step, make_global_state
from protocol.payload import (
    PayloadDoc,
    PayloadError,
    build_payload_step,
    compute_payload_doc_hash,
    decode_payload_doc,
    decode_payload_update,
    encode_payload_doc,
    get_expected_residual_hash,
    is_compressed,
    make_zero_residual,
)
from protocol.state import compute_state_hash
from protocol.training import compute_pseudo_gradient
from protocol.verdict import PayloadEvidence, check_payload_binding

CODEC = "int8-b256-top50%"
RUN, SOLVER = 7, "0x" + "ab" * 20


def _theta(seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {"param/a": torch.randn(8, 4, generator=g), "param/b": torch.randn(300, generator=g)}


def _end(theta: dict[str, torch.Tensor], seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(1000 + seed)
    return {k: v - 0.01 * torch.randn(v.shape, generator=g) for k, v in theta.items()}


def _round(round_index: int, residual=None, seed: int = 0, codec: str = CODEC):
    """(θ_r, c_H, Δ, the honest payload step) of one round of the solver."""
    theta = _theta(seed)
    end = _end(theta, seed + round_index)
    delta = compute_pseudo_gradient(theta, end)
    residual = make_zero_residual(delta) if residual is None else residual
    return theta, end, delta, build_payload_step(delta, residual, codec, RUN, round_index, SOLVER)


def _commitment(step, round_index: int) -> CommitmentDoc:
    return CommitmentDoc(RUN, round_index, SOLVER, bytes(32), compute_payload_doc_hash(step.doc), ())


def _evidence(step, residual=None, previous=None, codec: str = CODEC, **changes) -> PayloadEvidence:
    evidence = PayloadEvidence(codec, encode_payload_doc(step.doc), step.payload, residual, previous)
    return replace(evidence, **changes)


# -- the document ---------------------------------------------------------------------------------------


def test_document_is_canonical_and_its_hash_binds_every_field():
    *_, step = _round(0)
    data = encode_payload_doc(step.doc)
    assert decode_payload_doc(data) == step.doc
    assert compute_payload_doc_hash(step.doc) == compute_content_hash(data)
    assert data.startswith(b'{"codec":')  # never mistaken for a commitment document (auditor/sources.py)
    hashes = {compute_payload_doc_hash(step.doc)}
    for field, value in [
        ("run_id", RUN + 1), ("round", 1), ("solver", "0x" + "cd" * 20), ("codec", "int8-b256"),
        ("payload_hash", bytes(32)), ("residual_hash", bytes(32)), ("next_residual_hash", bytes(32)),
    ]:  # fmt: skip
        hashes.add(compute_payload_doc_hash(replace(step.doc, **{field: value})))
    assert len(hashes) == 8


@pytest.mark.parametrize(
    "mangle",
    [
        lambda d: d.replace(b",", b", ", 1),  # not canonical whitespace
        lambda d: d.replace(b"gradledger/payload-v1", b"gradledger/payload-v9"),
        lambda d: d[:-1],
        lambda d: d.replace(b'"round":0', b'"round":-1'),
        lambda d: b"\x00 not json",
    ],
)
def test_only_canonical_well_formed_documents_decode(mangle):
    *_, step = _round(0)
    with pytest.raises(PayloadError):
        decode_payload_doc(mangle(encode_payload_doc(step.doc)))


def test_run_config_names_a_codec_and_none_hashes_as_before():
    root, seed = "0x" + "22" * 32, "0x" + "11" * 32
    plain = build_run_config(preset="tiny", run_seed=seed, dataset_root=root)
    coded = build_run_config(preset="tiny", run_seed=seed, dataset_root=root, overrides={"train": {"codec": CODEC}})
    assert not is_compressed(plain.train) and is_compressed(coded.train)
    assert b"codec" not in encode_config(plain)  # a run without a codec keeps its config hash
    assert compute_config_hash(plain) != compute_config_hash(coded)
    with pytest.raises(ConfigError, match="codec"):
        build_run_config(preset="tiny", run_seed=seed, dataset_root=root, overrides={"train": {"codec": "zip9"}})


# -- the binding and the e-chain ---------------------------------------------------------------------------


def test_honest_first_round_carries_zero_and_binds():
    theta, end, _, step = _round(0)
    assert check_payload_binding(_commitment(step, 0), theta, end, _evidence(step)) is None


def test_honest_second_round_carries_the_accepted_e_and_binds():
    *_, first = _round(0)
    theta, end, _, second = _round(1, residual=first.next_residual)
    assert second.doc.residual_hash == first.doc.next_residual_hash
    evidence = _evidence(second, residual=first.next_residual, previous=first.doc)
    assert check_payload_binding(_commitment(second, 1), theta, end, evidence) is None


def test_expected_e_is_zero_after_a_skipped_or_failed_round():
    *_, first = _round(0)
    zero = compute_state_hash(make_zero_residual(first.next_residual))
    assert get_expected_residual_hash(None, zero) == zero
    assert get_expected_residual_hash(first.doc, zero) == first.doc.next_residual_hash
    # After a round that was not accepted the solver must restart from zero: carrying its old e is rejected
    theta, end, _, carried = _round(1, residual=first.next_residual)
    evidence = _evidence(carried, residual=first.next_residual, previous=None)
    assert "does not follow from the previous round" in check_payload_binding(
        _commitment(carried, 1), theta, end, evidence
    )
    theta, end, _, restarted = _round(1)
    assert check_payload_binding(_commitment(restarted, 1), theta, end, _evidence(restarted)) is None


def test_an_e_that_does_not_follow_from_the_accepted_round_is_rejected():
    *_, first = _round(0)
    other = {k: torch.full_like(v, 0.003) for k, v in first.next_residual.items()}
    theta, end, _, step = _round(1, residual=other)
    evidence = _evidence(step, residual=other, previous=first.doc)
    assert "does not follow from the previous round" in check_payload_binding(
        _commitment(step, 1), theta, end, evidence
    )


def test_a_payload_that_is_not_the_codec_of_delta_plus_e_is_rejected():
    theta, end, delta, honest = _round(0)
    pushed = {k: v + 0.01 for k, v in delta.items()}
    wrong = build_payload_step(pushed, make_zero_residual(delta), CODEC, RUN, 0, SOLVER)
    assert wrong.payload != honest.payload
    reason = check_payload_binding(_commitment(wrong, 0), theta, end, _evidence(wrong))
    assert reason == "payload P_r is not the codec of the verified Δ plus e_r"


@pytest.mark.parametrize("codec", ["int2-c64-k64-q", "int1-c64-k64", "int2-c64-k8", "int1-c16-k8-r30-t4"])
def test_chunked_codecs_bind_two_rounds_and_refuse_a_pushed_payload(codec):
    *_, first = _round(0, codec=codec)
    theta, end, delta, second = _round(1, residual=first.next_residual, codec=codec)
    evidence = _evidence(second, residual=first.next_residual, previous=first.doc, codec=codec)
    assert check_payload_binding(_commitment(second, 1), theta, end, evidence) is None
    pushed = build_payload_step({k: v + 0.01 for k, v in delta.items()}, first.next_residual, codec, RUN, 1, SOLVER)
    evidence = _evidence(pushed, residual=first.next_residual, previous=first.doc, codec=codec)
    reason = check_payload_binding(_commitment(pushed, 1), theta, end, evidence)
    assert reason == "payload P_r is not the codec of the verified Δ plus e_r"


def test_an_update_injected_through_e_is_rejected():
    """Both ways to smuggle u through e fail: a served e_r + u, or a committed e_(r+1) - u (to surface next round)."""
    *_, first = _round(0)
    u = {k: torch.full_like(v, 0.05) for k, v in first.next_residual.items()}
    forged_e = {k: first.next_residual[k] + u[k] for k in u}
    theta, end, _, via_e = _round(1, residual=forged_e)
    evidence = _evidence(via_e, residual=forged_e, previous=first.doc)
    assert "does not follow" in check_payload_binding(_commitment(via_e, 1), theta, end, evidence)
    # e_r claimed as the honest one in the document, but the payload is built over the forged one
    lying = replace(via_e, doc=replace(via_e.doc, residual_hash=first.doc.next_residual_hash))
    evidence = _evidence(lying, residual=first.next_residual, previous=first.doc)
    reason = check_payload_binding(_commitment(lying, 1), theta, end, evidence)
    assert reason == "payload P_r is not the codec of the verified Δ plus e_r"
    # the honest payload, but e_(r+1) lowered by u: next round's D(P) would carry +u
    theta, end, _, honest = _round(1, residual=first.next_residual)
    next_forged = {k: honest.next_residual[k] - u[k] for k in u}
    smuggled = replace(honest, doc=replace(honest.doc, next_residual_hash=compute_state_hash(next_forged)))
    evidence = _evidence(smuggled, residual=first.next_residual, previous=first.doc)
    assert check_payload_binding(_commitment(smuggled, 1), theta, end, evidence) == (
        "committed e_(r+1) is not Δ + e_r - D(P_r)"
    )


def test_the_commitment_must_name_this_document_for_this_run_and_solver():
    theta, end, _, step = _round(0)
    wrong_hash = replace(_commitment(step, 0), delta_hash=compute_state_hash(step.next_residual))
    assert "not the hash of the served payload document" in check_payload_binding(
        wrong_hash, theta, end, _evidence(step)
    )
    other = build_payload_step(
        compute_pseudo_gradient(theta, end), make_zero_residual(step.next_residual), CODEC, RUN, 0, "0x" + "cd" * 20
    )
    assert "another run, round or solver" in check_payload_binding(_commitment(other, 0), theta, end, _evidence(other))


def test_what_the_solver_does_not_serve_fails_it():
    theta, end, _, step = _round(0)
    commitment = _commitment(step, 0)
    assert check_payload_binding(commitment, theta, end, _evidence(step, payload=None)) == "payload not served"
    assert check_payload_binding(commitment, theta, end, _evidence(step, document=None)) == (
        "payload document not served"
    )
    assert check_payload_binding(commitment, theta, end, _evidence(step, problem="e_r not served: gone")) == (
        "e_r not served: gone"
    )
    assert check_payload_binding(commitment, theta, None, _evidence(step)) == "end checkpoint not served"
    tampered = step.payload[:-1] + bytes([step.payload[-1] ^ 1])
    assert "does not hash" in check_payload_binding(commitment, theta, end, _evidence(step, payload=tampered))


# -- the outer step over decoded payloads --------------------------------------------------------------------


def test_next_theta_is_rebuilt_from_theta_and_the_accepted_payloads():
    theta = _theta(0)
    steps = {}
    for i, solver in enumerate(("0x" + "01" * 20, "0x" + "02" * 20)):
        delta = compute_pseudo_gradient(theta, _end(theta, i))
        steps[solver] = build_payload_step(delta, make_zero_residual(delta), CODEC, RUN, 0, solver)
    decoded = {s: decode_payload_update(step.doc, step.payload) for s, step in steps.items()}
    for step, update in zip(steps.values(), decoded.values(), strict=True):
        assert all(torch.equal(update[k], step.decoded[k]) for k in update)
    global_state = make_global_state(theta)
    train = build_run_config(preset="tiny", run_seed="0x" + "11" * 32, dataset_root="0x" + "22" * 32).train
    first, again = compute_outer_step(global_state, decoded, train), compute_outer_step(global_state, decoded, train)
    assert compute_state_hash(first) == compute_state_hash(again)
    with pytest.raises(PayloadError, match="do not hash"):
        step = next(iter(steps.values()))
        decode_payload_update(step.doc, step.payload + b"\x00")


def test_payload_document_dataclass_round_trips_lowercase_solver():
    doc = PayloadDoc(1, 2, SOLVER.upper().replace("0X", "0x"), CODEC, bytes(32), bytes(32), bytes(32))
    assert decode_payload_doc(encode_payload_doc(doc)).solver == SOLVER
