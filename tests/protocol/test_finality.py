"""Pure rules of finality and reorg recovery (protocol/finality.py) and of fees under a cap (protocol/fees.py)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from protocol.fees import (
    GWEI,
    FeeCapExceededError,
    compute_eip1559_fees,
    compute_legacy_fees,
    compute_next_base_fee,
)
from protocol.finality import (
    DEFAULT_CONFIRMATIONS,
    BlockRef,
    ReadProgress,
    compute_fork_point,
    drop_orphaned,
    get_default_confirmations,
    get_final_block,
    get_read_range,
    record_read,
    rewind,
)


@dataclass(frozen=True)
class Ev:
    block_number: int
    name: str = "e"


def h(n: int, fork: str = "a") -> bytes:
    return f"{fork}{n}".encode().ljust(32, b"\0")


def test_confirmations_default_to_zero_on_the_devnet_only():
    assert get_default_confirmations(31337) == 0
    assert get_default_confirmations(1337) == DEFAULT_CONFIRMATIONS == 2
    assert get_final_block(100, 2) == 98
    assert get_final_block(1, 2) == -1
    with pytest.raises(ValueError):
        get_final_block(10, -1)


def test_read_range_stops_at_the_final_block():
    progress = ReadProgress.starting_at(10)
    assert get_read_range(progress, 9) is None
    assert get_read_range(progress, 12) == (10, 12)
    progress = record_read(progress, BlockRef(12, h(12)))
    assert progress.next_block == 13 and progress.last_read == BlockRef(12, h(12))
    assert get_read_range(progress, 12) is None


def test_remembered_blocks_are_bounded_and_ordered():
    progress = ReadProgress.starting_at(0)
    for n in range(10):
        progress = record_read(progress, BlockRef(n, h(n)), limit=4)
    assert [r.number for r in progress.remembered] == [6, 7, 8, 9]
    again = ReadProgress.from_json(progress.to_json())
    assert again == progress


def test_fork_point_is_the_highest_remembered_block_still_canonical():
    remembered = (BlockRef(5, h(5)), BlockRef(7, h(7)), BlockRef(9, h(9)))
    # blocks 8.. were replaced: 7 is still the chain's
    canonical = {9: h(9, "b"), 7: h(7)}
    assert compute_fork_point(remembered, canonical) == 7
    # the whole remembered span was replaced: unknown
    assert compute_fork_point(remembered, {9: None, 7: h(7, "b"), 5: h(5, "b")}) is None
    # an unchecked block is never taken for a fork point
    assert compute_fork_point(remembered, {9: h(9, "b")}) is None


def test_rewind_drops_what_came_after_the_fork():
    progress = ReadProgress(3, 10, (BlockRef(5, h(5)), BlockRef(7, h(7)), BlockRef(9, h(9))))
    back = rewind(progress, 7)
    assert back.next_block == 8 and back.remembered == (BlockRef(5, h(5)), BlockRef(7, h(7)))
    assert rewind(progress, None) == ReadProgress.starting_at(3)
    events = [Ev(4), Ev(7), Ev(8), Ev(9)]
    kept, dropped = drop_orphaned(events, 7, 3)
    assert kept == [Ev(4), Ev(7)] and dropped == [Ev(8), Ev(9)]
    kept, dropped = drop_orphaned(events, None, 3)
    assert kept == [] and dropped == events


def test_next_base_fee_follows_eip1559():
    assert compute_next_base_fee(1000, 15_000_000, 30_000_000) == 1000  # at target
    assert compute_next_base_fee(1000, 30_000_000, 30_000_000) == 1125  # full block: +1/8
    assert compute_next_base_fee(1000, 0, 30_000_000) == 875  # empty block: -1/8
    assert compute_next_base_fee(7, 15_000_001, 30_000_000) == 8  # at least +1 above target


def test_fees_offer_twice_the_base_fee_plus_tip_under_the_cap():
    quote = compute_eip1559_fees(10 * GWEI, GWEI, None)
    assert quote.to_tx_fields() == {"maxFeePerGas": 21 * GWEI, "maxPriorityFeePerGas": GWEI}
    capped = compute_eip1559_fees(10 * GWEI, GWEI, 15 * GWEI)
    assert capped.to_tx_fields() == {"maxFeePerGas": 15 * GWEI, "maxPriorityFeePerGas": GWEI}


def test_a_fee_above_the_cap_is_refused_naming_cap_and_base_fee():
    with pytest.raises(FeeCapExceededError) as caught:
        compute_eip1559_fees(30 * GWEI, 2 * GWEI, 25 * GWEI)
    message = str(caught.value)
    assert "30 gwei" in message and "25 gwei" in message and "--max-fee-gwei" in message
    assert "nothing was sent" in message


def test_legacy_gas_price_under_the_same_cap():
    assert compute_legacy_fees(5 * GWEI, 10 * GWEI).to_tx_fields() == {"gasPrice": 5 * GWEI}
    assert compute_legacy_fees(5 * GWEI, None).to_tx_fields() == {"gasPrice": 5 * GWEI}
    with pytest.raises(FeeCapExceededError, match="legacy gas pricing"):
        compute_legacy_fees(12 * GWEI, 10 * GWEI)
