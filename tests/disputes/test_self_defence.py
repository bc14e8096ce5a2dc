"""A verifier fails honest work and nobody watches: the griefed solvers challenge the fails themselves and are paid.

Issue 37: a verifier that fails everything profited whenever whistleblowers re-checked less than about a third of the
attestations, because only whistleblowers challenged fails. Now every solver node replays the draw any fail on its own
commitment names and challenges the fail when its replay contradicts it (node/self_defence.py). A jury overturns the
fail, which makes it *cleared*: it counts towards acceptance like a pass (Verification counts it in `passes`), so with
the honest verifier's pass the commitment has both of its two seats and is paid.

Solvers: the coordinator and an honest solver. Run verifiers (both attest every commitment, 2 seats each): honest and
fail-honest. Two juror-only verifiers. No whistleblower.
"""

from __future__ import annotations

import pytest

from protocol.constants import JUROR_MIN_STAKE
from protocol.run_presets import TINY
from protocol.types import ROLE_VERIFIER
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
COORDINATOR, HONEST, VERIFIER, FALSE_FAIL, JUROR_A, JUROR_B = 1, 2, 4, 5, 6, 7


def test_griefed_solvers_challenge_false_fails_themselves_and_are_paid(fresh_deployment, corpus, tmp_path):
    setup = prepare_run(
        fresh_deployment, corpus, tmp_path / "home", [COORDINATOR, HONEST], [VERIFIER, FALSE_FAIL, JUROR_A, JUROR_B],
        RULES,
    )  # fmt: skip
    protocol, run_id = setup.protocol, setup.run_id
    solver, verifier = ["solver", "run", "--no-progress"], ["verifier", "serve"]
    nodes = [
        start(setup, "coordinator", solver, COORDINATOR, "--coordinator"),
        start(setup, "honest", solver, HONEST),
        start(setup, "verifier", verifier, VERIFIER, "--exit-when-done"),
        start(setup, "false-fail", verifier, FALSE_FAIL, "--adversary", "fail-honest"),
        start(setup, "juror-a", verifier, JUROR_A, "--juror-only", "--exit-when-done"),
        start(setup, "juror-b", verifier, JUROR_B, "--juror-only", "--exit-when-done"),
    ]
    try:
        setup.create()
        with setup.drive(lambda: handles(setup, nodes)):
            wait_until(lambda: protocol.round_times(run_id).finished, 900, "the run to finish")
            wait_for_exits(nodes, ("verifier", "juror-a", "juror-b"), "the honest verifier and the jurors to exit")
            griefed = (address(COORDINATOR), address(HONEST))
            wait_until(
                lambda: all(protocol.shares_of(run_id, s) > 0 for s in griefed), 300, "the griefed solvers' shares"
            )
    except AssertionError:
        raise AssertionError(logs(setup, nodes)) from None
    finally:
        stop_all(nodes)
    detail = logs(setup, nodes)
    events = all_events(protocol)
    executed = {e.args["disputeId"]: e for e in events if e.name == "DisputeExecuted"}

    # Each false fail was challenged by the solver it griefed (nobody else watches), and overturned.
    challenged = [e for e in events if e.name == "AttestationChallenged"]
    assert sorted((e.args["solver"], e.args["challenger"]) for e in challenged) == sorted((s, s) for s in griefed), (
        detail
    )
    for e in challenged:
        assert e.args["attestation"]["isFail"], detail
        verdict = executed[e.args["disputeId"]]
        assert verdict.args["challengerWins"] and verdict.args["winner"] == e.args["solver"], detail

    # The overturned fail is cleared: with the honest pass it is 2 of 2 seats, so both commitments are accepted and
    # paid equal shares; the old rule (one pass, no fault) would also have paid, but only if someone challenged.
    for s in griefed:
        status = protocol.commitment_status(run_id, 0, s)
        assert (status.passes, status.faults, status.needed) == (2, 0, 2), status  # a pass and a cleared fail
        assert status.accepted and status.paid
    minted = {e.args["solver"]: e.args["shares"] for e in events if e.name == "SolverSharesClaimed"}
    assert set(minted) == set(griefed) and len(set(minted.values())) == 1, minted

    # The false failer lost its bonds and its stake (capped at what it has); no solver was slashed.
    taken = slashed(events)
    assert taken == {(address(FALSE_FAIL), ROLE_VERIFIER): RULES.run.verifier_min_stake + JUROR_MIN_STAKE}, taken
    assert_balance_matches_events(protocol)
