"""Reporting a seat left unattested (node/abstentions.py, Verification.reportAbstention) on a real anvil.

Scripted on its own driven chain (the test moves the clock): a solver commits and opens a commitment with two
seats; one verifier passes it, the other stays silent. After attestEnd the solver finds exactly the silent seat and
reports it: the silent verifier loses the round's attestation bond of its stake, all of it to the run's reward
pool, the seat is Abstained, a second report is a harmless race, and the auditor's fold and checks agree.
"""

from __future__ import annotations

import logging

import pytest

from auditor import payout_checks
from devnet.deploy import build_contracts
from devnet.runs import ETH, build_run_terms
from node.abstentions import find_abstentions, is_abstention_window, report_abstentions
from protocol.adapters.keys import get_devnet_account
from protocol.adapters.runs import RunContext
from protocol.commitment import CommitmentDoc
from protocol.config import build_run_config
from protocol.history.fold import fold_run_history
from protocol.ledger import compute_ledger
from protocol.merkle import SegmentLeaf
from protocol.opening import build_opening
from protocol.run_presets import TINY
from protocol.types import ROLE_SOLVER, ROLE_VERIFIER, AttestationRef, AttestationState, Commitment
from tests.chain_fixtures import driven_deployment

RULES = TINY.with_run(
    max_rounds=2, samples_per_commitment=1, verifiers_per_commitment=2, commit_window=30, attest_window=30,
    challenge_window=30,
)  # fmt: skip
LOG = logging.getLogger("test.abstentions")


@pytest.fixture
def chain(tmp_path):
    with driven_deployment(build_contracts(), tmp_path) as deployed:
        yield deployed.protocol


def _implied(protocol) -> int:
    c = protocol.chain
    return compute_ledger(c.get_events(c.deployment.deployed_block, c.block_number())).implied_balance


def test_a_silent_seat_is_reported_once_and_charged_the_bond_into_the_reward_pool(chain):
    protocol = chain
    creator, solver = get_devnet_account(0), get_devnet_account(1)
    verifiers = [get_devnet_account(2), get_devnet_account(3)]
    protocol.deposit_stake(solver, ROLE_SOLVER, RULES.run.solver_min_stake)
    for v in verifiers:
        protocol.deposit_stake(v, ROLE_VERIFIER, RULES.run.verifier_min_stake)
    config = build_run_config(preset="tiny", run_seed="0x" + "ab" * 32, dataset_root="0x" + "00" * 32)
    terms = build_run_terms(bytes(32), bytes(32), bytes(32), config, RULES.run)
    run_id, _ = protocol.create_run(creator, terms, 5 * ETH)
    protocol.join_run(solver, run_id)
    for v in verifiers:
        protocol.register_verifier(v, run_id)
    ctx = RunContext(run_id, terms, config, None, protocol.share_token(run_id), 0)  # type: ignore[arg-type]

    leaves = tuple(
        SegmentLeaf(run_id, 0, solver.address, i, bytes([i + 1]) * 32, bytes([i + 2]) * 32, bytes(32), 64)
        for i in range(terms.num_segments)
    )
    doc = CommitmentDoc(run_id, 0, solver.address, protocol.theta_of(run_id, 0), b"\xd0" * 32, leaves)
    commitment = Commitment(doc.root, doc.delta_hash, doc.tokens)
    protocol.commit(solver, run_id, 0, commitment)
    times = protocol.round_times(run_id)
    protocol.chain.mine_blocks(times.seed_block - protocol.chain.block_number())
    protocol.chain.mine_at(max(times.commit_end, protocol.chain.get_block()["timestamp"] + 1))
    protocol.draw_seed(creator, run_id, 0)
    opening = build_opening(doc, protocol.opened_segments(run_id, 0, solver.address), RULES.run.samples_per_commitment)
    protocol.open_commitment(solver, run_id, 0, solver.address, commitment, opening)

    by_verifier = {}
    for slot in range(2):
        ref = AttestationRef(run_id, 0, solver.address, slot)
        by_verifier[protocol.assigned_verifier(ref)[0].lower()] = ref
    active, silent = verifiers
    attested, abstained = by_verifier[active.address.lower()], by_verifier[silent.address.lower()]
    protocol.attest_pass(active, attested, commitment, RULES.run.attestation_bond)
    assert not is_abstention_window(protocol.round_times(run_id), protocol.chain.get_block()["timestamp"])

    protocol.chain.mine_at(times.attest_end)
    now = protocol.chain.get_block()["timestamp"]
    assert is_abstention_window(protocol.round_times(run_id), now)
    refs = find_abstentions(protocol, ctx, protocol.round_times(run_id), [solver.address])
    assert refs == (abstained,)
    assert find_abstentions(protocol, ctx, protocol.round_times(run_id)) == (abstained,)  # every solver: the same
    stake, implied = protocol.bonded_of(silent.address, ROLE_VERIFIER), _implied(protocol)
    assert report_abstentions(protocol, solver, LOG, refs) == 1
    assert report_abstentions(protocol, verifiers[0], LOG, refs) == 0  # reported first by the solver: skipped
    assert protocol.attestation_of(abstained).state == AttestationState.ABSTAINED
    assert stake - protocol.bonded_of(silent.address, ROLE_VERIFIER) == RULES.run.attestation_bond
    assert _implied(protocol) == implied  # stake moved into the reward pool: nothing entered or left
    assert find_abstentions(protocol, ctx, protocol.round_times(run_id)) == ()
    # the abstention is no attestation: one pass of two seats is no majority, so the commitment is not accepted
    # (issue 37: a silent seat counts against acceptance; the old rule accepted it on the one pass)
    status = protocol.commitment_status(run_id, 0, solver.address)
    assert (status.passes, status.needed, status.accepted, status.paid) == (1, 2, False, False)
    assert protocol.round_tally(run_id, 0)["paidCommitments"] == 0
    assert protocol.round_tally(run_id, 0)["totalChecks"] == 1

    chain_events = protocol.chain.get_events(protocol.chain.deployment.deployed_block, protocol.chain.block_number())
    history = fold_run_history(chain_events, run_id)
    (x,) = history.rounds[0].abstentions
    assert (x.verifier, x.reporter, x.taken, x.slot) == (silent.address, solver.address, ETH, abstained.slot)
    assert [(s.account, s.fault, s.requested) for s in history.slashes] == [(silent.address, "abstention", ETH)]
    assert history.revenue_total("pool funded") == ETH
    assert payout_checks.check_slashes(history)[0].passed
