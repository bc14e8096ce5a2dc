// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Constants} from "./Constants.sol";
import {IRunRegistry} from "./interfaces/IRunRegistry.sol";
import {IStakeManager} from "./interfaces/IStakeManager.sol";
import {IVerifierRegistry} from "./interfaces/IVerifierRegistry.sol";
import {Checkpoints} from "./libraries/Checkpoints.sol";

/// @title VerifierRegistry
/// @notice Each run's verifier list: the verifiers that reserved the run's verifierMinStake, in the order seats are
///         drawn from. The list holds active verifiers only (swap-and-pop, no dead entries) and remembers every past
///         state, so a round's seats come from the list as it was before the round's seed block, when nobody could
///         know the seed: registering or leaving after the seed block's hash is public moves no seat.
/// @dev Why its own contract: Verification reads one list entry per attestation (`verifierAt`, one SLOAD when the
///      index did not change since the snapshot) and is near the code-size limit; registration, exit and the
///      histories live here. History: a Checkpoints.Trace per (run, index) and per run for the size.
///      Leaving: `deregister` removes the entry at once (the last entry moves into its index) and starts the exit
///      delay, the run's attestWindow + challengeWindow: the last round whose snapshot can hold the verifier has
///      closed its attestations and their challenges by then (its seed block is mined at or after its commitEnd, so
///      its attestEnd <= the exit + attestWindow). The reservation is released by `releaseVerifier` after that, so a
///      verifier backs every seat it can still hold. An overturned attester is removed at once and exits like a leaver
///      (Verification's `onOverturned`): its reservation stays for the exit delay while the slash took its stake, so
///      its stake no longer covers its reservations and it attests nowhere, not even the seats it still holds in this
///      round's snapshot, until it tops up (StakeManager.isCovered; issue 36, finding 7: it used to be released at
///      once, which left the overturned verifier covered with zero stake and a second wrong pass cost only the bond).
///      Register-and-leave sybils therefore leave no dead region and cannot fill a cap for free: every entry holds
///      its own reserved verifierMinStake until it leaves, and each left entry is gone from later snapshots.
contract VerifierRegistry is IVerifierRegistry {
    using Checkpoints for Checkpoints.Trace;

    /// @notice A verifier's record in a run.
    struct VerifierRecord {
        uint32 indexPlusOne; // list index + 1 while in the list, 0 otherwise
        uint40 exitAt; // when a verifier that left may release its stake reservation (0: no exit pending)
        bool reserved; // whether it holds the run's reservation (in the list, or exiting)
    }

    IStakeManager public immutable stakeManager;
    IRunRegistry public immutable runRegistry;
    address public immutable verification;

    /// @notice Each verifier's record per run.
    mapping(uint256 runId => mapping(address verifier => VerifierRecord)) public records;
    mapping(uint256 runId => mapping(uint256 index => Checkpoints.Trace)) internal _entries;
    mapping(uint256 runId => Checkpoints.Trace) internal _size;

    /// @notice A verifier joined (or returned to) a run's list at `index`; the run's verifierMinStake is reserved.
    event VerifierRegistered(uint256 indexed runId, address indexed verifier, uint256 index);
    /// @notice A verifier left a run's list at `index`; `moved` (the former last entry, or the zero address when the
    ///         leaver was last) now sits there. `slashed`: removed after an overturned attestation, its reservation
    ///         released at once; else the reservation is released by `releaseVerifier` from `exitAt`.
    event VerifierDeregistered(
        uint256 indexed runId, address indexed verifier, uint256 index, address moved, uint256 exitAt, bool slashed
    );
    /// @notice A verifier that left a run released the run's stake reservation.
    event VerifierReleased(uint256 indexed runId, address indexed verifier);

    error RunIsFinished(uint256 runId);
    error AlreadyRegistered(uint256 runId, address verifier);
    error NotRegistered(uint256 runId, address verifier);
    error NotExiting(uint256 runId, address verifier);
    error ExitNotReady(uint256 exitAt);
    error VerifierListFull(uint256 runId);
    error NotVerification(address caller);
    error StakeNotCovered(address account);

    /// @param stakeManager_ The StakeManager (reserves the verifiers' stake per run).
    /// @param runRegistry_ The RunRegistry (run state, minimum stake and windows).
    /// @param verification_ Verification (removes overturned attesters).
    constructor(IStakeManager stakeManager_, IRunRegistry runRegistry_, address verification_) {
        stakeManager = stakeManager_;
        runRegistry = runRegistry_;
        verification = verification_;
    }

    /// @notice Join a run's verifier list (or return to it) at its end. Needs free bonded verifier stake of the run's
    ///         minimum, reserved until the verifier leaves and its exit delay passes (or an overturn removes it); a
    ///         return during the exit delay keeps the reservation it still holds, and needs its stake to cover its
    ///         reservations (a verifier slashed below them tops up first). The entry counts for the seats
    ///         of rounds whose seed block comes after this block.
    /// @param runId The run.
    function register(uint256 runId) external {
        if (runRegistry.roundTimes(runId).finished) revert RunIsFinished(runId);
        VerifierRecord memory r = records[runId][msg.sender];
        if (r.indexPlusOne != 0) revert AlreadyRegistered(runId, msg.sender);
        uint256 index = _size[runId].latestValue();
        // INVARIANT: the count fits Verification's RoundSeed.verifierCount (uint16).
        if (index >= Constants.MAX_VERIFIERS_PER_RUN) revert VerifierListFull(runId);
        // INVARIANT: nobody joins the list on stake that is gone. A return during the exit delay takes no new
        // reservation, so its coverage is checked here: a verifier slashed below its reservations (an overturned
        // attester) used to come back, hold seats it could not attest, and leave honest work unaccepted (issue 39).
        if (r.reserved && !stakeManager.isCovered(msg.sender, Constants.ROLE_VERIFIER)) {
            revert StakeNotCovered(msg.sender);
        }
        records[runId][msg.sender] = VerifierRecord({indexPlusOne: uint32(index + 1), exitAt: 0, reserved: true});
        _entries[runId][index].push(uint160(msg.sender));
        _size[runId].push(index + 1);
        emit VerifierRegistered(runId, msg.sender, index);
        // INVARIANT: one reservation of verifierMinStake per (run, verifier) from registration until its release.
        if (!r.reserved) {
            stakeManager.reserve(msg.sender, Constants.ROLE_VERIFIER, runRegistry.runEconomics(runId).verifierMinStake);
        }
    }

    /// @notice Leave a run's verifier list now: rounds whose seed block comes later give the caller no seat. Seats it
    ///         holds in snapshots already taken stay its own, so its reservation stays until `releaseVerifier`,
    ///         the run's attestWindow + challengeWindow from now. A finished run draws no seat again and every round
    ///         of it is settled: leaving it releases the reservation at once (issue 39: a verifier could not serve
    ///         the next run until the exit delay of one that was over).
    /// @param runId The run.
    function deregister(uint256 runId) external {
        VerifierRecord memory r = records[runId][msg.sender];
        if (r.indexPlusOne == 0) revert NotRegistered(runId, msg.sender);
        bool finished = runRegistry.roundTimes(runId).finished;
        IRunRegistry.RunParams memory p = runRegistry.runParams(runId);
        uint256 exitAt = finished ? block.timestamp : block.timestamp + p.attestWindow + p.challengeWindow;
        records[runId][msg.sender] = VerifierRecord({indexPlusOne: 0, exitAt: uint40(exitAt), reserved: !finished});
        address moved = _remove(runId, r.indexPlusOne - 1);
        emit VerifierDeregistered(runId, msg.sender, r.indexPlusOne - 1, moved, exitAt, false);
        if (finished) {
            emit VerifierReleased(runId, msg.sender);
            stakeManager.release(msg.sender, Constants.ROLE_VERIFIER, runRegistry.runEconomics(runId).verifierMinStake);
        }
    }

    /// @notice Release the run's stake reservation of a verifier that left, once its exit delay has passed, or at
    ///         once when the run is finished (no seat of it is drawn again).
    /// @param runId The run.
    function releaseVerifier(uint256 runId) external {
        VerifierRecord memory r = records[runId][msg.sender];
        if (r.indexPlusOne != 0 || !r.reserved) revert NotExiting(runId, msg.sender);
        if (block.timestamp < r.exitAt && !runRegistry.roundTimes(runId).finished) revert ExitNotReady(r.exitAt);
        // INVARIANT: the flag is cleared before the release, so each registration's reservation is released once.
        records[runId][msg.sender] = VerifierRecord({indexPlusOne: 0, exitAt: 0, reserved: false});
        emit VerifierReleased(runId, msg.sender);
        stakeManager.release(msg.sender, Constants.ROLE_VERIFIER, runRegistry.runEconomics(runId).verifierMinStake);
    }

    /// @inheritdoc IVerifierRegistry
    function onOverturned(uint256 runId, address verifier) external {
        if (msg.sender != verification) revert NotVerification(msg.sender);
        VerifierRecord memory r = records[runId][verifier];
        // a verifier that left already keeps its exit as it was: its reservation backs its remaining seats until then
        if (r.indexPlusOne == 0) return;
        IRunRegistry.RunParams memory p = runRegistry.runParams(runId);
        uint256 exitAt = block.timestamp + p.attestWindow + p.challengeWindow;
        // INVARIANT: the reservation is kept until the exit delay has passed (releaseVerifier), so every seat the
        //            overturned verifier still holds is checked against stake that covers it (isCovered).
        records[runId][verifier] = VerifierRecord({indexPlusOne: 0, exitAt: uint40(exitAt), reserved: true});
        address moved = _remove(runId, r.indexPlusOne - 1);
        emit VerifierDeregistered(runId, verifier, r.indexPlusOne - 1, moved, exitAt, true);
    }

    // ------------------------------------------------------------------ views

    /// @inheritdoc IVerifierRegistry
    function isReserved(uint256 runId, address verifier) external view returns (bool) {
        return records[runId][verifier].reserved;
    }

    /// @notice The size of a run's verifier list now.
    /// @param runId The run.
    /// @return The number of verifiers in the list.
    function size(uint256 runId) external view returns (uint256) {
        return _size[runId].latestValue();
    }

    /// @inheritdoc IVerifierRegistry
    function sizeAt(uint256 runId, uint256 blockNumber) external view returns (uint256) {
        return _size[runId].valueAt(blockNumber);
    }

    /// @inheritdoc IVerifierRegistry
    function verifierAt(uint256 runId, uint256 index, uint256 blockNumber) external view returns (address) {
        return address(uint160(_entries[runId][index].valueAt(blockNumber)));
    }

    // ------------------------------------------------------------------ internals

    /// @dev Swap-and-pop: the last entry moves into `index` (its record follows) and the list shrinks by one, both
    ///      checkpointed at this block. Returns the moved verifier (zero when `index` was last).
    function _remove(uint256 runId, uint256 index) internal returns (address moved) {
        uint256 last = _size[runId].latestValue() - 1;
        if (index != last) {
            moved = address(uint160(_entries[runId][last].latestValue()));
            records[runId][moved].indexPlusOne = uint32(index + 1);
            _entries[runId][index].push(uint160(moved));
        }
        _size[runId].push(last);
    }
}
