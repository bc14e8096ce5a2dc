// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @notice What ModelShares uses of a run's share token.
interface IRunShares {
    /// @notice Add `msg.value` to the revenue stream (ModelShares only).
    function notifyRevenue() external payable;
    /// @notice Mint shares (ModelShares only).
    function mint(address to, uint256 amount) external;
}
