"""What a transaction offers to pay for gas, under the cap the operator set (pure).

On an EIP-1559 chain a transaction names `maxFeePerGas` (the most it pays per gas) and `maxPriorityFeePerGas` (the
tip to the block producer); it pays `min(maxFee, baseFee + tip)`. A node offers twice the next block's base fee
plus its tip, so a transaction stays includable while the base fee climbs for a few blocks -- but never more than
the operator's `--max-fee-gwei`. When even the fee needed now (next base fee + tip) is above that cap, nothing is
sent: `FeeCapExceededError` names the cap and the base fee, and the node retries on a later tick (fees fall again).
A chain without a base fee (legacy, pre-London) is paid with `gasPrice`, under the same cap.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.errors import GradledgerError

GWEI = 10**9
DEFAULT_PRIORITY_FEE_WEI = GWEI
"""The tip offered when the operator sets none: 1 gwei, enough on an idle chain; raise it when blocks are full."""
BASE_FEE_CHANGE_DENOMINATOR = 8
"""EIP-1559: the base fee moves by at most 1/8 per block."""
ELASTICITY_MULTIPLIER = 2
"""EIP-1559: a block's gas target is half its gas limit."""


class FeeCapExceededError(GradledgerError):
    """The fee a transaction needs now is above the operator's cap: it was not sent."""


@dataclass(frozen=True)
class FeeQuote:
    """The fee fields of one transaction: EIP-1559 (max fee and tip) or legacy (gas price)."""

    max_fee_wei: int | None = None
    priority_fee_wei: int | None = None
    gas_price_wei: int | None = None

    def to_tx_fields(self) -> dict[str, int]:
        if self.gas_price_wei is not None:
            return {"gasPrice": self.gas_price_wei}
        if self.max_fee_wei is None or self.priority_fee_wei is None:
            raise GradledgerError("a fee quote needs a gas price, or both a max fee and a priority fee")
        return {"maxFeePerGas": self.max_fee_wei, "maxPriorityFeePerGas": self.priority_fee_wei}


def format_gwei(wei: int) -> str:
    return f"{wei / GWEI:.9g} gwei"


def compute_next_base_fee(base_fee: int, gas_used: int, gas_limit: int) -> int:
    """The base fee of the block after one with this base fee, gas used and gas limit (EIP-1559's update rule)."""
    target = gas_limit // ELASTICITY_MULTIPLIER
    if target <= 0 or gas_used == target:
        return base_fee
    if gas_used > target:
        return base_fee + max(base_fee * (gas_used - target) // target // BASE_FEE_CHANGE_DENOMINATOR, 1)
    return base_fee - base_fee * (target - gas_used) // target // BASE_FEE_CHANGE_DENOMINATOR


def compute_eip1559_fees(next_base_fee: int, priority_fee_wei: int, max_fee_cap_wei: int | None) -> FeeQuote:
    """Offer 2 x next base fee + tip, capped; refuse (FeeCapExceededError) when base fee + tip is above the cap."""
    needed = next_base_fee + priority_fee_wei
    if max_fee_cap_wei is not None and needed > max_fee_cap_wei:
        raise FeeCapExceededError(
            f"the next block's base fee is {format_gwei(next_base_fee)}: with a {format_gwei(priority_fee_wei)} tip a "
            f"transaction needs {format_gwei(needed)} per gas, above the --max-fee-gwei cap of "
            f"{format_gwei(max_fee_cap_wei)}; nothing was sent. Wait for fees to fall (the node retries), or raise "
            "--max-fee-gwei"
        )
    offer = 2 * next_base_fee + priority_fee_wei
    if max_fee_cap_wei is not None:
        offer = min(offer, max_fee_cap_wei)
    return FeeQuote(max_fee_wei=offer, priority_fee_wei=priority_fee_wei)


def compute_legacy_fees(gas_price_wei: int, max_fee_cap_wei: int | None) -> FeeQuote:
    """A legacy chain's gas price, refused (FeeCapExceededError) above the cap."""
    if max_fee_cap_wei is not None and gas_price_wei > max_fee_cap_wei:
        raise FeeCapExceededError(
            f"this chain has no base fee (legacy gas pricing) and its gas price is {format_gwei(gas_price_wei)}, above "
            f"the --max-fee-gwei cap of {format_gwei(max_fee_cap_wei)}; nothing was sent. Wait for the price to fall "
            "(the node retries), or raise --max-fee-gwei"
        )
    return FeeQuote(gas_price_wei=gas_price_wei)
