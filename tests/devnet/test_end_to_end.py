"""A real run on a real anvil: 2 solvers + 1 verifier as processes, 2 rounds, settled and paid; then the same verifier
serves a second run.

The run asks for 2 seats per commitment and has 1 verifier, so seat 1 is void every round (as after a slashed
verifier leaves a 2-verifier list in the adversarial demo): the verifier attests the seat it has and the work is
accepted. At the run's end the verifier leaves its list and releases the stake it reserved before it exits, so the
same stake lets it register for the next run (issue 39: it retried InsufficientFreeStake forever)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from gradledger.cli import app
from protocol.adapters.keys import get_devnet_account
from protocol.constants import JUROR_MIN_STAKE
from protocol.ledger import compute_ledger
from protocol.types import ROLE_SOLVER, ROLE_VERIFIER
from tests.chain_fixtures import FAST_RULES, events_of, prepare_run, read_log, run_to_the_end, start_node

pytestmark = pytest.mark.e2e

SOLVERS, VERIFIER = [11, 12], 13


def test_two_solvers_one_verifier_two_rounds_then_the_verifier_serves_a_second_run(deployment, corpus, tmp_path):
    rules = FAST_RULES.with_run(verifiers_per_commitment=2)  # one verifier: seat 1 is void
    setup = prepare_run(deployment, corpus, tmp_path / "home", SOLVERS, [VERIFIER], rules)
    protocol, run_id = setup.protocol, setup.run_id
    processes = [
        start_node(setup, "solver", SOLVERS[0], "--coordinator"),
        start_node(setup, "solver", SOLVERS[1]),
        start_node(setup, "verifier", VERIFIER, "--exit-when-done"),
    ]
    run_to_the_end(setup, list(zip([*SOLVERS, VERIFIER], processes, strict=True)))
    logs = {a: read_log(setup, r, a) for r, a in (("solver", 11), ("solver", 12), ("verifier", 13))}
    assert all(p.returncode == 0 for p in processes), logs

    solvers = {get_devnet_account(i).address for i in SOLVERS}
    committed = events_of(protocol, "Committed", run_id)
    assert {(e.args["round"], e.args["solver"]) for e in committed} == {(r, s) for r in (0, 1) for s in solvers}
    assert len(committed) == 4, "exactly one commitment per solver and round"
    passes = events_of(protocol, "PassAttested", run_id)
    assert len(passes) == 4 and not events_of(protocol, "FailAttested", run_id)
    assert {e.args["verifier"] for e in passes} == {get_devnet_account(VERIFIER).address}
    settled = events_of(protocol, "RoundSettled", run_id)
    assert [e.args["round"] for e in settled] == [0, 1]
    assert all(protocol.is_settled(run_id, r) for r in (0, 1))
    assert protocol.theta_of(run_id, 2) == settled[-1].args["thetaHash"]

    minted = events_of(protocol, "SharesMinted", run_id)
    per_round = 1000 * 10**18
    solver_shares = sum(e.args["amount"] for e in minted if e.args["to"] in solvers)
    assert solver_shares == 2 * per_round * 8000 // 10_000
    holders = solvers | {get_devnet_account(VERIFIER).address}
    assert sum(protocol.shares_of(run_id, h) for h in holders) == sum(e.args["amount"] for e in minted)
    for solver in solvers:
        assert protocol.shares_of(run_id, solver) == per_round * 8000 // 10_000  # equal tokens -> equal halves
        assert protocol.bonded_of(solver, ROLE_SOLVER) == 10 * 10**18  # honest: nothing slashed

    chain = protocol.chain
    chain.add_contract("RunShares", protocol.share_token(run_id), chain.manifest.contracts["RunShares"].abi)
    contracts = [rec.address for name, rec in chain.manifest.contracts.items() if name != "RunShares"]
    tokens = [protocol.share_token(r) for r in range(1, chain.call("RunRegistry", "runCount") + 1)]
    for r, token in enumerate(tokens, start=1):
        chain.add_contract(f"RunShares#{r}", token, chain.manifest.contracts["RunShares"].abi)
    balance = sum(chain.get_balance(a) for a in [*contracts, *tokens])
    assert balance == compute_ledger(chain.get_events(chain.manifest.deployed_block)).implied_balance

    # `gradledger run list` / `run status` read the same record (in-process, the real commands on the real chain)
    where = ["--home", str(setup.home), "--rpc-url", chain.rpc_url]
    listed = json.loads(CliRunner().invoke(app, ["run", "list", "--json", *where]).output)
    assert {"run_id": run_id, "max_rounds": 2, "rounds_settled": 2, "finished": True}.items() <= next(
        r for r in listed if r["run_id"] == run_id
    ).items()
    for extra in ([], ["--watch"]):  # a finished run is printed once, then --watch ends
        result = CliRunner().invoke(app, ["run", "status", "--run", str(run_id), "--json", *extra, *where])
        assert result.exit_code == 0, result.output
        status = json.loads(result.output)
        assert (status["finished"], status["phase"], status["current_round"]) == (True, "finished", 2)
        assert [(r["commitments"], r["accepted"], r["passes"]) for r in status["rounds"]] == [(2, 2, 2), (2, 2, 2)]
        assert status["rounds"][1]["next_theta"] == "0x" + protocol.theta_of(run_id, 2).hex()
        losses = [r["loss"] for r in status["rounds"]] + [status["final_loss"]]  # θ0, θ1, θ2 from the home's stores
        assert all(isinstance(x, float) and 0 < x < 20 for x in losses), losses
    table = CliRunner().invoke(app, ["run", "status", "--run", str(run_id), *where])
    assert table.exit_code == 0 and "finished (2 rounds)" in table.output, table.output
    assert f"loss of the final θ: {status['final_loss']:.4f}" in table.output
    missing = CliRunner().invoke(app, ["run", "status", "--run", "999", *where])
    assert "run 999 does not exist" in str(missing.exception) and "gradledger run list" in str(missing.exception)

    # the verifier left the finished run and released its reservation: only its juror registration holds stake
    verifier = get_devnet_account(VERIFIER).address
    assert not protocol.is_reserved(run_id, verifier)
    assert protocol.stake_state(verifier, ROLE_VERIFIER).reserved_wei == JUROR_MIN_STAKE
    assert "left the finished run and released its stake reservation" in logs[VERIFIER]
    assert protocol.stake_state(verifier, ROLE_VERIFIER).free_wei >= rules.run.verifier_min_stake

    # so it serves the next run with the same stake
    second = prepare_run(deployment, corpus, tmp_path / "home-2", SOLVERS[:1], [VERIFIER], rules.with_run(max_rounds=1))
    processes = [
        start_node(second, "solver", SOLVERS[0], "--coordinator"),
        start_node(second, "verifier", VERIFIER, "--exit-when-done"),
    ]
    run_to_the_end(second, list(zip([SOLVERS[0], VERIFIER], processes, strict=True)))
    assert all(p.returncode == 0 for p in processes), read_log(second, "verifier", VERIFIER)
    assert {e.args["verifier"] for e in events_of(protocol, "PassAttested", second.run_id)} == {verifier}
    assert not protocol.is_reserved(second.run_id, verifier)
