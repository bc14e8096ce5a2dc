// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {Strings} from "@openzeppelin/contracts/utils/Strings.sol";
import {Constants} from "./Constants.sol";
import {IRunShares} from "./interfaces/IRunShares.sol";

/// @title RunShares
/// @notice The ERC-20 ownership shares of one run, and the ETH revenue they earn. Only ModelShares mints
///         (for verified work, after settlement) and notifies revenue. Every payment is released linearly
///         over the run's release period into a revenue-per-share accumulator; each holder withdraws
///         (balance * accumulator + its correction) / REVENUE_PRECISION; withdrawing lowers the correction.
/// @dev Stream: `remaining` wei still to release, released linearly between `lastUpdate` and `end`; a new
///      payment adds to `remaining` and sets `end` to the earlier of now + period and the time that keeps the
///      current release rate (integer-exact: what is released is taken out of `remaining`, so everything paid
///      is released by `end`). The rate never drops, so a payment (a 1-wei one included) never delays revenue
///      already paid in, and a payment is released within one period.
///      Accumulator: perShare += (released * REVENUE_PRECISION + carry) / supply, the remainder carried to
///      the next release, so the sum of all holders' entitlements is exactly paid-out revenue minus < 1 wei.
///      Corrections: before any balance change the stream is released (so the drip up to now belongs to
///      the old balances), then `from` gains and `to` loses perShare * value in correction: a transfer
///      moves no accrued revenue, and a buyer earns only what drips after its purchase. Revenue withdrawn
///      by each holder is in its RevenueWithdrawn events. While fewer than
///      MIN_SUPPLY_FOR_RELEASE share units exist the release clock is paused (nothing is lost).
///      ETH held == remaining + what holders can withdraw + rounding dust (< 1 wei per holder + 1).
contract RunShares is ERC20, IRunShares {
    /// @notice Revenue not yet released and its release schedule (one slot).
    struct Stream {
        // PACKING: one slot; a slot per field costs +44,061 gas on a run's first settle (first notify), +4,215 per
        //          payRevenue, +6,913 per withdrawRevenue, +4,136 per transfer or mint (and saves 89,063 once at
        //          createRun).
        uint128 remaining;
        uint40 lastUpdate;
        uint40 end;
    }

    /// @notice Revenue per share unit (scaled by REVENUE_PRECISION) and the carried remainder (one slot).
    struct Accumulator {
        // PACKING: one slot; apart they cost +2,044 gas per release at settle and +1,990 per withdrawRevenue (and save
        //          26,701 once at createRun).
        uint160 perShare;
        uint96 carry;
    }

    /// @notice A holder's correction, in accumulator units: accrued-but-not-withdrawn revenue is
    ///         (perShare * balance + correction) / REVENUE_PRECISION. Transfers and mints move it with the
    ///         shares; a withdrawal subtracts amount * REVENUE_PRECISION. `seen` keeps the slot non-zero
    ///         once the holder first received shares, so withdrawals never pay for a fresh storage slot.
    struct Holder {
        // PACKING: `seen` shares the correction's slot; apart it costs +21,506 gas on a holder's first transfer and
        //          +21,710 on its first mint (and saves 31,277 once at createRun).
        int248 correction;
        bool seen;
    }

    /// @notice The ModelShares contract: the only minter and revenue notifier.
    address public immutable modelShares;
    /// @notice The run these shares belong to.
    uint256 public immutable runId;
    /// @notice Seconds over which each payment is released.
    uint256 public immutable releasePeriod;

    Stream internal _stream;
    Accumulator internal _acc;
    mapping(address holder => Holder) internal _holders;

    /// @notice Revenue was paid in; `remaining` (including it) is now released linearly until `end`.
    event RevenueNotified(uint256 amount, uint256 remaining, uint256 end);
    /// @notice `amount` was released to holders; `perShare` is the new accumulator value.
    event RevenueReleased(uint256 amount, uint256 perShare, uint256 supply);
    /// @notice A holder withdrew revenue.
    event RevenueWithdrawn(address indexed holder, uint256 amount);
    /// @notice Revenue of a finished run without a whole share outstanding went to `to` (the run creator).
    event UnownedRevenueSwept(address indexed to, uint256 amount);

    error NotModelShares(address caller);
    error ZeroAmount();
    error NothingToWithdraw();
    error SharesOutstanding(uint256 supply);
    error TransferFailed(address to, uint256 amount);

    modifier onlyModelShares() {
        if (msg.sender != modelShares) revert NotModelShares(msg.sender);
        _;
    }

    /// @param runId_ The run.
    /// @param releasePeriod_ Seconds over which each payment is released (> 0, checked by RunRegistry).
    constructor(uint256 runId_, uint256 releasePeriod_)
        ERC20(
            string.concat("gradledger run ", Strings.toString(runId_), " shares"),
            string.concat("GLS", Strings.toString(runId_))
        )
    {
        modelShares = msg.sender;
        runId = runId_;
        releasePeriod = releasePeriod_;
        // Both slots start non-zero so that releases and withdrawals only ever rewrite them. An accumulator
        // offset of 1 changes nothing: holders' entitlements depend only on its increments.
        _stream.lastUpdate = uint40(block.timestamp);
        _acc.perShare = 1;
    }

    /// @inheritdoc IRunShares
    /// @dev Releases what is due, then adds `msg.value` to the stream, ending it at the earlier of now + period and
    ///      now + (remaining + msg.value) * (end - now) / remaining (the end that keeps the current rate).
    function notifyRevenue() external payable onlyModelShares {
        if (msg.value == 0) revert ZeroAmount();
        _release();
        Stream memory s = _stream;
        uint256 end = block.timestamp + releasePeriod;
        if (s.remaining > 0 && s.end > block.timestamp) {
            uint256 left = s.end - block.timestamp;
            uint256 keepRate = block.timestamp + (uint256(s.remaining) + msg.value) * left / s.remaining;
            // INVARIANT: the release rate never drops: revenue already paid in is never delayed by a new payment.
            if (keepRate < end) end = keepRate;
        }
        // INVARIANT: what was due went to current holders first (_release); all of msg.value now enters `remaining`.
        s.remaining += uint128(msg.value);
        s.lastUpdate = uint40(block.timestamp);
        s.end = uint40(end);
        _stream = s;
        emit RevenueNotified(msg.value, s.remaining, s.end);
    }

    /// @inheritdoc IRunShares
    function mint(address to, uint256 amount) external onlyModelShares {
        _mint(to, amount);
    }

    /// @notice Withdraw all revenue released to the caller so far.
    /// @return amount Wei sent.
    function withdrawRevenue() external returns (uint256 amount) {
        _release();
        amount = _withdrawable(msg.sender, _acc.perShare);
        if (amount == 0) revert NothingToWithdraw();
        // INVARIANT: checks-effects-interactions: the correction drops by exactly amount * 1e27 before the ETH leaves.
        _holders[msg.sender].correction -= int248(int256(amount * Constants.REVENUE_PRECISION));
        emit RevenueWithdrawn(msg.sender, amount);
        (bool ok,) = msg.sender.call{value: amount}("");
        if (!ok) revert TransferFailed(msg.sender, amount);
    }

    /// @inheritdoc IRunShares
    function sweepUnowned(address to) external onlyModelShares returns (uint256 amount) {
        uint256 supply = totalSupply();
        // INVARIANT: supply never shrinks (no burn): below one share nothing was ever released, so all is unowned.
        if (supply >= Constants.MIN_SUPPLY_FOR_RELEASE) revert SharesOutstanding(supply);
        amount = _stream.remaining;
        if (amount == 0) revert NothingToWithdraw();
        // INVARIANT: checks-effects-interactions: the stream is emptied before the ETH leaves.
        _stream.remaining = 0;
        emit UnownedRevenueSwept(to, amount);
        (bool ok,) = to.call{value: amount}("");
        if (!ok) revert TransferFailed(to, amount);
    }

    /// @notice Revenue the holder could withdraw now.
    /// @param holder The holder.
    /// @return Wei.
    function withdrawableRevenueOf(address holder) external view returns (uint256) {
        (, Accumulator memory acc) = _pending();
        return _withdrawable(holder, acc.perShare);
    }

    /// @notice The stream as it would be after a release now.
    /// @return remaining Wei not yet released.
    /// @return end When everything remaining is released (if the supply allows the clock to run).
    /// @return perShare The accumulator.
    function revenueState() external view returns (uint256 remaining, uint256 end, uint256 perShare) {
        (Stream memory s, Accumulator memory acc) = _pending();
        return (s.remaining, s.end, acc.perShare);
    }

    /// @dev Release before every balance change, then move the correction with the shares.
    function _update(address from, address to, uint256 value) internal override {
        _release();
        // INVARIANT: release first, then perShare * value of correction moves with the shares: accrued revenue stays.
        int248 magnified = int248(int256(uint256(_acc.perShare) * value));
        if (from != address(0)) _holders[from].correction += magnified;
        if (to != address(0)) {
            Holder storage h = _holders[to];
            h.correction -= magnified;
            h.seen = true;
        }
        super._update(from, to, value);
    }

    function _release() internal {
        Stream memory before = _stream;
        if (before.lastUpdate == block.timestamp) return;
        (Stream memory s, Accumulator memory acc) = _pending();
        uint256 released = uint256(before.remaining) - s.remaining;
        _stream = s;
        if (released > 0) {
            _acc = acc;
            emit RevenueReleased(released, acc.perShare, totalSupply());
        }
    }

    /// @dev The stream and accumulator after releasing what is due at this block's timestamp.
    function _pending() internal view returns (Stream memory s, Accumulator memory acc) {
        s = _stream;
        acc = _acc;
        uint256 nowTs = block.timestamp;
        if (s.remaining == 0 || nowTs <= s.lastUpdate) {
            s.lastUpdate = uint40(nowTs > s.lastUpdate ? nowTs : s.lastUpdate);
            return (s, acc);
        }
        uint256 supply = totalSupply();
        // INVARIANT: nothing is released below one whole share: perShare grows <= released * 1e9 (fits uint160).
        if (supply < Constants.MIN_SUPPLY_FOR_RELEASE) {
            // paused: shift the end by the elapsed time, release nothing
            if (s.end > s.lastUpdate) s.end += uint40(nowTs - s.lastUpdate);
            s.lastUpdate = uint40(nowTs);
            return (s, acc);
        }
        // INVARIANT: released <= remaining (elapsed < period before `end`): never more than was paid.
        uint256 released = nowTs >= s.end
            ? s.remaining
            : uint256(s.remaining) * (nowTs - s.lastUpdate) / (uint256(s.end) - s.lastUpdate);
        s.remaining -= uint128(released);
        s.lastUpdate = uint40(nowTs);
        uint256 scaled = released * Constants.REVENUE_PRECISION + acc.carry;
        // INVARIANT: the remainder scaled % supply is carried: holders are owed what was released, minus < 1 wei.
        acc.perShare += uint160(scaled / supply);
        acc.carry = uint96(scaled % supply);
    }

    function _withdrawable(address holder, uint256 perShare) internal view returns (uint256) {
        int256 magnified = int256(perShare * balanceOf(holder)) + _holders[holder].correction;
        // INVARIANT: rounds down: a holder never withdraws more than its exact entitlement.
        return uint256(magnified) / Constants.REVENUE_PRECISION;
    }
}
