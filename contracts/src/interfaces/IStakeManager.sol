// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @notice What the protocol contracts use of the StakeManager.
interface IStakeManager {
    /// @notice Stake of `account` in `role` that is bonded (not unbonding).
    function bondedOf(address account, uint8 role) external view returns (uint256);
    /// @notice Forbid `account` from starting to unbond `role` stake (one more lock).
    function lock(address account, uint8 role) external;
    /// @notice Remove one lock placed by `lock`.
    function unlock(address account, uint8 role) external;
    /// @notice Take up to `amount` of `account`'s `role` stake for `faultKey` (at most once per key) and
    ///         send it to the caller; returns what was taken.
    function slash(address account, uint8 role, uint256 amount, bytes32 faultKey) external returns (uint256 taken);
    /// @notice Seconds between an unbonding request and the withdrawal it allows.
    function unbondingDelay() external view returns (uint256);
}
