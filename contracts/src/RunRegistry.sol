// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Constants} from "./Constants.sol";
import {IModelShares} from "./interfaces/IModelShares.sol";
import {IRunCreator} from "./interfaces/IRunCreator.sol";
import {IRunRegistry} from "./interfaces/IRunRegistry.sol";
import {IStakeManager} from "./interfaces/IStakeManager.sol";
import {IVerification} from "./interfaces/IVerification.sol";
import {CommitmentData, LeafData, RunTerms} from "./interfaces/Types.sol";
import {Sampling} from "./libraries/Sampling.sol";
import {SegmentLeaf} from "./libraries/SegmentLeaf.sol";

/// @title RunRegistry
/// @notice Runs, their rounds, solver commitments, theta_(r+1) claims and round settlement.
/// @dev One round of a run is open at a time. Round r starts at `roundStart` (run creation + `startDelay` for
///      round 0, the settlement of round r-1 afterwards) and runs through fixed windows:
///        [start, commitEnd)            solvers commit (one commitment per solver and round), in blocks
///                                      before the round's seed block
///        [commitEnd, attestEnd)        the seed is drawn from the seed block's hash and verifiers attest
///                                      (Verification)
///        [attest time, challengeEnd)   attestations can be challenged (Disputes)
///        challengeEnd + no open dispute: anyone posts the theta_(r+1) claim with a bond
///        [claim time, + challengeWindow) the claim can be challenged once
///        then `settle` closes the round in O(1) and opens round r+1.
///      A commitment is one storage write: the slot of (run, solver) holds the round and the first 28
///      bytes of keccak256(abi.encode(root, deltaHash, tokens)); joining the run creates that slot,
///      so every commit rewrites a warm-able non-zero slot. The fields go into the `Committed` event.
///      Seed block: when a round starts (settle) in block B, its seed block is fixed at
///      B + ceil(commitWindow / blockSeconds), blockSeconds being the chain's block time declared at deployment (`roundTimes(run).seedBlock`); Verification.drawSeed
///      takes the round's seed from that block's hash, which no commitment of the round can have seen. Round 0's is
///      fixed at creation, in block B: B + ceil((startDelay + commitWindow) / blockSeconds).
///      Start delay: before round 0's start (`roundTimes(run).start`) solvers join, verifiers register and solvers
///      anchor their plant chains; `commit` reverts RoundNotStarted until then, and every window is counted from the
///      start, so nothing else needs to know about the delay.
///      ETH held: the bonds of claims that are posted, challenged, upheld, or settled and not yet withdrawn.
contract RunRegistry is IRunRegistry, IRunCreator {
    /// @notice Hot state of a run: everything `commit` and `settle` read, in one slot. The run is finished
    ///         once `round` reaches `maxRounds`.
    struct RunState {
        // PACKING: one slot; a slot per field costs +12,415 gas per commit, +30,842 per settle, +18,831 per challenge.
        //          Hence round in 24 bits (< maxRounds < 2^24) and solverMinStake in 88 (checked at createRun).
        uint40 roundStart;
        uint24 round;
        uint32 commitWindow;
        uint88 solverMinStake;
        uint16 openDisputes;
        uint16 numSegments;
        uint24 maxRounds;
        // Commitments of the current round neither opened nor reported unopened (open, reportUnopened); settle
        // needs 0.
        uint16 unresolved;
    }

    /// @notice The rest of a run's configuration.
    struct RunInfo {
        // PACKING: one slot; a slot per field costs +88,173 gas per createRun (reads of it gain only 18 gas).
        uint128 sharesPerRound;
        uint32 innerSteps;
        uint32 stepsPerSegment;
        uint32 maxRounds;
        uint32 revenueReleasePeriod;
    }

    /// @notice A solver's latest commitment in a run: round + 1 (0 = joined, never committed), whether it was
    ///         opened (reset by each commit), and its hash.
    struct Commitment {
        // PACKING: round, opening and a 224-bit hash in one slot (round + 1 <= maxRounds < 2^24); apart they cost
        //          +22,178 gas on a first commit (+5,102 on later ones) and +2,095 per attest and per challenge.
        uint24 roundPlusOne;
        Opening opening;
        bytes28 hash;
    }

    /// @notice Status of a round's theta_(r+1) claim.
    enum ClaimStatus {
        None, // no claim (or the last one was rejected)
        Posted, // claimed, challengeable until windowEnd = claim time + challengeWindow
        Challenged, // a dispute is open over it
        Upheld, // survived its dispute (or the dispute expired)
        Settled // the round is settled with it
    }

    /// @notice The claim of a round (thetaHash is theta_(r+1) once settled). The bond stays here until
    ///         the claimer withdraws it after settlement (`bondPaid`) or a jury rejects the claim.
    struct Claim {
        // PACKING: claimer..bondPaid share one slot; a slot per field costs +46,001 gas per postClaim, +21,054 per
        //          withdrawClaimBond, +8,223 per settle.
        bytes32 thetaHash;
        address claimer;
        uint40 windowEnd;
        uint16 nonce;
        ClaimStatus status;
        bool bondPaid;
    }

    bytes28 internal constant JOINED = bytes28(uint224(1));
    /// @dev Commitment hash of a solver that left the run (its reservation released; it cannot commit or rejoin).
    bytes28 internal constant LEFT = bytes28(uint224(2));

    IStakeManager public immutable stakeManager;
    IVerification public immutable verification;
    address public immutable disputes;
    IModelShares public immutable modelShares;
    /// @notice The chain's block time in seconds, declared at deployment: every block is at least this long after its
    ///         parent (12 on a 12-second-slot chain, 1 on anvil). Seed blocks are counted in it and every run's windows
    ///         are checked against it (`createRun`), so a slow chain never voids every round.
    uint256 public immutable blockSeconds;

    /// @notice Number of runs created; run ids are 1..runCount.
    uint256 public runCount;
    mapping(uint256 runId => RunState) internal _state;
    mapping(uint256 runId => RunParams) internal _params;
    mapping(uint256 runId => RunEconomics) internal _economics;
    mapping(uint256 runId => DisputeTerms) internal _terms;
    mapping(uint256 runId => RunInfo) internal _info;
    /// @notice theta_0 state hash of each run.
    mapping(uint256 runId => bytes32) public theta0Hash;
    /// @inheritdoc IRunCreator
    mapping(uint256 runId => address) public creatorOf;
    mapping(uint256 runId => mapping(address solver => Commitment)) internal _commitments;
    mapping(uint256 runId => mapping(uint64 round => Claim)) internal _claims;
    // Seed block of each run's current round: one slot per run, not one per (run, round), so settle rewrites a
    // non-zero slot (~5,000 gas) instead of filling a fresh one (~22,100). Only the current round needs it: drawSeed
    // runs while its round is current (inside its attest window, hence before settle); SeedDrawn records it.
    // INVARIANT: every commitment of a round lands in a block before its seed block. A round fixed at time c in
    //          block B (its creation for round 0, its start for later rounds) starts at start = c + D (D = startDelay
    //          for round 0, 0 afterwards) and has seedBlock = B + ceil((D + Wc) / T), T = blockSeconds. A commit at
    //          time t < commitEnd = c + D + Wc lands in a block b with (b - B) * T <= t - c (each block is at least T
    //          after its parent), so b - B <= (t - c) / T < (D + Wc) / T <= ceil((D + Wc) / T): b < seedBlock.
    //          `commit` also reverts from the seed block on, so even a chain faster than T never lets a commitment
    //          see its seed.
    mapping(uint256 runId => uint256) internal _seedBlock;

    /// @notice A run was created; `config` is everything it was created with, `rewardPool` the ETH sent.
    event RunCreated(
        uint256 indexed runId, address indexed creator, RunTerms config, address shareToken, uint256 rewardPool
    );
    /// @notice Round `round` of a run opened at `start`, training from `thetaHash`.
    event RoundStarted(uint256 indexed runId, uint64 indexed round, uint256 start, bytes32 thetaHash);
    /// @notice A solver joined a run (created its commitment slot).
    event SolverJoined(uint256 indexed runId, address indexed solver);
    /// @notice A solver left the run: its solverMinStake reservation was released; it commits here no more.
    event SolverLeft(uint256 indexed runId, address indexed solver);
    /// @notice A solver committed for a round. Everything a verifier and an auditor need is here.
    event Committed(
        uint256 indexed runId,
        uint64 indexed round,
        address indexed solver,
        bytes32 root,
        bytes32 deltaHash,
        uint32 numSegments,
        uint64 tokens
    );
    /// @notice A theta_(r+1) claim was posted with a bond.
    event ThetaClaimed(
        uint256 indexed runId,
        uint64 indexed round,
        address indexed claimer,
        bytes32 thetaHash,
        uint16 nonce,
        uint256 bond
    );
    /// @notice A claim's dispute ended: Upheld (it stands) or None (rejected by a jury, or no verdict after every
    ///         appeal: removed, its bond sent to the Disputes contract, a new claim may be posted).
    ///         Its challenge is recorded by Disputes' ClaimChallenged event.
    event ClaimResolved(
        uint256 indexed runId, uint64 indexed round, uint16 nonce, ClaimStatus status, uint256 bondForfeited
    );
    /// @notice The sampled leaves of a commitment were opened (by `opener`, normally its solver). `openCall` is the
    ///         whole `open` call data (selector and ABI-encoded arguments): its `leaves[q * samples + j]` is the
    ///         leaf of draw j of seat q, for seats 0 .. min(verifiersPerCommitment, verifierCount) - 1, and
    ///         `proofs[q * samples + j]` its proof, so a fail or a challenge can name them even if the solver
    ///         serves nothing.
    event CommitmentOpened(
        uint256 indexed runId, uint64 indexed round, address indexed solver, address opener, bytes openCall
    );
    /// @notice A commitment was not opened by its deadline and `reporter` said so. `slashed`: the seed had been
    ///         drawn, so the solver could have opened (UnopenedSlashed follows); otherwise nobody could open and
    ///         the commitment is only void.
    event CommitmentUnopened(
        uint256 indexed runId, uint64 indexed round, address indexed solver, address reporter, bool slashed
    );
    /// @notice The solver of an unopened commitment was slashed; all of `taken` went to the run's reward pool.
    event UnopenedSlashed(
        uint256 indexed runId, uint64 indexed round, address indexed solver, bytes32 faultKey, uint256 taken
    );
    /// @notice A round was settled: theta_(r+1) is `thetaHash` (the claim with `nonce`).
    event RoundSettled(uint256 indexed runId, uint64 indexed round, bytes32 thetaHash, address claimer, uint16 nonce);
    /// @notice The last round of a run was settled; nothing more can be committed.
    event RunFinished(uint256 indexed runId, uint64 rounds);
    /// @notice A settled claim's bond went back to its claimer.
    event ClaimBondWithdrawn(uint256 indexed runId, uint64 indexed round, address indexed claimer, uint256 amount);

    error InvalidConfig(string reason);
    error UnknownRun(uint256 runId);
    error RunIsFinished(uint256 runId);
    error WrongRound(uint64 given, uint64 current);
    error CommitWindowClosed(uint256 commitEnd);
    error RoundNotStarted(uint256 start);
    error SeedBlockReached(uint256 seedBlock);
    error NotJoined(uint256 runId, address solver);
    error AlreadyJoined(uint256 runId, address solver);
    error AlreadyCommitted(uint256 runId, uint64 round, address solver);
    error StakeNotCovered(address account);
    error CommitmentPending(uint256 runId, uint64 round);
    error EmptyCommitment();
    error CommitmentMismatch(uint256 runId, uint64 round, address solver);
    error ChallengeWindowOpen(uint256 challengeEnd);
    error DisputesOpen(uint256 openDisputes);
    error ClaimExists(ClaimStatus status);
    error NoClaim();
    error WrongBond(uint256 sent, uint256 required);
    error ClaimNotChallengeable(ClaimStatus status);
    error WrongClaimNonce(uint16 given, uint16 current);
    error ClaimWindowClosed(uint256 windowEnd);
    error ClaimWindowOpen(uint256 windowEnd);
    error NotDisputes(address caller);
    error NotClaimer(address caller);
    error NotSettledClaim(ClaimStatus status);
    error BondAlreadyPaid();
    error TransferFailed(address to, uint256 amount);
    error TooManyCommitments(uint256 runId, uint64 round);
    error CommitmentsUnresolved(uint256 unresolved);
    error OpenWindowClosed(uint256 openEnd);
    error OpenWindowOpen(uint256 deadline);
    error SeedNotDrawn(uint256 runId, uint64 round);
    error WrongOpeningLength(uint256 leaves, uint256 proofs, uint256 required);
    error InvalidLeafProof(uint256 entry);
    error AlreadyResolved(Opening opening);
    error NotCommitted(uint256 runId, uint64 round, address solver);
    error NotOpened(uint256 runId, uint64 round, address solver);
    error UnexpectedEther(address from);

    modifier onlyDisputes() {
        if (msg.sender != disputes) revert NotDisputes(msg.sender);
        _;
    }

    /// @param stakeManager_ The StakeManager.
    /// @param verification_ The Verification contract (told when a solver joins, to create its status slot).
    /// @param disputes_ The Disputes contract (the only caller of the dispute hooks).
    /// @param modelShares_ ModelShares (share tokens and reward pools).
    /// @param blockSeconds_ The chain's block time (seconds between blocks, at least), in [MIN_BLOCK_SECONDS,
    ///        MAX_BLOCK_SECONDS].
    constructor(
        IStakeManager stakeManager_,
        IVerification verification_,
        address disputes_,
        IModelShares modelShares_,
        uint256 blockSeconds_
    ) {
        if (blockSeconds_ < Constants.MIN_BLOCK_SECONDS || blockSeconds_ > Constants.MAX_BLOCK_SECONDS) {
            revert InvalidConfig("blockSeconds must be in [MIN_BLOCK_SECONDS, MAX_BLOCK_SECONDS]");
        }
        blockSeconds = blockSeconds_;
        stakeManager = stakeManager_;
        verification = verification_;
        disputes = disputes_;
        modelShares = modelShares_;
    }

    // ------------------------------------------------------------------ runs

    /// @notice Create a run; `msg.value` is its reward pool, paid out to share holders as rounds settle. Round 0
    ///         starts `config.startDelay` seconds from now (at most MAX_START_DELAY): solvers can join, verifiers
    ///         register and solvers anchor their plant chains before anything can be committed.
    /// @param config The run's configuration (see RunTerms); validated here.
    /// @return runId The new run's id (1, 2, ...).
    function createRun(RunTerms calldata config) external payable returns (uint256 runId) {
        _validate(config);
        runId = ++runCount;
        uint256 start = block.timestamp + config.startDelay;
        _state[runId] = RunState({
            roundStart: uint40(start),
            round: 0,
            commitWindow: config.commitWindow,
            solverMinStake: uint88(config.solverMinStake),
            openDisputes: 0,
            numSegments: uint16(config.innerSteps / config.stepsPerSegment),
            maxRounds: uint24(config.maxRounds),
            unresolved: 0
        });
        _params[runId] = RunParams({
            attestWindow: config.attestWindow,
            challengeWindow: config.challengeWindow,
            disputeTimeout: config.disputeTimeout,
            numSegments: config.innerSteps / config.stepsPerSegment,
            samples: config.samplesPerCommitment,
            verifiers: config.verifiersPerCommitment,
            jurySize: config.jurySize,
            attestationBond: config.attestationBond
        });
        _economics[runId] = RunEconomics({
            challengeBond: config.challengeBond,
            verifierMinStake: config.verifierMinStake,
            solverShareBps: config.solverShareBps,
            verifierShareBps: config.verifierShareBps,
            jurorShareBps: config.jurorShareBps
        });
        _terms[runId] = DisputeTerms({
            challengeBond: config.challengeBond, disputeTimeout: config.disputeTimeout, jurySize: config.jurySize
        });
        _info[runId] = RunInfo({
            sharesPerRound: config.sharesPerRound,
            innerSteps: config.innerSteps,
            stepsPerSegment: config.stepsPerSegment,
            maxRounds: config.maxRounds,
            revenueReleasePeriod: config.revenueReleasePeriod
        });
        theta0Hash[runId] = config.theta0Hash;
        creatorOf[runId] = msg.sender;
        // INVARIANT: counted from this block, so every commit before commitEnd = start + commitWindow lands before it.
        _seedBlock[runId] = _seedBlockFrom(uint256(config.startDelay) + config.commitWindow);
        // INVARIANT: all of msg.value goes to the run's pool (after every write): this balance holds claim bonds only.
        address token = modelShares.createRunShares{value: msg.value}(runId, config.revenueReleasePeriod);
        emit RunCreated(runId, msg.sender, config, token, msg.value);
        emit RoundStarted(runId, 0, start, config.theta0Hash);
    }

    /// @notice Join a run as a solver: creates the caller's commitment slot (so each commit is one
    ///         rewrite of it). Needs the run's solver stake.
    /// @param runId The run.
    function join(uint256 runId) external {
        RunState memory state = _existing(runId);
        if (state.round >= state.maxRounds) revert RunIsFinished(runId);
        if (_commitments[runId][msg.sender].hash != bytes28(0)) revert AlreadyJoined(runId, msg.sender);
        _commitments[runId][msg.sender] = Commitment({roundPlusOne: 0, opening: Opening.None, hash: JOINED});
        emit SolverJoined(runId, msg.sender);
        verification.onSolverJoined(runId, msg.sender);
        // INVARIANT: a member of a run has solverMinStake reserved (reverts unless that much bonded stake is free).
        stakeManager.reserve(msg.sender, Constants.ROLE_SOLVER, state.solverMinStake);
    }

    /// @notice Leave a run (a solver of it): releases the solverMinStake reserved by `join`. Possible once the
    ///         caller's latest commitment's round has settled (or it never committed); it cannot commit or rejoin
    ///         here afterwards.
    /// @param runId The run.
    function leaveRun(uint256 runId) external {
        RunState memory state = _existing(runId);
        Commitment storage c = _commitments[runId][msg.sender];
        if (c.hash == bytes28(0) || c.hash == LEFT) revert NotJoined(runId, msg.sender);
        // INVARIANT: a commitment's reservation lasts until its round settles (rounds advance only by settle).
        if (c.roundPlusOne == state.round + 1 && state.round < state.maxRounds) {
            revert CommitmentPending(runId, state.round);
        }
        c.hash = LEFT;
        emit SolverLeft(runId, msg.sender);
        stakeManager.release(msg.sender, Constants.ROLE_SOLVER, state.solverMinStake);
    }

    /// @notice Commit to this round's training: the Merkle root of the segment leaves, the pseudo-
    ///         gradient's state hash and the tokens trained on. One per solver and round, inside the
    ///         commit window (from the round's start: `RoundNotStarted` during round 0's start delay) and before the
    ///         round's seed block (`SeedBlockReached` otherwise, even while the
    ///         window's time is open), with bonded solver stake of at least the run's minimum.
    /// @param runId The run.
    /// @param round The current round of the run.
    /// @param root Merkle root of the segment leaves (protocol.merkle).
    /// @param deltaHash State hash of the pseudo-gradient theta_r - c_H.
    /// @param tokens Tokens trained on this round (the sum over the leaves).
    function commit(uint256 runId, uint64 round, bytes32 root, bytes32 deltaHash, uint64 tokens) external {
        RunState memory state = _current(runId, round);
        if (block.timestamp < state.roundStart) revert RoundNotStarted(state.roundStart);
        uint256 commitEnd = uint256(state.roundStart) + state.commitWindow;
        if (block.timestamp >= commitEnd) revert CommitWindowClosed(commitEnd);
        uint256 seedBlock = _seedBlock[runId];
        // INVARIANT: no commitment lands in or after its round's seed block, so none can depend on the seed.
        if (block.number >= seedBlock) revert SeedBlockReached(seedBlock);
        if (root == bytes32(0) || tokens == 0) revert EmptyCommitment();
        Commitment memory previous = _commitments[runId][msg.sender];
        if (previous.hash == bytes28(0)) revert NotJoined(runId, msg.sender);
        if (previous.roundPlusOne == round + 1) revert AlreadyCommitted(runId, round, msg.sender);
        if (previous.hash == LEFT) revert NotJoined(runId, msg.sender);
        // INVARIANT: the solver's stake covers all it reserved (solverMinStake per run it is in), so this commitment is
        //            backed by its own stake; _validate's window rule keeps it slashable for every fault.
        if (!stakeManager.isCovered(msg.sender, Constants.ROLE_SOLVER)) revert StakeNotCovered(msg.sender);
        if (state.unresolved == type(uint16).max) revert TooManyCommitments(runId, round);
        // INVARIANT: unresolved counts this round's commitments not yet opened or reported: settle waits for 0, so
        //            every commitment ends opened (checkable) or reported (slashed) before its round can close.
        _state[runId].unresolved = state.unresolved + 1;
        _commitments[runId][msg.sender] = Commitment({
            roundPlusOne: uint24(round + 1), opening: Opening.None, hash: _commitmentHash(root, deltaHash, tokens)
        });
        emit Committed(runId, round, msg.sender, root, deltaHash, state.numSegments, tokens);
    }

    // ------------------------------------------------------------------ opening

    /// @notice Open a commitment of the current round (anyone; normally its solver): prove, under the committed
    ///         root, the leaf of every sampled segment of every seat, after the round's seed is drawn and before
    ///         `roundTimes(run).openEnd` (commitEnd + attestWindow / 2). Only an opened commitment can be attested
    ///         or disputed (`checkCommitment`), so a root nobody can open for (run, round, solver) -- random,
    ///         copied from another solver or round, with missing leaves -- is never paid, and `reportUnopened`
    ///         slashes it after the deadline.
    /// @param runId The run.
    /// @param round The current round.
    /// @param solver The committing solver.
    /// @param commitment The solver's commitment fields (checked against the stored hash).
    /// @param leaves `leaves[q * samples + j]`: the leaf of draw j of seat q (Verification.sampledSegment(run,
    ///        round, solver, q, j)), for seats 0 .. min(verifiersPerCommitment, the round's verifierCount) - 1.
    /// @param proofs Merkle proof of each leaf under `commitment.root`, in the same order.
    function open(
        uint256 runId,
        uint64 round,
        address solver,
        CommitmentData calldata commitment,
        LeafData[] calldata leaves,
        bytes32[][] calldata proofs
    ) external {
        RunParams memory p = _openable(runId, round, solver, commitment);
        (bytes32 seed, uint256 seats) = _openingSeed(runId, round, solver, p.verifiers);
        _proveOpening(
            SegmentLeaf.Leaf(runId, round, solver, 0, 0, 0, 0, 0), seed, seats, p, commitment.root, leaves, proofs
        );
        _commitments[runId][solver].opening = Opening.Opened;
        // INVARIANT: each commitment leaves `unresolved` once: only from Opening.None (checked by _openable).
        _state[runId].unresolved -= 1;
        emit CommitmentOpened(runId, round, solver, msg.sender, msg.data);
    }

    /// @notice Report a commitment of the current round that was not opened by its deadline (anyone). If the
    ///         round's seed was drawn (from `openEnd` on), the solver could have opened: it is slashed
    ///         `solverMinStake` under the same fault key as a proven bad segment (so at most once per commitment),
    ///         all of it to the run's reward pool -- none to the reporter, so a solver reporting itself recovers
    ///         nothing. If the seed was never drawn (Verification.drawSeed closes at `openEnd` too), nobody could
    ///         open: the commitment is only void. Either way the round can settle only once every commitment is
    ///         opened or reported.
    /// @param runId The run.
    /// @param round The current round.
    /// @param solver The committing solver.
    function reportUnopened(uint256 runId, uint64 round, address solver) external {
        RunState memory state = _current(runId, round);
        Commitment storage slot = _commitments[runId][solver];
        if (slot.roundPlusOne != round + 1) revert NotCommitted(runId, round, solver);
        if (slot.opening != Opening.None) revert AlreadyResolved(slot.opening);
        uint256 openEnd = uint256(state.roundStart) + state.commitWindow + _params[runId].attestWindow / 2;
        if (block.timestamp < openEnd) revert OpenWindowOpen(openEnd);
        // INVARIANT: a seed can only be drawn before openEnd (Verification.drawSeed), so "drawn" here means the
        //            solver had the seed while `open` was still possible: only then is not opening a fault.
        (bool drawn,,) = verification.seedOf(runId, round);
        slot.opening = Opening.Unopened;
        _state[runId].unresolved = state.unresolved - 1;
        emit CommitmentUnopened(runId, round, solver, msg.sender, drawn);
        if (!drawn) return;
        // INVARIANT: the same key as a proven bad segment (Verification, Disputes): a commitment is slashed once.
        bytes32 faultKey = keccak256(abi.encode(Constants.FAULT_SOLVER, runId, round, solver));
        uint256 taken = stakeManager.slash(solver, Constants.ROLE_SOLVER, state.solverMinStake, faultKey);
        emit UnopenedSlashed(runId, round, solver, faultKey, taken);
        // INVARIANT: every slashed wei goes on to the pool in this call: this contract keeps none of it.
        if (taken > 0) modelShares.fundPool{value: taken}(runId);
    }

    /// @notice Slash proceeds of an unopened commitment, from the StakeManager (forwarded to the pool at once).
    receive() external payable {
        if (msg.sender != address(stakeManager)) revert UnexpectedEther(msg.sender);
    }

    // ------------------------------------------------------------------ claims and settlement

    /// @notice Post the claimed theta_(r+1) state hash of the current round, with a bond equal to the run's
    ///         challenge bond. Allowed once the attestation challenge window has closed and every dispute
    ///         of the round is resolved (the accepted pseudo-gradients are then final).
    /// @param runId The run.
    /// @param round The current round.
    /// @param thetaHash State hash of theta_(r+1) = outer step over the accepted pseudo-gradients.
    function postClaim(uint256 runId, uint64 round, bytes32 thetaHash) external payable {
        RunState memory state = _current(runId, round);
        RunParams memory p = _loadParams(runId);
        uint256 challengeEnd = uint256(state.roundStart) + state.commitWindow + p.attestWindow + p.challengeWindow;
        if (block.timestamp < challengeEnd) revert ChallengeWindowOpen(challengeEnd);
        if (state.openDisputes != 0) revert DisputesOpen(state.openDisputes);
        Claim storage claim = _claims[runId][round];
        if (claim.status != ClaimStatus.None) revert ClaimExists(claim.status);
        uint256 bond = _terms[runId].challengeBond;
        // INVARIANT: a claim holds exactly the run's fixed challengeBond, what its withdrawal or forfeit pays out.
        if (msg.value != bond) revert WrongBond(msg.value, bond);
        claim.thetaHash = thetaHash;
        claim.claimer = msg.sender;
        claim.windowEnd = uint40(block.timestamp + p.challengeWindow);
        claim.status = ClaimStatus.Posted;
        emit ThetaClaimed(runId, round, msg.sender, thetaHash, claim.nonce, bond);
    }

    /// @notice Settle the current round with its claim: sets theta_(r+1), releases this round's part of the
    ///         reward pool into the share token and opens the next round. O(1): shares are minted afterwards
    ///         by each contributor (Verification, Disputes); the claimer withdraws its bond.
    /// @param runId The run.
    /// @param round The current round.
    function settle(uint256 runId, uint64 round) external {
        RunState memory state = _current(runId, round);
        // INVARIANT: no open dispute at settlement: the round's share denominators (totals, jurorVotes) are final.
        if (state.openDisputes != 0) revert DisputesOpen(state.openDisputes);
        // INVARIANT: no commitment escapes both opening and the unopened slash: each was resolved (Verification).
        if (state.unresolved != 0) revert CommitmentsUnresolved(state.unresolved);
        Claim storage claim = _claims[runId][round];
        Claim memory c = claim;
        if (c.status == ClaimStatus.Posted) {
            if (block.timestamp < c.windowEnd) revert ClaimWindowOpen(c.windowEnd);
        } else if (c.status != ClaimStatus.Upheld) {
            revert NoClaim();
        }
        claim.status = ClaimStatus.Settled;
        uint64 next = round + 1;
        state.round = uint24(next);
        state.roundStart = uint40(block.timestamp);
        _state[runId] = state;
        _seedBlock[runId] = _seedBlockFrom(state.commitWindow);
        emit RoundSettled(runId, round, c.thetaHash, c.claimer, c.nonce);
        if (next >= state.maxRounds) emit RunFinished(runId, next);
        else emit RoundStarted(runId, next, block.timestamp, c.thetaHash);
        // INVARIANT: checks-effects-interactions: the claim is Settled and the round advanced before the pool call.
        modelShares.releasePool(runId, round, uint256(state.maxRounds) - round);
    }

    /// @notice Withdraw the bond of a settled claim (the claimer only, once).
    /// @param runId The run.
    /// @param round The settled round.
    function withdrawClaimBond(uint256 runId, uint64 round) external {
        Claim storage claim = _claims[runId][round];
        if (claim.claimer != msg.sender) revert NotClaimer(msg.sender);
        if (claim.status != ClaimStatus.Settled) revert NotSettledClaim(claim.status);
        if (claim.bondPaid) revert BondAlreadyPaid();
        // INVARIANT: checks-effects-interactions: bondPaid is set before the bond is sent, so it is paid once.
        claim.bondPaid = true;
        uint256 amount = _terms[runId].challengeBond;
        emit ClaimBondWithdrawn(runId, round, msg.sender, amount);
        (bool ok,) = msg.sender.call{value: amount}("");
        if (!ok) revert TransferFailed(msg.sender, amount);
    }

    // ------------------------------------------------------------------ hooks for Disputes

    /// @notice A dispute over an attestation of the current round opened (Disputes only): checks the
    ///         challenged commitment's fields against the stored hash and counts one more open dispute.
    /// @param runId The run.
    /// @param round The attestation's round (must be current).
    /// @param solver The committing solver.
    /// @param commitment The commitment fields the challenger passed.
    /// @return The run's dispute terms (bond, timeout, jury size).
    function onDisputeOpened(uint256 runId, uint64 round, address solver, CommitmentData calldata commitment)
        external
        onlyDisputes
        returns (DisputeTerms memory)
    {
        RunState storage state = _state[runId];
        if (round != state.round) revert WrongRound(round, state.round);
        // INVARIANT: only opened commitments are disputed (an attestation already implies it; checked again here).
        if (_checkCommitment(runId, round, solver, commitment).opening != Opening.Opened) {
            revert NotOpened(runId, round, solver);
        }
        state.openDisputes += 1;
        return _terms[runId];
    }

    /// @notice A dispute of the current round was executed or expired (Disputes only).
    /// @param runId The run.
    function onDisputeClosed(uint256 runId) external onlyDisputes {
        _state[runId].openDisputes -= 1;
    }

    /// @notice The current round's claim is challenged (Disputes only); it can be challenged once,
    ///         inside its challenge window. Counts as an open dispute (recorded by Disputes' event).
    /// @param runId The run.
    /// @param round The current round.
    /// @param claimNonce The claim's nonce (bumped each time a claim is rejected).
    /// @return claimer Who posted the claim.
    function onClaimChallenged(uint256 runId, uint64 round, uint16 claimNonce)
        external
        onlyDisputes
        returns (address claimer)
    {
        RunState storage state = _state[runId];
        if (round != state.round) revert WrongRound(round, state.round);
        Claim storage claim = _claims[runId][round];
        if (claim.status != ClaimStatus.Posted) revert ClaimNotChallengeable(claim.status);
        if (claimNonce != claim.nonce) revert WrongClaimNonce(claimNonce, claim.nonce);
        if (block.timestamp >= claim.windowEnd) revert ClaimWindowClosed(claim.windowEnd);
        claim.status = ClaimStatus.Challenged;
        state.openDisputes += 1;
        return claim.claimer;
    }

    /// @notice The dispute over the current round's claim ended (Disputes only). A rejected claim is removed (a new
    ///         one can be posted) and its bond sent to Disputes for payout; an unresolved one (no verdict after
    ///         every appeal) is removed the same way and its bond sent to Disputes, which returns it to the claimer.
    /// @param runId The run.
    /// @param round The current round.
    /// @param outcome Rejected, Upheld or Unresolved.
    /// @return bond The claim bond sent to Disputes (0 when upheld).
    function onClaimResolved(uint256 runId, uint64 round, ClaimOutcome outcome)
        external
        onlyDisputes
        returns (uint256 bond)
    {
        RunState storage state = _state[runId];
        Claim storage claim = _claims[runId][round];
        if (round != state.round || claim.status != ClaimStatus.Challenged) revert ClaimNotChallengeable(claim.status);
        state.openDisputes -= 1;
        uint16 nonce = claim.nonce;
        if (outcome == ClaimOutcome.Upheld) {
            claim.status = ClaimStatus.Upheld;
            emit ClaimResolved(runId, round, nonce, ClaimStatus.Upheld, 0);
            return 0;
        }
        bond = _terms[runId].challengeBond;
        // INVARIANT: the claim is deleted before its bond goes to Disputes, so the bond leaves once.
        delete _claims[runId][round];
        _claims[runId][round].nonce = nonce + 1;
        emit ClaimResolved(runId, round, nonce, ClaimStatus.None, bond);
        (bool ok,) = msg.sender.call{value: bond}("");
        if (!ok) revert TransferFailed(msg.sender, bond);
    }

    // ------------------------------------------------------------------ views

    /// @inheritdoc IRunRegistry
    function checkCommitment(uint256 runId, uint64 round, address solver, CommitmentData calldata commitment)
        external
        view
    {
        // INVARIANT: Verification attests only opened commitments (attestPass and attestFail call this first).
        if (_checkCommitment(runId, round, solver, commitment).opening != Opening.Opened) {
            revert NotOpened(runId, round, solver);
        }
    }

    /// @notice Whether `solver`'s commitment of `round` was opened or reported unopened (None: neither yet, or the
    ///         solver's latest commitment is of another round).
    /// @param runId The run.
    /// @param round The round.
    /// @param solver The solver.
    /// @return The commitment's Opening.
    function openingOf(uint256 runId, uint64 round, address solver) external view returns (Opening) {
        Commitment memory c = _commitments[runId][solver];
        return c.roundPlusOne == round + 1 ? c.opening : Opening.None;
    }

    /// @notice A solver's latest commitment slot in a run.
    /// @param runId The run.
    /// @param solver The solver.
    /// @return round The round of the latest commitment (meaningful only if `committed`).
    /// @return committed Whether the solver ever committed in this run.
    /// @return hash First 28 bytes of keccak256(abi.encode(root, deltaHash, tokens)); JOINED marker before, LEFT after
    ///         `leaveRun`.
    function commitmentOf(uint256 runId, address solver)
        external
        view
        returns (uint64 round, bool committed, bytes28 hash)
    {
        Commitment memory c = _commitments[runId][solver];
        committed = c.roundPlusOne != 0;
        round = committed ? c.roundPlusOne - 1 : 0;
        hash = c.hash;
    }

    /// @notice Whether a solver joined a run.
    /// @param runId The run.
    /// @param solver The solver.
    /// @return True after `join`.
    function hasJoined(uint256 runId, address solver) external view returns (bool) {
        return _commitments[runId][solver].hash != bytes28(0);
    }

    /// @inheritdoc IRunRegistry
    function runParams(uint256 runId) external view returns (RunParams memory) {
        _existing(runId);
        return _loadParams(runId);
    }

    /// @inheritdoc IRunRegistry
    function runEconomics(uint256 runId) external view returns (RunEconomics memory) {
        _existing(runId);
        return _economics[runId];
    }

    /// @notice Shares per round, H, k, rounds and the revenue release period of a run.
    /// @param runId The run.
    /// @return The run's RunInfo.
    function runInfo(uint256 runId) external view returns (RunInfo memory) {
        _existing(runId);
        return _info[runId];
    }

    /// @notice The hot state of a run (round, round start, open disputes, ...).
    /// @param runId The run.
    /// @return The run's RunState.
    function runState(uint256 runId) external view returns (RunState memory) {
        return _existing(runId);
    }

    /// @inheritdoc IRunRegistry
    function disputeTerms(uint256 runId) external view returns (DisputeTerms memory) {
        _existing(runId);
        return _terms[runId];
    }

    /// @inheritdoc IRunRegistry
    function roundTimes(uint256 runId) external view returns (RoundTimes memory t) {
        RunState memory state = _existing(runId);
        RunParams memory p = _loadParams(runId);
        t.round = state.round;
        t.start = state.roundStart;
        t.commitEnd = t.start + state.commitWindow;
        t.attestEnd = t.commitEnd + p.attestWindow;
        t.challengeEnd = t.attestEnd + p.challengeWindow;
        t.finished = state.round >= state.maxRounds;
        t.seedBlock = _seedBlock[runId];
        t.openEnd = t.commitEnd + p.attestWindow / 2;
    }

    /// @inheritdoc IRunRegistry
    function solverMinStake(uint256 runId) external view returns (uint256) {
        return _existing(runId).solverMinStake;
    }

    /// @inheritdoc IRunRegistry
    function sharesPerRound(uint256 runId) external view returns (uint256) {
        _existing(runId);
        return _info[runId].sharesPerRound;
    }

    /// @inheritdoc IRunRegistry
    function isSettled(uint256 runId, uint64 round) external view returns (bool) {
        RunState memory state = _loadState(runId);
        return state.roundStart != 0 && round < state.round;
    }

    /// @notice The claim of a round (theta_(r+1) once its status is Settled).
    /// @param runId The run.
    /// @param round The round.
    /// @return The claim.
    function claimOf(uint256 runId, uint64 round) external view returns (Claim memory) {
        return _claims[runId][round];
    }

    /// @inheritdoc IRunRegistry
    function claimerOf(uint256 runId, uint64 round) external view returns (address) {
        return _claims[runId][round].claimer;
    }

    /// @notice theta_r, the state a round trains from: theta_0, then each settled claim.
    /// @param runId The run.
    /// @param round The round (at most the current one).
    /// @return The state hash.
    function thetaOf(uint256 runId, uint64 round) external view returns (bytes32) {
        RunState memory state = _existing(runId);
        if (round > state.round) revert WrongRound(round, state.round);
        return round == 0 ? theta0Hash[runId] : _claims[runId][round - 1].thetaHash;
    }

    // ------------------------------------------------------------------ internals

    /// @dev One copy of the (un)packing code of the run's structs, shared by every caller (EIP-170 size).
    function _loadState(uint256 runId) internal view returns (RunState memory) {
        return _state[runId];
    }

    function _loadParams(uint256 runId) internal view returns (RunParams memory) {
        return _params[runId];
    }

    function _existing(uint256 runId) internal view returns (RunState memory state) {
        state = _loadState(runId);
        if (state.roundStart == 0) revert UnknownRun(runId);
    }

    /// @dev The run's state, reverting unless `round` is its current (unfinished) round.
    function _current(uint256 runId, uint64 round) internal view returns (RunState memory state) {
        state = _existing(runId);
        if (state.round >= state.maxRounds) revert RunIsFinished(runId);
        if (round != state.round) revert WrongRound(round, state.round);
    }

    /// @dev Checks of `open`: current round, before openEnd, the commitment's fields, not yet opened or reported.
    function _openable(uint256 runId, uint64 round, address solver, CommitmentData calldata commitment)
        internal
        view
        returns (RunParams memory p)
    {
        RunState memory state = _current(runId, round);
        p = _loadParams(runId);
        uint256 openEnd = uint256(state.roundStart) + state.commitWindow + p.attestWindow / 2;
        if (block.timestamp >= openEnd) revert OpenWindowClosed(openEnd);
        _checkCommitment(runId, round, solver, commitment);
        Opening opening = _commitments[runId][solver].opening;
        if (opening != Opening.None) revert AlreadyResolved(opening);
    }

    /// @dev The commitment's sampling seed and its seats (min(verifiers, the round's verifier snapshot)).
    function _openingSeed(uint256 runId, uint64 round, address solver, uint256 verifiers)
        internal
        view
        returns (bytes32 seed, uint256 seats)
    {
        (bool drawn, bytes32 seedBase, uint256 verifierCount) = verification.seedOf(runId, round);
        if (!drawn) revert SeedNotDrawn(runId, round);
        seed = Sampling.seed(seedBase, runId, round, solver);
        seats = verifiers < verifierCount ? verifiers : verifierCount;
    }

    /// @dev Every entry of an opening, seat-major: leaves[k] is segment Sampling.sample(seatSeed(seed, k / samples),
    ///      k % samples, numSegments) of `full`'s (run, round, solver), proven under `root` (InvalidLeafProof(k)).
    function _proveOpening(
        SegmentLeaf.Leaf memory full,
        bytes32 seed,
        uint256 seats,
        RunParams memory p,
        bytes32 root,
        LeafData[] calldata leaves,
        bytes32[][] calldata proofs
    ) internal pure {
        uint256 required = seats * p.samples;
        if (leaves.length != required || proofs.length != required) {
            revert WrongOpeningLength(leaves.length, proofs.length, required);
        }
        // INVARIANT: bounded: seats x samples <= MAX_OPENED_LEAVES (checked at createRun).
        for (uint256 k; k < required; ++k) {
            full.index = uint32(Sampling.sample(Sampling.seatSeed(seed, k / p.samples), k % p.samples, p.numSegments));
            full.startHash = leaves[k].startHash;
            full.endHash = leaves[k].endHash;
            full.sketchHash = leaves[k].sketchHash;
            full.tokens = leaves[k].tokens;
            if (!SegmentLeaf.verify(proofs[k], root, full)) revert InvalidLeafProof(k);
        }
    }

    function _checkCommitment(uint256 runId, uint64 round, address solver, CommitmentData calldata commitment)
        internal
        view
        returns (Commitment memory c)
    {
        c = _commitments[runId][solver];
        if (
            c.roundPlusOne != round + 1
                || c.hash != _commitmentHash(commitment.root, commitment.deltaHash, commitment.tokens)
        ) revert CommitmentMismatch(runId, round, solver);
    }

    /// @dev The seed block of a round whose commit window ends `toCommitEnd` seconds from now (commitWindow for a round
    ///      starting now, startDelay + commitWindow for round 0 at creation): block.number + ceil(toCommitEnd /
    ///      blockSeconds).
    function _seedBlockFrom(uint256 toCommitEnd) internal view returns (uint256) {
        return block.number + (toCommitEnd + blockSeconds - 1) / blockSeconds;
    }

    /// @dev The windows against the chain's block time T (protocol/windows.py checks the same before a run is sent):
    ///      the commit window holds at least one block before the seed block (Wc >= 2T); the seed block and the block
    ///      that draws from it (ceil(Wc / T) * T + T after the start on a chain keeping time) come before openEnd with
    ///      one missed block of slack; and the draw window ends before the seed block's hash leaves the EVM's reach
    ///      (SEED_HORIZON_BLOCKS blocks of T), so the whole draw window is usable. Round 0's seed block, counted from
    ///      the creation block, comes ceil((D + Wc) / T) * T - D after its start (D = startDelay): the same when D is
    ///      whole blocks, otherwise less than a block earlier or later, so both rules hold for both offsets.
    function _validateWindows(RunTerms calldata c) internal view {
        uint256 t = blockSeconds;
        if (c.commitWindow < 2 * t) revert InvalidConfig("commitWindow must be at least 2 blocks (2 * blockSeconds)");
        uint256 seedAt = (uint256(c.commitWindow) + t - 1) / t * t;
        uint256 seedAt0 = (uint256(c.startDelay) + c.commitWindow + t - 1) / t * t - c.startDelay;
        uint256 openAt = uint256(c.commitWindow) + c.attestWindow / 2;
        // INVARIANT: on a chain keeping its block time, the seed (the RANDAO value in the block RANDAO_LAG_BLOCKS after
        //            the seed block) can be drawn before openEnd (one block of slack), in round 0 and in every later
        //            round: the later of the two seed blocks counts.
        if ((seedAt0 > seedAt ? seedAt0 : seedAt) + (2 + Constants.RANDAO_LAG_BLOCKS) * t > openAt) {
            revert InvalidConfig("attestWindow / 2 must cover the seed block and 3 more blocks after the commit window");
        }
        // INVARIANT: ... and that block's hash is within reach until openEnd in every round: the earlier counts.
        uint256 reach = (Constants.SEED_HORIZON_BLOCKS + Constants.RANDAO_LAG_BLOCKS) * t;
        if (openAt > (seedAt0 < seedAt ? seedAt0 : seedAt) + reach) {
            revert InvalidConfig("attestWindow / 2 must end within SEED_HORIZON_BLOCKS blocks of the seed block");
        }
        // INVARIANT: an attestation made at the end of the attest window can still be replayed (as long as a verifier
        //            had: attestWindow / 2) and challenged (2 blocks) before challengeEnd (issue 37).
        if (c.challengeWindow < c.attestWindow / 2 + 2 * t) {
            revert InvalidConfig("challengeWindow must cover attestWindow / 2 and 2 more blocks");
        }
    }

    function _commitmentHash(bytes32 root, bytes32 deltaHash, uint64 tokens) internal pure returns (bytes28) {
        return bytes28(keccak256(abi.encode(root, deltaHash, tokens)));
    }

    function _validate(RunTerms calldata c) internal view {
        if (c.innerSteps == 0 || c.stepsPerSegment == 0 || c.innerSteps % c.stepsPerSegment != 0) {
            revert InvalidConfig("innerSteps must be a positive multiple of stepsPerSegment");
        }
        if (c.samplesPerCommitment == 0 || c.samplesPerCommitment > Constants.MAX_SAMPLES) {
            revert InvalidConfig("samplesPerCommitment must be in [1, MAX_SAMPLES]");
        }
        // INVARIANT: <= 8 seats: they fit the 8 x 16-bit seat map and bound Verification._hasPending's loop.
        if (c.verifiersPerCommitment == 0 || c.verifiersPerCommitment > Constants.MAX_VERIFIERS_PER_COMMITMENT) {
            revert InvalidConfig("verifiersPerCommitment must be in [1, MAX_VERIFIERS_PER_COMMITMENT]");
        }
        // INVARIANT: jurySize <= 21 keeps jury pools <= 24 seats: the bound of Disputes' loops and uint32 bitmaps.
        if (c.jurySize < Constants.MIN_JURY_SIZE || c.jurySize > Constants.MAX_JURY_SIZE) {
            revert InvalidConfig("jurySize must be in [MIN_JURY_SIZE, MAX_JURY_SIZE]");
        }
        if (c.commitWindow == 0 || c.attestWindow == 0 || c.challengeWindow == 0 || c.disputeTimeout == 0) {
            revert InvalidConfig("every window must be positive");
        }
        // INVARIANT: a bounded delay bounds how far a chain skipping slots can postpone round 0's seed block.
        if (c.startDelay > Constants.MAX_START_DELAY) {
            revert InvalidConfig("startDelay must be at most MAX_START_DELAY");
        }
        _validateWindows(c);
        uint256 lifetime = uint256(c.commitWindow) + c.attestWindow + 2
            * (uint256(c.challengeWindow) + (1 + Constants.MAX_APPEALS) * uint256(c.disputeTimeout));
        // INVARIANT: windows <= unbondingDelay: stake bonded at commit stays until its faults are decided, appeals
        //            included.
        if (lifetime > stakeManager.unbondingDelay()) {
            revert InvalidConfig("commit + attest + 2 * (challenge + 3 dispute timeouts) exceed the unbonding delay");
        }
        if (c.attestationBond == 0 || c.challengeBond == 0) revert InvalidConfig("bonds must be positive");
        // INVARIANT: a stake is at least the bond it backs: catching a cheat (solver) or a wrong attestation
        //            (verifier) always pays the challenger at least half of what it risked plus its bond back.
        if (c.solverMinStake < c.challengeBond || c.verifierMinStake < c.attestationBond) {
            revert InvalidConfig("stakes must be at least the bonds (solver >= challenge, verifier >= attestation)");
        }
        if (c.solverMinStake > type(uint88).max) revert InvalidConfig("solverMinStake must be below 2^88 wei");
        // INVARIANT: seats x samples <= MAX_OPENED_LEAVES: one `open` proves them all within a block's gas.
        if (uint256(c.samplesPerCommitment) * c.verifiersPerCommitment > Constants.MAX_OPENED_LEAVES) {
            revert InvalidConfig("samplesPerCommitment * verifiersPerCommitment exceeds MAX_OPENED_LEAVES");
        }

        if (uint256(c.solverShareBps) + c.verifierShareBps + c.jurorShareBps != Constants.BPS_DENOMINATOR) {
            revert InvalidConfig("share split must sum to BPS_DENOMINATOR");
        }
        if (c.innerSteps / c.stepsPerSegment > type(uint16).max) {
            revert InvalidConfig("a commitment has at most 65535 segments");
        }
        if (c.maxRounds == 0 || c.maxRounds > type(uint24).max || c.revenueReleasePeriod == 0) {
            revert InvalidConfig("maxRounds must be in [1, 2^24) and revenueReleasePeriod positive");
        }
        if (c.sharesPerRound < Constants.MIN_SUPPLY_FOR_RELEASE) {
            revert InvalidConfig("sharesPerRound must be at least one whole share");
        }
        // INVARIANT: supply <= 1e27 = REVENUE_PRECISION keeps RunShares' carried remainder < 1 wei (and in uint96).
        if (uint256(c.sharesPerRound) * c.maxRounds > Constants.MAX_TOTAL_SHARES) {
            revert InvalidConfig("sharesPerRound * maxRounds exceeds MAX_TOTAL_SHARES");
        }
    }
}
