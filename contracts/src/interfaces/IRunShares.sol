// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @notice What ModelShares uses of a run's share token.
interface IRunShares {
    /// @notice Add `msg.value` to the revenue stream (ModelShares only).
    function notifyRevenue() external payable;
    /// @notice Mint shares (ModelShares only).
    function mint(address to, uint256 amount) external;
    /// @notice Send the unreleased revenue to `to` while fewer than MIN_SUPPLY_FOR_RELEASE share units exist
    ///         (ModelShares only, once the run is finished): with no owner it could never be released.
    /// @param to The recipient (the run creator).
    /// @return amount Wei sent.
    function sweepUnowned(address to) external returns (uint256 amount);
}
