"""One account's money as the contracts hold it now: what `gradledger account` prints and the explorer's account page
shows, read in one place so the two never disagree.

Stake per role (bonded, reserved, free, unbonding and when it is released), the juror registration, the credits
pending in every contract, the wallet, and per run: membership, the verifier registration's exit step, shares and
withdrawable revenue. Every number is a contract call at the chain's head (`ProtocolClient`); nothing is derived from
events, so a reader can compare it with `cast call` one to one.
"""

from __future__ import annotations

from typing import Any

from node.bootstrap import get_chain_now
from node.credits import get_pending_credits
from protocol.adapters.contracts import ProtocolClient
from protocol.errors import ConfigError
from protocol.stake_actions import ROLE_BY_NAME, get_exit_step


def find_account_runs(client: ProtocolClient, address: str) -> list[int]:
    """The runs `address` joined as a solver or registered in as a verifier, from the chain's events."""
    events = client.chain.get_events(
        client.chain.deployment.deployed_block, names=["SolverJoined", "VerifierRegistered"]
    )
    who = address.lower()
    return sorted({e.args["runId"] for e in events if str(e.args.get("solver", e.args.get("verifier"))).lower() == who})


def check_runs_exist(client: ProtocolClient, runs: list[int]) -> None:
    """ConfigError naming the first of `runs` the chain does not have (before anything is read or sent)."""
    count = client.chain.call("RunRegistry", "runCount")
    missing = [r for r in runs if r > count]
    if missing:
        raise ConfigError(f"no run {missing[0]} on this chain: it has {count} run(s); check --run")


def read_account(client: ProtocolClient, address: str, runs: list[int]) -> dict[str, Any]:
    """Everything `gradledger account` shows, read at the chain's head; `runs` empty: every run the account joined
    or registered in (`find_account_runs`). Amounts in wei, times in chain seconds."""
    now = get_chain_now(client.chain)
    stake = {}
    for name, role in ROLE_BY_NAME.items():
        state = client.stake_state(address, role)
        stake[name] = {
            "bonded_wei": state.bonded_wei, "reserved_wei": state.reserved_wei, "free_wei": state.free_wei,
            "unbonding_wei": state.unbonding_wei, "release_time": state.release_time,
            "withdrawable": state.is_withdrawable(now),
        }  # fmt: skip
    juror = client.juror_of(address)
    per_run = []
    check_runs_exist(client, runs)
    for run in runs or find_account_runs(client, address):
        verifier = client.verifier_record_of(run, address)
        shares = client.shares_of(run, address)
        per_run.append({
            "run": run, "solver_member": client.is_member(run, address),
            "solver_joined": client.has_joined(run, address),
            "verifier": get_exit_step(
                verifier.active, verifier.reserved, verifier.exit_at, now, client.round_times(run).finished
            ),
            "verifier_exit_at": verifier.exit_at, "shares": shares,
            "withdrawable_revenue_wei": client.withdrawable_revenue_of(run, address),
        })  # fmt: skip
    return {
        "address": address, "chain_time": now, "wallet_wei": client.chain.get_balance(address), "stake": stake,
        "juror": get_exit_step(juror.active, juror.reserved, juror.exit_at, now), "juror_exit_at": juror.exit_at,
        "credits_wei": get_pending_credits(client, address), "runs": per_run,
    }  # fmt: skip
