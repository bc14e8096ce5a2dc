"""A verifier that fails honest work, a solver that withholds its checkpoints and a coordinator that
posts a wrong θ_(r+1), in one round on a real anvil.

Solvers: the coordinator (honest training, wrong first claim), an honest solver, a withholding
solver. Run verifiers (both attest every commitment): honest and fail-honest. Two juror-only
verifiers and a whistleblower. Expected: the whistleblower challenges the two false fails and the
jury overturns them (the false verifier loses its bonds and its stake, capped at what it has); the
withholding solver is failed by both verifiers, nobody challenges (both fails are right) and it is
slashed when the fails finalize; the wrong claim is challenged and rejected (the coordinator loses
its claim bond), the right claim follows and the round settles with the two honest Δs.
"""

from __future__ import annotations

import pytest

from node.theta import compute_next_theta
from protocol.adapters.artifacts import LocalArtifactStore
from protocol.adapters.runs import load_run_context
from protocol.constants import JUROR_MIN_STAKE
from protocol.jury import KIND_CLAIM, DisputeSubject
from protocol.run_presets import TINY
from protocol.types import ROLE_SOLVER, ROLE_VERIFIER
from tests.chain_fixtures import prepare_run, wait_until
from tests.disputes.conftest import (
    address,
    all_events,
    assert_balance_matches_events,
    handles,
    logs,
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
COORDINATOR, HONEST, WITHHOLDER, VERIFIER, FALSE_FAIL, JUROR_A, JUROR_B, WHISTLEBLOWER = 1, 2, 3, 4, 5, 6, 7, 8


def test_false_fails_overturned_withholder_slashed_wrong_claim_rejected(fresh_deployment, corpus, tmp_path):
    setup = prepare_run(
        fresh_deployment, corpus, tmp_path / "home", [COORDINATOR, HONEST, WITHHOLDER],
        [VERIFIER, FALSE_FAIL, JUROR_A, JUROR_B], RULES,
    )  # fmt: skip
    protocol, run_id = setup.protocol, setup.run_id
    solver, verifier = ["solver", "run", "--no-progress"], ["verifier", "serve"]
    nodes = [
        start(setup, "coordinator", solver, COORDINATOR, "--coordinator", "--adversary", "wrong-claim"),
        start(setup, "honest", solver, HONEST),
        start(setup, "withholder", solver, WITHHOLDER, "--adversary", "withhold"),
        start(setup, "verifier", verifier, VERIFIER, "--exit-when-done"),
        start(setup, "false-fail", verifier, FALSE_FAIL, "--adversary", "fail-honest"),
        start(setup, "juror-a", verifier, JUROR_A, "--juror-only", "--exit-when-done"),
        start(setup, "juror-b", verifier, JUROR_B, "--juror-only", "--exit-when-done"),
        start(setup, "whistleblower", ["whistleblower", "watch"], WHISTLEBLOWER, "--exit-when-done"),
    ]
    try:
        setup.create()
        with setup.drive(lambda: handles(setup, nodes)):
            wait_until(lambda: protocol.round_times(run_id).finished, 900, "the run to finish")
            finishing = ("verifier", "juror-a", "juror-b", "whistleblower")
            wait_for_exits(nodes, finishing, "the honest verifier, the jurors and the whistleblower to exit")
            # A solver claims its shares after the round settles, possibly after the others exited.
            paid = [address(COORDINATOR), address(HONEST)]
            wait_until(lambda: all(protocol.shares_of(run_id, s) > 0 for s in paid), 300, "the honest solvers' shares")
    except AssertionError:
        raise AssertionError(logs(setup, nodes)) from None
    finally:
        stop_all(nodes)
    detail = logs(setup, nodes)
    events = all_events(protocol)
    executed = {e.args["disputeId"]: e for e in events if e.name == "DisputeExecuted"}

    # The false fails on honest work: challenged by the whistleblower or by the griefed solver itself (self-defence,
    # node/self_defence.py: whichever lands first), overturned; each overturned fail is cleared and counts towards
    # acceptance.
    challenged = [e for e in events if e.name == "AttestationChallenged"]
    assert {e.args["solver"] for e in challenged} == {address(COORDINATOR), address(HONEST)}, detail
    for e in challenged:
        assert e.args["attestation"]["isFail"]
        assert e.args["challenger"] in (address(WHISTLEBLOWER), e.args["solver"]), detail
        verdict = executed[e.args["disputeId"]]
        assert verdict.args["challengerWins"] and verdict.args["winner"] == e.args["challenger"], detail
        status = protocol.commitment_status(run_id, 0, e.args["solver"])
        assert (status.passes, status.faults, status.accepted) == (2, 0, True), status  # a pass and the cleared fail

    # The withholder: failed by both verifiers (rightly: its checkpoints are not served), never challenged.
    fails = [e for e in events if e.name == "FailAttested" and e.args["solver"] == address(WITHHOLDER)]
    assert {e.args["verifier"] for e in fails} == {address(VERIFIER), address(FALSE_FAIL)}
    proven = [e for e in events if e.name == "SolverFaultProven"]
    assert [e.args["solver"] for e in proven] == [address(WITHHOLDER)]  # the first finalize proves it: slashed once
    assert proven[0].args["taken"] == RULES.run.solver_min_stake
    # Both fails prove the fault, so both verifiers get an equal share, whichever finalized first (finding 6).
    shares = [e for e in events if e.name == "FaultRewardClaimed"]
    assert {e.args["prover"] for e in shares} == {address(VERIFIER), address(FALSE_FAIL)}, detail
    assert all(e.args["provers"] == 2 for e in shares) and len({e.args["amount"] for e in shares}) == 1
    assert sum(e.args["amount"] for e in shares) == proven[0].args["toProvers"]

    # The wrong claim: challenged, rejected by the jury, the claim bond forfeited; the right one settled.
    claims = [e for e in events if e.name == "ThetaClaimed"]
    coordinator = address(COORDINATOR)
    assert [(e.args["claimer"], e.args["nonce"]) for e in claims] == [(coordinator, 0), (coordinator, 1)]
    claim_dispute = DisputeSubject(KIND_CLAIM, run_id, 0, claim_nonce=0).dispute_id
    rejected = executed[claim_dispute]
    assert rejected.args["challengerWins"] and rejected.args["total"] == RULES.run.challenge_bond, detail
    resolved = [e for e in events if e.name == "ClaimResolved"]
    assert [(e.args["nonce"], e.args["bondForfeited"]) for e in resolved] == [(0, RULES.run.challenge_bond)]
    ctx = load_run_context(protocol, LocalArtifactStore(setup.home / "creator" / "artifacts"), None, run_id)
    store = LocalArtifactStore(setup.home / "solvers" / address(COORDINATOR).lower() / "artifacts")
    _, expected, accepted = compute_next_theta(protocol, store, None, ctx, 0)
    assert set(accepted) == {address(COORDINATOR), address(HONEST)}
    assert protocol.theta_of(run_id, 1) == expected == claims[1].args["thetaHash"] != claims[0].args["thetaHash"]

    # Slashes: the false verifier (capped at its stake: the run's part and the juror part prepare_run adds), the
    # withholder; nobody honest.
    taken = slashed(events)
    assert taken == {
        (address(FALSE_FAIL), ROLE_VERIFIER): RULES.run.verifier_min_stake + JUROR_MIN_STAKE,
        (address(WITHHOLDER), ROLE_SOLVER): RULES.run.solver_min_stake,
    }, taken
    for account in (COORDINATOR, HONEST):
        assert protocol.bonded_of(address(account), ROLE_SOLVER) == RULES.run.solver_min_stake
        assert protocol.shares_of(run_id, address(account)) > 0
    assert protocol.bonded_of(address(VERIFIER), ROLE_VERIFIER) == RULES.run.verifier_min_stake + JUROR_MIN_STAKE
    signers = [e for e in events if e.name == "JurorRewardClaimed"]
    assert {e.args["juror"] for e in signers} <= {address(VERIFIER), address(JUROR_A), address(JUROR_B)}
    assert len(signers) == sum(e.args["signerCount"] for e in executed.values()), detail
    assert_balance_matches_events(protocol)
