// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Constants} from "./Constants.sol";
import {PullPayments} from "./base/PullPayments.sol";
import {IModelShares} from "./interfaces/IModelShares.sol";
import {IRunCreator} from "./interfaces/IRunCreator.sol";
import {IRunRegistry} from "./interfaces/IRunRegistry.sol";
import {IRunShares} from "./interfaces/IRunShares.sol";
import {RunShares} from "./RunShares.sol";

/// @title ModelShares
/// @notice Ownership shares of the runs: deploys each run's ERC-20 (RunShares), is its only minter (for
///         verified work, through Verification and Disputes after settlement), holds each run's reward pool
///         and takes revenue payments. The reward pool pays the work of each round: at each settled round
///         pool / (rounds left) (everything at the last round) is set aside for that round's contributors, and
///         each mint of the round's shares credits its receiver release * shares / sharesPerRound (pull with
///         `withdraw`), whenever it claims: holders of earlier rounds get none of it, and a contributor loses
///         nothing by claiming late (issue 16). What no contribution claims within REWARD_CLAIM_WINDOW of the
///         settlement (unminted buckets, the division dust) goes back to the pool, or into the revenue stream once
///         the run is finished; slash proceeds reaching a finished run go straight into the stream too.
/// @dev ETH held == sum of the pools + sum over rounds of (release - credited, until swept) + credits (revenue
///      lives in each RunShares contract).
contract ModelShares is IModelShares, PullPayments {
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

    /// @notice A settled round's release, set aside for its contributors.
    struct RoundRelease {
        // PACKING: one slot, written at settlement and by each mint of the round.
        uint96 amount; // pool / rounds left at the settlement
        uint96 credited; // credited to the round's contributors so far
        uint40 settledAt;
        bool swept; // the uncredited rest went back to the pool (or the stream)
    }

    mapping(uint256 runId => RunPool) internal _runs;
    mapping(uint256 runId => mapping(uint64 round => RoundRelease)) internal _releases;
    /// @notice Shares minted per (run, round): never more than the run's sharesPerRound.
    mapping(uint256 runId => mapping(uint64 round => uint256)) public mintedInRound;
    /// @notice When a run's last round was settled (0 before): its unowned revenue is reclaimable only
    ///         UNOWNED_REVENUE_GRACE after it.
    mapping(uint256 runId => uint256) public finishedAt;

    /// @notice A run's share token was deployed with its reward pool.
    event RunSharesCreated(uint256 indexed runId, address token, uint256 releasePeriod, uint256 rewardPool);
    /// @notice ETH was added to a run's reward pool (slash proceeds, dispute remainders).
    event PoolFunded(uint256 indexed runId, address indexed from, uint256 amount, uint256 pool);
    /// @notice Part of a run's reward pool was set aside for the contributors of `round` at its settlement (or, with
    ///         round = type(uint64).max, slash proceeds of a finished run went into its revenue stream).
    event PoolReleased(uint256 indexed runId, uint64 indexed round, uint256 amount, uint256 pool);
    /// @notice A contributor of `round` was credited `amount` of the round's release with its shares.
    event RoundRewardCredited(uint256 indexed runId, uint64 indexed round, address indexed to, uint256 amount);
    /// @notice What the contributors of `round` did not claim in time went back to the pool (or the stream).
    event RoundReleaseSwept(uint256 indexed runId, uint64 indexed round, uint256 amount);
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
    error MintAboveRound(uint256 minted, uint256 sharesPerRound);
    error NotReleased(uint256 runId, uint64 round);
    error ClaimWindowOpen(uint256 closesAt);

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
        if (msg.value == 0) revert ZeroAmount();
        _fund(runId, msg.value, msg.sender);
    }

    /// @inheritdoc IModelShares
    /// @dev RunRegistry only, at settlement: sets pool / roundsRemaining (everything when it is 1) aside for the
    ///      round's contributors; the ETH stays here until they are credited (mint) or it is swept.
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
        // INVARIANT: pool wei only moves into the round's release (amount < 2^88 fits uint96): nothing leaves.
        _releases[runId][round] =
            RoundRelease({amount: uint96(amount), credited: 0, settledAt: uint40(block.timestamp), swept: false});
        emit PoolReleased(runId, round, amount, run.pool);
    }

    /// @notice Send what the contributors of a settled round did not claim within REWARD_CLAIM_WINDOW of the
    ///         settlement (unminted share buckets, the division dust) back to the run's pool, or into its revenue
    ///         stream once the run is finished (anyone). Shares of the round minted later carry no release.
    /// @param runId The run.
    /// @param round The settled round.
    function sweepRoundRelease(uint256 runId, uint64 round) external {
        RoundRelease memory r = _releases[runId][round];
        if (r.settledAt == 0 || r.swept) revert NotReleased(runId, round);
        uint256 closesAt = uint256(r.settledAt) + Constants.REWARD_CLAIM_WINDOW;
        if (block.timestamp < closesAt) revert ClaimWindowOpen(closesAt);
        uint256 amount = uint256(r.amount) - r.credited;
        // INVARIANT: swept before the ETH moves, and mints credit only unswept releases: each wei is paid once.
        _releases[runId][round].swept = true;
        emit RoundReleaseSwept(runId, round, amount);
        if (amount > 0) _fund(runId, amount, address(this));
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
    /// @dev Verification and Disputes only; they mint only for settled rounds, once per contribution. The credit is
    ///      release * amount / sharesPerRound: the round mints at most sharesPerRound (checked), so its credits
    ///      never exceed its release.
    function mint(uint256 runId, uint64 round, address to, uint256 amount, ShareKind kind) external {
        if (msg.sender != verification && msg.sender != disputes) revert NotMinter(msg.sender);
        IRunShares token = _token(runId);
        uint256 perRound = IRunRegistry(runRegistry).sharesPerRound(runId);
        uint256 minted = mintedInRound[runId][round] + amount;
        // INVARIANT: minted <= sharesPerRound, so the sum of a round's credits is <= its release.
        if (minted > perRound) revert MintAboveRound(minted, perRound);
        mintedInRound[runId][round] = minted;
        emit SharesMinted(runId, round, to, kind, amount, minted);
        RoundRelease memory r = _releases[runId][round];
        if (!r.swept && r.amount > 0 && amount > 0) {
            uint256 reward = uint256(r.amount) * amount / perRound;
            _releases[runId][round].credited = r.credited + uint96(reward);
            credits[to] += reward;
            emit RoundRewardCredited(runId, round, to, reward);
        }
        if (amount > 0) token.mint(to, amount);
    }

    /// @notice A settled round's release and what was credited of it.
    /// @param runId The run.
    /// @param round The round.
    /// @return The record (zero until the round is settled).
    function roundReleaseOf(uint256 runId, uint64 round) external view returns (RoundRelease memory) {
        return _releases[runId][round];
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

    /// @dev Into the run's pool, or straight into its revenue stream once the run is finished (its pool is 0 then).
    function _fund(uint256 runId, uint256 amount, address from) internal {
        IRunShares token = _token(runId);
        // INVARIANT: a finished run's pool is 0 and stays 0: its proceeds are forwarded whole to the revenue stream.
        if (_runs[runId].finished) {
            emit PoolFunded(runId, from, amount, 0);
            emit PoolReleased(runId, type(uint64).max, amount, 0);
            token.notifyRevenue{value: amount}();
            return;
        }
        uint256 sum = uint256(_runs[runId].pool) + amount;
        // INVARIANT: pool += amount exactly (no uint88 truncation), so balance == pools + releases + credits.
        if (sum > type(uint88).max) revert PoolOverflow(sum);
        uint88 updated = uint88(sum);
        _runs[runId].pool = updated;
        emit PoolFunded(runId, from, amount, updated);
    }

    function _token(uint256 runId) internal view returns (IRunShares token) {
        token = _runs[runId].token;
        if (address(token) == address(0)) revert UnknownRun(runId);
    }
}
