"""An operator's money from the CLI on a real anvil (gradledger/commands/account.py): stake, join a run and register
in it, see it all with `account`, have an unbond that reserved stake would block refused before any transaction,
`leave`, `unbond`, wait out the delay, `withdraw`, and end with the stake back in the wallet."""

from __future__ import annotations

import json

from eth_account import Account

from protocol.adapters.keys import PRIVATE_KEY_ENV, get_devnet_account
from protocol.types import ROLE_SOLVER, ROLE_VERIFIER
from tests.chain_fixtures import FAST_RULES, prepare_run
from tests.cli_in_process import run_cli

ETH = 10**18


def test_stake_run_account_leave_unbond_withdraw_returns_the_stake_succeeds(deployment, corpus, tmp_path):
    protocol, chain = deployment.protocol, deployment.protocol.chain
    operator = Account.create()
    chain.transfer(get_devnet_account(0), operator.address, 100 * ETH)
    env = {PRIVATE_KEY_ENV: operator.key.hex()}
    where = ["--home", str(tmp_path / "home"), "--manifest", str(deployment.manifest_path), "--rpc-url", chain.rpc_url]

    def cli(*args: str):
        return run_cli(*args, *where, env=env)

    setup = prepare_run(deployment, corpus, tmp_path / "run", [], [], FAST_RULES)
    run_id = setup.create(wait_for_nodes=False)
    before = chain.get_balance(operator.address)
    solver_min, verifier_min = FAST_RULES.run.solver_min_stake, FAST_RULES.run.verifier_min_stake
    solver_wei, verifier_wei = solver_min + 5 * ETH, verifier_min + 3 * ETH

    joined = cli("solver", "stake", "--amount", f"{solver_wei / ETH:g}", "--run", str(run_id))
    assert joined.returncode == 0, joined.stderr
    registered = cli("verifier", "stake", "--amount", f"{verifier_wei / ETH:g}", "--run", str(run_id))
    assert registered.returncode == 0, registered.stderr

    shown = cli("account", "--json")
    assert shown.returncode == 0, shown.stderr
    view = json.loads(shown.stdout)
    assert view["stake"]["solver"]["bonded_wei"] == solver_wei
    assert view["stake"]["solver"]["free_wei"] == 5 * ETH
    assert view["stake"]["solver"]["reserved_wei"] == solver_min
    assert view["stake"]["verifier"]["reserved_wei"] == verifier_min
    assert [(r["run"], r["solver_member"], r["verifier"]) for r in view["runs"]] == [(run_id, True, "deregister")]
    assert f"{solver_wei / ETH:g} ETH bonded" in cli("account").stdout

    nonce = chain.w3.eth.get_transaction_count(operator.address)
    refused = cli("unbond", "--role", "solver", "--amount", f"{solver_wei / ETH:g}")
    assert refused.returncode == 1 and "reserved by runs" in refused.stderr and "leave" in refused.stderr
    assert chain.w3.eth.get_transaction_count(operator.address) == nonce, "a refused unbond sent a transaction"

    left = cli("leave", "--run", str(run_id), "--json")
    assert left.returncode == 0, left.stderr
    assert len(json.loads(left.stdout)["done"]) == 2  # the solver left; the verifier left the list (exit delay)
    assert protocol.stake_of(operator.address, ROLE_SOLVER)[3] == 0, "leaving kept the solver reservation"
    exit_at = protocol.verifier_record_of(run_id, operator.address).exit_at
    chain.mine_at(exit_at)
    released = cli("leave", "--run", str(run_id))
    assert released.returncode == 0 and "released the verifier stake reservation" in released.stdout
    assert protocol.stake_of(operator.address, ROLE_VERIFIER)[3] == 0
    nothing = cli("leave", "--run", str(run_id))
    assert nothing.returncode == 1 and "nothing to leave" in nothing.stderr

    for role in ("solver", "verifier"):
        unbonded = cli("unbond", "--role", role, "--json")
        assert unbonded.returncode == 0, unbonded.stderr
    release = json.loads(unbonded.stdout)["release_time"]
    early = json.loads(cli("withdraw", "--json").stdout)
    assert early["total_wei"] == 0 and set(early["still_unbonding_until"]) == {"solver", "verifier"}

    chain.mine_at(release)
    done = cli("withdraw", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["stake_wei"] == {"solver": solver_wei, "verifier": verifier_wei}
    for role in (ROLE_SOLVER, ROLE_VERIFIER):
        assert protocol.stake_of(operator.address, role) == (0, 0, 0, 0)
    spent_on_gas = before - chain.get_balance(operator.address)
    assert 0 <= spent_on_gas < ETH // 100, f"the stake did not come back to the wallet: {spent_on_gas} wei short"
