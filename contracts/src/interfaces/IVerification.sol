// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IBlockRandomness} from "./IBlockRandomness.sol";
import {AttestationRef, LeafData} from "./Types.sol";

/// @notice What the Disputes contract uses of Verification.
interface IVerification {
    /// @notice How a dispute over an attestation ended.
    enum Resolution {
        Upheld, // the jury found the attestation right
        Overturned, // the jury found the attestation wrong
        Unresolved // no verdict after every appeal: a pass stops counting, a fail keeps blocking, nobody is slashed
    }

    /// @notice What a challenge records about the attestation it disputes.
    struct ChallengedAttestation {
        bool isFail;
        uint16 sampleIndex;
        uint32 segmentIndex;
    }

    /// @notice Check that an attestation can be challenged over the given sampled leaf (view, Disputes).
    function checkChallenge(
        AttestationRef calldata ref,
        bytes32 root,
        uint16 sampleIndex,
        LeafData calldata leaf,
        bytes32[] calldata proof
    ) external view returns (ChallengedAttestation memory);
    /// @notice Disputes only: apply the end of an attestation dispute; returns the attester and forfeited bond.
    function onResolved(AttestationRef calldata ref, Resolution resolution)
        external
        returns (address attester, bool isFail, uint256 forfeitedBond);
    /// @notice The contract that proves a recent block's RANDAO value from its header (drawSeed's seed source; Plants
    ///         reads the same value).
    function blockRandomness() external view returns (IBlockRandomness);
    /// @notice The verifier assigned to a seat.
    function attesterOf(AttestationRef calldata ref) external view returns (address);
    /// @notice A round's seed (RunRegistry opens commitments with it): whether it was drawn, its base (the first 12
    ///         bytes of the seed block's RANDAO value, the `blockHash` input of Sampling.seed) and the verifier-list
    ///         snapshot it fixed.
    function seedOf(uint256 runId, uint64 round)
        external
        view
        returns (bool drawn, bytes32 seedBase, uint256 snapshotCount);
    /// @notice A seat that proves its commitment's fault (a fail that stands, or an overturned pass) and who proved
    ///         it (the fail's verifier, the pass's challenger), with the number of such seats; reverts NotAProver
    ///         for any other seat (and for a fail not yet finalized).
    /// @param ref The seat.
    /// @return prover Who is owed this seat's share.
    /// @return provers How many seats prove the fault.
    function proverOf(AttestationRef calldata ref) external view returns (address prover, uint256 provers);
    /// @notice Plants only: the solver revealed its commitment of `round` as planted; overturn every pass on it
    ///         (its bond to the plant pool, the verifier's penalty slashed by Plants), pay every fail the jackpot.
    function onPlantRevealed(uint256 runId, uint64 round, address solver) external;
    /// @notice RunRegistry only: create a joining solver's status slot.
    function onSolverJoined(uint256 runId, address solver) external;

    /// @notice Plants found a commitment unpaid (plant disproven, or reveal missed): it leaves the round's paid
    ///         commitments (Plants only).
    function onUnpaid(uint256 runId, uint64 round, address solver) external;
}
