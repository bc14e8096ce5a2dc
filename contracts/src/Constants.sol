// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @title Constants
/// @notice Protocol constants shared by every gradledger contract. This file is their one source: `make vectors`
///         generates Python's copy (protocol/contract_constants.py, re-exported by protocol/constants.py) and
///         tests/vectors/constants.json from its AST, and pytest fails when they are stale (docs/contracts.md).
library Constants {
    // ---------------------------------------------------------------- roles
    /// @notice Stake role of a solver (trains and commits).
    uint8 internal constant ROLE_SOLVER = 1;
    /// @notice Stake role of a verifier (replays, attests, sits on juries).
    uint8 internal constant ROLE_VERIFIER = 2;

    // ---------------------------------------------------------------- bounds (every loop is bounded by one of these)
    /// @notice Denominator of every basis-point value.
    uint256 internal constant BPS_DENOMINATOR = 10_000;
    /// @notice Upper bound on samples per commitment (equal to protocol.sampling.MAX_SAMPLES).
    uint256 internal constant MAX_SAMPLES = 1024;
    /// @notice Upper bound on verifiers assigned to one commitment.
    uint256 internal constant MAX_VERIFIERS_PER_COMMITMENT = 8;
    /// @notice Upper bound on seats x samples of a run: the leaves one `open` proves, so opening always fits a block.
    uint256 internal constant MAX_OPENED_LEAVES = 64;
    /// @notice Upper bound on the verifier list of one run (active verifiers only, each with its own reserved
    ///         verifierMinStake; the snapshot count is a uint16 of RoundSeed).
    uint256 internal constant MAX_VERIFIERS_PER_RUN = 65_535;
    /// @notice Upper bound on the jury size of a run (and of an appeal's jury).
    uint256 internal constant MAX_JURY_SIZE = 21;
    /// @notice Smallest jury that can decide a dispute, and the smallest jury size a run may set.
    uint256 internal constant MIN_JURY_SIZE = 3;
    /// @notice Juries a dispute may replace after a silent deadline, each min(2J + 1, MAX_JURY_SIZE) seats.
    uint256 internal constant MAX_APPEALS = 2;
    /// @notice Extra seats drawn so that parties to a dispute (at most 3) can be left out of the jury.
    uint256 internal constant JURY_PARTY_SLACK = 3;
    /// @notice Quorum = ceil(jurySize * QUORUM_NUMERATOR / QUORUM_DENOMINATOR) signers.
    uint256 internal constant QUORUM_NUMERATOR = 2;
    /// @notice See QUORUM_NUMERATOR.
    uint256 internal constant QUORUM_DENOMINATOR = 3;

    // ---------------------------------------------------------------- payouts
    /// @notice Share of forfeited bonds and slashed stake paid to the winner of a dispute (or to the
    ///         verifier whose unchallenged fail attestation caught a solver).
    uint256 internal constant WINNER_REWARD_BPS = 5000;
    /// @notice Share of forfeited bonds and slashed stake split equally among the signing jurors.
    uint256 internal constant JUROR_REWARD_BPS = 2000;
    /// @notice Verifier stake a juror must hold (and keeps locked) while registered.
    uint256 internal constant JUROR_MIN_STAKE = 1 ether;
    /// @notice Seconds a juror's stake stays locked after it leaves the registry.
    uint256 internal constant JUROR_EXIT_DELAY = 2 days;
    /// @notice Seconds during which rewards stay claimable before anyone sweeps what is unclaimed to the run's
    ///         reward pool: juror rewards (after the dispute's deadline) and fault rewards (after the unbonding
    ///         delay that follows the proof).
    uint256 internal constant REWARD_CLAIM_WINDOW = 30 days;
    /// @notice Share of the challenge bond a challenger loses when its dispute ends without any verdict.
    uint256 internal constant UNRESOLVED_CHALLENGE_FEE_BPS = 2000;
    /// @notice Upper bound on a run's plant rate (planted commitments per 10,000; docs/planted-faults.md).
    uint256 internal constant MAX_PLANT_RATE_BPS = 2000;
    /// @notice Rounds between a solver's plant anchor and its first plantable round (the previous round's seed,
    ///         an input of the plant draw, must not exist when the anchor is fixed).
    uint256 internal constant PLANT_DELAY_ROUNDS = 2;
    /// @notice Upper bound on the hashes one plant reveal checks (rounds since the solver's last reveal).
    uint256 internal constant MAX_REVEAL_GAP = 256;

    // ---------------------------------------------------------------- sampling domains
    /// @notice Draw index (in `Sampling.sample`, from a seat's sub-seed) of the verifier-list index of a seat;
    ///         far above any segment sample index (< MAX_SAMPLES), so the two never share a draw.
    uint256 internal constant VERIFIER_DRAW_INDEX = 2 ** 32;
    /// @notice Domain of a verifier seat's sub-seed: seat q of a commitment draws its verifier and its
    ///         samples from keccak256(abi.encode(SEAT_SEED_TAG, commitment seed, q)) (`Sampling.seatSeed`).
    bytes32 internal constant SEAT_SEED_TAG = keccak256("gradledger.seat");

    // ---------------------------------------------------------------- round seeds
    /// @notice Fewest seconds between blocks a deployment may declare (`RunRegistry.blockSeconds`: anvil and Ethereum
    ///         stamp strictly increasing seconds, so 1 is always safe for the seed rule; 12 on a 12-second-slot chain).
    uint256 internal constant MIN_BLOCK_SECONDS = 1;
    /// @notice Most seconds between blocks a deployment may declare.
    uint256 internal constant MAX_BLOCK_SECONDS = 60;
    /// @notice Blocks after the seed block during which `drawSeed` can read its hash (EVM `blockhash` reaches
    ///         256 blocks back); after that the round cannot be verified.
    uint256 internal constant SEED_HORIZON_BLOCKS = 256;
    /// @notice The seed is the RANDAO value revealed *in* the seed block: the mixHash of the block RANDAO_LAG_BLOCKS
    ///         after it. A block's own mixHash is the mix its predecessor's proposer completed, so the proposer of the
    ///         block before the seed block, which can still include commits, would know it; the mix the seed block's
    ///         proposer completes is known to nobody before the last block that can take a commit (docs/security.md).
    uint256 internal constant RANDAO_LAG_BLOCKS = 1;
    /// @notice Upper bound on a run's start delay (`RunTerms.startDelay`, seconds from createRun to round 0's start),
    ///         1 day. A delay lets nodes start and solvers register plant anchors before round 0; minutes to hours
    ///         cover that. It is bounded because round 0's seed block is counted in blocks from the creation block
    ///         (`ceil((startDelay + commitWindow) / blockSeconds)`): every slot the chain skips during the delay
    ///         postpones it by a block, and a seed block mined after openEnd leaves round 0 unverifiable (void). A day
    ///         is 7,200 slots of 12 s, which a 1% skip rate postpones by about 14 minutes; a week, by about 100.
    uint256 internal constant MAX_START_DELAY = 1 days;

    // ---------------------------------------------------------------- ownership shares and revenue
    /// @notice Fixed-point scale of the revenue-per-share accumulator. At least MAX_TOTAL_SHARES, so the
    ///         remainder carried between releases is always below 1 wei.
    uint256 internal constant REVENUE_PRECISION = 1e27;
    /// @notice Upper bound on all shares a run can ever mint (sharesPerRound * maxRounds).
    uint256 internal constant MAX_TOTAL_SHARES = 1e27;
    /// @notice Revenue drips only while at least this many share units exist (1 whole share);
    ///         before that the release clock is paused. Bounds the accumulator against overflow.
    uint256 internal constant MIN_SUPPLY_FOR_RELEASE = 1e18;
    /// @notice Seconds after a run's last settlement before its creator may reclaim revenue nobody owns: shares
    ///         are minted when contributors claim them, after settlement, so "no whole share exists" right after
    ///         the last settle does not mean nobody is owed.
    uint256 internal constant UNOWNED_REVENUE_GRACE = 30 days;

    // ---------------------------------------------------------------- BLS (py_ecc G2ProofOfPossession)
    /// @notice Domain separation tag of signatures (RFC 9380 hash-to-G2, SHA-256, SSWU, RO, POP scheme).
    string internal constant BLS_SIG_DST = "BLS_SIG_BLS12381G2_XMD:SHA-256_SSWU_RO_POP_";
    /// @notice Domain separation tag of proofs of possession.
    string internal constant BLS_POP_DST = "BLS_POP_BLS12381G2_XMD:SHA-256_SSWU_RO_POP_";

    // ---------------------------------------------------------------- fault keys (slash at most once per key)
    /// @notice Fault domain of a solver's commitment: keccak256(abi.encode(FAULT_SOLVER, runId, round, solver)).
    bytes32 internal constant FAULT_SOLVER = keccak256("gradledger.fault.solver");
    /// @notice Fault domain of an attestation: keccak256(abi.encode(FAULT_ATTESTATION, runId, round, solver, slot)).
    bytes32 internal constant FAULT_ATTESTATION = keccak256("gradledger.fault.attestation");
}
