// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @notice What the protocol contracts use of ModelShares.
interface IModelShares {
    /// @notice Which contribution a mint pays for (recorded in the SharesMinted event).
    enum ShareKind {
        Solver,
        Verifier,
        Juror
    }

    /// @notice Deploy a run's share token; `msg.value` is its reward pool (RunRegistry only).
    function createRunShares(uint256 runId, uint32 releasePeriod) external payable returns (address token);
    /// @notice Add slash proceeds or dispute remainders to a run's reward pool (protocol contracts only).
    function fundPool(uint256 runId) external payable;
    /// @notice Set pool / roundsRemaining aside for the contributors of the settled round (RunRegistry only).
    function releasePool(uint256 runId, uint64 round, uint256 roundsRemaining) external;
    /// @notice Mint shares of a settled round for a contribution, crediting the contributor its pro-rata part of the
    ///         round's release (Verification and Disputes only).
    function mint(uint256 runId, uint64 round, address to, uint256 amount, ShareKind kind) external;
}
