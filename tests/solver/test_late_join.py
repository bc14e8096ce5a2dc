"""A solver started after its run's round 0 closed sits that round out and trains from the next one (real anvil).

The README's order (create the run, stake, start nodes) starts nodes late: such a node must neither train for a
commitment it can no longer send nor record a round it was never due in as missed."""

from __future__ import annotations

import pytest

from protocol.adapters.keys import get_devnet_account
from protocol.adapters.nodestate import NodeState
from protocol.run_presets import TINY
from tests.chain_fixtures import events_of, prepare_run, read_log, start_node, stop, wait_until

pytestmark = pytest.mark.e2e

RULES = TINY.with_run(
    max_rounds=2,
    commit_window=300,
    attest_window=300,
    challenge_window=300,
    dispute_timeout=600,
)
"""Chain seconds on a driven devnet (tests/clock.py): a window closes only once every live node is idle."""


def test_a_solver_started_after_round_zero_closed_trains_from_round_one(deployment, corpus, tmp_path):
    early, late, verifier = 17, 18, 19
    setup = prepare_run(deployment, corpus, tmp_path / "home", [early, late], [verifier], RULES)
    protocol, run_id = setup.protocol, setup.run_id
    nodes = {
        early: start_node(setup, "solver", early, "--coordinator"),
        verifier: start_node(setup, "verifier", verifier, "--exit-when-done"),
    }
    try:
        setup.create(wait_for_nodes=False)
        with setup.drive(lambda: [(setup.ports[a], p) for a, p in nodes.items()]):
            wait_until(lambda: protocol.round_times(run_id).round >= 1 or _past_commit(protocol, run_id), 600,
                       "round 0's commit window to close")  # fmt: skip
            nodes[late] = start_node(setup, "solver", late)
            wait_until(lambda: protocol.round_times(run_id).finished, 900, "the run to finish")
            wait_until(lambda: nodes[verifier].poll() is not None, 300, "the verifier to exit")
    finally:
        for process in nodes.values():
            stop(process)
    late_address = get_devnet_account(late).address
    log = read_log(setup, "solver", late)
    commits = {(e.args["round"], e.args["solver"]) for e in events_of(protocol, "Committed", run_id)}
    assert (1, late_address) in commits, log
    assert (0, late_address) not in commits, log
    assert "joining the next round" in log and "missed round" not in log, log
    state = NodeState(setup.home / "solvers" / late_address.lower() / "state.sqlite")
    records = {key: raw["status"] for key, raw in state.list("round")}
    assert records[f"{run_id}:0"] == "sat_out" and records[f"{run_id}:1"] == "committed", records


def _past_commit(protocol, run_id: int) -> bool:
    times = protocol.round_times(run_id)
    return protocol.chain.get_block()["timestamp"] >= times.commit_end
