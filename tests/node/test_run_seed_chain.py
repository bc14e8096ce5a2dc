"""Plants from round 0 on a real anvil (issue 37): a run with a start delay whose creator sets the plant terms before
round 0 starts fixes a run seed block; a solver that anchors before the start is eligible in round 0, and its plant
draw for round 0 uses the run seed that `Plants.drawRunSeed` proves from the block's header (the RANDAO value, not
the block hash a producer could grind). A solver that anchors after the start is unpaid in rounds 0 and 1.
"""

from __future__ import annotations

import pytest

from devnet.runs import ETH, build_run_terms
from node.plants import get_pending_run_seed_block, get_plant_secret, get_secret_chain
from protocol.adapters.chain import ContractRevertError
from protocol.adapters.keys import get_devnet_account
from protocol.config import build_run_config
from protocol.constants import SEED_HORIZON_BLOCKS
from protocol.planting import get_plant_anchor, get_round_secret, is_round_planted
from protocol.run_presets import TINY
from protocol.types import ROLE_SOLVER, PlantTerms

RULES = TINY.with_run(max_rounds=3, commit_window=30, attest_window=30, challenge_window=30, start_delay=120)
RATE_BPS = 2000


class _Ctx:
    """What node/plants.py reads of a run context: its id and its terms' round count."""

    def __init__(self, run_id: int, max_rounds: int) -> None:
        self.run_id = run_id
        self.terms = type("Terms", (), {"max_rounds": max_rounds})()


def test_an_early_anchor_is_planted_in_round_zero_by_the_drawn_run_seed(deployment):
    protocol, chain = deployment.protocol, deployment.protocol.chain
    creator, early, late = get_devnet_account(0), get_devnet_account(3), get_devnet_account(4)
    config = build_run_config(preset="tiny", run_seed="0x" + "5e" * 32, dataset_root="0x" + "00" * 32)
    for solver in (early, late):
        protocol.deposit_stake(solver, ROLE_SOLVER, RULES.run.solver_min_stake)
    run_id, _ = protocol.create_run(creator, build_run_terms(bytes(32), bytes(32), bytes(32), config, RULES.run), ETH)
    protocol.set_plant_terms(creator, run_id, PlantTerms(RATE_BPS, ETH // 50, ETH), 2 * ETH)
    ctx = _Ctx(run_id, RULES.run.max_rounds)

    seed = protocol.run_seed(run_id)
    times = protocol.round_times(run_id)
    assert seed.seed_block > chain.block_number() and not seed.drawn, "terms before the start fix a run seed block"
    for solver in (early, late):
        protocol.join_run(solver, run_id)
    protocol.set_plant_anchor(early, run_id, get_plant_anchor(get_secret_chain(early, ctx)))
    assert protocol.plant_of(run_id, 0, early.address).eligible
    # before the run seed exists the node must wait: the plant draw of its round 0 is not known yet
    assert get_pending_run_seed_block(protocol, early.address, ctx, 0, chain.block_number()) == seed.randao_block

    chain.mine_at(times.start)  # round 0 starts; a solver anchoring now is late
    protocol.set_plant_anchor(late, run_id, get_plant_anchor(get_secret_chain(late, ctx)))
    assert not protocol.plant_of(run_id, 0, late.address).eligible
    assert protocol.is_pay_blocked(run_id, 0, late.address) and protocol.is_pay_blocked(run_id, 1, late.address)
    assert not protocol.is_pay_blocked(run_id, 0, early.address)

    chain.mine_blocks(max(0, seed.randao_block + 1 - chain.block_number()))
    protocol.draw_run_seed(early, run_id)
    drawn = protocol.run_seed(run_id)
    # the RANDAO value revealed in the run seed block: the mixHash of the block after it
    mix = bytes(chain.w3.eth.get_block(seed.randao_block)["mixHash"])
    block_hash = bytes(chain.w3.eth.get_block(seed.randao_block)["hash"])
    assert drawn.drawn and drawn.seed_base == mix[:12] + bytes(20), "bytes12 of the RANDAO value, left-aligned"
    assert drawn.seed_base != block_hash[:12] + bytes(20), "not the grindable block hash"
    with pytest.raises(ContractRevertError, match="RunSeedAlreadyDrawn"):
        protocol.draw_run_seed(late, run_id)
    assert get_pending_run_seed_block(protocol, early.address, ctx, 0, chain.block_number()) == 0

    # the node's plant decision for round 0 is the contract's draw with the run seed
    secret = get_round_secret(get_secret_chain(early, ctx), 0)
    planted = is_round_planted(secret, run_id, 0, early.address, drawn.seed_base, RATE_BPS)
    assert (get_plant_secret(protocol, early, ctx, 0) == secret) == planted
    assert get_plant_secret(protocol, late, ctx, 0) is None


def test_a_run_seed_nobody_drew_in_time_is_not_waited_for(deployment):
    """Past SEED_HORIZON_BLOCKS the header can no longer be proven: round 0 stays unplanted, on-chain and in the
    node."""
    protocol = deployment.protocol
    creator, solver = get_devnet_account(0), get_devnet_account(5)
    config = build_run_config(preset="tiny", run_seed="0x" + "5f" * 32, dataset_root="0x" + "00" * 32)
    protocol.deposit_stake(solver, ROLE_SOLVER, RULES.run.solver_min_stake)
    run_id, _ = protocol.create_run(creator, build_run_terms(bytes(32), bytes(32), bytes(32), config, RULES.run), ETH)
    protocol.set_plant_terms(creator, run_id, PlantTerms(RATE_BPS, ETH // 50, ETH), 2 * ETH)
    ctx = _Ctx(run_id, RULES.run.max_rounds)
    protocol.join_run(solver, run_id)
    protocol.set_plant_anchor(solver, run_id, get_plant_anchor(get_secret_chain(solver, ctx)))
    seed = protocol.run_seed(run_id)
    late_block = seed.randao_block + SEED_HORIZON_BLOCKS + 1
    assert get_pending_run_seed_block(protocol, solver.address, ctx, 0, late_block) == 0
    assert get_plant_secret(protocol, solver, ctx, 0) is None
