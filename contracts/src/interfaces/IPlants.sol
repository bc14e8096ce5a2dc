// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @notice What Verification uses of Plants (planted faults, docs/planted-faults.md).
import {AttestationRef} from "./Types.sol";

interface IPlants {
    /// @notice How a commitment is paid under the plant rules: by the usual rules (planting off, rounds before the
    ///         first plant, or revealed not planted), as accepted (revealed planted), or not at all (its plant was
    ///         not revealed in the window, or it was made without an anchor old enough while planting is on).
    enum Pay {
        Normal, // planting off, rounds before the first plant, or revealed not planted: the usual rules
        Planted, // revealed planted: paid as accepted (if attested at all); its delta is not accepted
        Unpaid // plant not revealed in its window, disproven by a jury, or no anchor old enough while planting is on
    }

    /// @notice How a solver's commitment of a round is paid (final once the round's reveal window has closed).
    function payOf(uint256 runId, uint64 round, address solver) external view returns (Pay);

    /// @notice Whether a commitment is unpaid whatever happens to it: planting is on, the round can be planted, and the
    ///         solver has no plant anchor old enough (fixed for a round once it started).
    function isPayBlocked(uint256 runId, uint64 round, address solver) external view returns (bool);

    /// @notice Whether an attestation on the commitment cannot be challenged: it may be planted and its reveal
    ///         window is still open, or it was revealed planted (the reveal decides its attestations).
    function isChallengeBlocked(uint256 runId, uint64 round, address solver) external view returns (bool);

    /// @notice Whether a solver's commitment of a round can be planted (planting on, anchor two rounds old),
    ///         whether its secret was revealed in the round's window, whether the commitment was planted, and
    ///         whether it was reported unrevealed.
    function plantOf(uint256 runId, uint64 round, address solver)
        external
        view
        returns (bool eligible, bool revealed, bool planted, bool reported);

    /// @notice A run's plant terms: planted commitments per 10,000, the jackpot of a fail, the penalty of a pass.
    function termsOf(uint256 runId) external view returns (uint256 rateBps, uint256 jackpot, uint256 penalty);

    /// @notice Whether a commitment can be plant-disputed now (Disputes.challengePlant): revealed as planted, in the
    ///         current round, before its challenge window closes.
    function isPlantChallengeable(uint256 runId, uint64 round, address solver) external view returns (bool);

    /// @notice Disputes only: a jury found the plant false; the commitment is not paid.
    function onFalsePlant(uint256 runId, uint64 round, address solver) external;

    /// @notice Verification only: a fail on a planted commitment stands; credit its verifier the jackpot (what the
    ///         pool has left of it). Returns the amount credited.
    function onPlantedFail(uint256 runId, address verifier) external returns (uint256 amount);

    /// @notice Verification only: the pass of seat `ref` on a planted commitment was wrong; msg.value (its bond) and
    ///         the plant penalty slashed from `verifier`'s stake are held until the round settles, then join the run's
    ///         plant pool (or go back to the verifier if the plant is disproven).
    function onPlantedPass(AttestationRef calldata ref, address verifier) external payable;
}
