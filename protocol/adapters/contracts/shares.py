"""Typed calls of a run's shares and revenue (ModelShares and the run's RunShares token), and of every contract's
pull-payment credits."""

from __future__ import annotations

from typing import Any

from eth_account.signers.local import LocalAccount
from eth_utils import to_checksum_address

from protocol.adapters.chain import TxResult
from protocol.adapters.contracts.base import ContractCalls


class ShareCalls(ContractCalls):
    """ModelShares, RunShares#<run>, and `credits`/`withdraw` of any PullPayments contract."""

    def share_token(self, run_id: int) -> str:
        return self.chain.call("ModelShares", "shareToken", run_id)

    def shares_of(self, run_id: int, holder: str) -> int:
        return self.chain.call(self.share_token_contract(run_id), "balanceOf", to_checksum_address(holder))

    def pay_revenue(self, account: LocalAccount, run_id: int, amount_wei: int) -> TxResult:
        return self.chain.send(account, "ModelShares", "payRevenue", run_id, value=amount_wei)

    def finished_at(self, run_id: int) -> int:
        """When the run's last round was settled (0 before): its unowned revenue is reclaimable a grace period
        later (ModelShares.reclaimUnownedRevenue)."""
        return self.chain.call("ModelShares", "finishedAt", run_id)

    def is_run_finished(self, run_id: int) -> bool:
        """Whether the run's last round was settled (ModelShares.finished)."""
        return self.chain.call("ModelShares", "finished", run_id)

    def round_release(self, run_id: int, round_index: int) -> dict[str, Any]:
        """ModelShares.roundReleaseOf: `amount` set aside for the round's contributors at its settlement,
        `credited` to them so far, `settledAt` (0: not settled) and whether the rest was `swept`."""
        return self.chain.call_fields("ModelShares", "roundReleaseOf", run_id, round_index)

    def sweep_round_release(self, account: LocalAccount, run_id: int, round_index: int) -> TxResult:
        """Send what a settled round's contributors did not claim within REWARD_CLAIM_WINDOW back to the pool, or
        into the revenue stream once the run is finished (anyone)."""
        return self.chain.send(account, "ModelShares", "sweepRoundRelease", run_id, round_index)

    def share_supply(self, run_id: int) -> int:
        """The run's share token's total supply."""
        return self.chain.call(self.share_token_contract(run_id), "totalSupply")

    def reclaim_unowned_revenue(self, account: LocalAccount, run_id: int) -> TxResult:
        """Send a finished run's revenue to its creator when no whole share exists (anyone may send it); the
        result's events include the run token's UnownedRevenueSwept (the token is tracked for that)."""
        self.share_token_contract(run_id)
        return self.chain.send(account, "ModelShares", "reclaimUnownedRevenue", run_id)

    def share_token_contract(self, run_id: int) -> str:
        """The chain client's name of the run's share token, registered on first use so its events and errors
        decode ("RunShares#<run>")."""
        name = f"RunShares#{run_id}"
        if not self.chain.has_contract(name):
            self.chain.add_contract(name, self.share_token(run_id), self.chain.deployment.contracts["RunShares"].abi)
        return name

    def withdrawable_revenue_of(self, run_id: int, holder: str) -> int:
        """Revenue the run's share token holds for `holder` now (RunShares.withdrawableRevenueOf)."""
        return self.chain.call(self.share_token_contract(run_id), "withdrawableRevenueOf", to_checksum_address(holder))

    def withdraw_revenue(self, account: LocalAccount, run_id: int) -> TxResult:
        """RunShares.withdrawRevenue: the account's revenue of the run to its wallet."""
        return self.chain.send(account, self.share_token_contract(run_id), "withdrawRevenue")

    def credits_of(self, contract: str, address: str) -> int:
        return self.chain.call(contract, "credits", to_checksum_address(address))

    def withdraw_credits(self, account: LocalAccount, contract: str) -> TxResult:
        return self.chain.send(account, contract, "withdraw")
