"""A planted fault, played end to end on a devnet: the lazy pass on it loses its bond and penalty with no
whistleblower (held by Plants until the round settles, then released into the plant pool), the honest fail on it
earns the jackpot, the solver that planted it is paid and not slashed.

Used by `gradledger demo --adversarial` (after its main run, on the same devnet) and by the real-anvil test
(tests/disputes/test_planted_fault.py). Scripted, not node processes, so that it can play the block producer:
the plant draw of round 2 takes round 1's seed base -- the RANDAO value (mixHash) of a block mined after the
solver's anchor -- and the harness mines that block (snapshot, mine, read, revert) until the draw of its solver's
round 2 falls under the plant rate. A real block producer cannot re-roll a RANDAO value, only withhold its block
(docs/security.md, Seeds); the devnet's re-roll is used here only so that a plant happens in a 3-round run instead of
with probability 20%. Everything else is the protocol's own code: the training with the plant secret
(protocol/training.py), the opening, the honest verifier's replay (protocol/replay.py), the solver's plant decision,
anchor and reveal (node/plants.py). tests/disputes/test_plant_defence.py plays the same rounds with node objects.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devnet.runs import ETH, create_run
from node.opening import draw_round_seed
from node.plants import ensure_plant_anchor, get_plant_secret, get_secret_chain, reveal_round_secret
from protocol.adapters.artifacts import LocalArtifactStore
from protocol.adapters.contracts import ProtocolClient
from protocol.adapters.corpus import load_corpus_shards
from protocol.adapters.keys import get_devnet_account
from protocol.adapters.runs import RunContext
from protocol.commitment import CommitmentDoc
from protocol.config import build_run_config
from protocol.constants import JUROR_MIN_STAKE
from protocol.data import build_token_dataset
from protocol.errors import GradledgerError
from protocol.hashing import hash_to_hex
from protocol.merkle import build_merkle_tree, compute_leaf_hash, get_merkle_proof_at
from protocol.opening import build_opening
from protocol.outer import get_initial_global_state
from protocol.planting import get_round_secret, is_round_planted
from protocol.replay import judge_exact, replay_segment
from protocol.run_presets import TINY
from protocol.state import compute_state_hash
from protocol.training import compute_pseudo_gradient, get_params, keep_checkpoints, train_round
from protocol.types import ROLE_SOLVER, ROLE_VERIFIER, AttestationRef, AttestationState, Commitment, LeafData

PLANT_RULES = TINY.with_run(
    max_rounds=3, samples_per_commitment=2, verifiers_per_commitment=2, commit_window=60, attest_window=60,
    challenge_window=60,
).with_plant(rate_bps=2000, jackpot=ETH, penalty=3 * ETH, pool=10 * ETH)  # fmt: skip
"""Two verifiers for two seats: both attest every commitment."""
CREATOR, SOLVER, HONEST, LAZY = 0, 12, 13, 14
"""Devnet accounts (the demos' participants use 1..9)."""
PLANT_ROUND = 2
LOG = logging.getLogger("gradledger.plant")


@dataclass(frozen=True)
class PlantOutcome:
    """What the scenario showed, from the chain."""

    run_id: int
    seed_tries: int
    lazy_state: str
    lazy_stake_lost_wei: int
    lazy_bond_returned_wei: int
    lazy_left_list: bool
    jackpot_wei: int
    honest_bond_returned_wei: int
    solver_stake_lost_wei: int
    solver_paid_shares: int
    honest_shares: int
    delta_accepted: bool
    pool_before_wei: int
    forfeit_held_wei: int
    """The lazy pass's bond + penalty Plants held from the reveal until the round settled."""
    pool_after_wei: int
    """The plant pool once the round settled and the held forfeit was released."""

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _rpc(protocol: ProtocolClient, method: str, params: list) -> Any:
    """A devnet-only call (evm_snapshot / evm_revert): refused on anything but anvil, its answer checked."""
    return protocol.chain.devnet_call(method, params)


def to_draw_window(protocol: ProtocolClient, run_id: int) -> None:
    """Mine up to the round's seed block (empty blocks), then to the end of its commit window, and draw the seed."""
    chain, times = protocol.chain, protocol.round_times(run_id)
    chain.mine_blocks(times.seed_block - chain.block_number())
    chain.mine_at(max(times.commit_end, chain.get_block()["timestamp"] + 1))
    draw_round_seed(protocol, get_devnet_account(CREATOR), run_id, times)


def settle_round(protocol: ProtocolClient, run_id: int) -> None:
    """Claim θ_(r+1) (θ_r itself: this run accepts no Δ) once the challenge window closed, and settle."""
    creator, times = get_devnet_account(CREATOR), protocol.round_times(run_id)
    protocol.chain.mine_at(max(times.challenge_end, protocol.chain.get_block()["timestamp"] + 1))
    theta = protocol.theta_of(run_id, times.round)
    protocol.post_claim(creator, run_id, times.round, theta, protocol.challenge_bond(run_id))
    protocol.chain.mine_at(protocol.claim_of(run_id, times.round).window_end)
    protocol.settle(creator, run_id, times.round)


def mine_planting_seed_block(protocol: ProtocolClient, ctx: RunContext) -> int:
    """As the block producer, mine round 1's seed block so that the solver's round 2 is planted; returns the tries.

    The seed base is the RANDAO value revealed in the seed block: the mixHash of `times.randao_block`
    (Verification.drawSeed). anvil derives a block's mixHash from its parent's hash (1.7: keccak256(parentHash ||
    number)), so re-mining that block alone gives the same value: each try re-mines the block before it at another
    timestamp (another hash), then that block."""
    chain, times, solver = protocol.chain, protocol.round_times(ctx.run_id), get_devnet_account(SOLVER)
    chain.mine_blocks(times.randao_block - 2 - chain.block_number())
    secret = get_round_secret(get_secret_chain(solver, ctx), PLANT_ROUND)
    for tries in range(1, 200):
        snapshot = _rpc(protocol, "evm_snapshot", [])
        chain.mine_at(chain.get_block()["timestamp"] + tries)  # the RANDAO block's parent
        chain.mine()
        base = bytes(chain.get_block(times.randao_block)["mixHash"])[:12] + bytes(20)
        if is_round_planted(secret, ctx.run_id, PLANT_ROUND, solver.address, base, PLANT_RULES.plant.rate_bps):
            return tries
        _rpc(protocol, "evm_revert", [snapshot])
    raise GradledgerError("no seed block in 200 tries plants round 2 (rate 20%: p < 1e-19)")


def _no_report(step: str) -> None:
    """The default `report` of `play_planted_fault`: say nothing."""


def play_planted_fault(
    protocol: ProtocolClient, home: Path, report: Callable[[str], None] = _no_report
) -> PlantOutcome:
    """Create a 3-round run on `protocol`'s devnet and play a planted fault in round 2 (see the module doc).

    `report` is told each step as it starts (the adversarial demo prints them: this takes a minute or more, and a
    demo that said nothing meanwhile looked stuck)."""
    rules = PLANT_RULES
    creator, solver, honest, lazy = (get_devnet_account(i) for i in (CREATOR, SOLVER, HONEST, LAZY))
    manifest, shards = load_corpus_shards()
    config = build_run_config(preset="tiny", run_seed="0x" + "a7" * 32, dataset_root=hash_to_hex(manifest.root))
    protocol.deposit_stake(solver, ROLE_SOLVER, rules.run.solver_min_stake)
    for verifier in (honest, lazy):
        protocol.deposit_stake(verifier, ROLE_VERIFIER, rules.run.verifier_min_stake + JUROR_MIN_STAKE)
    store = LocalArtifactStore(home / "plant-creator")
    report("creating a 3-round run of the tiny model (a solver, an honest and a lazy verifier)")
    run_id, terms = create_run(protocol, creator, store, config, manifest, shards, rules, 10 * ETH)
    dataset = build_token_dataset(manifest, shards, config.data.eval_shards)
    ctx = RunContext(run_id, terms, config, dataset, protocol.share_token(run_id), 0)
    protocol.join_run(solver, run_id)
    ensure_plant_anchor(protocol, solver, LOG, ctx)
    for verifier in (honest, lazy):
        protocol.register_verifier(verifier, run_id)

    report(f"run {run_id}: rounds 0 and 1 pass with no commitment; mining round 1's seed block to plant round 2")
    to_draw_window(protocol, run_id)  # round 0: nobody commits
    settle_round(protocol, run_id)
    tries = mine_planting_seed_block(protocol, ctx)
    to_draw_window(protocol, run_id)
    settle_round(protocol, run_id)

    # round 2: the solver's own code says it must plant; it trains the planted round and commits it
    secret = get_plant_secret(protocol, solver, ctx, PLANT_ROUND)
    if secret is None:
        raise GradledgerError("the mined seed block should have planted round 2")
    report(f"round {PLANT_ROUND} planted after {tries} seed block(s); the solver trains it with the fault and commits")
    theta_hash = protocol.theta_of(run_id, PLANT_ROUND)
    theta = get_params(get_initial_global_state(config))
    checkpoints: dict = {}
    records, end = train_round(
        config, dataset, theta, PLANT_ROUND, solver.address, save_checkpoint=keep_checkpoints(checkpoints),
        plant_secret=secret,
    )  # fmt: skip
    delta_hash = compute_state_hash(compute_pseudo_gradient(theta, end))
    leaves = tuple(r.to_leaf(run_id, PLANT_ROUND, solver.address) for r in records)
    doc = CommitmentDoc(run_id, PLANT_ROUND, solver.address, theta_hash, delta_hash, leaves)
    commitment = Commitment(doc.root, delta_hash, doc.tokens)
    protocol.commit(solver, run_id, PLANT_ROUND, commitment)
    to_draw_window(protocol, run_id)
    opening = build_opening(
        doc, protocol.opened_segments(run_id, PLANT_ROUND, solver.address), rules.run.samples_per_commitment
    )
    protocol.open_commitment(solver, run_id, PLANT_ROUND, solver.address, commitment, opening)

    # the two seats: the lazy verifier passes without replaying, the honest one replays a sample and fails it
    report("the lazy verifier passes it without replaying; the honest one replays a sampled segment and fails it")
    refs = {}
    tree = build_merkle_tree([compute_leaf_hash(leaf) for leaf in leaves])
    for slot in range(rules.run.verifiers_per_commitment):
        ref = AttestationRef(run_id, PLANT_ROUND, solver.address, slot)
        seated, _ = protocol.assigned_verifier(ref)
        refs[seated.lower()] = ref
        if seated.lower() == lazy.address.lower():
            protocol.attest_pass(lazy, ref, commitment, rules.run.attestation_bond)
            continue
        segment = protocol.sampled_segment(ref, 0)
        start, leaf = checkpoints[segment], leaves[segment]
        replayed = replay_segment(config, dataset, PLANT_ROUND, solver.address, segment, start)
        if judge_exact(config, leaf, start, replayed).accepted:
            raise GradledgerError("a planted segment replayed as honest work")
        data = LeafData(leaf.start_hash, leaf.end_hash, leaf.sketch_hash, leaf.tokens)
        proof: list[bytes] = list(get_merkle_proof_at(tree, segment))
        protocol.attest_fail(honest, ref, commitment, 0, data, proof, rules.run.attestation_bond)
    lazy_stake = protocol.bonded_of(lazy.address, ROLE_VERIFIER)
    solver_stake = protocol.bonded_of(solver.address, ROLE_SOLVER)
    listed_before = protocol.verifier_count(run_id)
    pool_before = protocol.plant_pool(run_id)

    # after the attestation window the solver reveals; nobody challenges anything
    times = protocol.round_times(run_id)
    report("after the attestation window the solver reveals its plant: the lazy pass is overturned")
    protocol.chain.mine_at(times.attest_end)
    reveal_round_secret(protocol, solver, LOG, ctx, PLANT_ROUND)
    lazy_ref, honest_ref = refs[lazy.address.lower()], refs[honest.address.lower()]
    lazy_state = protocol.attestation_of(lazy_ref).state
    jackpot = protocol.credits_of("Plants", honest.address)
    forfeit_held = protocol.forfeit_of(lazy_ref).amount
    lazy_left = protocol.verifier_count(run_id) == listed_before - 1

    report("settling round 2 and paying the solver and the honest verifier")
    protocol.chain.mine_at(times.challenge_end)
    protocol.finalize(creator, honest_ref)
    settle_round(protocol, run_id)
    protocol.release_forfeit(creator, lazy_ref)  # anyone, once settled: the plant stood, so into the pool
    pool_after = protocol.plant_pool(run_id)
    protocol.claim_solver_shares(solver, run_id, PLANT_ROUND, solver.address)
    protocol.claim_verifier_shares(honest, honest_ref)
    protocol.withdraw_credits(honest, "Plants")
    return PlantOutcome(
        run_id=run_id,
        seed_tries=tries,
        lazy_state=AttestationState(lazy_state).name.lower(),
        lazy_stake_lost_wei=lazy_stake - protocol.bonded_of(lazy.address, ROLE_VERIFIER),
        lazy_bond_returned_wei=protocol.credits_of("Verification", lazy.address),
        lazy_left_list=lazy_left,
        jackpot_wei=jackpot,
        honest_bond_returned_wei=protocol.credits_of("Verification", honest.address),
        solver_stake_lost_wei=solver_stake - protocol.bonded_of(solver.address, ROLE_SOLVER),
        solver_paid_shares=protocol.shares_of(run_id, solver.address),
        honest_shares=protocol.shares_of(run_id, honest.address),
        delta_accepted=protocol.is_accepted(run_id, PLANT_ROUND, solver.address),
        pool_before_wei=pool_before,
        forfeit_held_wei=forfeit_held,
        pool_after_wei=pool_after,
    )


def check_planted_fault(outcome: PlantOutcome) -> list[str]:
    """What the planted fault must show; an empty list when it did."""
    rules, problems = PLANT_RULES, []
    if outcome.lazy_state != "overturned":
        problems.append(f"the lazy pass on the planted fault is {outcome.lazy_state}, not overturned")
    if outcome.lazy_stake_lost_wei != rules.plant.penalty or outcome.lazy_bond_returned_wei != 0:
        problems.append("the lazy verifier did not lose its bond and the plant penalty")
    if not outcome.lazy_left_list:
        problems.append("the lazy verifier is still on the run's verifier list")
    if outcome.jackpot_wei != rules.plant.jackpot:
        problems.append(f"the honest fail earned {outcome.jackpot_wei} wei, not the jackpot")
    if outcome.honest_bond_returned_wei != rules.run.attestation_bond or outcome.honest_shares == 0:
        problems.append("the honest verifier did not get its bond back and its shares")
    if outcome.solver_stake_lost_wei != 0 or outcome.solver_paid_shares == 0:
        problems.append("the planting solver was slashed or not paid")
    if outcome.delta_accepted:
        problems.append("the planted Δ was accepted into θ")
    if outcome.forfeit_held_wei != rules.run.attestation_bond + rules.plant.penalty:
        problems.append(f"Plants held {outcome.forfeit_held_wei} wei of the lazy pass, not its bond and penalty")
    expected_pool = outcome.pool_before_wei + rules.run.attestation_bond + rules.plant.penalty - rules.plant.jackpot
    if outcome.pool_after_wei != expected_pool:
        problems.append(f"the plant pool holds {outcome.pool_after_wei} wei, expected {expected_pool}")
    return problems
