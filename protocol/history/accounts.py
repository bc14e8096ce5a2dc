"""The money side of a run's history: stakes, slashes, ETH flows and ownership shares.

Handlers for StakeManager, ModelShares and the run's share token (RunShares): every stake change
of a participant, every slash with the fault it punished, every ETH flow of the run (pool funded
and set aside per round, each contributor's part of a round, revenue paid, withdrawn and swept),
the shares minted and the token balances. Each is a plain function `handler(state, event, args)`
over `protocol.history.state.FoldState`; `HANDLERS` maps event names to them for
`protocol.history.fold`. Stake events carry no runId: the fold records every account's and keeps
the participants' at the end; a slash belongs to the run through its fault key. Pure: no I/O, no
clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from protocol.history.events import (
    FINISHED_RUN_ROUND,
    ROLE_NAMES,
    SHARE_KINDS,
    EventLike,
    get_tx_hash,
    to_address,
    to_hash_hex,
)
from protocol.history.records import RevenueFlow, RevenueKind, ShareMint, Slash, StakeChange, StakePoint
from protocol.history.state import FoldState, Handler

ZERO_ADDRESS = to_address("0x" + "00" * 20)


def _role_name(a: Mapping[str, Any]) -> str:
    return ROLE_NAMES.get(int(a["role"]), str(a["role"]))


# StakeManager ---------------------------------------------------------------------------------


def _stake(
    s: FoldState, e: EventLike, a: Mapping[str, Any], change: StakeChange, bonded: int | None, unbonding: int | None
) -> None:
    account, role = to_address(a["account"]), _role_name(a)
    old_bonded, old_unbonding = s.stake_state.get((account, role), (0, 0))
    new = (old_bonded if bonded is None else bonded, old_unbonding if unbonding is None else unbonding)
    s.stake_state[(account, role)] = new
    amount = int(a["taken"]) if change == "slash" else int(a["amount"])
    s.stakes.append(StakePoint(account, role, e.block_number, s.time(e.block_number), new[0], new[1], change, amount))


def on_stake_deposited(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    _stake(s, e, a, "deposit", int(a["bonded"]), None)


def on_unbonding_requested(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    account, role = to_address(a["account"]), _role_name(a)
    bonded = s.stake_state.get((account, role), (0, 0))[0] - int(a["amount"])
    _stake(s, e, a, "unbond", bonded, int(a["unbonding"]))


def on_stake_withdrawn(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    _stake(s, e, a, "withdraw", None, 0)


def on_stake_slashed(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    _stake(s, e, a, "slash", int(a["bondedAfter"]), int(a["unbondingAfter"]))
    key = to_hash_hex(a["faultKey"])
    if key not in s.fault_keys:
        return  # another run's fault
    fault, index, solver, slot = s.fault_keys[key]
    s.slashes.append(
        Slash(
            to_address(a["account"]),
            _role_name(a),
            int(a["taken"]),
            int(a["requested"]),
            fault,
            index,
            solver,
            slot,
            key,
            e.block_number,
            s.time(e.block_number),
            get_tx_hash(e),
        )
    )


# ModelShares ----------------------------------------------------------------------------------


def _flow(
    s: FoldState, e: EventLike, kind: RevenueKind, amount: int, account: str | None, round_index: int | None
) -> None:
    s.revenue.append(RevenueFlow(kind, amount, account, round_index, e.block_number, s.time(e.block_number)))


def on_pool_funded(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if s.ours(a):
        _flow(s, e, "pool funded", int(a["amount"]), to_address(a["from"]), None)


def on_pool_released(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if not s.ours(a):
        return
    index, amount = int(a["round"]), int(a["amount"])
    round_index = None if index == FINISHED_RUN_ROUND else index
    if round_index is not None and round_index in s.rounds:
        s.round(round_index).pool_released += amount
    _flow(s, e, "pool released", amount, None, round_index)


def on_round_reward_credited(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if s.ours(a):
        _flow(s, e, "round reward", int(a["amount"]), to_address(a["to"]), int(a["round"]))


def on_round_release_swept(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if s.ours(a):
        _flow(s, e, "round release swept", int(a["amount"]), None, int(a["round"]))


def on_revenue_paid(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if s.ours(a):
        _flow(s, e, "revenue paid", int(a["amount"]), to_address(a["payer"]), None)


def on_shares_minted(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if not s.ours(a):
        return
    holder = to_address(a["to"])
    s.mints.append(
        ShareMint(
            int(a["round"]),
            SHARE_KINDS[int(a["kind"])],
            holder,
            int(a["amount"]),
            int(a["mintedInRound"]),
            e.block_number,
            s.time(e.block_number),
            get_tx_hash(e),
        )
    )
    s.role(holder, "holder")


# RunShares (the run's share token: its events carry no runId, only its contract name) ----------


def on_transfer(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if e.contract != s.token_contract:
        return
    sender, receiver, value = to_address(a["from"]), to_address(a["to"]), int(a["value"])
    if sender == ZERO_ADDRESS:
        s.supply += value
    else:
        s.balances[sender] = s.balances.get(sender, 0) - value
    if receiver == ZERO_ADDRESS:
        s.supply -= value
    else:
        s.balances[receiver] = s.balances.get(receiver, 0) + value
        s.role(receiver, "holder")


def on_revenue_withdrawn(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if e.contract == s.token_contract:
        _flow(s, e, "revenue withdrawn", int(a["amount"]), to_address(a["holder"]), None)


def on_unowned_revenue_swept(s: FoldState, e: EventLike, a: Mapping[str, Any]) -> None:
    if e.contract == s.token_contract:
        _flow(s, e, "unowned swept", int(a["amount"]), to_address(a["to"]), None)


HANDLERS: dict[str, Handler] = {
    # StakeManager
    "StakeDeposited": on_stake_deposited,
    "UnbondingRequested": on_unbonding_requested,
    "StakeWithdrawn": on_stake_withdrawn,
    "StakeSlashed": on_stake_slashed,
    # ModelShares
    "PoolFunded": on_pool_funded,
    "PoolReleased": on_pool_released,
    "RevenuePaid": on_revenue_paid,
    "SharesMinted": on_shares_minted,
    "RoundRewardCredited": on_round_reward_credited,
    "RoundReleaseSwept": on_round_release_swept,
    # RunShares
    "Transfer": on_transfer,
    "RevenueWithdrawn": on_revenue_withdrawn,
    "UnownedRevenueSwept": on_unowned_revenue_swept,
}
