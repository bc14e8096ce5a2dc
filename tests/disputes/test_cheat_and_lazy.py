"""A cheating solver and a lazy verifier on a real anvil: caught, slashed, everyone else paid.

One round, 2 solvers (honest coordinator, cheater), 2 run verifiers attesting every commitment
(honest, lazy), 3 juror-only verifiers (every jury has at least MIN_JURY_SIZE = 3 seats besides the
defendant), 1 whistleblower, jury size 3. The honest verifier fails the
cheater, the lazy one passes it; the whistleblower challenges the lazy pass; the jury (BLS votes
exchanged over HTTP, one aggregate on-chain) overturns it: the lazy verifier loses its bond and its
stake, the cheater its stake. The test itself then plays a dishonest challenger against an honest
pass and loses its bond to a second jury. Before the run, 12 sybil jurors register and leave again
(issue 16, finding 2): they leave no dead registry entries, and both disputes are still decided.
"""

from __future__ import annotations

import pytest

from protocol.adapters.keys import get_devnet_account
from protocol.commitment import decode_commitment_doc
from protocol.constants import JUROR_MIN_STAKE, JUROR_REWARD_BPS, WINNER_REWARD_BPS
from protocol.jury import KIND_ATTESTATION, DisputeSubject
from protocol.merkle import build_merkle_tree, compute_leaf_hash, get_merkle_proof_at
from protocol.run_presets import TINY
from protocol.types import ROLE_SOLVER, ROLE_VERIFIER, AttestationRef, DisputeStatus, LeafData
from tests.chain_fixtures import prepare_run, wait_until
from tests.disputes.conftest import (
    address,
    all_events,
    assert_balance_matches_events,
    handles,
    logs,
    register_and_leave_sybils,
    slashed,
    start,
    stop_all,
    wait_for_exits,
)

pytestmark = pytest.mark.e2e

RULES = TINY.with_run(
    max_rounds=1, samples_per_commitment=2, verifiers_per_commitment=2, jury_size=3, commit_window=300,
    attest_window=300, challenge_window=300, dispute_timeout=600,
)  # fmt: skip
"""Chain seconds on a driven devnet (tests/clock.py): windows close when every node is idle."""
HONEST, CHEATER, VERIFIER, LAZY, JUROR_A, JUROR_B, WHISTLEBLOWER, FALSE_CHALLENGER, JUROR_C = 1, 2, 3, 4, 5, 6, 7, 8, 9


def _events(protocol, name):
    return [e for e in all_events(protocol) if e.name == name]


def test_cheater_and_lazy_verifier_are_slashed_and_a_false_challenge_loses_its_bond(fresh_deployment, corpus, tmp_path):
    setup = prepare_run(
        fresh_deployment,
        corpus,
        tmp_path / "home",
        [HONEST, CHEATER],
        [VERIFIER, LAZY, JUROR_A, JUROR_B, JUROR_C],
        RULES,
    )
    protocol, run_id = setup.protocol, setup.run_id
    sybils = register_and_leave_sybils(protocol, 12)
    assert protocol.juror_count() == 0 and all(not protocol.juror_of(s.address).active for s in sybils)
    solver, verifier, watch = ["solver", "run", "--no-progress"], ["verifier", "serve"], ["whistleblower", "watch"]
    nodes = [
        start(setup, "honest", solver, HONEST, "--coordinator"),
        start(setup, "cheater", solver, CHEATER, "--adversary", "cheat", "--behaviour", "scaled-update"),
        start(setup, "verifier", verifier, VERIFIER, "--exit-when-done"),
        start(setup, "lazy", verifier, LAZY, "--adversary", "lazy"),
        start(setup, "juror-a", verifier, JUROR_A, "--juror-only", "--exit-when-done"),
        start(setup, "juror-b", verifier, JUROR_B, "--juror-only", "--exit-when-done"),
        start(setup, "juror-c", verifier, JUROR_C, "--juror-only", "--exit-when-done"),
        start(setup, "whistleblower", watch, WHISTLEBLOWER, "--exit-when-done"),
    ]
    try:
        setup.create()
        with setup.drive(lambda: handles(setup, nodes)) as driver:
            # The test as a dishonest challenger: challenge the honest verifier's pass on honest work, with
            # the clock stopped from the moment that pass exists (so the challenge window cannot slip by).
            gate = driver.pause_when(lambda: _find_honest_pass(setup))
            try:
                gate.wait(600, "the honest verifier's pass on the honest solver")
            except AssertionError:
                raise AssertionError(logs(setup, nodes)) from None
            false_subject = _false_challenge(setup, _find_honest_pass(setup))
            gate.release()
            wait_until(lambda: protocol.round_times(run_id).finished, 900, "the run to finish")
            staying = ("lazy", "honest", "cheater")
            finishing = [n.label for n in nodes if n.label not in staying]
            wait_for_exits(nodes, finishing, "verifiers, jurors and the whistleblower to finish and exit")
            # The honest solver claims its shares after the round settles, possibly after the others exited.
            wait_until(lambda: protocol.shares_of(run_id, address(HONEST)) > 0, 300, "the honest solver's shares")
    finally:
        stop_all(nodes)
    detail = logs(setup, nodes)
    events = all_events(protocol)
    bond, attestation_bond = RULES.run.challenge_bond, RULES.run.attestation_bond

    # Detected: the honest verifier failed the cheater, the whistleblower challenged the lazy pass.
    fails = [e for e in events if e.name == "FailAttested"]
    assert [(e.args["solver"], e.args["verifier"]) for e in fails] == [(address(CHEATER), address(VERIFIER))], detail
    challenged = [e for e in events if e.name == "AttestationChallenged"]
    by_challenger = {e.args["challenger"]: e for e in challenged}
    assert set(by_challenger) == {address(WHISTLEBLOWER), address(FALSE_CHALLENGER)}, detail
    wb = by_challenger[address(WHISTLEBLOWER)]
    assert wb.args["solver"] == address(CHEATER) and not wb.args["attestation"]["isFail"]

    # The jury: a BLS aggregate of a quorum, overturning the lazy pass.
    executed = {e.args["disputeId"]: e for e in events if e.name == "DisputeExecuted"}
    verdicts = {e.args["disputeId"]: e for e in events if e.name == "VerdictSubmitted"}
    won = executed[wb.args["disputeId"]]
    assert won.args["challengerWins"] and won.args["winner"] == address(WHISTLEBLOWER), detail
    assert verdicts[wb.args["disputeId"]].args["signerCount"] >= 2

    # Slashed by the right amounts: the lazy verifier its verifier stake, the cheater its solver stake (once).
    taken = slashed(events)
    assert taken[(address(LAZY), ROLE_VERIFIER)] == RULES.run.verifier_min_stake
    assert taken[(address(CHEATER), ROLE_SOLVER)] == RULES.run.solver_min_stake
    assert set(taken) == {(address(LAZY), ROLE_VERIFIER), (address(CHEATER), ROLE_SOLVER)}, taken
    assert protocol.bonded_of(address(LAZY), ROLE_VERIFIER) == JUROR_MIN_STAKE  # what the run did not reserve
    assert protocol.bonded_of(address(CHEATER), ROLE_SOLVER) == 0

    # The challenger and the jurors were paid exactly as docs/contracts.md says.
    total = won.args["total"]
    solver_part = sum(e.args["taken"] for e in events if e.name == "StakeSlashed" and e.args["recipient"] ==
                      protocol.chain.contract("Disputes").address and e.args["role"] == ROLE_SOLVER)  # fmt: skip
    assert total == attestation_bond + RULES.run.verifier_min_stake + solver_part
    assert won.args["toWinner"] == total * WINNER_REWARD_BPS // 10_000 and won.args["bondReturned"] == bond
    per_juror = total * JUROR_REWARD_BPS // 10_000 // won.args["signerCount"]
    rewards = [e for e in events if e.name == "JurorRewardClaimed" and e.args["disputeId"] == wb.args["disputeId"]]
    assert len(rewards) == won.args["signerCount"] and all(e.args["reward"] == per_juror for e in rewards), detail
    assert all(e.args["shares"] > 0 for e in rewards)
    withdrawn = {e.args["account"]: e.args["amount"] for e in events if e.name == "Withdrawn"
                 and e.contract == "Disputes"}  # fmt: skip
    assert withdrawn[address(WHISTLEBLOWER)] == won.args["toWinner"] + bond

    # The false challenge: upheld, the dishonest challenger's bond went to the attester, jurors and pool.
    lost = executed[false_subject.dispute_id]
    assert not lost.args["challengerWins"] and lost.args["winner"] == address(VERIFIER)
    assert lost.args["total"] == bond and lost.args["bondReturned"] == 0
    assert protocol.credits_of("Disputes", address(FALSE_CHALLENGER)) == 0

    # Honest parties untouched: the honest solver accepted and paid in shares; the honest verifier kept its stake.
    assert protocol.is_accepted(run_id, 0, address(HONEST)) and not protocol.is_accepted(run_id, 0, address(CHEATER))
    terms = RULES.run
    assert protocol.shares_of(run_id, address(HONEST)) == terms.shares_per_round * terms.solver_share_bps // 10_000
    assert protocol.shares_of(run_id, address(CHEATER)) == 0
    assert protocol.bonded_of(address(HONEST), ROLE_SOLVER) == RULES.run.solver_min_stake
    assert protocol.bonded_of(address(VERIFIER), ROLE_VERIFIER) == RULES.run.verifier_min_stake + JUROR_MIN_STAKE
    assert_balance_matches_events(protocol)


def _find_honest_pass(setup) -> AttestationRef | None:
    """The honest verifier's pass on the honest solver, once it is on-chain."""
    for e in setup.protocol.chain.get_events(setup.protocol.chain.manifest.deployed_block, names=["PassAttested"]):
        if e.args["solver"] == address(HONEST) and e.args["verifier"] == address(VERIFIER):
            return AttestationRef(e.args["runId"], e.args["round"], e.args["solver"], e.args["slot"])
    return None


def _false_challenge(setup, ref: AttestationRef) -> DisputeSubject:
    """Challenge a correct pass (a dishonest challenger) with the committed leaf of draw 0."""
    import httpx

    protocol = setup.protocol
    url = f"http://127.0.0.1:{setup.ports[HONEST]}/commitments/{ref.run_id}/{ref.round}"
    doc = decode_commitment_doc(httpx.get(url, timeout=10).json()["document"].encode())
    commitment = protocol.get_commitments(ref.run_id, ref.round, 0)[ref.solver]
    segment = protocol.sampled_segment(ref, 0)
    tree = build_merkle_tree([compute_leaf_hash(leaf) for leaf in doc.leaves])
    leaf = doc.leaves[segment]
    protocol.challenge_attestation(
        get_devnet_account(FALSE_CHALLENGER), ref, commitment, 0,
        LeafData(leaf.start_hash, leaf.end_hash, leaf.sketch_hash, leaf.tokens),
        list(get_merkle_proof_at(tree, segment)), RULES.run.challenge_bond,
    )  # fmt: skip
    subject = DisputeSubject(KIND_ATTESTATION, ref.run_id, ref.round, ref.solver, ref.slot, 0)
    assert protocol.dispute_of(subject.dispute_id).status == DisputeStatus.OPEN
    return subject
