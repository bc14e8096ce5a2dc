// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Constants} from "./Constants.sol";
import {IModelShares} from "./interfaces/IModelShares.sol";
import {IRunCreator} from "./interfaces/IRunCreator.sol";
import {IRunShares} from "./interfaces/IRunShares.sol";
import {RunShares} from "./RunShares.sol";

/// @title ModelShares
/// @notice Ownership shares of the runs: deploys each run's ERC-20 (RunShares), is its only minter (for
///         verified work, through Verification and Disputes after settlement), holds each run's reward pool
///         and takes revenue payments. The reward pool is paid out like revenue: at each settled round
///         pool / (rounds left) goes into the run's revenue stream (everything at the last round), and slash
///         proceeds that reach a finished run's pool go straight into the stream.
/// @dev ETH held == sum of the pools (revenue lives in each RunShares contract).
contract ModelShares is IModelShares {
    address public immutable runRegistry;
    address public immutable verification;
    address public immutable disputes;
    address public immutable faultRewards;

    /// @notice A run's share token, its reward pool not yet released, and whether its last round was
    ///         settled (the pool is empty from then on) — one slot.
    struct RunPool {
        // PACKING: one slot; a slot per field costs +24,230 gas per createRun, +4,348 per settle, +3,822 per execute.
        IRunShares token;
        uint88 pool;
        bool finished;
    }

    mapping(uint256 runId => RunPool) internal _runs;
    /// @notice Shares minted per (run, round): never more than the run's sharesPerRound.
    mapping(uint256 runId => mapping(uint64 round => uint256)) public mintedInRound;
    /// @notice When a run's last round was settled (0 before): its unowned revenue is reclaimable only
    ///         UNOWNED_REVENUE_GRACE after it.
    mapping(uint256 runId => uint256) public finishedAt;

    /// @notice A run's share token was deployed with its reward pool.
    event RunSharesCreated(uint256 indexed runId, address token, uint256 releasePeriod, uint256 rewardPool);
    /// @notice ETH was added to a run's reward pool (slash proceeds, dispute remainders).
    event PoolFunded(uint256 indexed runId, address indexed from, uint256 amount, uint256 pool);
    /// @notice Part of a run's reward pool went into its revenue stream at the settlement of `round`.
    event PoolReleased(uint256 indexed runId, uint64 indexed round, uint256 amount, uint256 pool);
    /// @notice Revenue was paid to a run.
    event RevenuePaid(uint256 indexed runId, address indexed payer, uint256 amount);
    /// @notice Shares were minted for verified work.
    event SharesMinted(
        uint256 indexed runId,
        uint64 indexed round,
        address indexed to,
        ShareKind kind,
        uint256 amount,
        uint256 mintedInRound
    );

    error NotRunRegistry(address caller);
    error NotMinter(address caller);
    error NotProtocol(address caller);
    error UnknownRun(uint256 runId);
    error RunExists(uint256 runId);
    error ZeroAmount();
    error PoolOverflow(uint256 amount);
    error RunNotFinished(uint256 runId);
    error ReclaimTooEarly(uint256 reclaimableAt);

    /// @param runRegistry_ The RunRegistry (creates runs, releases pools).
    /// @param verification_ Verification (mints solver and verifier shares, funds pools).
    /// @param disputes_ Disputes (mints juror shares, funds pools).
    /// @param faultRewards_ FaultRewards (funds pools with fault rewards nobody claimed).
    constructor(address runRegistry_, address verification_, address disputes_, address faultRewards_) {
        runRegistry = runRegistry_;
        verification = verification_;
        disputes = disputes_;
        faultRewards = faultRewards_;
    }

    /// @inheritdoc IModelShares
    /// @dev RunRegistry only; `msg.value` is the run's reward pool.
    function createRunShares(uint256 runId, uint32 releasePeriod) external payable returns (address token) {
        if (msg.sender != runRegistry) revert NotRunRegistry(msg.sender);
        if (address(_runs[runId].token) != address(0)) revert RunExists(runId);
        // INVARIANT: the pool is stored without truncation, so balance == sum of pools.
        if (msg.value > type(uint88).max) revert PoolOverflow(msg.value);
        RunShares created = new RunShares(runId, releasePeriod);
        _runs[runId] = RunPool({token: created, pool: uint88(msg.value), finished: false});
        emit RunSharesCreated(runId, address(created), releasePeriod, msg.value);
        return address(created);
    }

    /// @inheritdoc IModelShares
    /// @dev Protocol contracts only (slash proceeds and dispute remainders). For a finished run the ETH goes
    ///      straight into the revenue stream.
    function fundPool(uint256 runId) external payable {
        if (
            msg.sender != runRegistry && msg.sender != verification && msg.sender != disputes
                && msg.sender != faultRewards
        ) {
            revert NotProtocol(msg.sender);
        }
        IRunShares token = _token(runId);
        if (msg.value == 0) revert ZeroAmount();
        // INVARIANT: a finished run's pool is 0 and stays 0: its proceeds are forwarded whole to the revenue stream.
        if (_runs[runId].finished) {
            emit PoolFunded(runId, msg.sender, msg.value, 0);
            emit PoolReleased(runId, type(uint64).max, msg.value, 0);
            token.notifyRevenue{value: msg.value}();
            return;
        }
        uint256 sum = uint256(_runs[runId].pool) + msg.value;
        // INVARIANT: pool += msg.value exactly (no uint88 truncation), so balance == sum of pools.
        if (sum > type(uint88).max) revert PoolOverflow(sum);
        uint88 updated = uint88(sum);
        _runs[runId].pool = updated;
        emit PoolFunded(runId, msg.sender, msg.value, updated);
    }

    /// @inheritdoc IModelShares
    /// @dev RunRegistry only, at settlement: releases pool / roundsRemaining (everything when it is 1).
    function releasePool(uint256 runId, uint64 round, uint256 roundsRemaining) external {
        if (msg.sender != runRegistry) revert NotRunRegistry(msg.sender);
        RunPool memory run = _runs[runId];
        if (address(run.token) == address(0)) revert UnknownRun(runId);
        // INVARIANT: amount <= pool and the last round releases all of it, so no pool wei is stranded.
        uint256 amount = roundsRemaining <= 1 ? run.pool : run.pool / roundsRemaining;
        run.pool -= uint88(amount);
        run.finished = roundsRemaining <= 1;
        _runs[runId] = run;
        if (run.finished) finishedAt[runId] = block.timestamp;
        emit PoolReleased(runId, round, amount, run.pool);
        // INVARIANT: checks-effects-interactions: the pool is reduced before the ETH moves to the share token.
        if (amount > 0) run.token.notifyRevenue{value: amount}();
    }

    /// @notice Pay revenue to a run (anyone): released to the run's share holders over its release period.
    /// @param runId The run.
    function payRevenue(uint256 runId) external payable {
        IRunShares token = _token(runId);
        if (msg.value == 0) revert ZeroAmount();
        emit RevenuePaid(runId, msg.sender, msg.value);
        token.notifyRevenue{value: msg.value}();
    }

    /// @notice Send a finished run's revenue to its creator when no whole share exists (anyone may trigger),
    ///         from UNOWNED_REVENUE_GRACE after the last settlement on: a run that verified no work has no
    ///         owners, and its pool must not stay locked forever. Not before: shares are minted when their
    ///         contributors claim them after settlement, so right after the last settle a run whose work was
    ///         accepted can still have no shares, and its creator must not sweep what they are owed.
    /// @param runId The run.
    function reclaimUnownedRevenue(uint256 runId) external {
        IRunShares token = _token(runId);
        if (!_runs[runId].finished) revert RunNotFinished(runId);
        uint256 reclaimableAt = finishedAt[runId] + Constants.UNOWNED_REVENUE_GRACE;
        // INVARIANT: contributors have the whole grace period to claim their shares before a sweep is possible.
        if (block.timestamp < reclaimableAt) revert ReclaimTooEarly(reclaimableAt);
        token.sweepUnowned(IRunCreator(runRegistry).creatorOf(runId));
    }

    /// @inheritdoc IModelShares
    /// @dev Verification and Disputes only; they mint only for settled rounds, once per contribution.
    function mint(uint256 runId, uint64 round, address to, uint256 amount, ShareKind kind) external {
        if (msg.sender != verification && msg.sender != disputes) revert NotMinter(msg.sender);
        IRunShares token = _token(runId);
        uint256 minted = mintedInRound[runId][round] + amount;
        mintedInRound[runId][round] = minted;
        emit SharesMinted(runId, round, to, kind, amount, minted);
        if (amount > 0) token.mint(to, amount);
    }

    /// @notice The share token of a run.
    /// @param runId The run.
    /// @return The RunShares contract (zero address for an unknown run).
    function shareToken(uint256 runId) external view returns (RunShares) {
        return RunShares(address(_runs[runId].token));
    }

    /// @notice Whether a run's last round was settled (slash proceeds then go straight to its revenue stream).
    /// @param runId The run.
    /// @return True once finished.
    function finished(uint256 runId) external view returns (bool) {
        return _runs[runId].finished;
    }

    /// @notice The reward pool of a run not yet released.
    /// @param runId The run.
    /// @return Wei.
    function pool(uint256 runId) external view returns (uint256) {
        return _runs[runId].pool;
    }

    function _token(uint256 runId) internal view returns (IRunShares token) {
        token = _runs[runId].token;
        if (address(token) == address(0)) revert UnknownRun(runId);
    }
}
