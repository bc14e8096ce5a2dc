"""`gradledger account|unbond|withdraw|leave`: an operator's stake, credits and shares, and moving them.

`account` reads (stake per role: bonded, reserved, free, unbonding and when it is released; credits pending in every
contract; per run: membership, registration, shares and withdrawable revenue). The others act, each refusing before
any transaction what the contracts would refuse (protocol/stake_actions.py), and saying what it did and what is left.
Every command takes the node options (`--home`, `--rpc-url`, `--keystore` or `--devnet-account`) and `--json`.
"""

from __future__ import annotations

import json
import time
from typing import Any

import typer

from gradledger.context import Connect, check_eth_amount, eth_to_wei, with_chain_options, with_signer_options
from node.logs import configure_logging

JsonOption = typer.Option(False, "--json", help="print the result as JSON (numbers in wei, times in chain seconds)")
RunsOption = typer.Option(
    [], "--run", min=1, help="a run to show (repeatable; default: every run this account joined or registered in)"
)


def _when(chain_seconds: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(chain_seconds))


def _emit(result: dict[str, Any], json_out: bool, lines: list[str]) -> None:
    typer.echo(json.dumps(result, indent=1) if json_out else "\n".join(lines))


def _describe(view: dict[str, Any]) -> list[str]:
    wallet = view["wallet_wei"] / 1e18
    lines = [f"{view['address']}: {wallet:g} ETH in the wallet (chain time {_when(view['chain_time'])})"]
    for role, s in view["stake"].items():
        line = (
            f"  {role} stake: {s['bonded_wei'] / 1e18:g} ETH bonded ({s['reserved_wei'] / 1e18:g} reserved, "
            f"{s['free_wei'] / 1e18:g} free)"
        )
        if s["unbonding_wei"]:
            state = "withdrawable now" if s["withdrawable"] else f"withdrawable from {_when(s['release_time'])}"
            line += f"; {s['unbonding_wei'] / 1e18:g} ETH unbonding, {state}"
        lines.append(line)
    if view["juror"] != "none":
        exit_at = f" (exit at {_when(view['juror_exit_at'])})" if view["juror_exit_at"] else ""
        lines.append(f"  juror: {view['juror']}{exit_at}")
    credits = view["credits_wei"]
    lines.append(
        "  credits pending: " + (", ".join(f"{c} {w / 1e18:g} ETH" for c, w in credits.items()) if credits else "none")
    )
    for r in view["runs"]:
        solver = "member" if r["solver_member"] else ("left" if r["solver_joined"] else "-")
        lines.append(
            f"  run {r['run']}: solver {solver}, verifier {r['verifier']}, {r['shares'] / 1e18:,.2f} shares, "
            f"{r['withdrawable_revenue_wei'] / 1e18:g} ETH revenue withdrawable"
        )
    return lines


@with_chain_options
@with_signer_options
def account_command(
    run: list[int] = RunsOption,
    json_out: bool = JsonOption,
    *,
    connect: Connect,
) -> None:
    """Show this account's stake (bonded, reserved, free, unbonding), pending credits, runs, shares and revenue."""
    configure_logging()
    client, signer = connect()
    from node.account_view import read_account

    view = read_account(client, signer.address, list(run))
    _emit(view, json_out, _describe(view))


@with_chain_options
@with_signer_options
def unbond_command(
    role: str = typer.Option(..., "--role", help="the stake to unbond: solver or verifier (jurors stake as verifiers)"),
    amount: float | None = typer.Option(
        None, min=0, callback=check_eth_amount, help="ETH to unbond (default: all free stake of the role)"
    ),
    json_out: bool = JsonOption,
    *,
    connect: Connect,
) -> None:
    """Start unbonding free stake; it is withdrawable after the unbonding delay (`gradledger withdraw`)."""
    from protocol.errors import ConfigError
    from protocol.stake_actions import ROLE_BY_NAME, get_unbond_amount

    configure_logging()
    if role not in ROLE_BY_NAME:
        raise ConfigError(f"--role {role!r} is not a stake role; use one of: {', '.join(ROLE_BY_NAME)}")
    client, signer = connect()
    state = client.stake_state(signer.address, ROLE_BY_NAME[role])
    wei = get_unbond_amount(role, state, None if amount is None else eth_to_wei(amount))
    result = client.request_unbond(signer, ROLE_BY_NAME[role], wei)
    after = client.stake_state(signer.address, ROLE_BY_NAME[role])
    out = {
        "address": signer.address, "role": role, "unbonded_wei": wei, "unbonding_wei": after.unbonding_wei,
        "release_time": after.release_time, "delay_s": client.unbonding_delay(), "tx": result.transaction_hash,
    }  # fmt: skip
    _emit(out, json_out, [
        f"{signer.address}: {wei / 1e18:g} ETH of {role} stake unbonding ({after.unbonding_wei / 1e18:g} ETH in all); "
        f"withdrawable from {_when(after.release_time)} (delay {out['delay_s']} s): then run `gradledger withdraw`",
    ])  # fmt: skip


@with_chain_options
@with_signer_options
def withdraw_command(
    run: list[int] = RunsOption,
    json_out: bool = JsonOption,
    *,
    connect: Connect,
) -> None:
    """Move everything this account may take now to its wallet: released stake, credits, share revenue."""
    from node.account_view import check_runs_exist, find_account_runs
    from node.bootstrap import get_chain_now
    from node.credits import withdraw_all_credits
    from node.logs import get_logger
    from protocol.stake_actions import ROLE_BY_NAME, get_withdrawable_roles

    configure_logging()
    client, signer = connect()
    check_runs_exist(client, list(run))
    now = get_chain_now(client.chain)
    states = {name: client.stake_state(signer.address, role) for name, role in ROLE_BY_NAME.items()}
    stake: dict[str, int] = {}
    for name in get_withdrawable_roles(states, now):
        client.withdraw_stake(signer, ROLE_BY_NAME[name])
        stake[name] = states[name].unbonding_wei
    credits = withdraw_all_credits(client, signer, get_logger("cli"))
    revenue: dict[int, int] = {}
    for run_id in run or find_account_runs(client, signer.address):
        owed = client.withdrawable_revenue_of(run_id, signer.address)
        if owed:
            client.withdraw_revenue(signer, run_id)
            revenue[run_id] = owed
    waiting = {n: s.release_time for n, s in states.items() if s.unbonding_wei and n not in stake}
    total = sum(stake.values()) + credits + sum(revenue.values())
    out = {
        "address": signer.address, "stake_wei": stake, "credits_wei": credits, "revenue_wei": revenue,
        "total_wei": total, "still_unbonding_until": waiting,
    }  # fmt: skip
    lines = [f"{signer.address}: withdrew {total / 1e18:g} ETH"]
    lines += [f"  {n} stake: {w / 1e18:g} ETH" for n, w in stake.items()]
    lines += [f"  credits: {credits / 1e18:g} ETH"] if credits else []
    lines += [f"  run {r} revenue: {w / 1e18:g} ETH" for r, w in revenue.items()]
    lines += [f"  {n} stake still unbonding until {_when(t)}" for n, t in waiting.items()]
    _emit(out, json_out, lines)


def _leave_registration(client, signer, who: str, run: int | None, now: int) -> str | None:
    """One step out of a verifier (of `run`) or juror registration; what it did, or None when nothing is held."""
    from protocol.stake_actions import get_exit_step

    def record():
        return client.juror_of(signer.address) if run is None else client.verifier_record_of(run, signer.address)

    held = record()
    finished = run is not None and client.round_times(run).finished
    step = get_exit_step(held.active, held.reserved, held.exit_at, now, finished)
    if step == "deregister":
        client.deregister_juror(signer) if run is None else client.deregister_verifier(signer, run)
        if not record().reserved:  # a finished run's registration is released as it is left
            return f"left as {who} and released its stake reservation (the run is finished)"
        return f"left as {who}: its stake stays reserved until {_when(record().exit_at)}; run this again then"
    if step == "release":
        client.release_juror(signer) if run is None else client.release_verifier(signer, run)
        return f"released the {who} stake reservation"
    if step == "wait":
        return f"already left as {who}: its stake is reserved until {_when(held.exit_at)}; run this again then"
    return None


@with_chain_options
@with_signer_options
def leave_command(
    run: int | None = typer.Option(None, "--run", min=1, help="leave this run (as its solver and/or verifier)"),
    juror: bool = typer.Option(False, "--juror", help="leave the juror registry"),
    json_out: bool = JsonOption,
    *,
    connect: Connect,
) -> None:
    """Leave a run or the juror registry, releasing the stake it reserved (a registration in two steps: leave now,
    release after its exit delay; run it again then)."""
    from node.account_view import check_runs_exist
    from node.bootstrap import get_chain_now
    from protocol.errors import ConfigError

    configure_logging()
    if (run is None) == (not juror):
        raise ConfigError("say what to leave: --run N or --juror (one at a time)")
    client, signer = connect()
    now = get_chain_now(client.chain)
    done: list[str] = []
    if run is not None:
        check_runs_exist(client, [run])
        if client.is_member(run, signer.address):
            client.leave_run(signer, run)
            done.append(f"left run {run} as its solver: its solver stake reservation is released")
    step = _leave_registration(client, signer, "juror" if juror else "verifier", run, now)
    done += [step] if step else []
    if not done:
        where = "the juror registry" if juror else f"run {run} (as a solver or a verifier)"
        raise ConfigError(f"{signer.address} holds nothing in {where}: nothing to leave")
    lines = [f"{signer.address}:", *(f"  {line}" for line in done)]
    _emit({"address": signer.address, "run": run, "juror": juror, "done": done}, json_out, lines)
