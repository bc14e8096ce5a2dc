// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @notice What the protocol contracts use of the StakeManager.
interface IStakeManager {
    /// @notice Stake of `account` in `role` that is bonded (not unbonding).
    function bondedOf(address account, uint8 role) external view returns (uint256);
    /// @notice Whether `account`'s bonded `role` stake still covers everything it has reserved (a slash can leave
    ///         it short: then it may take no new obligation, commit or attest until it tops up).
    function isCovered(address account, uint8 role) external view returns (bool);
    /// @notice Reserve `amount` of `account`'s free bonded `role` stake for an obligation (reverts if not free).
    function reserve(address account, uint8 role, uint256 amount) external;
    /// @notice Release `amount` reserved by `reserve` when its obligation ends.
    function release(address account, uint8 role, uint256 amount) external;
    /// @notice Take up to `amount` of `account`'s `role` stake for `faultKey` (at most once per key) and
    ///         send it to the caller; returns what was taken.
    function slash(address account, uint8 role, uint256 amount, bytes32 faultKey) external returns (uint256 taken);
    /// @notice Seconds between an unbonding request and the withdrawal it allows.
    function unbondingDelay() external view returns (uint256);
}
