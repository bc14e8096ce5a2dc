// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Constants} from "../Constants.sol";

/// @title Planting
/// @notice The plant rules that must equal protocol/planting.py (checked by tests/vectors/planting.json): the
///         chain of round secrets (each secret hashes to the previous one) and the plant draw of a round.
library Planting {
    /// @notice Domain tag of the plant draw (= protocol.planting.PLANT_TAG).
    bytes32 internal constant PLANT_TAG = keccak256("gradledger.plant");

    /// @notice The next link of a chain: keccak256 of the 32-byte link (= protocol.hashing.keccak256(link)).
    /// @param link A link.
    /// @return The link it hashes to.
    function next(bytes32 link) internal pure returns (bytes32) {
        return keccak256(abi.encode(link));
    }

    /// @notice The plant draw in [0, 10_000) of a (run, round, solver) from the round secret and round r - 1's seed
    ///         base (= protocol.planting.compute_plant_draw).
    /// @param secret The solver's secret of the round.
    /// @param runId The run.
    /// @param round The round.
    /// @param solver The solver.
    /// @param previousSeedBase The seed base of round - 1.
    /// @return The draw.
    function draw(bytes32 secret, uint256 runId, uint64 round, address solver, bytes32 previousSeedBase)
        internal
        pure
        returns (uint256)
    {
        return uint256(keccak256(abi.encode(PLANT_TAG, secret, runId, round, solver, previousSeedBase)))
            % Constants.BPS_DENOMINATOR;
    }
}
