"""The money side of a run's history: stakes, slashes, ETH flows and ownership shares.

`AccountEventsFold` holds the handlers for StakeManager, ModelShares and the run's share token,
and the state they build: every stake change of a participant, every slash with the fault it
punished, every ETH flow of the run (pool funded and released, revenue paid, withdrawn and
swept), the shares minted and the token balances. It is mixed into `protocol.history._Fold`,
which dispatches events by name (`on_<EventName>`) and provides the run's rounds, fault keys and
participant bookkeeping used here. Pure, like the rest of the fold: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
from protocol.history.records import RevenueFlow, ShareMint, Slash, StakePoint

ZERO_ADDRESS = to_address("0x" + "00" * 20)


class AccountEventsFold:
    """Stake, slash, ETH-flow and share handlers of the fold (mixed into `protocol.history._Fold`)."""

    # Provided by the fold this is mixed into.
    rounds: Mapping[int, Any]
    fault_keys: Mapping[str, tuple[str, int, str, int | None]]
    token_contract: str
    time: Callable[[int], int | None]
    role: Callable[[str, str], None]
    ours: Callable[[Mapping[str, Any]], bool]

    def init_accounts(self) -> None:
        """The state these handlers build, empty."""
        self.stake_state: dict[tuple[str, str], tuple[int, int]] = {}
        self.stakes: list[StakePoint] = []
        self.slashes: list[Slash] = []
        self.revenue: list[RevenueFlow] = []
        self.mints: list[ShareMint] = []
        self.balances: dict[str, int] = {}
        self.supply = 0

    # StakeManager ---------------------------------------------------------------------------------

    def _stake(self, e: EventLike, a: Mapping[str, Any], change: str, bonded: int | None, unbonding: int | None):
        account, role = to_address(a["account"]), ROLE_NAMES.get(int(a["role"]), str(a["role"]))
        old_bonded, old_unbonding = self.stake_state.get((account, role), (0, 0))
        new = (old_bonded if bonded is None else bonded, old_unbonding if unbonding is None else unbonding)
        self.stake_state[(account, role)] = new
        amount = int(a["taken"]) if change == "slash" else int(a["amount"])
        self.stakes.append(
            StakePoint(account, role, e.block_number, self.time(e.block_number), new[0], new[1], change, amount)
        )

    def on_StakeDeposited(self, e: EventLike, a: Mapping[str, Any]) -> None:
        self._stake(e, a, "deposit", int(a["bonded"]), None)

    def on_UnbondingRequested(self, e: EventLike, a: Mapping[str, Any]) -> None:
        account, role = to_address(a["account"]), ROLE_NAMES.get(int(a["role"]), str(a["role"]))
        bonded = self.stake_state.get((account, role), (0, 0))[0] - int(a["amount"])
        self._stake(e, a, "unbond", bonded, int(a["unbonding"]))

    def on_StakeWithdrawn(self, e: EventLike, a: Mapping[str, Any]) -> None:
        self._stake(e, a, "withdraw", None, 0)

    def on_StakeSlashed(self, e: EventLike, a: Mapping[str, Any]) -> None:
        self._stake(e, a, "slash", int(a["bondedAfter"]), int(a["unbondingAfter"]))
        key = to_hash_hex(a["faultKey"])
        if key not in self.fault_keys:
            return  # another run's fault
        fault, index, solver, slot = self.fault_keys[key]
        self.slashes.append(
            Slash(
                to_address(a["account"]),
                ROLE_NAMES.get(int(a["role"]), str(a["role"])),
                int(a["taken"]),
                int(a["requested"]),
                fault,
                index,
                solver,
                slot,
                key,
                e.block_number,
                self.time(e.block_number),
                get_tx_hash(e),
            )
        )

    # ModelShares and the run's share token --------------------------------------------------------

    def on_PoolFunded(self, e: EventLike, a: Mapping[str, Any]) -> None:
        if self.ours(a):
            self.revenue.append(
                RevenueFlow(
                    "pool funded",
                    int(a["amount"]),
                    to_address(a["from"]),
                    None,
                    e.block_number,
                    self.time(e.block_number),
                )
            )

    def on_PoolReleased(self, e: EventLike, a: Mapping[str, Any]) -> None:
        if not self.ours(a):
            return
        index = int(a["round"])
        amount = int(a["amount"])
        round_index = None if index == FINISHED_RUN_ROUND else index
        if round_index is not None and round_index in self.rounds:
            self.rounds[round_index].pool_released += amount
        self.revenue.append(
            RevenueFlow("pool released", amount, None, round_index, e.block_number, self.time(e.block_number))
        )

    def on_RevenuePaid(self, e: EventLike, a: Mapping[str, Any]) -> None:
        if self.ours(a):
            self.revenue.append(
                RevenueFlow(
                    "revenue paid",
                    int(a["amount"]),
                    to_address(a["payer"]),
                    None,
                    e.block_number,
                    self.time(e.block_number),
                )
            )

    def on_SharesMinted(self, e: EventLike, a: Mapping[str, Any]) -> None:
        if self.ours(a):
            holder = to_address(a["to"])
            self.mints.append(
                ShareMint(
                    int(a["round"]),
                    SHARE_KINDS[int(a["kind"])],
                    holder,
                    int(a["amount"]),
                    int(a["mintedInRound"]),
                    e.block_number,
                    self.time(e.block_number),
                    get_tx_hash(e),
                )
            )
            self.role(holder, "holder")

    def on_Transfer(self, e: EventLike, a: Mapping[str, Any]) -> None:
        if e.contract != self.token_contract:
            return
        sender, receiver, value = to_address(a["from"]), to_address(a["to"]), int(a["value"])
        if sender == ZERO_ADDRESS:
            self.supply += value
        else:
            self.balances[sender] = self.balances.get(sender, 0) - value
        if receiver == ZERO_ADDRESS:
            self.supply -= value
        else:
            self.balances[receiver] = self.balances.get(receiver, 0) + value
            self.role(receiver, "holder")

    def on_RevenueWithdrawn(self, e: EventLike, a: Mapping[str, Any]) -> None:
        if e.contract == self.token_contract:
            self.revenue.append(
                RevenueFlow(
                    "revenue withdrawn",
                    int(a["amount"]),
                    to_address(a["holder"]),
                    None,
                    e.block_number,
                    self.time(e.block_number),
                )
            )

    def on_UnownedRevenueSwept(self, e: EventLike, a: Mapping[str, Any]) -> None:
        if e.contract == self.token_contract:
            self.revenue.append(
                RevenueFlow(
                    "unowned swept",
                    int(a["amount"]),
                    to_address(a["to"]),
                    None,
                    e.block_number,
                    self.time(e.block_number),
                )
            )
