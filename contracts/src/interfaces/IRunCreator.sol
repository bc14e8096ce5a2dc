// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @notice What ModelShares uses of the RunRegistry: the run creator (who receives a finished run's
///         unowned revenue).
interface IRunCreator {
    /// @notice The account that created a run.
    function creatorOf(uint256 runId) external view returns (address);
}
