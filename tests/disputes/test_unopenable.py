"""Every commitment is openable or its stake is lost: unopenable roots and a withheld document, on a real anvil.

Three rounds of the tiny preset with real node processes: an honest coordinator, a solver that commits
roots it cannot open (`--adversary unopenable`: a random root claiming 2^64 - 1 tokens in round 0, the
root another solver committed in round 1, its own earlier root in round 2), a solver that trains, commits
and opens honestly but never serves its commitment document (`--adversary withhold-document`), one
verifier (on both commitments' seats) and a whistleblower.

Before opening was part of the protocol an unopenable root could never be failed or challenged (the
leaf proof of a fail reverts), so one lazy pass got it paid, and a withheld document made every verifier
abstain. Now: the unopenable solver can never open, so no pass exists, the verifier and the whistleblower
report it after the opening deadline and it is slashed each round (all of it to the pool); the withheld
document is a fail on the opened leaf of draw 0, finalized, and that solver is slashed too. Neither is
ever paid; the honest solver takes the whole solver share of every round.
"""

from __future__ import annotations

import pytest

from protocol.adapters.keys import get_devnet_account
from protocol.run_presets import TINY
from protocol.types import ROLE_SOLVER, Opening
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
    max_rounds=3, samples_per_commitment=2, verifiers_per_commitment=1, jury_size=3, commit_window=300,
    attest_window=300, challenge_window=300, dispute_timeout=600,
)  # fmt: skip
"""Chain seconds on a driven devnet (tests/clock.py): windows close when every node is idle."""
HONEST, UNOPENABLE, NO_DOCUMENT, VERIFIER, WHISTLEBLOWER = 1, 2, 3, 4, 5


def test_unopenable_roots_and_a_withheld_document_end_slashed_and_unpaid(fresh_deployment, corpus, tmp_path):
    setup = prepare_run(
        fresh_deployment, corpus, tmp_path / "home", [HONEST, UNOPENABLE, NO_DOCUMENT], [VERIFIER], RULES
    )
    protocol, run_id = setup.protocol, setup.run_id
    for cheater in (UNOPENABLE, NO_DOCUMENT):  # a slash per round: enough stake to keep committing
        protocol.deposit_stake(
            get_devnet_account(cheater), ROLE_SOLVER, (RULES.run.max_rounds - 1) * RULES.run.solver_min_stake
        )
    stake_before = {a: protocol.bonded_of(address(a), ROLE_SOLVER) for a in (HONEST, UNOPENABLE, NO_DOCUMENT)}
    solver = ["solver", "run", "--no-progress"]
    nodes = [
        start(setup, "honest", solver, HONEST, "--coordinator"),
        start(setup, "unopenable", solver, UNOPENABLE, "--adversary", "unopenable"),
        start(setup, "no-document", solver, NO_DOCUMENT, "--adversary", "withhold-document"),
        start(setup, "verifier", ["verifier", "serve"], VERIFIER, "--exit-when-done"),
        start(setup, "whistleblower", ["whistleblower", "watch"], WHISTLEBLOWER, "--exit-when-done"),
    ]
    with nodes_running(setup, nodes):
        setup.create()
        with setup.drive(lambda: handles(setup, nodes)):
            wait_until(lambda: protocol.round_times(run_id).finished, 1500, "the run to finish")
            exits = wait_for_exits(nodes, ("verifier", "whistleblower"), "the verifier and whistleblower to exit")
            # The honest solver claims each round's shares after it settles, possibly after the others exited.
            full = RULES.run.max_rounds * RULES.run.shares_per_round * 8000 // 10_000
            wait_until(lambda: protocol.shares_of(run_id, address(HONEST)) == full, 300, "the honest solver's shares")
    detail = logs(setup, nodes)
    events = all_events(protocol)
    rounds = range(RULES.run.max_rounds)

    # The unopenable solver committed every round, never opened, was reported and slashed each time (to the pool).
    committed = {(e.args["round"], e.args["solver"]) for e in events if e.name == "Committed"}
    assert {(r, address(UNOPENABLE)) for r in rounds} <= committed, detail
    unopened = {
        (e.args["round"], e.args["solver"], e.args["slashed"]) for e in events if e.name == "CommitmentUnopened"
    }
    assert unopened == {(r, address(UNOPENABLE), True) for r in rounds}, detail
    pooled = [e.args["taken"] for e in events if e.name == "UnopenedSlashed"]
    assert pooled == [RULES.run.solver_min_stake] * RULES.run.max_rounds, detail
    opened = {(e.args["round"], e.args["solver"]) for e in events if e.name == "CommitmentOpened"}
    assert opened == {(r, address(s)) for r in rounds for s in (HONEST, NO_DOCUMENT)}, detail
    for r in rounds:  # nobody could attest it: every attestation needs an opened commitment
        assert protocol.opening_state(run_id, r, address(UNOPENABLE)) in (Opening.UNOPENED, Opening.NONE)
    attested = {(e.args["round"], e.args["solver"], e.name) for e in events if e.name.endswith("Attested")}
    assert not any(s == address(UNOPENABLE) for _, s, _ in attested), detail

    # The withheld document: a fail on the opened leaf every round, finalized, slashed.
    assert {(r, address(NO_DOCUMENT), "FailAttested") for r in rounds} <= attested, detail
    assert not any(s == address(NO_DOCUMENT) and n == "PassAttested" for _, s, n in attested), detail
    taken = slashed(events)
    assert taken.get((address(UNOPENABLE), ROLE_SOLVER)) == RULES.run.max_rounds * RULES.run.solver_min_stake, detail
    assert taken.get((address(NO_DOCUMENT), ROLE_SOLVER)) == RULES.run.max_rounds * RULES.run.solver_min_stake, detail
    assert (address(HONEST), ROLE_SOLVER) not in taken, detail

    # Only the honest solver is paid: the whole solver share of every round.
    paid = {(e.args["round"], e.args["solver"]) for e in events if e.name == "SolverSharesClaimed"}
    assert paid == {(r, address(HONEST)) for r in rounds}, detail
    assert protocol.shares_of(run_id, address(UNOPENABLE)) == 0
    assert protocol.shares_of(run_id, address(NO_DOCUMENT)) == 0
    terms = RULES.run
    assert protocol.shares_of(run_id, address(HONEST)) == terms.max_rounds * terms.shares_per_round * 8000 // 10_000
    assert protocol.bonded_of(address(HONEST), ROLE_SOLVER) == stake_before[HONEST]
    assert exits == {"verifier": 0, "whistleblower": 0}, detail
    assert "Traceback" not in detail, detail
    assert_balance_matches_events(protocol)
