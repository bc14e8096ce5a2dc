// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {CommitmentData} from "./Types.sol";

/// @notice What the protocol contracts use of the RunRegistry.
interface IRunRegistry {
    /// @notice Round parameters of a run (one storage slot).
    struct RunParams {
        // PACKING: one slot; a slot per field costs +14,359 gas per drawSeed, +14,548 per register,
        //          +14,557 per postClaim.
        uint32 attestWindow;
        uint32 challengeWindow;
        uint32 disputeTimeout;
        uint32 numSegments;
        uint16 samples;
        uint8 verifiers;
        uint8 jurySize;
        uint96 attestationBond;
    }

    /// @notice Stakes, bonds and the share split of a run (one storage slot).
    struct RunEconomics {
        // PACKING: one slot; a slot per field costs +7,933 gas per register, +7,939 per share claim,
        //          +7,901 per execute.
        uint96 challengeBond;
        uint96 verifierMinStake;
        uint16 solverShareBps;
        uint16 verifierShareBps;
        uint16 jurorShareBps;
    }

    /// @notice What Disputes needs of a run (one storage slot).
    struct DisputeTerms {
        // PACKING: one slot; a slot per field costs +3,870 gas per challenge, +3,957 per drawJury, +3,921 per execute.
        uint96 challengeBond;
        uint32 disputeTimeout;
        uint8 jurySize;
    }

    /// @notice The current round of a run, its deadlines (block timestamps, seconds) and its seed block (a block
    ///         number fixed when the round started: start block + ceil(commitWindow / blockSeconds); round 0's when
    ///         the run was created: creation block + ceil((startDelay + commitWindow) / blockSeconds); every
    ///         commitment of the round lands before it, and the round's seed is the hash of that block).
    struct RoundTimes {
        uint64 round;
        uint256 start; // round 0's lies in the future during the run's start delay (nothing can be committed yet)
        uint256 commitEnd;
        uint256 attestEnd;
        uint256 challengeEnd;
        bool finished;
        uint256 seedBlock;
        uint256 openEnd; // commitEnd + attestWindow / 2: every commitment's sampled leaves are opened before it
    }

    /// @notice Whether a commitment's sampled leaves were opened. None: not yet (or no commitment this round).
    ///         Opened: every sampled leaf of every seat was proven under the root in time. Unopened: reported
    ///         after the opening deadline without an opening.
    enum Opening {
        None,
        Opened,
        Unopened
    }

    /// @notice Outcome of a dispute over a theta claim.
    enum ClaimOutcome {
        Rejected, // the jury found the claim wrong: the claim is removed and its bond forfeited
        Upheld, // the jury found the claim right
        Unresolved // no verdict after every appeal: the claim is withdrawn, its bond returned to the claimer
    }

    /// @notice Round parameters of a run.
    function runParams(uint256 runId) external view returns (RunParams memory);
    /// @notice Whether a solver's commitment of `round` was opened (None: not yet, or its latest is another round's).
    function openingOf(uint256 runId, uint64 round, address solver) external view returns (Opening);
    /// @notice Stakes, bonds and share split of a run.
    function runEconomics(uint256 runId) external view returns (RunEconomics memory);
    /// @notice The current round of a run and its deadlines.
    function roundTimes(uint256 runId) external view returns (RoundTimes memory);
    /// @notice The chain's block time declared at deployment: blocks are at least this many seconds apart.
    function blockSeconds() external view returns (uint256);
    /// @notice Whether a solver joined a run (also after it left).
    function hasJoined(uint256 runId, address solver) external view returns (bool);
    /// @notice Solver stake a commitment needs (and the amount a solver fault slashes).
    function solverMinStake(uint256 runId) external view returns (uint256);
    /// @notice Share units minted at most per settled round.
    function sharesPerRound(uint256 runId) external view returns (uint256);
    /// @notice Challenge bond, dispute timeout and jury size of a run.
    function disputeTerms(uint256 runId) external view returns (DisputeTerms memory);
    /// @notice Revert with CommitmentMismatch unless `commitment` is the solver's commitment for `round`, and with
    ///         NotOpened unless its sampled leaves were opened (only opened commitments are attested or disputed).
    function checkCommitment(uint256 runId, uint64 round, address solver, CommitmentData calldata commitment)
        external
        view;
    /// @notice Whether `round` of a run is settled.
    function isSettled(uint256 runId, uint64 round) external view returns (bool);
    /// @notice Disputes only: an attestation dispute opened (checks the commitment, counts it, returns terms).
    function onDisputeOpened(uint256 runId, uint64 round, address solver, CommitmentData calldata commitment)
        external
        returns (DisputeTerms memory);
    /// @notice Disputes only: an attestation dispute was executed or expired.
    function onDisputeClosed(uint256 runId) external;
    /// @notice Disputes only: the current claim is challenged; returns its claimer.
    function onClaimChallenged(uint256 runId, uint64 round, uint16 claimNonce) external returns (address claimer);
    /// @notice Who posted the claim of a round.
    function claimerOf(uint256 runId, uint64 round) external view returns (address);
    /// @notice Disputes only: the claim dispute ended; returns the forfeited bond sent to Disputes (if rejected).
    function onClaimResolved(uint256 runId, uint64 round, ClaimOutcome outcome) external returns (uint256 forfeited);
}
