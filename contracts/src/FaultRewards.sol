// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Constants} from "./Constants.sol";
import {PullPayments} from "./base/PullPayments.sol";
import {IFaultRewards} from "./interfaces/IFaultRewards.sol";
import {IModelShares} from "./interfaces/IModelShares.sol";
import {IRunRegistry} from "./interfaces/IRunRegistry.sol";
import {IStakeManager} from "./interfaces/IStakeManager.sol";
import {IVerification} from "./interfaces/IVerification.sol";
import {AttestationRef} from "./interfaces/Types.sol";

/// @title FaultRewards
/// @notice The reward for proving a solver's fault, shared equally by everyone who proved it, whatever order the
///         proofs were finalized or executed in.
/// @dev A commitment's fault can be proven several times: by each fail attestation that stands (finalized after
///      the challenge window, or upheld by a jury) and by each pass attestation a jury overturns. The first proof
///      slashes the solver (Verification; StakeManager takes a fault key once) and sends WINNER_REWARD_BPS of the
///      slash here. Once the round is settled no dispute is open or can open, so the set of proving seats is final
///      (Verification.proverOf): each proving seat's prover (the fail's verifier, the overturned pass's
///      challenger) is credited amount / provers, once. So a cheater's accomplice that holds a seat, or that
///      finalizes or executes first, gets one share like every other prover and never the honest provers' part.
///      What nobody claims (and the division dust) goes to the run's reward pool once REWARD_CLAIM_WINDOW has
///      passed after the unbonding delay that followed the proof (every dispute of the round ends inside that
///      delay, so every prover has at least the window to claim).
///      ETH held: sum over proven faults of (amount - paid, until swept) + credits.
contract FaultRewards is PullPayments, IFaultRewards {
    /// @notice Per faulty commitment: the provers' part of the solver's slash and what was paid of it.
    struct FaultReward {
        // PACKING: one slot, written by the proof and by each claim.
        uint96 amount; // the provers' part of the slash
        uint96 paid; // credited to provers so far
        uint40 provenAt; // when the fault was first proven
        uint8 rewarded; // bitmap of the seats whose share was credited
        bool swept; // the unclaimed rest went to the pool
    }

    address public immutable verification;
    IRunRegistry public immutable runRegistry;
    IStakeManager public immutable stakeManager;
    IModelShares public immutable modelShares;

    mapping(uint256 runId => mapping(uint64 round => mapping(address solver => FaultReward))) internal _rewards;

    /// @notice The provers' part `amount` of the slash of a commitment's fault arrived, to be shared after settlement.
    event FaultRewardFunded(uint256 indexed runId, uint64 indexed round, address indexed solver, uint256 amount);
    /// @notice The prover of seat `slot` was credited its share `amount`, one of `provers` equal shares.
    event FaultRewardClaimed(
        uint256 indexed runId,
        uint64 indexed round,
        address indexed solver,
        uint8 slot,
        address prover,
        uint256 provers,
        uint256 amount
    );
    /// @notice What the provers did not claim in time (`amount`, with the division dust) went to the run's pool.
    event FaultRewardSwept(uint256 indexed runId, uint64 indexed round, address indexed solver, uint256 amount);

    error NotVerification(address caller);
    error AlreadyFunded(uint256 runId, uint64 round, address solver);
    error NotSettled(uint256 runId, uint64 round);
    error NoFaultReward(uint256 runId, uint64 round, address solver);
    error AlreadyRewarded(uint8 slot);
    error ClaimWindowOpen(uint256 closesAt);

    /// @param verification_ Verification (the only funder; it says who proved what).
    /// @param runRegistry_ The RunRegistry (settlement).
    /// @param stakeManager_ The StakeManager (its unbonding delay bounds the round's disputes).
    /// @param modelShares_ ModelShares (the run's reward pool).
    constructor(
        address verification_,
        IRunRegistry runRegistry_,
        IStakeManager stakeManager_,
        IModelShares modelShares_
    ) {
        verification = verification_;
        runRegistry = runRegistry_;
        stakeManager = stakeManager_;
        modelShares = modelShares_;
    }

    /// @inheritdoc IFaultRewards
    function onFaultProven(uint256 runId, uint64 round, address solver) external payable {
        if (msg.sender != verification) revert NotVerification(msg.sender);
        FaultReward storage r = _rewards[runId][round][solver];
        // INVARIANT: one funding per fault (Verification slashes a commitment once): nothing overwrites a pot.
        if (r.provenAt != 0) revert AlreadyFunded(runId, round, solver);
        r.amount = uint96(msg.value);
        r.provenAt = uint40(block.timestamp);
        emit FaultRewardFunded(runId, round, solver, msg.value);
    }

    /// @notice Credit the prover of seat `ref` its equal share of the provers' part of the solver's slash, once the
    ///         round is settled (anyone; the share goes to the prover, withdrawn with `withdraw`). A fail seat
    ///         must be finalized first. Once per seat.
    /// @param ref The proving seat: a fail that stands, or an overturned pass (its challenger is the prover).
    function claimFaultReward(AttestationRef calldata ref) external {
        if (!runRegistry.isSettled(ref.runId, ref.round)) revert NotSettled(ref.runId, ref.round);
        FaultReward memory r = _rewards[ref.runId][ref.round][ref.solver];
        if (r.provenAt == 0 || r.swept) revert NoFaultReward(ref.runId, ref.round, ref.solver);
        uint8 bit = uint8(1) << ref.slot;
        if (r.rewarded & bit != 0) revert AlreadyRewarded(ref.slot);
        (address prover, uint256 provers) = IVerification(verification).proverOf(ref);
        // INVARIANT: settled, so `provers` is final; each proving seat is credited amount / provers once (its bit is
        //            set before the credit): paid <= amount.
        uint256 share = r.amount / provers;
        r.rewarded |= bit;
        r.paid += uint96(share);
        _rewards[ref.runId][ref.round][ref.solver] = r;
        credits[prover] += share;
        emit FaultRewardClaimed(ref.runId, ref.round, ref.solver, ref.slot, prover, provers, share);
    }

    /// @notice Send what the provers of a fault did not claim (and the division dust) to the run's reward pool
    ///         (anyone), once the round is settled and REWARD_CLAIM_WINDOW has passed after the unbonding delay
    ///         that followed the proof. No share can be claimed afterwards.
    /// @param runId The run.
    /// @param round The round.
    /// @param solver The faulty commitment's solver.
    function sweepFaultReward(uint256 runId, uint64 round, address solver) external {
        FaultReward memory r = _rewards[runId][round][solver];
        if (r.provenAt == 0 || r.swept) revert NoFaultReward(runId, round, solver);
        if (!runRegistry.isSettled(runId, round)) revert NotSettled(runId, round);
        uint256 closesAt = uint256(r.provenAt) + stakeManager.unbondingDelay() + Constants.REWARD_CLAIM_WINDOW;
        if (block.timestamp < closesAt) revert ClaimWindowOpen(closesAt);
        uint256 amount = r.amount - r.paid;
        // INVARIANT: swept before the ETH leaves, and claims need !swept: each wei of the pot is paid once.
        _rewards[runId][round][solver].swept = true;
        emit FaultRewardSwept(runId, round, solver, amount);
        if (amount > 0) modelShares.fundPool{value: amount}(runId);
    }

    /// @notice The record of a commitment's fault (zero until the fault is proven).
    /// @param runId The run.
    /// @param round The round.
    /// @param solver The solver.
    /// @return The record.
    function faultRewardOf(uint256 runId, uint64 round, address solver) external view returns (FaultReward memory) {
        return _rewards[runId][round][solver];
    }
}
