// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @notice What Verification uses of the VerifierRegistry.
interface IVerifierRegistry {
    /// @notice The size of a run's verifier list at the end of block `blockNumber`.
    /// @param runId The run.
    /// @param blockNumber The block.
    /// @return The number of verifiers in the list then.
    function sizeAt(uint256 runId, uint256 blockNumber) external view returns (uint256);

    /// @notice The verifier at index `index` of a run's list at the end of block `blockNumber` (zero if none).
    /// @param runId The run.
    /// @param index The list index.
    /// @param blockNumber The block.
    /// @return The verifier.
    function verifierAt(uint256 runId, uint256 index, uint256 blockNumber) external view returns (address);

    /// @notice Verification only: an attestation of `verifier` was overturned; it leaves the run's list at once and
    ///         its reservation for the run is released.
    /// @param runId The run.
    /// @param verifier The wrong attester.
    function onOverturned(uint256 runId, address verifier) external;

    /// @notice Whether `verifier` holds the run's verifierMinStake reservation (registered, or left and still exiting).
    function isReserved(uint256 runId, address verifier) external view returns (bool);
}
