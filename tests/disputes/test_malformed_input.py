"""Honest nodes survive malformed input on a real anvil: every kind of it ends in a verdict, none in a crash.

Four rounds, an honest coordinator, a solver that serves something malformed each round
(`adversary.solver.MalformedSolverNode`: bytes that are no document, the document of another run, the
document of only its first leaf whose root it committed, checkpoints whose bytes do not hash to their
names), one verifier and one whistleblower. Before the fix a short document raised IndexError in the
verifier's worker thread and the whistleblower's loop (the thread died while /health kept answering);
now each round ends in a fail on the opened leaf of a sampled draw -- or, when the short document holds no
leaf for a sampled segment, in the commitment reported unopened -- and either way in a slash; the verifier
and the whistleblower stay healthy every round, the run finishes and they exit cleanly. The malformed
solver is never paid.
"""

from __future__ import annotations

import httpx
import pytest

from adversary.solver import MALFORMATIONS
from protocol.adapters.keys import get_devnet_account
from protocol.run_presets import TINY
from protocol.types import ROLE_SOLVER
from tests.chain_fixtures import prepare_run, wait_until
from tests.disputes.conftest import (
    address,
    all_events,
    assert_balance_matches_events,
    handles,
    logs,
    nodes_running,
    start,
    wait_for_exits,
)

pytestmark = pytest.mark.e2e

RULES = TINY.with_run(
    max_rounds=len(MALFORMATIONS), samples_per_commitment=2, verifiers_per_commitment=1, jury_size=3,
    commit_window=300, attest_window=300, challenge_window=300, dispute_timeout=600,
)  # fmt: skip
"""Chain seconds on a driven devnet (tests/clock.py): windows close when every node is idle."""
HONEST, MALFORMED, VERIFIER, WHISTLEBLOWER = 1, 2, 3, 4


def _reached(protocol, run_id: int, round_index: int) -> bool:
    times = protocol.round_times(run_id)
    return times.round >= round_index or times.finished


def _health(setup, account: int) -> dict:
    response = httpx.get(f"http://127.0.0.1:{setup.ports[account]}/health", timeout=10)
    return {"http": response.status_code, **response.json()}


def test_verifier_and_whistleblower_survive_every_malformation(fresh_deployment, corpus, tmp_path):
    setup = prepare_run(fresh_deployment, corpus, tmp_path / "home", [HONEST, MALFORMED], [VERIFIER], RULES)
    protocol, run_id = setup.protocol, setup.run_id
    # Enough stake to keep committing after each round's slash.
    stake = (RULES.run.max_rounds - 1) * RULES.run.solver_min_stake
    protocol.deposit_stake(get_devnet_account(MALFORMED), ROLE_SOLVER, stake)
    solver = ["solver", "run", "--no-progress"]
    nodes = [
        start(setup, "honest", solver, HONEST, "--coordinator"),
        start(setup, "malformed", solver, MALFORMED, "--adversary", "malformed"),
        start(setup, "verifier", ["verifier", "serve"], VERIFIER, "--exit-when-done"),
        start(setup, "whistleblower", ["whistleblower", "watch"], WHISTLEBLOWER, "--exit-when-done"),
    ]
    seen: dict[int, dict] = {}
    with nodes_running(setup, nodes):
        setup.create()
        with setup.drive(lambda: handles(setup, nodes)):
            for round_index in range(1, RULES.run.max_rounds + 1):
                wait_until(lambda r=round_index: _reached(protocol, run_id, r), 900, f"round {round_index} to start")
                if protocol.round_times(run_id).finished:
                    break
                for account in (VERIFIER, WHISTLEBLOWER):
                    seen[account] = _health(setup, account)
                    assert seen[account]["http"] == 200 and seen[account]["worker_alive"], seen[account]
            wait_until(lambda: protocol.round_times(run_id).finished, 900, "the run to finish")
            exits = wait_for_exits(nodes, ("verifier", "whistleblower"), "the verifier and whistleblower to exit")
            # The honest solver claims each round's shares after it settles, possibly after the others exited.
            full = RULES.run.max_rounds * RULES.run.shares_per_round * 8000 // 10_000
            wait_until(lambda: protocol.shares_of(run_id, address(HONEST)) == full, 300, "the honest solver's shares")
    detail = logs(setup, nodes)
    assert exits == {"verifier": 0, "whistleblower": 0}, detail
    assert "Traceback" not in detail, detail

    events = all_events(protocol)
    committed = {(e.args["round"], e.args["solver"]) for e in events if e.name == "Committed"}
    assert {(r, address(MALFORMED)) for r in range(RULES.run.max_rounds)} <= committed, detail
    attested = {(e.args["round"], e.args["solver"], e.name) for e in events if e.name.endswith("Attested")}
    unopened = {(e.args["round"], e.args["solver"]) for e in events if e.name == "CommitmentUnopened"}
    for r, kind in enumerate(MALFORMATIONS):
        passes = (r, address(MALFORMED), "PassAttested") in attested
        assert not passes, f"round {r} ({kind}): a pass on malformed input\n{detail}"
        failed = (r, address(MALFORMED), "FailAttested") in attested
        assert failed or (kind == "short-document" and (r, address(MALFORMED)) in unopened), f"round {r}\n{detail}"
    faults = [e for e in events if e.name == "StakeSlashed" and e.args["account"] == address(MALFORMED)]
    assert sum(e.args["taken"] for e in faults) == RULES.run.max_rounds * RULES.run.solver_min_stake, detail
    paid = {(e.args["round"], e.args["solver"]) for e in events if e.name == "SolverSharesClaimed"}
    assert paid == {(r, address(HONEST)) for r in range(RULES.run.max_rounds)}, detail
    assert protocol.shares_of(run_id, address(MALFORMED)) == 0
    terms = RULES.run
    assert protocol.shares_of(run_id, address(HONEST)) == terms.max_rounds * terms.shares_per_round * 8000 // 10_000
    assert_balance_matches_events(protocol)
