"""A planted fault on a real anvil: the lazy pass on it loses its bond and penalty with no whistleblower, the honest
fail on it earns the jackpot and its bond back, and the solver that planted it is paid and not slashed.

Scripted (no node processes), so the test can play the block producer: the plant draw of round 2 takes round 1's
seed base, the hash of a block mined after the solver's anchor, and the test mines that block (snapshot, mine,
read, revert) until the draw of its solver's round 2 falls under the plant rate -- the one-bit-per-block grinding
a block producer has over any seed (docs/security.md, Seeds), used here to make the plant happen in a 3-round run.
Everything else is the protocol's own code: the training with the plant secret (protocol/training.py), the
opening, the honest verifier's replay (protocol/replay.py), and the solver's anchor and reveal (node/plants.py).
"""

from __future__ import annotations

import logging

import pytest

from devnet.runs import ETH, RunRules, create_run
from node.opening import draw_round_seed
from node.plants import ensure_plant_anchor, get_plant_secret, get_reveal_end, get_secret_chain, reveal_round_secret
from protocol.adapters.artifacts import LocalArtifactStore
from protocol.adapters.keys import get_devnet_account
from protocol.adapters.runs import RunContext
from protocol.commitment import CommitmentDoc
from protocol.config import build_run_config
from protocol.constants import JUROR_MIN_STAKE
from protocol.data import build_token_dataset
from protocol.hashing import hash_to_hex
from protocol.merkle import build_merkle_tree, compute_leaf_hash, get_merkle_proof_at
from protocol.opening import build_opening
from protocol.outer import get_initial_global_state
from protocol.planting import get_round_secret, is_round_planted
from protocol.replay import judge_exact, replay_segment
from protocol.state import compute_state_hash
from protocol.training import compute_pseudo_gradient, get_params, keep_checkpoints, train_round
from protocol.types import ROLE_SOLVER, ROLE_VERIFIER, AttestationRef, AttestationState, Commitment, LeafData
from tests.disputes.conftest import assert_balance_matches_events

pytestmark = pytest.mark.e2e

RULES = RunRules(
    rounds=3, samples_per_commitment=2, verifiers_per_commitment=2, commit_window_s=60, attest_window_s=60,
    challenge_window_s=60, plant_rate_bps=2000, plant_jackpot_wei=ETH, plant_penalty_wei=3 * ETH,
    plant_pool_wei=10 * ETH,
)  # fmt: skip
CREATOR, SOLVER, HONEST, LAZY = 0, 1, 2, 3
PLANT_ROUND = 2
LOG = logging.getLogger("test.planted")


def _rpc(protocol, method: str, params: list):
    response = protocol.chain.w3.provider.make_request(method, params)
    return response["result"]


def _settle_empty_round(protocol, run_id: int, creator) -> None:
    """A round without commitments: draw its seed (round 1's seeds the plant draw of round 2), claim θ, settle."""
    times = protocol.round_times(run_id)
    _to_draw_window(protocol, times)
    draw_round_seed(protocol, creator, run_id, times)
    protocol.chain.mine_at(times.challenge_end)
    bond = protocol.challenge_bond(run_id)
    protocol.post_claim(creator, run_id, times.round, protocol.theta_of(run_id, times.round), bond)
    protocol.chain.mine_at(protocol.claim_of(run_id, times.round).window_end)
    protocol.settle(creator, run_id, times.round)


def _to_draw_window(protocol, times) -> None:
    """Mine up to the round's seed block (a second each on the driven devnet), then to the end of the commit window."""
    chain = protocol.chain
    chain.mine_blocks(times.seed_block - chain.block_number())
    chain.mine_at(max(times.commit_end, chain.get_block()["timestamp"] + 1))


def _mine_seed_block_planting(protocol, run_id: int, solver, ctx: RunContext) -> int:
    """As the block producer, mine round 1's seed block so that `solver`'s round 2 is planted; returns the tries."""
    times = protocol.round_times(run_id)
    chain = protocol.chain
    chain.mine_blocks(times.seed_block - 1 - chain.block_number())
    secret = get_round_secret(get_secret_chain(solver, ctx), PLANT_ROUND)
    for tries in range(1, 200):
        snapshot = _rpc(protocol, "evm_snapshot", [])
        chain.mine_at(chain.get_block()["timestamp"] + tries)
        base = bytes(chain.get_block(times.seed_block)["hash"])[:12] + bytes(20)
        if is_round_planted(secret, run_id, PLANT_ROUND, solver.address, base, RULES.plant_rate_bps):
            return tries
        _rpc(protocol, "evm_revert", [snapshot])
    raise AssertionError("no seed block in 200 tries plants round 2 (rate 20%: p < 1e-19)")


def test_lazy_pass_on_a_planted_fault_loses_its_bond_without_a_whistleblower(fresh_deployment, corpus, tmp_path):
    protocol = fresh_deployment.protocol
    creator, solver, honest, lazy = (get_devnet_account(i) for i in (CREATOR, SOLVER, HONEST, LAZY))
    manifest, shards = corpus
    config = build_run_config(preset="tiny", run_seed="0x" + "a7" * 32, dataset_root=hash_to_hex(manifest.root))
    protocol.deposit_stake(solver, ROLE_SOLVER, RULES.solver_min_stake_wei)
    for verifier in (honest, lazy):
        protocol.deposit_stake(verifier, ROLE_VERIFIER, RULES.verifier_min_stake_wei + JUROR_MIN_STAKE)
    store = LocalArtifactStore(tmp_path / "creator")
    run_id, terms = create_run(protocol, creator, store, config, manifest, shards, RULES, 10 * ETH)
    dataset = build_token_dataset(manifest, shards, config.data.eval_shards)
    ctx = RunContext(run_id, terms, config, dataset, protocol.share_token(run_id), 0)
    protocol.join_run(solver, run_id)
    assert ensure_plant_anchor(protocol, solver, LOG, ctx) == 0, "anchored in round 0: plants from round 2"
    for verifier in (honest, lazy):
        protocol.register_verifier(verifier, run_id)
    assert protocol.plant_pool(run_id) == RULES.plant_pool_wei

    _settle_empty_round(protocol, run_id, creator)
    _mine_seed_block_planting(protocol, run_id, solver, ctx)
    _settle_empty_round(protocol, run_id, creator)

    # round 2: the solver's own code says it must plant; it trains the planted round and commits it
    secret = get_plant_secret(protocol, solver, ctx, PLANT_ROUND)
    assert secret is not None, "the draw the test mined for plants round 2"
    theta = get_params(get_initial_global_state(config))
    assert compute_state_hash(get_initial_global_state(config)) == protocol.theta_of(run_id, PLANT_ROUND)
    checkpoints: dict = {}
    records, end = train_round(
        config, dataset, theta, PLANT_ROUND, solver.address, save_checkpoint=keep_checkpoints(checkpoints),
        plant_secret=secret,
    )  # fmt: skip
    delta_hash = compute_state_hash(compute_pseudo_gradient(theta, end))
    leaves = tuple(r.to_leaf(run_id, PLANT_ROUND, solver.address) for r in records)
    doc = CommitmentDoc(run_id, PLANT_ROUND, solver.address, protocol.theta_of(run_id, PLANT_ROUND), delta_hash, leaves)
    commitment = Commitment(doc.root, delta_hash, doc.tokens)
    protocol.commit(solver, run_id, PLANT_ROUND, commitment)
    times = protocol.round_times(run_id)
    _to_draw_window(protocol, times)
    draw_round_seed(protocol, creator, run_id, times)
    segments = protocol.opened_segments(run_id, PLANT_ROUND, solver.address)
    opening = build_opening(doc, segments, RULES.samples_per_commitment)
    protocol.open_commitment(solver, run_id, PLANT_ROUND, solver.address, commitment, opening)

    # the two seats: the lazy verifier passes without replaying, the honest one replays and fails a sample
    refs = {}
    tree = build_merkle_tree([compute_leaf_hash(leaf) for leaf in leaves])
    for slot in range(RULES.verifiers_per_commitment):
        ref = AttestationRef(run_id, PLANT_ROUND, solver.address, slot)
        verifier, _ = protocol.assigned_verifier(ref)
        refs[verifier.lower()] = ref
        if verifier.lower() == lazy.address.lower():
            protocol.attest_pass(lazy, ref, commitment, RULES.attestation_bond_wei)
            continue
        segment = protocol.sampled_segment(ref, 0)
        start = checkpoints[segment]
        replayed = replay_segment(config, dataset, PLANT_ROUND, solver.address, segment, start)
        assert not judge_exact(config, leaves[segment], start, replayed).accepted, "a planted segment fails replay"
        leaf = leaves[segment]
        data = LeafData(leaf.start_hash, leaf.end_hash, leaf.sketch_hash, leaf.tokens)
        proof = get_merkle_proof_at(tree, segment)
        protocol.attest_fail(honest, ref, commitment, 0, data, proof, RULES.attestation_bond_wei)
    lazy_ref, honest_ref = refs[lazy.address.lower()], refs[honest.address.lower()]
    lazy_stake = protocol.bonded_of(lazy.address, ROLE_VERIFIER)
    solver_stake = protocol.bonded_of(solver.address, ROLE_SOLVER)
    verifiers_before = protocol.verifier_count(run_id)

    # after the attestation window the solver reveals: nobody challenged anything
    protocol.chain.mine_at(times.attest_end)
    assert protocol.is_challenge_blocked(run_id, PLANT_ROUND, solver.address), "no dispute before the reveal"
    assert reveal_round_secret(protocol, solver, LOG, ctx, PLANT_ROUND), "revealed as planted"
    assert protocol.chain.get_block()["timestamp"] < get_reveal_end(times)

    assert protocol.attestation_of(lazy_ref).state == AttestationState.OVERTURNED
    assert protocol.bonded_of(lazy.address, ROLE_VERIFIER) == lazy_stake - RULES.plant_penalty_wei
    assert protocol.verifier_count(run_id) == verifiers_before - 1, "the lazy verifier left the run's list"
    assert protocol.credits_of("Verification", lazy.address) == 0, "its bond is not returned"
    expected_pool = (
        RULES.plant_pool_wei + RULES.attestation_bond_wei + RULES.plant_penalty_wei - RULES.plant_jackpot_wei
    )
    assert protocol.plant_pool(run_id) == expected_pool, "bond + penalty in, the jackpot out"
    assert protocol.credits_of("Plants", honest.address) == RULES.plant_jackpot_wei, "the fail earned the jackpot"

    protocol.chain.mine_at(times.challenge_end)
    protocol.finalize(creator, honest_ref)
    assert protocol.credits_of("Verification", honest.address) == RULES.attestation_bond_wei
    assert protocol.bonded_of(solver.address, ROLE_SOLVER) == solver_stake, "the planting solver is not slashed"
    protocol.post_claim(creator, run_id, PLANT_ROUND, protocol.theta_of(run_id, PLANT_ROUND), RULES.challenge_bond_wei)
    protocol.chain.mine_at(protocol.claim_of(run_id, PLANT_ROUND).window_end)
    protocol.settle(creator, run_id, PLANT_ROUND)
    assert not protocol.is_accepted(run_id, PLANT_ROUND, solver.address), "a planted Δ never enters θ"
    assert protocol.is_paid(run_id, PLANT_ROUND, solver.address)
    protocol.claim_solver_shares(solver, run_id, PLANT_ROUND, solver.address)
    protocol.claim_verifier_shares(honest, honest_ref)
    assert protocol.shares_of(run_id, solver.address) > 0, "the planting solver is paid as accepted"
    assert protocol.shares_of(run_id, honest.address) > 0, "the honest verifier earns its seat's shares"
    plants = protocol.chain.manifest.contracts["Plants"].address
    held = protocol.chain.get_balance(plants)
    protocol.withdraw_credits(honest, "Plants")
    assert protocol.chain.get_balance(plants) == held - RULES.plant_jackpot_wei, "the jackpot is paid out"
    assert protocol.credits_of("Plants", honest.address) == 0
    assert_balance_matches_events(protocol)
