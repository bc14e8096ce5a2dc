// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Constants} from "./Constants.sol";
import {PullPayments} from "./base/PullPayments.sol";
import {IDisputes} from "./interfaces/IDisputes.sol";
import {IJurorRegistry} from "./interfaces/IJurorRegistry.sol";
import {IModelShares} from "./interfaces/IModelShares.sol";
import {IPlants} from "./interfaces/IPlants.sol";
import {IRunRegistry} from "./interfaces/IRunRegistry.sol";
import {IStakeManager} from "./interfaces/IStakeManager.sol";
import {IVerification} from "./interfaces/IVerification.sol";
import {AttestationRef, CommitmentData, DisputeSubject, LeafData, NonSigner} from "./interfaces/Types.sol";
import {BLS} from "./libraries/BLS.sol";
import {SegmentLeaf} from "./libraries/SegmentLeaf.sol";

/// @title Disputes
/// @notice Challenges of attestations and of theta_(r+1) claims, with bonds; jury drawing from the JurorRegistry's
///         snapshot; jury verdicts carried by one aggregate BLS signature and a signer bitmap; appeals to larger
///         juries when a jury stays silent; resolution, slashing and exact payouts.
/// @dev Dispute lifecycle: Open -(drawJury)-> JuryDrawn -(submitVerdict)-> Decided -(execute)-> Executed.
///      A jury that gives no verdict by the deadline is replaced (`expire`, anyone): the dispute goes back to
///      Open with a new snapshot block, a new deadline and a larger jury, at most MAX_APPEALS times; after that
///      it ends Expired ("unresolved"): nobody is slashed, a challenged pass stops counting (its work is not
///      paid), a challenged fail stays blocking, a challenged claim is withdrawn with its bond returned, and
///      the challenger gets its bond back less UNRESOLVED_CHALLENGE_FEE_BPS (to the run's pool).
///      Jury: seed = keccak256(abi.encode(blockhash(openedBlock + 1), disputeId)); the registry snapshot is the
///      one of `openedBlock`, fixed before the seed exists. The pool is JurorRegistry.drawPool(seed, poolSize,
///      openedBlock) with poolSize = jurySize + JURY_PARTY_SLACK (every seat an independent draw, or the whole
///      registry when it is no larger); the jury is the first `jurySize` seats whose juror is not a party
///      (challenger, defendant, solver) and not already seated. A verdict needs ceil(2 * seats / 3) signers,
///      `seats` being the jury actually drawn, and a jury of fewer than MIN_JURY_SIZE seats cannot decide.
///      jurySize is the run's at the first draw and min(2 * previous + 1, MAX_JURY_SIZE) after each appeal.
///      `drawJury` stores the hash of the sum of the jurors' keys; a verdict passes that sum and the keys of
///      the jurors who did not sign, so the signers' aggregate key costs one G1 addition per non-signer.
///      Payout of a decided dispute: total = the loser's bond (+ the wrong attester's slashed stake when an
///      attestation is overturned); WINNER_REWARD_BPS of it to the winner, JUROR_REWARD_BPS split equally among
///      signers (claimed after settlement), the remainder (and the division dust) to the run's reward pool. The
///      winner's own bond is returned. A solver fault the verdict proves (overturned pass, upheld fail) is
///      slashed by Verification and shared by all of that fault's provers, so no party gains by being the one
///      whose proof lands first. A plant dispute (KIND_PLANT, docs/planted-faults.md) asks whether a segment of a
///      commitment revealed as planted replays as the planted training (the same steps on the batches of the
///      revealed secret): if not, the plant was false (honest work claimed as planted, or work never done), the
///      solver is slashed its solverMinStake (the dispute's total) and not paid; if it does, the challenger's bond
///      is the total and the solver the winner. ETH held: bonds of open disputes + credits + juror rewards not yet
///      claimed.
contract Disputes is PullPayments, IDisputes {
    /// @notice Status of a dispute.
    enum Status {
        None,
        Open,
        JuryDrawn,
        Decided,
        Executed,
        Expired
    }

    /// @notice A dispute: slot 0 written by the challenge, the rest by the jury draw, verdict and execution.
    struct Dispute {
        // PACKING: slot 0 is all a challenge writes; a slot per field costs +88,314 gas per challenge, +93,983 per
        //          drawJury, +49,106 per submitVerdict.
        address challenger;
        uint40 deadline; // challenge (or appeal) time + the run's dispute timeout
        uint40 openedBlock; // the registry snapshot; the jury seed is the next block's hash
        Status status;
        uint8 kind;
        uint8 appeals; // juries replaced after a silent deadline
        uint8 poolSize; // seats asked of the registry: the appeal level's jury size + JURY_PARTY_SLACK
        uint8 seats; // seats the jury actually has (the quorum's base)
        uint32 eligible; // bitmap of the jury's seats (who may sign)
        uint32 signers; // bitmap of seats that signed
        uint32 claimed; // bitmap of signers that claimed their reward
        bool challengerWins;
        uint96 rewardPerJuror;
        bytes32 aggregateHash; // keccak256 of the sum of the eligible seats' public keys
        bytes32 jurySeed;
    }

    uint8 public constant KIND_ATTESTATION = 1;
    uint8 public constant KIND_CLAIM = 2;
    uint8 public constant KIND_PLANT = 3;

    IStakeManager public immutable stakeManager;
    IRunRegistry public immutable runRegistry;
    IVerification public immutable verification;
    IModelShares public immutable modelShares;
    IJurorRegistry public immutable jurorRegistry;
    IPlants public immutable plants;

    mapping(bytes32 disputeId => Dispute) internal _disputes;
    /// @notice Signatures of executed verdicts per round: the denominator of the jurors' share of the round.
    mapping(uint256 runId => mapping(uint64 round => uint256)) public jurorVotes;

    /// @notice An attestation (seat `slot` of the solver's commitment; the attester is in its PassAttested or
    ///         FailAttested event) was challenged with the run's challenge bond. `attestation` says whether it
    ///         was a fail and names the disputed draw and segment; `leaf` is that segment's committed leaf,
    ///         proven under the commitment root, so the disputed checkpoint hashes are on-chain. The
    ///         attestation is Challenged and the round has one more open dispute until the deadline (this
    ///         block's timestamp + the run's dispute timeout).
    event AttestationChallenged(
        bytes32 indexed disputeId,
        uint256 indexed runId,
        uint64 indexed round,
        address solver,
        uint8 slot,
        address challenger,
        IVerification.ChallengedAttestation attestation,
        LeafData leaf
    );
    /// @notice A commitment revealed as planted was challenged over segment `segmentIndex` (its committed `leaf`,
    ///         proven under the root): the challenger says the segment does not replay as the planted training.
    event PlantChallenged(
        bytes32 indexed disputeId,
        uint256 indexed runId,
        uint64 indexed round,
        address solver,
        address challenger,
        uint32 segmentIndex,
        LeafData leaf
    );
    /// @notice A theta_(r+1) claim was challenged with the challenge bond; it is Challenged and the round has
    ///         one more open dispute until the deadline (this block's timestamp + the dispute timeout).
    event ClaimChallenged(
        bytes32 indexed disputeId,
        uint256 indexed runId,
        uint64 indexed round,
        uint16 claimNonce,
        address claimer,
        address challenger
    );
    /// @notice The jury of a dispute was drawn from the registry of `snapshotBlock`: `seats` jurors (bitmap
    ///         `eligible` over the `poolSize` pool seats) at appeal level `appeals`.
    event JuryDrawn(
        bytes32 indexed disputeId,
        bytes32 seed,
        uint256 appeals,
        uint256 snapshotBlock,
        uint256 poolSize,
        uint256 seats,
        uint256 eligible
    );
    /// @notice A jury gave no verdict by its deadline: a jury of up to `jurySize` is drawn from the registry of
    ///         this block, to decide before `deadline`.
    event DisputeAppealed(bytes32 indexed disputeId, uint256 appeals, uint256 jurySize, uint256 deadline);
    /// @notice A verdict carried by an aggregate BLS signature of `signerCount` seats (bitmap `signers`).
    event VerdictSubmitted(bytes32 indexed disputeId, bool challengerWins, uint256 signers, uint256 signerCount);
    /// @notice A verdict was executed: `total` (forfeited bond + slashed stake) was split into `toWinner`,
    ///         `rewardPerJuror` for each of `signerCount` signers, and `toPool` (the run's reward pool);
    ///         `bondReturned` is the winner's own bond, returned.
    event DisputeExecuted(
        bytes32 indexed disputeId,
        bool challengerWins,
        address winner,
        uint256 total,
        uint256 toWinner,
        uint256 bondReturned,
        uint256 rewardPerJuror,
        uint256 signerCount,
        uint256 toPool
    );
    /// @notice A dispute ended without verdict after its last appeal: nobody was slashed, the challenger got
    ///         `bondReturned` back and `fee` of its bond went to the run's pool.
    event DisputeExpired(bytes32 indexed disputeId, address challenger, uint256 bondReturned, uint256 fee);
    /// @notice A signing juror took its reward (ETH credit) and its shares.
    event JurorRewardClaimed(
        bytes32 indexed disputeId, address indexed juror, uint8 seat, uint256 reward, uint256 shares
    );
    /// @notice Juror rewards nobody claimed within REWARD_CLAIM_WINDOW of the deadline (signer bitmap `seats`)
    ///         went to the run's reward pool; those seats can claim nothing any more.
    event JurorRewardsSwept(bytes32 indexed disputeId, uint256 seats, uint256 amount);

    error WrongBond(uint256 sent, uint256 required);
    error DisputeExists(bytes32 disputeId);
    error WrongStatus(Status status);
    error DeadlinePassed(uint256 deadline);
    error DeadlineNotReached(uint256 deadline);
    error JurySeedNotReady(uint256 seedBlock);
    error JurySeedUnavailable(uint256 seedBlock);
    error NoJurors();
    error WrongPoolSize(uint256 given, uint256 expected);
    error JurorKeyMismatch(uint256 seat);
    error NotEligible(uint256 signers, uint256 eligible);
    error JuryTooSmall(uint256 seats, uint256 minimum);
    error QuorumNotReached(uint256 signers, uint256 quorum);
    error AggregateMismatch();
    error WrongNonSigners();
    error InvalidSignature();
    error NotSettled(uint256 runId, uint64 round);
    error NotASigner(uint8 seat);
    error AlreadyClaimed(uint8 seat);
    error UnexpectedEther(address from);
    error ClaimWindowOpen(uint256 closesAt);
    error NothingToSweep();
    error NotPlantChallengeable(uint256 runId, uint64 round, address solver);
    error InvalidLeafProof();

    /// @param stakeManager_ The StakeManager.
    /// @param runRegistry_ The RunRegistry.
    /// @param verification_ The Verification contract.
    /// @param modelShares_ ModelShares (mints, reward pools).
    /// @param jurorRegistry_ The JurorRegistry (juries are drawn from its snapshots).
    constructor(
        IStakeManager stakeManager_,
        IRunRegistry runRegistry_,
        IVerification verification_,
        IModelShares modelShares_,
        IJurorRegistry jurorRegistry_,
        IPlants plants_
    ) {
        stakeManager = stakeManager_;
        runRegistry = runRegistry_;
        verification = verification_;
        modelShares = modelShares_;
        jurorRegistry = jurorRegistry_;
        plants = plants_;
    }

    /// @notice Slash proceeds and forfeited bonds from the protocol contracts only.
    receive() external payable {
        // INVARIANT: plain ETH comes only from protocol contracts (slashes, forfeits), paid out by the same call.
        if (
            msg.sender != address(stakeManager) && msg.sender != address(verification)
                && msg.sender != address(runRegistry)
        ) revert UnexpectedEther(msg.sender);
    }

    // ------------------------------------------------------------------ challenges

    /// @notice Challenge an attestation inside its challenge window, with the run's challenge bond: a pass
    ///         (naming a sampled segment the challenger says is wrong) or a fail (the segment it named).
    /// @param ref The attestation's seat.
    /// @param commitment The commitment fields (checked against the stored hash).
    /// @param sampleIndex The draw of the disputed segment (for a fail: the draw the fail named).
    /// @param leaf The committed leaf of that segment.
    /// @param proof Its Merkle proof under the commitment root.
    /// @return disputeId keccak256(abi.encode(DisputeSubject(KIND_ATTESTATION, runId, round, solver, slot, 0))).
    function challengeAttestation(
        AttestationRef calldata ref,
        CommitmentData calldata commitment,
        uint16 sampleIndex,
        LeafData calldata leaf,
        bytes32[] calldata proof
    ) external payable returns (bytes32 disputeId) {
        disputeId = _id(DisputeSubject(KIND_ATTESTATION, ref.runId, ref.round, ref.solver, ref.slot, 0));
        if (_disputes[disputeId].status != Status.None) revert DisputeExists(disputeId);
        IVerification.ChallengedAttestation memory info =
            verification.checkChallenge(ref, commitment.root, sampleIndex, leaf, proof);
        IRunRegistry.DisputeTerms memory terms =
            runRegistry.onDisputeOpened(ref.runId, ref.round, ref.solver, commitment);
        // INVARIANT: one dispute per id, holding exactly the challengeBond, which execute or expire settles once.
        if (msg.value != terms.challengeBond) revert WrongBond(msg.value, terms.challengeBond);
        uint256 deadline = block.timestamp + terms.disputeTimeout;
        _open(disputeId, KIND_ATTESTATION, deadline);
        _emitChallenged(disputeId, ref, info, leaf);
    }

    /// @notice Challenge a commitment its solver revealed as planted, from the reveal until the round's challenge
    ///         window closes, with the run's challenge bond: the challenger says committed segment `segmentIndex`
    ///         does not replay as the planted training (protocol.replay.replay_segment with the revealed secret).
    ///         One plant dispute per segment of the commitment: the planter cannot use up the check by disputing its
    ///         own plant over a segment it did train as planted (issue 36, finding 2); disputing a segment it did not
    ///         disproves its own plant.
    /// @param runId The run.
    /// @param round The current round.
    /// @param solver The planting solver.
    /// @param commitment The commitment fields (checked against the stored hash).
    /// @param segmentIndex The disputed segment.
    /// @param leaf Its committed leaf.
    /// @param proof Its Merkle proof under the commitment root.
    /// @return disputeId keccak256(abi.encode(DisputeSubject(KIND_PLANT, runId, round, solver, 0, segmentIndex))).
    function challengePlant(
        uint256 runId,
        uint64 round,
        address solver,
        CommitmentData calldata commitment,
        uint32 segmentIndex,
        LeafData calldata leaf,
        bytes32[] calldata proof
    ) external payable returns (bytes32 disputeId) {
        // INVARIANT: segments of a commitment are < numSegments <= 2^16 - 1 (RunRegistry._validate), so the id's
        //            uint16 names each segment once.
        if (segmentIndex > type(uint16).max) revert InvalidLeafProof();
        disputeId = _id(DisputeSubject(KIND_PLANT, runId, round, solver, 0, uint16(segmentIndex)));
        if (_disputes[disputeId].status != Status.None) revert DisputeExists(disputeId);
        if (!plants.isPlantChallengeable(runId, round, solver)) revert NotPlantChallengeable(runId, round, solver);
        SegmentLeaf.Leaf memory full = SegmentLeaf.Leaf({
            runId: runId,
            round: round,
            solver: solver,
            index: segmentIndex,
            startHash: leaf.startHash,
            endHash: leaf.endHash,
            sketchHash: leaf.sketchHash,
            tokens: leaf.tokens
        });
        if (!SegmentLeaf.verify(proof, commitment.root, full)) revert InvalidLeafProof();
        IRunRegistry.DisputeTerms memory terms = runRegistry.onDisputeOpened(runId, round, solver, commitment);
        // INVARIANT: one plant dispute per commitment, holding exactly the challengeBond, settled once.
        if (msg.value != terms.challengeBond) revert WrongBond(msg.value, terms.challengeBond);
        _open(disputeId, KIND_PLANT, block.timestamp + terms.disputeTimeout);
        emit PlantChallenged(disputeId, runId, round, solver, msg.sender, segmentIndex, leaf);
    }

    /// @notice Challenge the current round's theta_(r+1) claim inside its window, with the challenge bond.
    ///         A claim can be challenged once.
    /// @param runId The run.
    /// @param round The current round.
    /// @param claimNonce The claim's nonce (RunRegistry.claimOf).
    /// @return disputeId keccak256(abi.encode(DisputeSubject(KIND_CLAIM, runId, round, 0, 0, claimNonce))).
    function challengeClaim(uint256 runId, uint64 round, uint16 claimNonce)
        external
        payable
        returns (bytes32 disputeId)
    {
        IRunRegistry.DisputeTerms memory terms = runRegistry.disputeTerms(runId);
        // INVARIANT: a claim dispute holds exactly the challengeBond, which execute or expire settles once.
        if (msg.value != terms.challengeBond) revert WrongBond(msg.value, terms.challengeBond);
        disputeId = _id(DisputeSubject(KIND_CLAIM, runId, round, address(0), 0, claimNonce));
        if (_disputes[disputeId].status != Status.None) revert DisputeExists(disputeId);
        address claimer = runRegistry.onClaimChallenged(runId, round, claimNonce);
        uint256 deadline = block.timestamp + terms.disputeTimeout;
        _open(disputeId, KIND_CLAIM, deadline);
        emit ClaimChallenged(disputeId, runId, round, claimNonce, claimer, msg.sender);
    }

    // ------------------------------------------------------------------ jury and verdict

    /// @notice Draw the jury of an open dispute (anyone) from the block after the challenge (or appeal), out of the
    ///         juror registry as it was in the dispute's own block: checks each pool seat's key against the
    ///         registry, marks the jury and stores the hash of the sum of the jurors' keys. Must happen within 256
    ///         blocks of the challenge (else the dispute waits for its deadline and is appealed).
    /// @param subject What the dispute is about.
    /// @param publicKeys The registered key of every pool seat, in seat order (protocol.jury.draw_jury).
    function drawJury(DisputeSubject calldata subject, bytes[] calldata publicKeys) external {
        bytes32 disputeId = _id(subject);
        Dispute storage d = _disputes[disputeId];
        if (d.status != Status.Open) revert WrongStatus(d.status);
        if (block.timestamp >= d.deadline) revert DeadlinePassed(d.deadline);
        bytes32 seed = keccak256(abi.encode(_seedBlockHash(d.openedBlock), disputeId));
        uint256 jurySize = _jurySizeAt(runRegistry.disputeTerms(subject.runId).jurySize, d.appeals);
        _emitJuryDrawn(disputeId, d, _seatJury(subject, d, seed, jurySize, publicKeys));
    }

    /// @notice Submit the jury's verdict before the deadline: one aggregate BLS signature by the seats in
    ///         `signers` over abi.encode(address(this), block.chainid, disputeId, challengerWins).
    /// @param subject What the dispute is about.
    /// @param challengerWins The verdict: true when the challenged attestation or claim is wrong.
    /// @param signers Bitmap of signing seats (a subset of the eligible seats, at least the quorum).
    /// @param signature Aggregate G2 signature (256-byte EIP-2537 encoding).
    /// @param eligibleAggregate Sum of the eligible seats' public keys (its hash was stored by drawJury).
    /// @param nonSigners Every eligible seat not in `signers`, in increasing seat order, with its key.
    function submitVerdict(
        DisputeSubject calldata subject,
        bool challengerWins,
        uint32 signers,
        bytes calldata signature,
        bytes calldata eligibleAggregate,
        NonSigner[] calldata nonSigners
    ) external {
        bytes32 disputeId = _id(subject);
        Dispute storage d = _disputes[disputeId];
        uint256 count = _checkSigners(d, signers);
        if (keccak256(eligibleAggregate) != d.aggregateHash) revert AggregateMismatch();
        bytes memory signersKey = _subtractNonSigners(d, eligibleAggregate, d.eligible & ~signers, nonSigners);
        if (!BLS.verify(signersKey, verdictMessage(disputeId, challengerWins), signature, bytes(Constants.BLS_SIG_DST)))
        {
            revert InvalidSignature();
        }
        d.signers = signers;
        d.challengerWins = challengerWins;
        d.status = Status.Decided;
        emit VerdictSubmitted(disputeId, challengerWins, signers, count);
    }

    /// @notice Execute a decided verdict (anyone): resolve the attestation or claim, slash the loser, pay the
    ///         winner and the pool, set the signing jurors' reward, close the dispute.
    /// @param subject What the dispute is about.
    function execute(DisputeSubject calldata subject) external {
        bytes32 disputeId = _id(subject);
        Dispute storage d = _disputes[disputeId];
        if (d.status != Status.Decided) revert WrongStatus(d.status);
        // INVARIANT: the status leaves Decided before any slash or payout call, so a dispute pays out once.
        d.status = Status.Executed;
        uint256 bond = runRegistry.disputeTerms(subject.runId).challengeBond;
        (address winner, uint256 total, uint256 bondReturned) = subject.kind == KIND_ATTESTATION
            ? _resolveAttestation(subject, d, bond)
            : subject.kind == KIND_CLAIM ? _resolveClaim(subject, d, bond) : _resolvePlant(subject, d, bond);
        uint256 signerCount = _popcount(d.signers);
        uint256 toWinner = total * Constants.WINNER_REWARD_BPS / Constants.BPS_DENOMINATOR;
        uint256 rewardPerJuror = total * Constants.JUROR_REWARD_BPS / Constants.BPS_DENOMINATOR / signerCount;
        // INVARIANT: toWinner + rewardPerJuror * signerCount + toPool == total; the rounding dust goes to the pool.
        uint256 toPool = total - toWinner - rewardPerJuror * signerCount;
        d.rewardPerJuror = uint96(rewardPerJuror);
        // INVARIANT: pull payment: credits + juror rewards + toPool == held challenge bond + all this call received.
        credits[winner] += toWinner + bondReturned;
        jurorVotes[subject.runId][subject.round] += signerCount;
        emit DisputeExecuted(
            disputeId, d.challengerWins, winner, total, toWinner, bondReturned, rewardPerJuror, signerCount, toPool
        );
        if (subject.kind != KIND_CLAIM) runRegistry.onDisputeClosed(subject.runId);
        if (toPool > 0) modelShares.fundPool{value: toPool}(subject.runId);
    }

    /// @notice Replace a jury that gave no verdict by the deadline (anyone): the dispute is re-opened for a larger
    ///         jury drawn from this block's registry, with a fresh deadline; after MAX_APPEALS replacements it
    ///         ends unresolved instead: nobody is slashed, a challenged pass stops counting, a challenged fail
    ///         keeps blocking, a challenged claim is withdrawn (its bond returned to the claimer), and the
    ///         challenger's bond comes back less UNRESOLVED_CHALLENGE_FEE_BPS, which goes to the run's pool.
    /// @param subject What the dispute is about.
    function expire(DisputeSubject calldata subject) external {
        bytes32 disputeId = _id(subject);
        Dispute storage d = _disputes[disputeId];
        if (d.status != Status.Open && d.status != Status.JuryDrawn) revert WrongStatus(d.status);
        if (block.timestamp < d.deadline) revert DeadlineNotReached(d.deadline);
        IRunRegistry.DisputeTerms memory terms = runRegistry.disputeTerms(subject.runId);
        if (d.appeals < Constants.MAX_APPEALS) {
            uint8 appeals = d.appeals + 1;
            uint256 deadline = block.timestamp + terms.disputeTimeout;
            // INVARIANT: a silent jury never decides by default: the dispute re-opens with a new snapshot and seed.
            _disputes[disputeId] = Dispute({
                challenger: d.challenger,
                deadline: uint40(deadline),
                openedBlock: uint40(block.number),
                status: Status.Open,
                kind: d.kind,
                appeals: appeals,
                poolSize: 0,
                seats: 0,
                eligible: 0,
                signers: 0,
                claimed: 0,
                challengerWins: false,
                rewardPerJuror: 0,
                aggregateHash: bytes32(0),
                jurySeed: bytes32(0)
            });
            emit DisputeAppealed(disputeId, appeals, _jurySizeAt(terms.jurySize, appeals), deadline);
            return;
        }
        // INVARIANT: final status before the calls: the bond is split once (credit + fee); nobody is slashed.
        d.status = Status.Expired;
        uint256 fee = terms.challengeBond * Constants.UNRESOLVED_CHALLENGE_FEE_BPS / Constants.BPS_DENOMINATOR;
        uint256 returned = terms.challengeBond - fee;
        credits[d.challenger] += returned;
        emit DisputeExpired(disputeId, d.challenger, returned, fee);
        if (subject.kind == KIND_ATTESTATION) {
            verification.onResolved(_ref(subject), IVerification.Resolution.Unresolved);
            runRegistry.onDisputeClosed(subject.runId);
        } else if (subject.kind == KIND_PLANT) {
            runRegistry.onDisputeClosed(subject.runId); // the plant stands: nobody is slashed
        } else {
            address claimer = runRegistry.claimerOf(subject.runId, subject.round);
            // the withdrawn claim's bond comes back here (onClaimResolved sends it) and is owed to its claimer
            uint256 claimBond =
                runRegistry.onClaimResolved(subject.runId, subject.round, IRunRegistry.ClaimOutcome.Unresolved);
            credits[claimer] += claimBond;
        }
        if (fee > 0) modelShares.fundPool{value: fee}(subject.runId);
    }

    /// @notice A signing juror claims its reward (ETH credit) and its shares once the round is settled:
    ///         the round's juror share divided by all signatures of the round's executed verdicts.
    /// @param subject What the dispute was about.
    /// @param seat The caller's seat (a signer).
    function claimJurorReward(DisputeSubject calldata subject, uint8 seat) external {
        bytes32 disputeId = _id(subject);
        Dispute storage d = _disputes[disputeId];
        if (d.status != Status.Executed) revert WrongStatus(d.status);
        if (!runRegistry.isSettled(subject.runId, subject.round)) revert NotSettled(subject.runId, subject.round);
        uint32 bit = uint32(1) << seat;
        if (seat >= 32 || d.signers & bit == 0) revert NotASigner(seat);
        if (d.claimed & bit != 0) revert AlreadyClaimed(seat);
        (address juror,) = jurorRegistry.seatOf(d.jurySeed, seat, d.poolSize, d.openedBlock);
        if (juror != msg.sender) revert NotASigner(seat);
        // INVARIANT: the signer's bit is set before the credit and the mint: each signer claims once.
        d.claimed |= bit;
        uint256 reward = d.rewardPerJuror;
        credits[msg.sender] += reward;
        uint256 bucket = runRegistry.sharesPerRound(subject.runId)
            * runRegistry.runEconomics(subject.runId).jurorShareBps / Constants.BPS_DENOMINATOR;
        // INVARIANT: jurorVotes of a settled round is final (settle needs no open dispute), so juror mints <= bucket.
        uint256 shares = bucket / jurorVotes[subject.runId][subject.round];
        emit JurorRewardClaimed(disputeId, msg.sender, seat, reward, shares);
        modelShares.mint(subject.runId, subject.round, msg.sender, shares, IModelShares.ShareKind.Juror);
    }

    /// @notice Send the juror rewards of an executed dispute that nobody claimed within REWARD_CLAIM_WINDOW of
    ///         its deadline to the run's reward pool (anyone); the unclaimed seats can claim nothing afterwards.
    /// @param subject What the dispute was about.
    function sweepUnclaimedJurorRewards(DisputeSubject calldata subject) external {
        bytes32 disputeId = _id(subject);
        Dispute storage d = _disputes[disputeId];
        if (d.status != Status.Executed) revert WrongStatus(d.status);
        uint256 closesAt = uint256(d.deadline) + Constants.REWARD_CLAIM_WINDOW;
        if (block.timestamp < closesAt) revert ClaimWindowOpen(closesAt);
        uint32 unclaimed = d.signers & ~d.claimed;
        if (unclaimed == 0) revert NothingToSweep();
        // INVARIANT: the seats are marked claimed before the ETH leaves, so each reward is paid (or swept) once.
        d.claimed |= unclaimed;
        uint256 amount = uint256(d.rewardPerJuror) * _popcount(unclaimed);
        emit JurorRewardsSwept(disputeId, unclaimed, amount);
        if (amount > 0) modelShares.fundPool{value: amount}(subject.runId);
    }

    // ------------------------------------------------------------------ views

    /// @notice The id of a dispute subject.
    /// @param subject The subject.
    /// @return keccak256(abi.encode(subject)).
    function disputeIdOf(DisputeSubject calldata subject) external pure returns (bytes32) {
        return _id(subject);
    }

    /// @inheritdoc IDisputes
    function isAttestationDisputed(AttestationRef calldata ref) external view returns (bool) {
        Status status =
        _disputes[_id(DisputeSubject(KIND_ATTESTATION, ref.runId, ref.round, ref.solver, ref.slot, 0))].status;
        return status == Status.Open || status == Status.JuryDrawn || status == Status.Decided;
    }

    /// @inheritdoc IDisputes
    function challengerOf(AttestationRef calldata ref) external view returns (address) {
        return
            _disputes[_id(DisputeSubject(KIND_ATTESTATION, ref.runId, ref.round, ref.solver, ref.slot, 0))].challenger;
    }

    /// @notice A dispute's full record.
    /// @param disputeId The dispute.
    /// @return The record.
    function disputeOf(bytes32 disputeId) external view returns (Dispute memory) {
        return _disputes[disputeId];
    }

    /// @notice The bytes jurors sign: abi.encode(address(this), block.chainid, disputeId, challengerWins).
    /// @param disputeId The dispute.
    /// @param challengerWins The verdict.
    /// @return The message (protocol.bls.compute_verdict_message builds the same bytes).
    function verdictMessage(bytes32 disputeId, bool challengerWins) public view returns (bytes memory) {
        return abi.encode(address(this), block.chainid, disputeId, challengerWins);
    }

    /// @notice Signers a verdict needs from a jury of `seats` drawn seats at appeal level `appeals`: ceil(seats * 2 / 3)
    ///         before the last level, a simple majority (seats / 2 + 1) at the last (appeals == MAX_APPEALS), so a
    ///         minority of the last jury can no longer block every verdict and spare a proven cheater its stake
    ///         (issue 36, finding 5).
    /// @param seats The seats the jury actually has.
    /// @param appeals The dispute's appeal level.
    /// @return The quorum.
    function quorum(uint256 seats, uint256 appeals) public pure returns (uint256) {
        if (appeals >= Constants.MAX_APPEALS) return seats / 2 + 1;
        return (seats * Constants.QUORUM_NUMERATOR + Constants.QUORUM_DENOMINATOR - 1) / Constants.QUORUM_DENOMINATOR;
    }

    // ------------------------------------------------------------------ internals

    function _open(bytes32 disputeId, uint8 kind, uint256 deadline) internal {
        Dispute storage d = _disputes[disputeId];
        d.challenger = msg.sender;
        d.deadline = uint40(deadline);
        d.openedBlock = uint40(block.number);
        d.status = Status.Open;
        d.kind = kind;
    }

    function _emitChallenged(
        bytes32 disputeId,
        AttestationRef calldata ref,
        IVerification.ChallengedAttestation memory info,
        LeafData calldata leaf
    ) internal {
        emit AttestationChallenged(disputeId, ref.runId, ref.round, ref.solver, ref.slot, msg.sender, info, leaf);
    }

    function _resolveAttestation(DisputeSubject calldata subject, Dispute storage d, uint256 challengeBond)
        internal
        returns (address winner, uint256 total, uint256 bondReturned)
    {
        AttestationRef memory ref = _ref(subject);
        // The solver's slash for a fault this proves (an overturned pass, an upheld fail) is taken by Verification
        // inside onResolved and shared there by every prover of the fault (Verification.claimFaultReward).
        if (d.challengerWins) {
            (address attester,, uint256 forfeited) = verification.onResolved(ref, IVerification.Resolution.Overturned);
            return (d.challenger, forfeited + _slashAttester(subject, attester), challengeBond);
        }
        (address upheldAttester,,) = verification.onResolved(ref, IVerification.Resolution.Upheld);
        return (upheldAttester, challengeBond, 0);
    }

    function _resolveClaim(DisputeSubject calldata subject, Dispute storage d, uint256 challengeBond)
        internal
        returns (address winner, uint256 total, uint256 bondReturned)
    {
        if (d.challengerWins) {
            total = runRegistry.onClaimResolved(subject.runId, subject.round, IRunRegistry.ClaimOutcome.Rejected);
            return (d.challenger, total, challengeBond);
        }
        address claimer = runRegistry.claimerOf(subject.runId, subject.round);
        runRegistry.onClaimResolved(subject.runId, subject.round, IRunRegistry.ClaimOutcome.Upheld);
        return (claimer, challengeBond, 0);
    }

    /// @dev A false plant: the solver is not paid (Plants) and slashed its solverMinStake, which is the total; a true
    ///      one: the challenger's bond is the total and the solver wins it.
    function _resolvePlant(DisputeSubject calldata subject, Dispute storage d, uint256 challengeBond)
        internal
        returns (address winner, uint256 total, uint256 bondReturned)
    {
        if (!d.challengerWins) return (subject.solver, challengeBond, 0);
        plants.onFalsePlant(subject.runId, subject.round, subject.solver);
        // INVARIANT: the same key as every other proof of a fault of this commitment: its solver is slashed once.
        bytes32 faultKey = keccak256(abi.encode(Constants.FAULT_SOLVER, subject.runId, subject.round, subject.solver));
        uint256 taken = stakeManager.slash(
            subject.solver, Constants.ROLE_SOLVER, runRegistry.solverMinStake(subject.runId), faultKey
        );
        return (d.challenger, taken, challengeBond);
    }

    function _slashAttester(DisputeSubject calldata subject, address attester) internal returns (uint256) {
        // INVARIANT: one slash per attestation: the fault key is unique to the seat (run, round, solver, slot).
        bytes32 faultKey = keccak256(
            abi.encode(Constants.FAULT_ATTESTATION, subject.runId, subject.round, subject.solver, subject.slot)
        );
        return stakeManager.slash(
            attester, Constants.ROLE_VERIFIER, runRegistry.runEconomics(subject.runId).verifierMinStake, faultKey
        );
    }

    /// @dev Status, deadline, eligibility and quorum of a verdict's signer bitmap; returns the signer count.
    function _checkSigners(Dispute storage d, uint32 signers) internal view returns (uint256 count) {
        if (d.status != Status.JuryDrawn) revert WrongStatus(d.status);
        if (block.timestamp >= d.deadline) revert DeadlinePassed(d.deadline);
        if (signers & ~d.eligible != 0) revert NotEligible(signers, d.eligible);
        if (d.seats < Constants.MIN_JURY_SIZE) revert JuryTooSmall(d.seats, Constants.MIN_JURY_SIZE);
        count = _popcount(signers);
        uint256 required = quorum(d.seats, d.appeals);
        if (count < required) revert QuorumNotReached(count, required);
    }

    /// @dev Signers' aggregate key = eligible aggregate - sum of the non-signers' keys (checked against the
    ///      registry). `expected` is the bitmap of eligible seats that did not sign.
    function _subtractNonSigners(
        Dispute storage d,
        bytes calldata eligibleAggregate,
        uint256 expected,
        NonSigner[] calldata nonSigners
    ) internal view returns (bytes memory key) {
        key = eligibleAggregate;
        // INVARIANT: bounded: each pass clears one bit of `expected` (<= 24 eligible seats) or reverts.
        for (uint256 i; i < nonSigners.length; ++i) {
            NonSigner calldata ns = nonSigners[i];
            uint256 bit = uint256(1) << ns.seat;
            if (expected & bit == 0) revert WrongNonSigners();
            expected &= ~bit;
            _checkSeat(d, ns);
            key = BLS.g1Add(key, BLS.g1Negate(ns.publicKey));
        }
        if (expected != 0) revert WrongNonSigners();
    }

    /// @dev A non-signer's account and key are its seat's in the registry snapshot the jury was drawn from.
    function _checkSeat(Dispute storage d, NonSigner calldata ns) internal view {
        (address juror, bytes32 keyHash) = jurorRegistry.seatOf(d.jurySeed, ns.seat, d.poolSize, d.openedBlock);
        if (juror != ns.account || keccak256(ns.publicKey) != keyHash) revert JurorKeyMismatch(ns.seat);
    }

    function _emitJuryDrawn(bytes32 disputeId, Dispute storage d, uint256 poolLength) internal {
        emit JuryDrawn(disputeId, d.jurySeed, d.appeals, d.openedBlock, poolLength, d.seats, d.eligible);
    }

    /// @dev The hash of the block after `openedBlock` (the jury seed's source), once it exists and while it is readable.
    function _seedBlockHash(uint256 openedBlock) internal view returns (bytes32 blockHash) {
        uint256 seedBlock = openedBlock + 1;
        if (block.number <= seedBlock) revert JurySeedNotReady(seedBlock);
        blockHash = blockhash(seedBlock);
        if (blockHash == bytes32(0)) revert JurySeedUnavailable(seedBlock);
    }

    /// @dev Draw the pool from the registry snapshot of `openedBlock`, seat the jury and record it; returns the
    ///      number of pool seats.
    function _seatJury(
        DisputeSubject calldata subject,
        Dispute storage d,
        bytes32 seed,
        uint256 jurySize,
        bytes[] calldata publicKeys
    ) internal returns (uint256) {
        uint256 poolSize = jurySize + Constants.JURY_PARTY_SLACK;
        // INVARIANT: the snapshot block is the dispute's own block, fixed before its seed (the next block's hash).
        (address[] memory accounts, bytes32[] memory keyHashes) = jurorRegistry.drawPool(seed, poolSize, d.openedBlock);
        if (accounts.length == 0) revert NoJurors();
        if (publicKeys.length != accounts.length) revert WrongPoolSize(publicKeys.length, accounts.length);
        (uint256 eligible, uint256 seats, bytes32 aggregateHash) =
            _drawSeats(subject, d.challenger, jurySize, accounts, keyHashes, publicKeys);
        d.jurySeed = seed;
        d.poolSize = uint8(poolSize);
        d.seats = uint8(seats);
        d.eligible = uint32(eligible);
        d.aggregateHash = aggregateHash;
        d.status = Status.JuryDrawn;
        return accounts.length;
    }

    /// @dev The jury: the first `jurySize` pool seats whose juror is not a party, not already seated and whose verifier
    ///      stake covers its reservations now, each seat's key checked against the registry. Returns the jury bitmap, its size and the hash of the sum of
    ///      the jurors' keys.
    function _drawSeats(
        DisputeSubject calldata subject,
        address challenger,
        uint256 jurySize,
        address[] memory accounts,
        bytes32[] memory keyHashes,
        bytes[] calldata publicKeys
    ) internal view returns (uint256 eligible, uint256 seats, bytes32 aggregateHash) {
        (address defendant, address solver) = _parties(subject);
        bytes memory aggregate;
        // INVARIANT: bounded: accounts.length <= poolSize <= MAX_JURY_SIZE + JURY_PARTY_SLACK = 24, and the inner
        //            duplicate scan looks only at earlier seats.
        for (uint256 seat; seat < accounts.length && seats < jurySize; ++seat) {
            address account = accounts[seat];
            if (account == challenger || account == defendant || account == solver) continue;
            if (_seatedBefore(accounts, eligible, seat)) continue;
            // INVARIANT: no juror sits without stake covering its reservations: one slashed below them (an abstention,
            //            an overturned attestation) is passed over until it tops up (issue 36, the adversarial campaign).
            if (!stakeManager.isCovered(account, Constants.ROLE_VERIFIER)) continue;
            if (keccak256(publicKeys[seat]) != keyHashes[seat]) revert JurorKeyMismatch(seat);
            ++seats;
            eligible |= uint256(1) << seat;
            aggregate = aggregate.length == 0 ? publicKeys[seat] : BLS.g1Add(aggregate, publicKeys[seat]);
        }
        aggregateHash = eligible == 0 ? bytes32(0) : keccak256(aggregate);
    }

    /// @dev Whether the juror of `seat` already holds an earlier seat of the jury (independent draws repeat).
    function _seatedBefore(address[] memory accounts, uint256 eligible, uint256 seat) internal pure returns (bool) {
        for (uint256 earlier; earlier < seat; ++earlier) {
            if (eligible >> earlier & 1 == 1 && accounts[earlier] == accounts[seat]) return true;
        }
        return false;
    }

    /// @dev The jury size after `appeals` replacements: base, then min(2 * previous + 1, MAX_JURY_SIZE).
    function _jurySizeAt(uint256 base, uint256 appeals) internal pure returns (uint256 size) {
        size = base;
        // INVARIANT: bounded: appeals <= MAX_APPEALS.
        for (uint256 i; i < appeals; ++i) {
            size = _min(2 * size + 1, Constants.MAX_JURY_SIZE);
        }
    }

    function _parties(DisputeSubject calldata subject) internal view returns (address defendant, address solver) {
        // an existing dispute's subject is an attestation or a claim (its id commits to the kind)
        if (subject.kind == KIND_ATTESTATION) return (verification.attesterOf(_ref(subject)), subject.solver);
        if (subject.kind == KIND_PLANT) return (subject.solver, subject.solver);
        return (runRegistry.claimerOf(subject.runId, subject.round), address(0));
    }

    function _ref(DisputeSubject calldata subject) internal pure returns (AttestationRef memory) {
        return AttestationRef({runId: subject.runId, round: subject.round, solver: subject.solver, slot: subject.slot});
    }

    function _id(DisputeSubject memory subject) internal pure returns (bytes32) {
        return keccak256(abi.encode(subject));
    }

    function _popcount(uint256 bits) internal pure returns (uint256 count) {
        // INVARIANT: bounded: one pass per set bit; the bitmaps have at most MAX_JURY_SIZE + JURY_PARTY_SLACK = 24 set.
        while (bits != 0) {
            bits &= bits - 1;
            ++count;
        }
    }

    function _min(uint256 a, uint256 b) internal pure returns (uint256) {
        return a < b ? a : b;
    }
}
