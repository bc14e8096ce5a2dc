// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Constants} from "./Constants.sol";
import {PullPayments} from "./base/PullPayments.sol";
import {IBlockRandomness} from "./interfaces/IBlockRandomness.sol";
import {IDisputes} from "./interfaces/IDisputes.sol";
import {IFaultRewards} from "./interfaces/IFaultRewards.sol";
import {IModelShares} from "./interfaces/IModelShares.sol";
import {IPlants} from "./interfaces/IPlants.sol";
import {IRunRegistry} from "./interfaces/IRunRegistry.sol";
import {IStakeManager} from "./interfaces/IStakeManager.sol";
import {IVerification} from "./interfaces/IVerification.sol";
import {IVerifierRegistry} from "./interfaces/IVerifierRegistry.sol";
import {AttestationRef, CommitmentData, LeafData} from "./interfaces/Types.sol";
import {Sampling} from "./libraries/Sampling.sol";
import {SegmentLeaf} from "./libraries/SegmentLeaf.sol";

/// @title Verification
/// @notice The sampling seed of each round, verifier assignment (from the VerifierRegistry's snapshot) and segment
///         sampling, attestations with bonds, their finalization, and the per-round totals that shares are
///         minted against.
/// @dev Seed: nobody chooses it. RunRegistry fixes the round's seed block when the round starts
///      (`roundTimes(run).seedBlock` = start block + ceil(commitWindow / MIN_BLOCK_SECONDS)); every commitment of
///      the round lands before that block. `drawSeed` (anyone, once, in the attest window and in the
///      SEED_HORIZON_BLOCKS blocks after the seed block) stores the first 12 bytes of the seed block's RANDAO value
///      (its header's mixHash, `block.prevrandao` inside it; BlockRandomness proves the header against
///      blockhash(seedBlock)) as the round's seed base: the same value whichever block the call lands in, so the
///      caller only reads it. Not the block hash: whoever builds the seed block could grind that (transactions,
///      extraData), not the RANDAO value the beacon chain fixed before the block; withholding the block is one re-roll
///      (docs/economics.md). `seedOf(run, round)` returns it as bytes32 (12 bytes, zero-padded), which is the
///      `blockHash` input of Sampling.seed / protocol.sampling.
///      Per commitment: seed = Sampling.seed(seedBase, runId, round, solver); each seat q has its own sub-seed
///      s_q = Sampling.seatSeed(seed, q) = keccak256(abi.encode(SEAT_SEED_TAG, seed, q)). The verifier of seat q
///      is list[Sampling.seatIndex(seed, q, count)] -- the r_q-th index not held by seats 0 .. q-1, with
///      r_q = Sampling.sample(s_q, VERIFIER_DRAW_INDEX, count - q) -- over the run's verifier list as it was at the
///      end of block seedBlock - 1 (count = its size then): it does not depend on when the seed is drawn, and a
///      verifier that registers or leaves after seeing the seed block moves no seat. The list
///      (VerifierRegistry) holds active verifiers only, so register-and-leave sybils leave no dead entries, and a
///      verifier that leaves keeps its stake reserved while it can still hold a seat. Each seat draws from its own sub-seed,
///      without replacement, so the seats of one commitment go to distinct verifiers, and a block of sybils
///      holding a fraction p of the list gets all k seats with probability about p^k, not about p as a window
///      of consecutive entries would give. Sampled segment j of seat q = Sampling.sample(s_q, j,
///      numSegments): seats replay independent samples, so k seats of s samples catch a solver that faked a
///      fraction f of its segments with probability 1 - (1 - f)^(s x k). A seat q >= verifiersPerCommitment or
///      q >= count is void (SeatVoid); a seat held by the solver cannot be attested.
///      Attestation states: Attested -> Finalized, or Attested -> Challenged -> Upheld | Overturned | Voided.
///      A commitment is accepted ("verified work") when standing passes and cleared fails (fails a jury overturned)
///      hold a strict majority of its seats (min(verifiers, verifierCount) / 2 + 1: a seat nobody attested counts
///      against it, so late honest verifiers never let one lazy pass accept work) and no fail attestation or
///      overturned pass stands; it is paid when accepted (or revealed as planted and attested) and
///      Plants has not found it unpaid (`_isPaid`). Every paid commitment of a round earns the same solver shares,
///      bucket / paidCommitments: each trains the run's H steps of its fixed batch, so a declared token count is never
///      a claim on the pool (issue 36, finding 1). Per round, the number of paid commitments and the number of standing
///      attestations are kept current in O(1) as attestations are made, disputes end and plants are revealed.
///      Storage: the status of a solver's commitment lives in one slot per (run, solver), created when the
///      solver joins and rewritten by the first attestation of each round, so no attestation pays for a
///      fresh slot. If the previous round's status still has something to pay out (a bond to return, shares
///      to mint), that attestation first copies it to a per-(run, round, solver) archive, where finalize and
///      the share claims find it; nothing is ever dropped.
///      ETH held: bonds of attestations in Attested or Challenged state + credits.
contract Verification is PullPayments, IVerification {
    /// @notice Per (run, round), fixed by `drawSeed` (one slot, read by every attestation and challenge).
    struct RoundSeed {
        // PACKING: one slot (hence the 12-byte seed); a slot per field costs +12,361 gas per attest, +12,401 per
        //          challenge, +12,389 per finalize, +130,551 per drawSeed.
        bytes12 seed;
        uint32 attestEnd; // timestamps fit uint32 until 2106
        uint32 challengeEnd;
        uint32 seedBlock; // the verifier list is read as it was at the end of seedBlock - 1 (block numbers < 2^32)
        bool plants; // the run plants (Plants terms with a rate > 0): its challenges ask Plants first
        uint16 verifierCount;
        uint8 verifiers;
        uint16 samples;
        uint16 numSegments;
    }

    /// @notice Per (run, round): running totals and the attestation bond (one slot).
    struct RoundTally {
        // PACKING: one slot, made non-zero by drawSeed; a slot per field costs +41,031 gas on a round's first
        //          attestation (+4,076 on later ones), +6,831 per attestFail, +4,105 per execute.
        uint32 totalChecks; // standing attestations (not overturned)
        uint32 paidCommitments; // commitments that are paid (`_isPaid`): the denominator of every solver's shares
        uint128 attestationBond;
    }

    /// @notice A commitment's status: its round + 1, standing passes (and fails a jury cleared) and faults, the passes
    ///         it needs, whether the solver's shares were minted, whether it was attested at all, revealed as planted or
    ///         found unpaid by Plants, and the 16-bit state of each verifier seat (bits 0-2 state, 3 fail, 4 shares minted, 5-14 the sample a fail named, 15 planted).
    ///         `live` keeps the slot non-zero.
    struct CommitmentStatus {
        // PACKING: one slot; a slot per field costs +87,389 gas on a round's first attestation of a commitment (+13,408
        //          on later ones), +30,490 per attestFail, +11,393 per execute. A separate `cleared` count (instead of
        //          counting cleared fails in `passes`) cost +3,091 gas per attestation: the legacy code generator spills
        //          this struct's eleventh field (measured, issue 37).
        uint32 roundPlusOne;
        uint8 passes; // standing passes and cleared fails (fails a jury overturned): the seats that stand for the work
        uint8 faults;
        bool solverMinted;
        bool live;
        bool attested; // some seat attested it (a planted commitment is paid only then)
        bool planted; // its solver revealed it as planted (Plants)
        bool unpaid; // Plants says it is not paid: planting on and no plant anchor, plant disproven, or not revealed
        uint8 needed; // passes (standing passes + cleared fails) that accept it: a strict majority of the round's seats
        // PACKING: 8 seats x 16 bits in one field; a slot per seat costs +38,328 gas per attestation.
        uint128 seats;
    }

    /// @notice State of one attestation (Challenged is held by Disputes while a dispute runs).
    enum AttestationState {
        None,
        Attested,
        Challenged,
        Finalized,
        Upheld,
        Overturned,
        Voided, // no verdict after every appeal: earns nothing; a voided pass stops counting
        Abstained // its verifier did not attest by attestEnd (reportAbstention): charged the bond
    }

    uint16 internal constant MINTED_BIT = 1 << 4;
    /// @dev Bit 15 of a seat: the attestation was made on a commitment its solver revealed as planted.
    uint16 internal constant PLANTED_BIT = 1 << 15;
    uint16 internal constant SAMPLE_MASK = 0x3ff;

    IStakeManager public immutable stakeManager;
    IRunRegistry public immutable runRegistry;
    address public immutable disputes;
    IModelShares public immutable modelShares;
    IFaultRewards public immutable faultRewards;
    IVerifierRegistry public immutable verifierRegistry;
    IPlants public immutable plants;
    /// @notice Proves the seed block's RANDAO value from its header (drawSeed); Plants reads it here too.
    IBlockRandomness public immutable blockRandomness;

    mapping(uint256 runId => mapping(uint64 round => RoundSeed)) internal _seeds;
    mapping(uint256 runId => mapping(uint64 round => RoundTally)) internal _tallies;
    mapping(uint256 runId => mapping(address solver => CommitmentStatus)) internal _live;
    mapping(uint256 runId => mapping(uint64 round => mapping(address solver => CommitmentStatus))) internal _archive;

    /// @notice The seed of a round was fixed from the RANDAO value `randao` (header mixHash) of block `blockNumber`
    ///         (the round's seed block, fixed when the round started); `seedBase` is its first 12 bytes, the input of
    ///         every sampling seed of the round. `verifierCount` is the list snapshot: the entries registered before
    ///         the seed block.
    event SeedDrawn(
        uint256 indexed runId,
        uint64 indexed round,
        bytes32 seedBase,
        uint256 blockNumber,
        bytes32 randao,
        uint256 verifierCount
    );
    /// @notice A verifier attested (with the run's attestation bond) that every sampled segment of its seat
    ///         of a commitment replays correctly.
    event PassAttested(
        uint256 indexed runId, uint64 indexed round, address indexed solver, address verifier, uint8 slot
    );
    /// @notice A verifier attested (with the bond) that sampled segment `segmentIndex` (draw `sampleIndex` of
    ///         seat `slot`) is wrong; `leaf` is the committed leaf, proven against the root, naming the disputed
    ///         checkpoints.
    event FailAttested(
        uint256 indexed runId,
        uint64 indexed round,
        address indexed solver,
        address verifier,
        uint8 slot,
        uint16 sampleIndex,
        uint32 segmentIndex,
        LeafData leaf
    );
    /// @notice An unchallenged attestation was finalized; its bond was credited back to the verifier.
    event AttestationFinalized(
        uint256 indexed runId, uint64 indexed round, address indexed solver, uint8 slot, address verifier, uint256 bond
    );
    /// @notice A challenged attestation's dispute ended. Upheld: the bond was credited back. Voided (no verdict
    ///         after every appeal): the bond was credited back and the attestation earns nothing (a pass stopped
    ///         counting). Overturned: it stopped counting and its bond went to Disputes for payout.
    event AttestationResolved(
        uint256 indexed runId,
        uint64 indexed round,
        address indexed solver,
        uint8 slot,
        address verifier,
        AttestationState state,
        uint256 bond
    );
    /// @notice A commitment's fault was proven (first by a finalized or upheld fail, or an overturned pass) and
    ///         the solver slashed: `taken` was split between the fault's provers (`toProvers`, sent to FaultRewards,
    ///         shared equally by every prover after settlement) and the run's reward pool (`toPool`).
    event SolverFaultProven(
        uint256 indexed runId,
        uint64 indexed round,
        address indexed solver,
        bytes32 faultKey,
        uint256 taken,
        uint256 toProvers,
        uint256 toPool
    );
    /// @notice A finished round's commitment status still owed something and moved to the archive.
    event StatusArchived(uint256 indexed runId, uint64 indexed round, address indexed solver);
    /// @notice Shares were minted for a standing attestation.
    event VerifierSharesClaimed(
        uint256 indexed runId,
        uint64 indexed round,
        address indexed solver,
        uint8 slot,
        address verifier,
        uint256 shares
    );
    /// @notice Shares were minted for an accepted commitment.
    /// @notice A commitment was revealed as planted: `overturned` passes on it were forfeited into the plant pool
    ///         (bonds `forfeited` in all, each verifier's penalty slashed), its other seats' fails stand.
    event PlantApplied(
        uint256 indexed runId, uint64 indexed round, address indexed solver, uint256 overturned, uint256 forfeited
    );
    event SolverSharesClaimed(uint256 indexed runId, uint64 indexed round, address indexed solver, uint256 shares);
    /// @notice The assigned verifier of seat `slot` did not attest the opened commitment by attestEnd: it was slashed
    ///         `taken` (up to the attestation bond), all of it to the run's reward pool; `reporter` said so.
    event AbstentionReported(
        uint256 indexed runId,
        uint64 indexed round,
        address indexed solver,
        uint8 slot,
        address verifier,
        address reporter,
        uint256 taken
    );
    /// @notice Plants found the commitment unpaid (its plant disproven, or its reveal missed): it left the round's
    ///         paid commitments.
    event CommitmentUnpaid(uint256 indexed runId, uint64 indexed round, address indexed solver);

    error RunIsFinished(uint256 runId);
    error StakeNotCovered(address account);
    error WrongRound(uint64 given, uint64 current);
    error OutsideAttestWindow(uint256 opensAt, uint256 closesAt);
    error SeedAlreadyDrawn(uint256 runId, uint64 round);
    error SeedNotDrawn(uint256 runId, uint64 round);
    error SeedBlockExpired(uint256 seedBlock);
    error OutsideDrawWindow(uint256 opensAt, uint256 closesAt);
    error SeatVoid(uint8 slot);
    error NotAssignedVerifier(address caller, address assigned);
    error WrongBond(uint256 sent, uint256 required);
    error AlreadyAttested(uint8 slot);
    error BadSampleIndex(uint16 sampleIndex, uint16 limit);
    error InvalidLeafProof();
    error WrongState(AttestationState state);
    error ChallengeWindowOpen(uint256 challengeEnd);
    error ChallengeWindowClosed(uint256 challengeEnd);
    error NotSettled(uint256 runId, uint64 round);
    error NotAccepted(uint256 runId, uint64 round, address solver);
    error AlreadyMinted();
    error NotAProver(uint8 slot);
    error NotDisputes(address caller);
    error NotRunRegistry(address caller);
    error UnexpectedEther(address from);
    error NotPlants(address caller);
    error PlantPending(uint256 runId, uint64 round, address solver);
    error NotOpened(uint256 runId, uint64 round, address solver);
    error OutsideAbstentionWindow(uint256 opensAt, uint256 closesAt);

    modifier onlyDisputes() {
        if (msg.sender != disputes) revert NotDisputes(msg.sender);
        _;
    }

    /// @param stakeManager_ The StakeManager.
    /// @param runRegistry_ The RunRegistry.
    /// @param disputes_ The Disputes contract (the only caller of the dispute hooks).
    /// @param modelShares_ ModelShares (mints, reward pools).
    /// @param faultRewards_ FaultRewards (holds the provers' part of each solver slash).
    /// @param verifierRegistry_ The VerifierRegistry (each run's verifier list, by block).
    /// @param plants_ Plants (planted faults: which commitments were planted, jackpots, the plant pool).
    /// @param blockRandomness_ BlockRandomness (the seed block's RANDAO value, proven by its header).
    constructor(
        IStakeManager stakeManager_,
        IRunRegistry runRegistry_,
        address disputes_,
        IModelShares modelShares_,
        IFaultRewards faultRewards_,
        IVerifierRegistry verifierRegistry_,
        IPlants plants_,
        IBlockRandomness blockRandomness_
    ) {
        stakeManager = stakeManager_;
        runRegistry = runRegistry_;
        disputes = disputes_;
        modelShares = modelShares_;
        faultRewards = faultRewards_;
        verifierRegistry = verifierRegistry_;
        plants = plants_;
        blockRandomness = blockRandomness_;
    }

    /// @notice Slash proceeds from the StakeManager; nothing else may send ETH without a function.
    receive() external payable {
        // INVARIANT: plain ETH is only slash proceeds, paid out in the same call: balance == credits + open bonds.
        if (msg.sender != address(stakeManager)) revert UnexpectedEther(msg.sender);
    }

    // ------------------------------------------------------------------ seed

    /// @notice Fix the current round's seed (anyone, once, from commitEnd until the opening deadline `openEnd` =
    ///         commitEnd + attestWindow / 2, so that whoever holds the seed can still open) from the RANDAO value
    ///         revealed in the round's seed block (`roundTimes(run).seedBlock`, fixed when the round started; every
    ///         commitment of the round landed before it): the mixHash of block seedBlock + RANDAO_LAG_BLOCKS, proven
    ///         by that block's header (BlockRandomness). Not the seed block's own mixHash: the proposer of the block
    ///         before it completed that mix and can still include commits. The result does not depend on the block
    ///         this call lands in nor on who calls: the seed, every sample and every seat are the same for every
    ///         caller. Also fixes the verifier-list snapshot (the VerifierRegistry's list at the end of
    ///         seedBlock - 1, so no registration or exit after it changes a seat), and the round's parameters.
    ///         Callable in the SEED_HORIZON_BLOCKS blocks after block seedBlock + RANDAO_LAG_BLOCKS only: before,
    ///         that block's hash does not exist yet (BlockRandomness.BlockHashUnavailable); after, the EVM no longer
    ///         serves the hash that proves the header (SeedBlockExpired). If nobody
    ///         draws in those 256 blocks before openEnd, the round cannot be verified: nothing can be opened or
    ///         attested, so no commitment of it is accepted or paid, its commitments are reported void (nobody is
    ///         slashed), and theta stays (the round's claim is theta_r itself, no pseudo-gradient being
    ///         accepted). Anyone may draw, so only a total absence of honest drawers causes it, or a chain too
    ///         slow to mine the seed block before openEnd (the run's windows must leave room for it).
    /// @param runId The run.
    /// @param round The current round.
    /// @param header The seed block's RLP-encoded header (protocol.adapters.chain: get_block_header_rlp); reverts
    ///        from BlockRandomness (HeaderMismatch, MalformedHeader) unless it is that block's.
    function drawSeed(uint256 runId, uint64 round, bytes calldata header) external {
        IRunRegistry.RoundTimes memory t = runRegistry.roundTimes(runId);
        if (t.finished) revert RunIsFinished(runId);
        if (round != t.round) revert WrongRound(round, t.round);
        // INVARIANT: drawn before openEnd or never: a solver that has the seed can still open (RunRegistry.open),
        //            so RunRegistry.reportUnopened slashes only when opening was possible.
        if (block.timestamp < t.commitEnd || block.timestamp >= t.openEnd) {
            revert OutsideDrawWindow(t.commitEnd, t.openEnd);
        }
        if (_seeds[runId][round].attestEnd != 0) revert SeedAlreadyDrawn(runId, round);
        uint256 seedBlock = t.seedBlock;
        // INVARIANT: the RANDAO value revealed in the seed block (the next block's mixHash), not a hash: no builder
        //            can grind it, only withhold its block (one re-roll), and nobody knew it while commits could land.
        uint256 randaoBlock = seedBlock + Constants.RANDAO_LAG_BLOCKS;
        // INVARIANT: the EVM serves a block hash for 256 blocks only (0 after), and without it the header, hence the
        //            RANDAO value, cannot be proven: past that, no seed at all. (Before that block is mined its hash
        //            does not exist either: randaoOf reverts BlockHashUnavailable.)
        if (block.number > randaoBlock + Constants.SEED_HORIZON_BLOCKS) revert SeedBlockExpired(randaoBlock);
        IRunRegistry.RunParams memory p = runRegistry.runParams(runId);
        bytes32 randao = blockRandomness.randaoOf(randaoBlock, header);
        // INVARIANT: the list as it was before the seed block: nobody who saw the seed block changed it.
        uint256 count = verifierRegistry.sizeAt(runId, seedBlock - 1);
        _seeds[runId][round] = RoundSeed({
            seed: bytes12(randao),
            attestEnd: uint32(t.attestEnd),
            challengeEnd: uint32(t.challengeEnd),
            seedBlock: uint32(seedBlock),
            plants: _plants(runId),
            verifierCount: uint16(count),
            verifiers: p.verifiers,
            samples: p.samples,
            numSegments: uint16(p.numSegments)
        });
        // INVARIANT: the bond is fixed per round here, so every return or forfeit moves exactly what _record took.
        _tallies[runId][round] = RoundTally({totalChecks: 0, paidCommitments: 0, attestationBond: p.attestationBond});
        emit SeedDrawn(runId, round, bytes32(bytes12(randao)), seedBlock, randao, count);
    }

    // ------------------------------------------------------------------ attestations

    /// @notice Attest that every sampled segment of the seat (its own samples) replays correctly, with the run's
    ///         attestation bond. Only the verifier assigned to `ref.slot`, inside the attestation window, and only
    ///         on a commitment its solver opened (RunRegistry.checkCommitment reverts NotOpened otherwise).
    /// @param ref The seat: run, round, solver, slot.
    /// @param commitment The solver's commitment fields (checked against the stored hash).
    function attestPass(AttestationRef calldata ref, CommitmentData calldata commitment) external payable {
        (RoundSeed memory rs,) = _attestContext(ref);
        runRegistry.checkCommitment(ref.runId, ref.round, ref.solver, commitment);
        _record(ref, rs, false, 0);
        emit PassAttested(ref.runId, ref.round, ref.solver, msg.sender, ref.slot);
    }

    /// @notice Attest that sampled segment `sampleIndex` of the seat's samples of a commitment is wrong (or was not
    ///         served), with the committed leaf and its Merkle proof, so the chain records which checkpoints are
    ///         disputed. Only on an opened commitment (NotOpened): the leaf is one the opening proved.
    /// @param ref The seat: run, round, solver, slot.
    /// @param commitment The solver's commitment fields (checked against the stored hash).
    /// @param sampleIndex Which draw of the seat (< samples per commitment); the segment is the draw's value.
    /// @param leaf The committed leaf of that segment.
    /// @param proof Merkle proof of the leaf under the commitment root.
    function attestFail(
        AttestationRef calldata ref,
        CommitmentData calldata commitment,
        uint16 sampleIndex,
        LeafData calldata leaf,
        bytes32[] calldata proof
    ) external payable {
        (RoundSeed memory rs, bytes32 seatSeed) = _attestContext(ref);
        runRegistry.checkCommitment(ref.runId, ref.round, ref.solver, commitment);
        if (sampleIndex >= rs.samples) revert BadSampleIndex(sampleIndex, rs.samples);
        uint32 segmentIndex = _checkLeaf(ref, rs, seatSeed, commitment.root, sampleIndex, leaf, proof);
        _record(ref, rs, true, sampleIndex);
        emit FailAttested(ref.runId, ref.round, ref.solver, msg.sender, ref.slot, sampleIndex, segmentIndex, leaf);
    }

    /// @notice Finalize an unchallenged attestation once the challenge window has closed (anyone): the bond is
    ///         credited back to the verifier; a fail attestation also proves the solver's fault, slashing its
    ///         stake at most once per commitment (WINNER_REWARD_BPS of it for the fault's provers, whichever
    ///         finalizes first; the rest to the pool).
    /// @param ref The seat.
    function finalize(AttestationRef calldata ref) external {
        RoundSeed memory rs = _drawn(ref.runId, ref.round);
        if (block.timestamp < rs.challengeEnd) revert ChallengeWindowOpen(rs.challengeEnd);
        CommitmentStatus storage st = _statusOf(ref.runId, ref.round, ref.solver);
        uint16 seat = _seat(st.seats, ref.slot);
        if (_state(seat) != AttestationState.Attested) revert WrongState(_state(seat));
        // INVARIANT: a disputed attestation cannot be finalized: its bond is settled once, by the dispute's end.
        if (IDisputes(disputes).isAttestationDisputed(ref)) revert WrongState(AttestationState.Challenged);
        bool isFail = _isFail(seat);
        bool planted = seat & PLANTED_BIT != 0;
        // INVARIANT: the seat leaves Attested before the bond credit and the slash calls (checks-effects-interactions).
        st.seats = _withSeat(st.seats, ref.slot, _encodeSeat(AttestationState.Finalized, isFail, false, _sample(seat)));
        address verifier = _assigned(ref, rs);
        uint256 bond = _tallies[ref.runId][ref.round].attestationBond;
        credits[verifier] += bond;
        emit AttestationFinalized(ref.runId, ref.round, ref.solver, ref.slot, verifier, bond);
        // a fail on a planted commitment is right, and the solver that planted it did as it was drawn to
        if (isFail && !planted) _slashSolver(ref);
    }

    /// @notice Report that the assigned verifier of seat `ref.slot` did not attest an opened commitment by attestEnd
    ///         (anyone, from attestEnd until challengeEnd). The verifier is slashed the run's attestation bond (under
    ///         the seat's fault key, so at most once), all of it to the run's reward pool, and the seat becomes
    ///         Abstained. Without it, holding a seat and staying silent was free: coalition verifiers abstained on
    ///         competitors' commitments, which then went unpaid (issue 36, finding 8).
    /// @param ref The seat.
    function reportAbstention(AttestationRef calldata ref) external {
        RoundSeed memory rs = _drawn(ref.runId, ref.round);
        if (block.timestamp < rs.attestEnd || block.timestamp >= rs.challengeEnd) {
            revert OutsideAbstentionWindow(rs.attestEnd, rs.challengeEnd);
        }
        address verifier = _assigned(ref, rs);
        // a seat drawn to the solver itself cannot be attested, so its silence is no fault
        if (verifier == ref.solver) revert NotAssignedVerifier(verifier, verifier);
        if (runRegistry.openingOf(ref.runId, ref.round, ref.solver) != IRunRegistry.Opening.Opened) {
            revert NotOpened(ref.runId, ref.round, ref.solver);
        }
        CommitmentStatus memory st = _loadLive(ref.runId, ref.solver);
        if (st.roundPlusOne != ref.round + 1) st = _openStatus(ref.runId, ref.round, ref.solver, st, rs);
        uint16 seat = _seat(st.seats, ref.slot);
        if (seat != 0) revert WrongState(_state(seat));
        // INVARIANT: the seat leaves None before the slash call: an abstention is charged once (checks-effects-interactions).
        st.seats = _withSeat(st.seats, ref.slot, _encodeSeat(AttestationState.Abstained, false, false, 0));
        _storeLive(ref.runId, ref.solver, st);
        bytes32 faultKey =
            keccak256(abi.encode(Constants.FAULT_ATTESTATION, ref.runId, ref.round, ref.solver, ref.slot));
        uint256 taken = stakeManager.slash(
            verifier, Constants.ROLE_VERIFIER, _tallies[ref.runId][ref.round].attestationBond, faultKey
        );
        emit AbstentionReported(ref.runId, ref.round, ref.solver, ref.slot, verifier, msg.sender, taken);
        // INVARIANT: the slash proceeds arrived in this call (receive) and go on to the pool: none stays here.
        if (taken > 0) modelShares.fundPool{value: taken}(ref.runId);
    }

    /// @notice Mint the shares of a standing attestation (Finalized or Upheld) once its round is settled
    ///         (anyone; shares go to the verifier): the round's verifier share divided by its standing
    ///         attestations. Once per attestation.
    /// @param ref The seat.
    function claimVerifierShares(AttestationRef calldata ref) external {
        if (!runRegistry.isSettled(ref.runId, ref.round)) revert NotSettled(ref.runId, ref.round);
        CommitmentStatus storage st = _statusOf(ref.runId, ref.round, ref.solver);
        uint16 seat = _seat(st.seats, ref.slot);
        AttestationState state = _state(seat);
        if (state != AttestationState.Finalized && state != AttestationState.Upheld) revert WrongState(state);
        if (_minted(seat)) revert AlreadyMinted();
        // INVARIANT: the minted bit is set before the mint call, so each standing attestation mints once.
        st.seats = _withSeat(st.seats, ref.slot, seat | MINTED_BIT);
        uint256 bucket = runRegistry.sharesPerRound(ref.runId) * runRegistry.runEconomics(ref.runId).verifierShareBps
            / Constants.BPS_DENOMINATOR;
        // INVARIANT: <= totalChecks seats stand, each minting floor(bucket / totalChecks): verifier mints <= bucket.
        uint256 shares = bucket / _tallies[ref.runId][ref.round].totalChecks;
        address verifier = _assigned(ref, _loadSeed(ref.runId, ref.round));
        emit VerifierSharesClaimed(ref.runId, ref.round, ref.solver, ref.slot, verifier, shares);
        modelShares.mint(ref.runId, ref.round, verifier, shares, IModelShares.ShareKind.Verifier);
    }

    /// @notice Mint the shares of a paid commitment once its round is settled (anyone; shares go to the solver): the
    ///         round's solver share divided equally among the round's paid commitments (`roundTally.paidCommitments`).
    ///         The tokens a solver declared play no part: every commitment trains the run's H steps of its fixed batch.
    /// @param runId The run.
    /// @param round The round.
    /// @param solver The solver.
    function claimSolverShares(uint256 runId, uint64 round, address solver) external {
        if (!runRegistry.isSettled(runId, round)) revert NotSettled(runId, round);
        CommitmentStatus storage st = _statusOf(runId, round, solver);
        // a planted commitment is paid as accepted (its passes were overturned, its fails stand); a commitment
        // whose plant was not revealed, or made without a plant anchor while planting is on, is not paid (a missed
        // reveal nobody reported before settlement stays in paidCommitments: its share is never minted)
        if (!_isPaid(st) || plants.payOf(runId, round, solver) == IPlants.Pay.Unpaid) {
            revert NotAccepted(runId, round, solver);
        }
        if (st.solverMinted) revert AlreadyMinted();
        // INVARIANT: set before the mint call, so each accepted commitment mints once.
        st.solverMinted = true;
        uint256 bucket = runRegistry.sharesPerRound(runId) * runRegistry.runEconomics(runId).solverShareBps
            / Constants.BPS_DENOMINATOR;
        // INVARIANT: paidCommitments == the paid commitments (final once settled) and this one is among them: the
        //            solver mints of a round add up to at most the bucket.
        uint256 shares = bucket / _tallies[runId][round].paidCommitments;
        emit SolverSharesClaimed(runId, round, solver, shares);
        modelShares.mint(runId, round, solver, shares, IModelShares.ShareKind.Solver);
    }

    // ------------------------------------------------------------------ hooks

    /// @inheritdoc IVerification
    /// @dev RunRegistry only: creates the solver's status slot for the run (so attestations rewrite it).
    function onSolverJoined(uint256 runId, address solver) external {
        if (msg.sender != address(runRegistry)) revert NotRunRegistry(msg.sender);
        _live[runId][solver].live = true;
    }

    /// @inheritdoc IVerification
    /// @dev Plants only, at a reveal inside the round's reveal window (after attestEnd: no seat changes any more; no
    ///      seat is disputed, isChallengeBlocked held every challenge off). Every pass on the commitment is overturned:
    ///      its bond and the run's plant penalty of its verifier's stake (slashed by Plants) go to the plant pool and the
    ///      verifier leaves the run's
    ///      list; every fail stands and earns the jackpot. The commitment counts as accepted for the solver's pay
    ///      (its Δ is not: `passes` drops to 0), so the round's totals change here, before settlement, and never
    ///      after it. Bounded: one iteration per seat (<= 8).
    function onPlantRevealed(uint256 runId, uint64 round, address solver) external {
        if (msg.sender != address(plants)) revert NotPlants(msg.sender);
        (address[] memory attesters, uint128 seats, uint256 bond) = _markPlanted(runId, round, solver);
        // INVARIANT: checks-effects-interactions: seats and totals were written (_markPlanted) before any call below.
        for (uint8 slot; slot < attesters.length; ++slot) {
            address verifier = attesters[slot];
            if (verifier == address(0)) continue;
            if (_isFail(_seat(seats, slot))) {
                plants.onPlantedFail(runId, verifier);
                continue;
            }
            verifierRegistry.onOverturned(runId, verifier);
            // INVARIANT: the pass's bond joins the plant pool (Plants slashes the penalty): every wei accounted for.
            plants.onPlantedPass{value: bond}(AttestationRef(runId, round, solver, slot), verifier);
        }
    }

    /// @inheritdoc IVerification
    /// @dev Plants only: the commitment's plant was disproven or its reveal missed. A commitment never attested this
    ///      round was never paid, so there is nothing to take out.
    function onUnpaid(uint256 runId, uint64 round, address solver) external {
        if (msg.sender != address(plants)) revert NotPlants(msg.sender);
        CommitmentStatus memory st = _loadLive(runId, solver);
        if (st.roundPlusOne != round + 1 || st.unpaid) return;
        RoundTally memory tally = _loadTally(runId, round);
        bool wasPaid = _isPaid(st);
        st.unpaid = true;
        _adjustPaid(tally, wasPaid, st);
        _storeLive(runId, solver, st);
        _storeTally(runId, round, tally);
        emit CommitmentUnpaid(runId, round, solver);
    }

    /// @dev The effects of a plant: passes overturned, every attested seat marked planted, the round's totals
    ///      (the commitment paid as planted, its passes no longer standing). Returns each attested seat's verifier.
    function _markPlanted(uint256 runId, uint64 round, address solver)
        internal
        returns (address[] memory attesters, uint128 seats, uint256 bond)
    {
        CommitmentStatus memory st = _loadLive(runId, solver);
        RoundSeed memory rs = _loadSeed(runId, round);
        attesters = new address[](rs.verifiers);
        if (st.roundPlusOne != round + 1) return (attesters, 0, 0); // nothing was attested
        RoundTally memory tally = _loadTally(runId, round);
        bool wasPaid = _isPaid(st);
        uint256 overturned;
        // INVARIANT: bounded: one iteration per seat of the uint128 seat map (<= 8 seats, checked at createRun).
        for (uint8 slot; slot < rs.verifiers; ++slot) {
            uint16 seat = _seat(st.seats, slot);
            if (_state(seat) != AttestationState.Attested) continue;
            attesters[slot] = _assignedAt(runId, round, solver, slot, rs);
            if (!_isFail(seat)) ++overturned;
            AttestationState next = _isFail(seat) ? AttestationState.Attested : AttestationState.Overturned;
            st.seats = _withSeat(st.seats, slot, _encodeSeat(next, _isFail(seat), false, _sample(seat)) | PLANTED_BIT);
        }
        // INVARIANT: the standing checks lose exactly the passes the reveal overturned (counted from the seats: `passes`
        //            also counts cleared fails, though a planted commitment's fails cannot be disputed, so it has none).
        tally.totalChecks -= uint32(overturned);
        emit PlantApplied(runId, round, solver, overturned, overturned * tally.attestationBond);
        st.passes = 0;
        st.planted = true;
        _adjustPaid(tally, wasPaid, st);
        _storeLive(runId, solver, st);
        _storeTally(runId, round, tally);
        return (attesters, st.seats, tally.attestationBond);
    }

    /// @inheritdoc IVerification
    /// @dev Checks that the attestation can be challenged now and that the disputed leaf is a sampled segment of
    ///      the attestation's seat (for a fail: the one the fail named) proven under `root` (RunRegistry checks
    ///      `root` against the commitment). A view: while the dispute runs, the seat stays Attested here and
    ///      Disputes holds the Challenged state (finalize asks Disputes; `attestationOf` reports Challenged).
    function checkChallenge(
        AttestationRef calldata ref,
        bytes32 root,
        uint16 sampleIndex,
        LeafData calldata leaf,
        bytes32[] calldata proof
    ) external view returns (ChallengedAttestation memory c) {
        RoundSeed memory rs = _drawn(ref.runId, ref.round);
        if (block.timestamp >= rs.challengeEnd) revert ChallengeWindowClosed(rs.challengeEnd);
        // INVARIANT: no dispute on a commitment that may be planted until its reveal says it is not (a planted one is
        //            decided by the reveal): no dispute can slash a solver for a plant it was drawn to make. Terms are
        //            set in round 0 and plants start in round 2, so the flag drawSeed stored is right for every plant.
        if (rs.plants && plants.isChallengeBlocked(ref.runId, ref.round, ref.solver)) {
            revert PlantPending(ref.runId, ref.round, ref.solver);
        }
        CommitmentStatus storage st = _live[ref.runId][ref.solver];
        uint16 seat = st.roundPlusOne == ref.round + 1 ? _seat(st.seats, ref.slot) : 0;
        if (_state(seat) != AttestationState.Attested) revert WrongState(_state(seat));
        c.isFail = _isFail(seat);
        if (c.isFail) {
            if (sampleIndex != _sample(seat)) revert BadSampleIndex(sampleIndex, _sample(seat));
        } else if (sampleIndex >= rs.samples) {
            revert BadSampleIndex(sampleIndex, rs.samples);
        }
        c.segmentIndex = _checkLeaf(ref, rs, _seatSeed(ref, rs), root, sampleIndex, leaf, proof);
        c.sampleIndex = sampleIndex;
    }

    /// @inheritdoc IVerification
    /// @dev Upheld: the attestation stands (state Upheld) and its bond is credited back.
    ///      Unresolved (no verdict after every appeal): state Voided, its bond credited back, nobody slashed; it
    ///      earns no shares, a voided pass stops counting and a voided fail keeps blocking the commitment.
    ///      Overturned: it stops counting (a pass becomes a proven fault of the commitment, a fail stops
    ///      blocking it), the verifier leaves the run's list and its bond is sent to Disputes.
    ///      An upheld fail or an overturned pass proves the solver's fault: the solver is slashed here (once per
    ///      commitment), for all of the fault's provers to share (`claimFaultReward`).
    function onResolved(AttestationRef calldata ref, Resolution resolution)
        external
        onlyDisputes
        returns (address attester, bool isFail, uint256 forfeitedBond)
    {
        CommitmentStatus memory st = _loadLive(ref.runId, ref.solver);
        uint16 seat = st.roundPlusOne == ref.round + 1 ? _seat(st.seats, ref.slot) : 0;
        if (_state(seat) != AttestationState.Attested) revert WrongState(_state(seat));
        isFail = _isFail(seat);
        attester = _assigned(ref, _loadSeed(ref.runId, ref.round));
        RoundTally memory tally = _loadTally(ref.runId, ref.round);
        AttestationState next = resolution == Resolution.Upheld
            ? AttestationState.Upheld
            : resolution == Resolution.Unresolved ? AttestationState.Voided : AttestationState.Overturned;
        if (next != AttestationState.Upheld) {
            bool wasPaid = _isPaid(st);
            if (!isFail) st.passes -= 1;
            if (next == AttestationState.Overturned) {
                // INVARIANT: an overturned fail is a jury's replay of its segment that came out right: it counts
                //            towards acceptance like a pass, so a griefed solver is paid once it wins (issue 37).
                if (isFail) {
                    st.faults -= 1;
                    st.passes += 1;
                } else {
                    st.faults += 1;
                }
            }
            _adjustPaid(tally, wasPaid, st);
            tally.totalChecks -= 1;
            _storeTally(ref.runId, ref.round, tally);
        }
        st.seats = _withSeat(st.seats, ref.slot, _encodeSeat(next, isFail, false, _sample(seat)));
        _storeLive(ref.runId, ref.solver, st);
        if (next != AttestationState.Overturned) {
            // INVARIANT: pull payment: the bond is credited once, after the seat left Attested (written above).
            credits[attester] += tally.attestationBond;
            emit AttestationResolved(ref.runId, ref.round, ref.solver, ref.slot, attester, next, tally.attestationBond);
            if (next == AttestationState.Upheld && isFail) _slashSolver(ref);
            return (attester, isFail, 0);
        }
        forfeitedBond = tally.attestationBond;
        emit AttestationResolved(
            ref.runId, ref.round, ref.solver, ref.slot, attester, AttestationState.Overturned, forfeitedBond
        );
        verifierRegistry.onOverturned(ref.runId, attester);
        // INVARIANT: checks-effects-interactions: seat, tally and verifier list are written before the bond leaves.
        (bool ok,) = msg.sender.call{value: forfeitedBond}("");
        if (!ok) revert TransferFailed(msg.sender, forfeitedBond);
        if (!isFail) _slashSolver(ref);
    }

    // ------------------------------------------------------------------ views

    /// @inheritdoc IVerification
    function attesterOf(AttestationRef calldata ref) external view returns (address) {
        return _assigned(ref, _drawn(ref.runId, ref.round));
    }

    /// @notice The verifier assigned to a seat (drawn from the seat's sub-seed without replacement: the seats of
    ///         a commitment go to distinct verifiers) and whether it may attest (active, not the solver).
    /// @param ref The seat.
    /// @return verifier The assigned account.
    /// @return eligible Whether that account can attest this seat now.
    function assignedVerifier(AttestationRef calldata ref) external view returns (address verifier, bool eligible) {
        verifier = _assigned(ref, _drawn(ref.runId, ref.round));
        return (verifier, verifier != ref.solver);
    }

    /// @inheritdoc IVerification
    function seedOf(uint256 runId, uint64 round)
        external
        view
        returns (bool drawn, bytes32 seedBase, uint256 snapshotCount)
    {
        RoundSeed memory rs = _loadSeed(runId, round);
        return (rs.attestEnd != 0, bytes32(rs.seed), rs.verifierCount);
    }

    /// @notice Segment index of draw `sampleIndex` of seat `slot` of a commitment (the seed must be drawn):
    ///         Sampling.sample(Sampling.seatSeed(Sampling.seed(seedBase, runId, round, solver), slot), sampleIndex,
    ///         numSegments). Each seat replays its own samples; defined for every slot (a void seat has none
    ///         to replay, since it cannot attest).
    /// @param runId The run.
    /// @param round The round.
    /// @param solver The solver.
    /// @param slot The verifier seat.
    /// @param sampleIndex The draw.
    /// @return The segment index.
    function sampledSegment(uint256 runId, uint64 round, address solver, uint8 slot, uint256 sampleIndex)
        external
        view
        returns (uint256)
    {
        RoundSeed memory rs = _drawn(runId, round);
        bytes32 subSeed = Sampling.seatSeed(Sampling.seed(bytes32(rs.seed), runId, round, solver), slot);
        return Sampling.sample(subSeed, sampleIndex, rs.numSegments);
    }

    /// @notice State of an attestation seat.
    /// @param ref The seat.
    /// @return state The state.
    /// @return isFail Whether it is a fail attestation.
    /// @return sharesMinted Whether its shares were minted.
    /// @return sampleIndex For a fail: the draw it named.
    function attestationOf(AttestationRef calldata ref)
        external
        view
        returns (AttestationState state, bool isFail, bool sharesMinted, uint16 sampleIndex)
    {
        uint16 seat = _seat(_statusOf(ref.runId, ref.round, ref.solver).seats, ref.slot);
        state = _state(seat);
        if (state == AttestationState.Attested && IDisputes(disputes).isAttestationDisputed(ref)) {
            state = AttestationState.Challenged;
        }
        return (state, _isFail(seat), _minted(seat), _sample(seat));
    }

    /// @notice Status of a commitment (zeroed once a later round reused the slot with nothing left to pay).
    /// @param runId The run.
    /// @param round The round.
    /// @param solver The solver.
    /// @return The status.
    function commitmentStatusOf(uint256 runId, uint64 round, address solver)
        external
        view
        returns (CommitmentStatus memory)
    {
        return _statusOf(runId, round, solver);
    }

    /// @notice Per-round parameters fixed by the seed draw.
    /// @param runId The run.
    /// @param round The round.
    /// @return The RoundSeed (zero until drawn).
    function roundSeed(uint256 runId, uint64 round) external view returns (RoundSeed memory) {
        return _loadSeed(runId, round);
    }

    /// @notice Per-round totals and bond.
    /// @param runId The run.
    /// @param round The round.
    /// @return The RoundTally (zero until the seed is drawn).
    function roundTally(uint256 runId, uint64 round) external view returns (RoundTally memory) {
        return _tallies[runId][round];
    }

    /// @inheritdoc IVerification
    /// @dev Final once the round is settled (no dispute can open or stay open then): the provers are the fail seats
    ///      that stand (Finalized, Upheld; an Attested fail must be finalized first, it counts meanwhile).
    function proverOf(AttestationRef calldata ref) external view returns (address prover, uint256 provers) {
        uint128 seats = _statusOf(ref.runId, ref.round, ref.solver).seats;
        uint16 seat = _seat(seats, ref.slot);
        if (!_isProver(seat) || _state(seat) == AttestationState.Attested) revert NotAProver(ref.slot);
        prover = _assigned(ref, _loadSeed(ref.runId, ref.round));
        provers = _countProvers(seats);
    }

    // ------------------------------------------------------------------ internals

    function _plants(uint256 runId) internal view returns (bool) {
        (uint256 rateBps,,) = plants.termsOf(runId);
        return rateBps > 0;
    }

    function _drawn(uint256 runId, uint64 round) internal view returns (RoundSeed memory rs) {
        rs = _loadSeed(runId, round);
        if (rs.attestEnd == 0) revert SeedNotDrawn(runId, round);
    }

    /// @dev Round seed, attest window and seat assignment of an attestation by msg.sender; returns the round seed
    ///      and the seat's sub-seed (computed once per attestation: its verifier and its samples come from it).
    function _attestContext(AttestationRef calldata ref) internal view returns (RoundSeed memory rs, bytes32 seatSeed) {
        rs = _drawn(ref.runId, ref.round);
        if (block.timestamp >= rs.attestEnd) revert OutsideAttestWindow(0, rs.attestEnd);
        seatSeed = _seatSeed(ref, rs);
        address assigned = _assigned(ref, rs);
        if (assigned != msg.sender || msg.sender == ref.solver) revert NotAssignedVerifier(msg.sender, assigned);
        // INVARIANT: a verifier slashed below its reservations (in any run) attests nowhere until it tops up; an
        //            overturned one keeps its reservation through its exit delay (VerifierRegistry.onOverturned), so
        //            the seats it still holds in the round's snapshot are no free second wrong pass (issue 36, f. 7).
        if (!stakeManager.isCovered(msg.sender, Constants.ROLE_VERIFIER)) revert StakeNotCovered(msg.sender);
    }

    /// @dev Record a new attestation in the commitment's status and the round's totals (one write each).
    function _record(AttestationRef calldata ref, RoundSeed memory rs, bool isFail, uint16 sampleIndex) internal {
        RoundTally memory tally = _loadTally(ref.runId, ref.round);
        // INVARIANT: each attestation holds exactly the round's bond: balance == credits + bonds of Attested seats.
        if (msg.value != tally.attestationBond) revert WrongBond(msg.value, tally.attestationBond);
        CommitmentStatus memory st = _loadLive(ref.runId, ref.solver);
        if (st.roundPlusOne != ref.round + 1) st = _openStatus(ref.runId, ref.round, ref.solver, st, rs);
        // INVARIANT: one attestation (one bond) per seat: a second would overwrite the seat and strand the first bond.
        if (_seat(st.seats, ref.slot) != 0) revert AlreadyAttested(ref.slot);
        bool wasPaid = _isPaid(st);
        st.attested = true;
        if (isFail) st.faults += 1;
        else st.passes += 1;
        st.seats = _withSeat(st.seats, ref.slot, _encodeSeat(AttestationState.Attested, isFail, false, sampleIndex));
        _adjustPaid(tally, wasPaid, st);
        tally.totalChecks += 1;
        _storeLive(ref.runId, ref.solver, st);
        _storeTally(ref.runId, ref.round, tally);
    }

    /// @dev The first attestation (or abstention report) of a round for a solver: archive the previous round's status
    ///      if it still owes anything, and start a fresh status for this round, unpaid from the start when the run plants
    ///      and the solver has no plant anchor old enough (Plants.isPayBlocked: fixed for the round once it started).
    function _openStatus(
        uint256 runId,
        uint64 round,
        address solver,
        CommitmentStatus memory previous,
        RoundSeed memory rs
    ) internal returns (CommitmentStatus memory) {
        // INVARIANT: a status still owing a bond or shares is archived before its slot is reused: nothing owed is lost.
        if (previous.roundPlusOne != 0 && _hasPending(previous)) {
            uint64 previousRound = previous.roundPlusOne - 1;
            _archive[runId][previousRound][solver] = previous;
            emit StatusArchived(runId, previousRound, solver);
        }
        return CommitmentStatus({
            roundPlusOne: uint32(round + 1),
            passes: 0,
            faults: 0,
            solverMinted: false,
            live: true,
            attested: false,
            planted: false,
            unpaid: rs.plants && plants.isPayBlocked(runId, round, solver),
            needed: _needed(rs),
            seats: 0
        });
    }

    /// @dev Whether a status still has a bond to return or shares to mint. Bounded by the seat count.
    function _hasPending(CommitmentStatus memory st) internal pure returns (bool) {
        // a paid commitment not minted yet (a planted one whose passes the reveal overturned included)
        if (_isPaid(st) && !st.solverMinted) return true;
        // INVARIANT: bounded: 8 iterations, one per seat of the uint128 seat map (<= 8 seats, checked at createRun).
        for (uint8 slot; slot < Constants.MAX_VERIFIERS_PER_COMMITMENT; ++slot) {
            uint16 seat = _seat(st.seats, slot);
            AttestationState state = _state(seat);
            if (state == AttestationState.Attested) return true;
            if ((state == AttestationState.Finalized || state == AttestationState.Upheld) && !_minted(seat)) {
                return true;
            }
            // a proof of the commitment's fault: FaultRewards reads it (proverOf) when its share is claimed
            if (_isProver(seat)) return true;
        }
        return false;
    }

    /// @dev Live status if it holds `round`, else the archive (zero if nothing was left to archive).
    function _statusOf(uint256 runId, uint64 round, address solver)
        internal
        view
        returns (CommitmentStatus storage st)
    {
        st = _live[runId][solver];
        if (st.roundPlusOne != round + 1) st = _archive[runId][round][solver];
    }

    /// @dev One copy of the status and tally (un)packing code, shared by every caller (EIP-170 size).
    function _loadLive(uint256 runId, address solver) internal view returns (CommitmentStatus memory) {
        return _live[runId][solver];
    }

    function _storeLive(uint256 runId, address solver, CommitmentStatus memory st) internal {
        _live[runId][solver] = st;
    }

    function _loadSeed(uint256 runId, uint64 round) internal view returns (RoundSeed memory) {
        return _seeds[runId][round];
    }

    function _loadTally(uint256 runId, uint64 round) internal view returns (RoundTally memory) {
        return _tallies[runId][round];
    }

    function _storeTally(uint256 runId, uint64 round, RoundTally memory tally) internal {
        _tallies[runId][round] = tally;
    }

    /// @dev Whether a commitment is paid: not found unpaid by Plants, and either revealed as planted and attested (its
    ///      passes were overturned by the reveal, its fails stand) or accepted: standing passes and cleared fails on a
    ///      strict majority of its seats (`passes >= needed`), and no standing fault.
    function _isPaid(CommitmentStatus memory st) internal pure returns (bool) {
        if (st.unpaid) return false;
        if (st.planted) return st.attested;
        // INVARIANT: a seat nobody attested counts against acceptance: lateness of honest verifiers never lets a
        //            minority of seats (e.g. one lazy pass) accept work (issue 37).
        return st.needed != 0 && st.passes >= st.needed && st.faults == 0;
    }

    /// @dev The seats a commitment needs to stand (passes or cleared fails): a strict majority of the round's seats,
    ///      min(verifiers per commitment, verifiers listed) / 2 + 1.
    function _needed(RoundSeed memory rs) internal pure returns (uint8) {
        uint256 seats = rs.verifiers < rs.verifierCount ? rs.verifiers : rs.verifierCount;
        return uint8(seats / 2 + 1);
    }

    function _adjustPaid(RoundTally memory tally, bool wasPaid, CommitmentStatus memory st) internal pure {
        bool paid = _isPaid(st);
        // INVARIANT: paidCommitments changes exactly when a commitment becomes paid or stops being paid: it always
        //            equals the number of the round's paid commitments (issue 36, findings 1 and 3).
        if (!wasPaid && paid) tally.paidCommitments += 1;
        if (wasPaid && !paid) tally.paidCommitments -= 1;
    }

    /// @dev The seat's sub-seed: Sampling.seatSeed(Sampling.seed(seedBase, runId, round, solver), slot).
    function _seatSeed(AttestationRef calldata ref, RoundSeed memory rs) internal pure returns (bytes32) {
        return Sampling.seatSeed(Sampling.seed(bytes32(rs.seed), ref.runId, ref.round, ref.solver), ref.slot);
    }

    /// @dev The verifier of a seat: list[Sampling.seatIndex(seed, slot, count)] over the round's snapshot (the list
    ///      at the end of seedBlock - 1, of `verifierCount` entries). Each seat draws from its own sub-seed, without
    ///      replacement, so the seats of one commitment go to distinct verifiers.
    function _assigned(AttestationRef calldata ref, RoundSeed memory rs) internal view returns (address) {
        return _assignedAt(ref.runId, ref.round, ref.solver, ref.slot, rs);
    }

    function _assignedAt(uint256 runId, uint64 round, address solver, uint8 slot, RoundSeed memory rs)
        internal
        view
        returns (address)
    {
        if (slot >= rs.verifiers || slot >= rs.verifierCount) revert SeatVoid(slot);
        bytes32 seed = Sampling.seed(bytes32(rs.seed), runId, round, solver);
        return verifierRegistry.verifierAt(runId, Sampling.seatIndex(seed, slot, rs.verifierCount), rs.seedBlock - 1);
    }

    /// @dev The segment of the seat's draw `sampleIndex` (from the seat's sub-seed `seatSeed`), with the leaf proven
    ///      under `root`.
    function _checkLeaf(
        AttestationRef calldata ref,
        RoundSeed memory rs,
        bytes32 seatSeed,
        bytes32 root,
        uint16 sampleIndex,
        LeafData calldata leaf,
        bytes32[] calldata proof
    ) internal pure returns (uint32 segmentIndex) {
        segmentIndex = uint32(Sampling.sample(seatSeed, sampleIndex, rs.numSegments));
        SegmentLeaf.Leaf memory full = SegmentLeaf.Leaf({
            runId: ref.runId,
            round: ref.round,
            solver: ref.solver,
            index: segmentIndex,
            startHash: leaf.startHash,
            endHash: leaf.endHash,
            sketchHash: leaf.sketchHash,
            tokens: leaf.tokens
        });
        if (!SegmentLeaf.verify(proof, root, full)) revert InvalidLeafProof();
    }

    /// @dev The commitment's fault is proven: slash the solver (StakeManager takes a fault key once, so a later
    ///      proof takes nothing) and send the provers' part to FaultRewards, where every prover of the fault gets
    ///      an equal share whoever's proof came first.
    function _slashSolver(AttestationRef calldata ref) internal {
        // INVARIANT: one fault key per commitment: a commitment's solver is slashed at most once, by any path.
        bytes32 faultKey = keccak256(abi.encode(Constants.FAULT_SOLVER, ref.runId, ref.round, ref.solver));
        uint256 taken =
            stakeManager.slash(ref.solver, Constants.ROLE_SOLVER, runRegistry.solverMinStake(ref.runId), faultKey);
        if (taken == 0) return;
        uint256 toProvers = taken * Constants.WINNER_REWARD_BPS / Constants.BPS_DENOMINATOR;
        // INVARIANT: toProvers + toPool == taken, both sent on in this call: every slashed wei is accounted for.
        uint256 toPool = taken - toProvers;
        emit SolverFaultProven(ref.runId, ref.round, ref.solver, faultKey, taken, toProvers, toPool);
        if (toProvers > 0) faultRewards.onFaultProven{value: toProvers}(ref.runId, ref.round, ref.solver);
        if (toPool > 0) modelShares.fundPool{value: toPool}(ref.runId);
    }

    /// @dev Seats that prove the commitment's fault: fails not overturned or voided.
    function _countProvers(uint128 seats) internal pure returns (uint256 count) {
        // INVARIANT: bounded: 8 iterations, one per seat of the uint128 seat map.
        for (uint8 slot; slot < Constants.MAX_VERIFIERS_PER_COMMITMENT; ++slot) {
            if (_isProver(_seat(seats, slot))) ++count;
        }
    }

    /// @dev A standing fail proves the commitment's fault. An overturned pass does not make its challenger a prover: the
    ///      challenger is paid from the wrong attester's forfeits (Disputes), so an accomplice that challenges its
    ///      coalition's own lazy pass first recovers none of the solver's stake (issue 36, finding 5).
    function _isProver(uint16 seat) internal pure returns (bool) {
        if (!_isFail(seat)) return false;
        AttestationState state = _state(seat);
        return
            state == AttestationState.Attested || state == AttestationState.Finalized
                || state == AttestationState.Upheld;
    }

    function _seat(uint128 seats, uint8 slot) internal pure returns (uint16) {
        return uint16(seats >> (16 * uint256(slot)));
    }

    function _withSeat(uint128 seats, uint8 slot, uint16 value) internal pure returns (uint128) {
        uint256 shift = 16 * uint256(slot);
        return (seats & ~(uint128(0xffff) << shift)) | (uint128(value) << shift);
    }

    function _encodeSeat(AttestationState state, bool isFail, bool minted, uint16 sampleIndex)
        internal
        pure
        returns (uint16)
    {
        return uint16(state) | (isFail ? uint16(1) << 3 : 0) | (minted ? uint16(1) << 4 : 0) | (sampleIndex << 5);
    }

    function _state(uint16 seat) internal pure returns (AttestationState) {
        return AttestationState(seat & 7);
    }

    function _isFail(uint16 seat) internal pure returns (bool) {
        return seat & (1 << 3) != 0;
    }

    function _minted(uint16 seat) internal pure returns (bool) {
        return seat & MINTED_BIT != 0;
    }

    function _sample(uint16 seat) internal pure returns (uint16) {
        return (seat >> 5) & SAMPLE_MASK;
    }
}
