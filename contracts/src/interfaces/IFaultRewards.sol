// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @notice What Verification uses of FaultRewards.
interface IFaultRewards {
    /// @notice Verification only: the solver of a commitment was slashed for a proven fault; `msg.value` is the
    ///         provers' part, to be shared equally by every prover of the fault once the round is settled.
    /// @param runId The run.
    /// @param round The round.
    /// @param solver The faulty commitment's solver.
    function onFaultProven(uint256 runId, uint64 round, address solver) external payable;
}
