"""auditor.checks: each check passes on honest histories and fails, naming why, on broken ones."""

from __future__ import annotations

import torch

from auditor import checks
from auditor.checks import DocumentFacts, PublicState
from protocol.commitment import CommitmentDoc
from protocol.errors import GradledgerError
from protocol.hashing import hash_to_hex
from protocol.history.fold import fold_run_history
from protocol.merkle import SegmentLeaf
from protocol.outer import compute_outer_step, get_initial_global_state
from protocol.state import compute_state_hash
from protocol.training import get_params, make_start_checkpoint
from tests.history_builder import (
    ETH,
    SOLVER_A,
    SOLVER_B,
    RunEvents,
    honest_two_rounds,
    with_args,
)


def _fold(ev: RunEvents):
    return fold_run_history(ev.events, ev.run_id, ev.timestamps)


# -- θ re-derivation -------------------------------------------------------------------------------


def _delta(state: dict, scale: float, seed: int) -> dict:
    generator = torch.Generator().manual_seed(seed)
    return {k: scale * torch.randn(v.shape, generator=generator) for k, v in get_params(state).items()}


def _theta_run(tiny_config, corrupt_round: int | None = None):
    theta0 = get_initial_global_state(tiny_config)
    states = {compute_state_hash(theta0): theta0}
    ev = RunEvents(theta0Hash=compute_state_hash(theta0))
    ev.create()
    state = theta0
    for r in (0, 1):
        deltas = {SOLVER_A: _delta(state, 1e-3, 10 * r), SOLVER_B: _delta(state, 1e-3, 10 * r + 1)}
        for solver, delta in deltas.items():
            digest = compute_state_hash(delta)
            states[digest] = delta
            ev.commit(r, solver, delta_hash=digest)
        ev.seed(r)
        ev.attest(r, SOLVER_A)
        ev.attest(r, SOLVER_B, fail=(r == 1))  # round 1: only SOLVER_A accepted
        accepted = {SOLVER_A: deltas[SOLVER_A]} if r == 1 else deltas
        state = compute_outer_step(state, accepted, tiny_config.train)
        digest = compute_state_hash(state)
        states[digest] = state
        claimed = bytes(32) if r == corrupt_round else digest
        ev.settle(r, theta_hash=claimed)
    return ev, states


def _loader(states: dict):
    def load(digest: str, what: str):
        raw = bytes.fromhex(digest[2:])
        if raw not in states:
            raise GradledgerError(f"{what} {digest} is missing")
        return states[raw]

    return load


def test_rederive_thetas_matches_and_reports_each_theta(tiny_config):
    ev, states = _theta_run(tiny_config)
    seen = []
    result, derivations = checks.rederive_thetas(
        _fold(ev), tiny_config.train, _loader(states), lambda r, s: seen.append((r, compute_state_hash(s)))
    )
    assert result.passed, result.detail
    assert [d.accepted for d in derivations] == [tuple(sorted((SOLVER_A, SOLVER_B), key=str.lower)), (SOLVER_A,)]
    assert [r for r, _ in seen] == [0, 1, 2]  # θ0, θ1 and the final θ2


def test_rederive_thetas_fails_on_a_wrong_claim_and_goes_on(tiny_config):
    ev, states = _theta_run(tiny_config, corrupt_round=0)
    result, derivations = checks.rederive_thetas(_fold(ev), tiny_config.train, _loader(states))
    assert not result.passed
    assert "round 0: θ_(r+1) re-derived from θ_r and 2 accepted Δ is" in result.detail
    assert derivations[0].problem == "mismatch"
    assert "round 1: not re-derived" in result.detail  # the claimed θ1 (all zero) is nowhere


def test_rederive_thetas_names_a_missing_delta(tiny_config):
    ev, states = _theta_run(tiny_config)
    h = _fold(ev)
    missing = h.rounds[1].commitment_of(SOLVER_A).delta_hash
    del states[bytes.fromhex(missing[2:])]
    result, _ = checks.rederive_thetas(h, tiny_config.train, _loader(states))
    assert not result.passed and f"Δ of {SOLVER_A} round 1 {missing} is missing" in result.detail
    assert result.evidence["rounds_rederived"] == 1


def test_rederive_without_config_fails():
    result, _ = checks.rederive_thetas(_fold(honest_two_rounds()), None, _loader({}))
    assert not result.passed and "run config unavailable" in result.detail


# -- documents, integrity, public state, balance ------------------------------------------------


def test_documents_verified_missing_and_mismatched(tiny_config):
    theta0 = get_initial_global_state(tiny_config)
    start = compute_state_hash(make_start_checkpoint(get_params(theta0)))
    ev = RunEvents(theta0Hash=compute_state_hash(theta0))
    ev.create()
    leaves = []
    previous = start
    for i in range(3):
        end = bytes([i + 1]) * 32
        leaves.append(SegmentLeaf(1, 0, SOLVER_A, i, previous, end, bytes([0x50 + i]) * 32, 256))
        previous = end
    doc = CommitmentDoc(1, 0, SOLVER_A, compute_state_hash(theta0), bytes([0xD0]) * 32, tuple(leaves))
    ev.commit(0, SOLVER_A)
    ev.events[-1] = with_args(ev.events[-1], root=doc.root)
    ev.commit(0, SOLVER_B)
    h = _fold(ev)
    facts = {
        (0, SOLVER_A): DocumentFacts(0, SOLVER_A, doc, "store/x", ""),
        (0, SOLVER_B): DocumentFacts(0, SOLVER_B, None, "", "2 local store(s), no peers"),
    }
    result = checks.check_documents(h, facts, {(0, SOLVER_A): hash_to_hex(start), (0, SOLVER_B): hash_to_hex(start)})
    assert not result.passed
    assert result.evidence["documents_verified"] == 1
    assert "commitment document missing (searched 2 local store(s), no peers)" in result.detail
    other_start = {(0, SOLVER_A): "0x" + "ee" * 32}
    result = checks.check_documents(h, {(0, SOLVER_A): facts[(0, SOLVER_A)]}, other_start)
    assert not result.passed and "leaf 0 does not start where θ_r's start checkpoint is" in result.detail
    # a run that carries AdamW moments, whose previous end checkpoint could not be read: named, never passed
    result = checks.check_documents(h, {(0, SOLVER_A): facts[(0, SOLVER_A)]}, {(0, SOLVER_A): None})
    assert not result.passed and "the AdamW moments its round must start from" in result.detail


def test_integrity_public_state_and_balance():
    assert checks.check_integrity([]).passed
    bad = checks.check_integrity([("0x" + "ab" * 32, "/store/ab/abab")])
    assert not bad.passed and "/store/ab/abab does not hash to its name" in bad.detail

    h = _fold(honest_two_rounds())
    good = PublicState(
        round=2,
        finished=True,
        theta_of={r: (h.rounds[r].theta_hash if r < 2 else h.rounds[1].next_theta_hash) for r in range(3)},
        statuses={(1, SOLVER_A): {"roundPlusOne": 2, "passes": 1, "faults": 0, "needed": 1}},
        tallies={0: (2, 2), 1: (2, 2)},
        juror_votes={0: 0, 1: 0},
        minted_in_round={0: 950 * ETH, 1: 950 * ETH},
        stakes={(SOLVER_A, "solver"): (10 * ETH, 0)},
        share_balances=h.balances,
        total_supply=1900 * ETH,
    )
    result = checks.check_public_state(h, good)
    assert result.passed, result.detail
    drifted = PublicState(**{**good.__dict__, "total_supply": 1, "tallies": {0: (3, 2), 1: (2, 2)}})
    result = checks.check_public_state(h, drifted)
    assert not result.passed and "share token total supply: events say" in result.detail
    assert "round 0 standing checks / paid commitments: events say (2, 2), public state says (3, 2)" in (result.detail)
    assert checks.check_balance({"A": 5, "B": 7}, 12, {}).passed
    off = checks.check_balance({"A": 5, "B": 7}, 11, {})
    assert not off.passed and "difference 1" in off.detail
