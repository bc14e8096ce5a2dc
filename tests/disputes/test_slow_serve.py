"""A solver that drips its checkpoints is failed for data availability and slashed, on a real anvil (issue 37).

Found by an attacker: artifact fetches had a per-read timeout but no total deadline, so a dripped checkpoint took
47.5 s against a 30 s timeout and still arrived. A cheating solver could slow-serve until honest verifiers' replays
missed the attest window: its seats silent, and with lazy accomplices its bad work accepted. Now every fetch of what
a solver must serve is charged to a per-seat budget, a sixth of the attest window in wall-clock seconds
(protocol/fetch_budget.py), and what is not in when it is spent counts as unavailable.

One round of the tiny preset with real node processes: an honest coordinator, a solver that trains, commits and opens
honestly and serves its document at once but drips every checkpoint over four budgets (`--adversary slow-serve`; it
does not defend its work), and two honest verifiers holding a seat each on both commitments. Expected: both verifiers
give up on the dripped end checkpoint when the 15 s budget is spent and attest the data-availability fail (the path
a withheld checkpoint takes), nobody challenges, the fails finalize and slash the slow solver its stake
(SolverFaultProven); the honest solver's commitment passes, is accepted and paid, and it keeps its stake.
"""

from __future__ import annotations

import time

import pytest

from protocol.fetch_budget import compute_fetch_budget_s
from protocol.run_presets import TINY
from protocol.types import ROLE_SOLVER, ROLE_VERIFIER
from tests.chain_fixtures import prepare_run, wait_until
from tests.disputes.conftest import (
    address,
    all_events,
    assert_balance_matches_events,
    handles,
    logs,
    nodes_running,
    slashed,
    start,
    wait_for_exits,
)

pytestmark = pytest.mark.e2e

RULES = TINY.with_run(
    max_rounds=1, samples_per_commitment=2, verifiers_per_commitment=2, jury_size=3, commit_window=300,
    attest_window=90, challenge_window=300, dispute_timeout=600,
)  # fmt: skip
"""Chain seconds on a driven devnet (tests/clock.py): windows close when every node is idle. The attest window sets the
fetch budget: 90 / 6 = 15 wall-clock seconds per seat; the slow solver drips each checkpoint over 60 s."""
COORDINATOR, SLOW, VERIFIER_A, VERIFIER_B = 1, 2, 3, 4


def test_slow_serving_solver_is_failed_for_data_availability_and_slashed(fresh_deployment, corpus, tmp_path):
    budget_s = compute_fetch_budget_s(RULES.run.attest_window)
    assert budget_s == 15.0
    setup = prepare_run(
        fresh_deployment, corpus, tmp_path / "home", [COORDINATOR, SLOW], [VERIFIER_A, VERIFIER_B], RULES
    )
    protocol, run_id = setup.protocol, setup.run_id
    solver, verifier = ["solver", "run", "--no-progress"], ["verifier", "serve"]
    nodes = [
        start(setup, "coordinator", solver, COORDINATOR, "--coordinator"),
        start(setup, "slow", solver, SLOW, "--adversary", "slow-serve"),
        start(setup, "verifier-a", verifier, VERIFIER_A, "--exit-when-done"),
        start(setup, "verifier-b", verifier, VERIFIER_B, "--exit-when-done"),
    ]
    with nodes_running(setup, nodes):
        setup.create()
        started = time.monotonic()
        with setup.drive(lambda: handles(setup, nodes)):
            wait_until(lambda: protocol.round_times(run_id).finished, 600, "the run to finish")
            wait_until(lambda: protocol.shares_of(run_id, address(COORDINATOR)) > 0, 300, "the honest solver's shares")
            exits = wait_for_exits(nodes, ("verifier-a", "verifier-b"), "both verifiers to exit")
        run_wall_s = time.monotonic() - started
    detail = logs(setup, nodes)
    events = all_events(protocol)
    slow, honest = address(SLOW), address(COORDINATOR)

    # The slow solver opened (its leaves are on-chain) and dripped its checkpoints; both verifiers failed it for data
    # availability when their budget was spent: the dripped end checkpoint "not served within the 15 s fetch budget".
    assert any(e.name == "CommitmentOpened" and e.args["solver"] == slow for e in events), detail
    assert "serving a checkpoint slowly" in (setup.home / "slow.log").read_text(), detail
    fails = [e for e in events if e.name == "FailAttested" and e.args["solver"] == slow]
    assert {e.args["verifier"] for e in fails} == {address(VERIFIER_A), address(VERIFIER_B)}, detail
    for label in ("verifier-a", "verifier-b"):
        log = (setup.home / f"{label}.log").read_text()
        assert "end checkpoint not served" in log and "s fetch budget of solver" in log, detail
    assert not [e for e in events if e.name == "AttestationChallenged"], detail  # no self-defence, nothing to dispute

    # Finalized, the fails prove its fault: its stake is taken (half to the two verifiers, in equal shares).
    proven = [e for e in events if e.name == "SolverFaultProven"]
    assert [e.args["solver"] for e in proven] == [slow], detail
    assert proven[0].args["taken"] == RULES.run.solver_min_stake
    shares = [e for e in events if e.name == "FaultRewardClaimed"]
    assert {e.args["prover"] for e in shares} == {address(VERIFIER_A), address(VERIFIER_B)}, detail
    taken = slashed(events)
    assert taken == {(slow, ROLE_SOLVER): RULES.run.solver_min_stake}, taken

    # The honest solver in the same round: passed on both seats, accepted, paid, stake intact; verifiers unslashed.
    passes = {e.args["verifier"] for e in events if e.name == "PassAttested" and e.args["solver"] == honest}
    assert passes == {address(VERIFIER_A), address(VERIFIER_B)}, detail
    assert protocol.commitment_status(run_id, 0, honest).accepted
    assert not protocol.commitment_status(run_id, 0, slow).accepted
    assert protocol.bonded_of(honest, ROLE_SOLVER) == RULES.run.solver_min_stake
    assert protocol.shares_of(run_id, honest) > 0 and protocol.shares_of(run_id, slow) == 0
    for account in (VERIFIER_A, VERIFIER_B):
        assert (address(account), ROLE_VERIFIER) not in taken
    assert exits == {"verifier-a": 0, "verifier-b": 0}, detail
    assert_balance_matches_events(protocol)
    # The budget bounded the verifiers: the whole driven run took far less than the slow solver's drips would have
    # (two seats x 60 s of dripping per verifier, had they waited for them).
    assert run_wall_s < 600, run_wall_s
