"""Taking a node's money out of the contracts: every pending credit, in every contract, whatever the node did.

Bonds returned, rewards, jackpots and round releases are pull payments: a contract credits them and the owner
must call `withdraw` (contracts/src/base/PullPayments.sol). A verifier used to withdraw only at the very end of
a tick in which every other duty had succeeded and the whole run was done; one whose ticks kept failing (a
corrupt cached file, a peer down) or that did nothing in the last round never got there, and its bonds and
releases stayed in the contracts. So every role withdraws through `CreditWithdrawer`: whenever something that
credits it may have happened (its own state changed, a round settled, the run finished, or a while passed --
others finalize, execute and claim for it), on its own, before or after duties that may fail; and before the node
exits when the run is done.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Hashable

from eth_account.signers.local import LocalAccount

from node.logs import log_event
from protocol.adapters.chain import ContractRevertError
from protocol.adapters.contracts import ProtocolClient
from protocol.errors import GradledgerError

CREDIT_CONTRACTS = ("Verification", "Disputes", "FaultRewards", "Plants", "ModelShares")
"""Every contract that credits ETH to an account (PullPayments): bonds, rewards, jackpots, round releases."""

RECHECK_S = 30.0
"""How often credits are looked at when nothing this node sees has changed (others may have credited it)."""


def withdraw_all_credits(protocol: ProtocolClient, account: LocalAccount, log: logging.Logger) -> int:
    """Withdraw this account's credits from every contract that holds some; returns the wei withdrawn."""
    total = 0
    for contract in CREDIT_CONTRACTS:
        owed = protocol.credits_of(contract, account.address)
        if owed == 0:
            continue
        try:
            result = protocol.withdraw_credits(account, contract)
        except ContractRevertError as exc:
            if exc.error != "NothingToWithdraw":  # withdrawn meanwhile by this key from another process
                raise
            continue
        total += owed
        log_event(log, "credits withdrawn", contract=contract, amount_wei=owed, tx=result.transaction_hash)
    return total


def get_pending_credits(protocol: ProtocolClient, address: str) -> dict[str, int]:
    """What each contract still owes `address` (contracts owing nothing left out)."""
    owed = {contract: protocol.credits_of(contract, address) for contract in CREDIT_CONTRACTS}
    return {contract: amount for contract, amount in owed.items() if amount}


class CreditWithdrawer:
    """Withdraws a node's credits when they may have changed: `marker` changed, or RECHECK_S passed.

    The marker is whatever the role sees change when it may have been credited (the round, whether the run is
    finished, its node-state change count). Looking costs one call per contract, so it is not done every tick.
    """

    def __init__(self, protocol: ProtocolClient, account: LocalAccount, log: logging.Logger) -> None:
        self.protocol = protocol
        self.account = account
        self.log = log
        self._marker: Hashable = None
        self._checked_at = float("-inf")
        self.withdrawn_wei = 0

    def withdraw_if_due(self, marker: Hashable) -> int:
        """Withdraw everything pending if `marker` changed since the last look or RECHECK_S passed; wei withdrawn."""
        if marker == self._marker and time.monotonic() - self._checked_at < RECHECK_S:
            return 0
        return self.withdraw(marker)

    def withdraw_after_tick(self, marker: Hashable, failing: bool = False) -> int:
        """`withdraw_if_due` at the end of a node's tick. `failing`: a duty of the tick raised, and that error is the
        one to report -- a withdrawal error is then logged (WARNING), not raised over it."""
        try:
            return self.withdraw_if_due(marker)
        except GradledgerError as exc:
            if not failing:
                raise
            log_event(self.log, "cannot withdraw credits yet", level=logging.WARNING, error=str(exc))
            return 0

    def withdraw(self, marker: Hashable = None) -> int:
        """Withdraw everything pending now (a node about to exit); wei withdrawn."""
        # noted before the calls: a chain that is down is tried again after RECHECK_S, not on every tick
        self._marker, self._checked_at = marker, time.monotonic()
        amount = withdraw_all_credits(self.protocol, self.account, self.log)
        self.withdrawn_wei += amount
        return amount

    def pending(self) -> int:
        """Wei still credited to this node in any contract (0 once everything is withdrawn)."""
        return sum(get_pending_credits(self.protocol, self.account.address).values())
