// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Constants} from "./Constants.sol";
import {IStakeManager} from "./interfaces/IStakeManager.sol";
import {PullPayments} from "./base/PullPayments.sol";
import {IPlants} from "./interfaces/IPlants.sol";
import {IRunCreator} from "./interfaces/IRunCreator.sol";
import {IRunRegistry} from "./interfaces/IRunRegistry.sol";
import {IVerification} from "./interfaces/IVerification.sol";
import {IBlockRandomness} from "./interfaces/IBlockRandomness.sol";
import {Planting} from "./libraries/Planting.sol";
import {AttestationRef} from "./interfaces/Types.sol";

/// @title Plants
/// @notice Planted faults (forced errors, docs/planted-faults.md): a run's plant terms and pool, each solver's chain
///         of round secrets, their reveals after the attestation window, and which commitments were planted. A
///         planted commitment is genuine training on other batches (protocol/planting.py, protocol/data.py), so
///         only a replay tells it apart; Verification pays the fails on it a jackpot from the pool and forfeits
///         the passes on it into the pool.
/// @dev Who plants: a solver registers `anchor = s_N` of its chain s_(i+1) = keccak256(s_i) (N = maxRounds) in round
///      a; round r's secret is x_r = s_(N-1-r), a preimage of x_(r-1) (x_(-1) = the anchor). From round a + 2 on,
///      round r is planted iff uint256(keccak256(abi.encode(PLANT_TAG, x_r, runId, r, solver, seedBase(r - 1))))
///      % 10_000 < rateBps: the solver knows it when round r starts, verifiers learn it only from the reveal, and
///      the previous round's seed base did not exist when the anchor was fixed, so nobody chooses.
///      Plants from round 0 (issue 37): when the creator sets the terms before round 0 starts (a run with a start
///      delay), the terms fix the run seed block, the first block that can carry round 0's start time
///      (block.number + ceil((start - now) / blockSeconds)), and an anchor registered before the start is eligible
///      from round 0; round 0 then draws with seedBase(-1) = the RANDAO value revealed in the run seed block
///      (`drawRunSeed`, proven by a header), which did not exist when any such anchor was fixed. Every round of such a
///      run can be planted, so no round is publicly safe for a lazy pass; a solver that anchors after the start is
///      unpaid in its first PLANT_DELAY_ROUNDS rounds, as a late anchor always was (its pay is blocked, so nothing of
///      it is paid). Terms set after the start keep the older rule: rounds 0 and 1 are paid as usual, never planted.
///      A reveal is checked by hashing it up to the last revealed link (at most MAX_REVEAL_GAP hashes; a solver that
///      skipped more rounds first reveals an older secret). Terms are set once by the run's creator during round 0
///      (before any plant either way), with the pool as msg.value; anyone may top the pool up.
///      The bond and penalty of a pass on a planted commitment are held per seat until the round settles
///      (`releaseForfeit`): a plant can be disputed over every segment until the challenge window closes, and if a jury
///      finds it false the passes were right, so their forfeits go back to their verifiers (issue 36, finding 2).
///      ETH held: the pools + credits (jackpots and returned forfeits not withdrawn) + forfeits held.
contract Plants is IPlants, PullPayments {
    /// @notice A run's plant terms (set once, during round 0, by its creator).
    struct PlantTerms {
        uint16 rateBps; // planted commitments per 10,000 (0: planting off)
        uint96 jackpot; // paid to each fail on a planted commitment, while the pool lasts
        uint96 penalty; // verifier stake slashed from each pass on a planted commitment
        bool set;
        uint64 seedBlock; // the run seed block, if set before round 0 started (plants from round 0); else 0
    }

    /// @notice A solver's chain in a run: the last revealed link (the anchor until the first reveal) and rounds.
    struct Chain {
        bytes32 link;
        uint64 linkRoundPlusOne; // round of `link` + 1 (0: the anchor)
        uint64 anchorRound; // the round the anchor was registered in
        bool set;
        bool early; // registered before round 0 started
    }

    /// @notice What the reveal of a (run, round, solver) said.
    struct Reveal {
        bool revealed;
        bool planted;
        bool reported; // reported unrevealed (and slashed)
        bool disproven; // a jury found the plant false (Disputes, KIND_PLANT)
    }

    /// @notice A pass's forfeit (bond + penalty) held until its round settles.
    struct Forfeit {
        address verifier;
        uint96 amount;
    }

    /// @notice Round 0's plant seed base (bytes12 of the run seed block's RANDAO value), once drawn (`drawRunSeed`).
    struct RunSeed {
        bytes12 base;
        bool drawn;
    }

    IRunRegistry public immutable runRegistry;
    IVerification public immutable verification;
    IStakeManager public immutable stakeManager;
    address public immutable disputes;

    mapping(uint256 runId => PlantTerms) internal _terms;
    /// @notice ETH available for jackpots per run.
    mapping(uint256 runId => uint256) public pool;
    mapping(uint256 runId => RunSeed) internal _runSeeds;
    mapping(uint256 runId => mapping(address solver => Chain)) internal _chains;
    mapping(uint256 runId => mapping(uint64 round => mapping(address solver => Reveal))) internal _reveals;
    mapping(uint256 runId => mapping(uint64 round => mapping(address solver => mapping(uint8 slot => Forfeit))))
        internal _forfeits;

    /// @notice The run's plant terms were set and `funded` (msg.value) added to its pool, which now holds `pool`.
    event PlantTermsSet(
        uint256 indexed runId,
        uint256 rateBps,
        uint256 jackpot,
        uint256 penalty,
        uint256 funded,
        uint256 pool,
        uint256 seedBlock
    );
    /// @notice Round 0's plant seed base was drawn from the RANDAO value of the run seed block `seedBlock`.
    event RunSeedDrawn(uint256 indexed runId, uint256 seedBlock, bytes32 seedBase);
    /// @notice ETH from outside was added to a run's plant pool (`fundPool`).
    event PlantPoolFunded(uint256 indexed runId, address indexed from, uint256 amount, uint256 pool);
    /// @notice The bond and penalty of the pass of seat `slot` on a planted commitment (`amount`: the bond from
    ///         Verification, the penalty slashed from `verifier`) arrived and are held until the round settles.
    event PlantForfeitHeld(
        uint256 indexed runId,
        uint64 indexed round,
        address indexed solver,
        uint8 slot,
        address verifier,
        uint256 amount
    );
    /// @notice A held forfeit was released after settlement: to the plant pool (`returned` false: the plant stood), or
    ///         back to its verifier as a credit (`returned` true: a jury found the plant false).
    event PlantForfeitReleased(
        uint256 indexed runId,
        uint64 indexed round,
        address indexed solver,
        uint8 slot,
        address verifier,
        uint256 amount,
        bool returned,
        uint256 pool
    );
    /// @notice A solver registered the anchor of its chain of round secrets in round `round` (`early`: before round 0
    ///         started, so eligible from round 0 if the terms were set before the start too).
    event PlantAnchorSet(uint256 indexed runId, address indexed solver, bytes32 anchor, uint64 round, bool early);
    /// @notice A solver revealed its secret of `round` in the round's reveal window; `planted` says whether that round's
    ///         commitment was planted.
    event PlantRevealed(
        uint256 indexed runId, uint64 indexed round, address indexed solver, bytes32 secret, bool planted
    );
    /// @notice A solver did not reveal its secret of `round` in the window although the round could be planted: its
    ///         stake was slashed by `taken` into the plant pool (reported by `reporter`).
    event UnrevealedSlashed(
        uint256 indexed runId, uint64 indexed round, address indexed solver, address reporter, uint256 taken
    );
    /// @notice A jury found a revealed plant false (it does not replay as the planted training): the commitment is
    ///         not paid and its solver was slashed by Disputes.
    event PlantDisproven(uint256 indexed runId, uint64 indexed round, address indexed solver);
    /// @notice A fail on a planted commitment earned `amount` (the jackpot, or what was left of the pool).
    event JackpotPaid(uint256 indexed runId, address indexed verifier, uint256 amount, uint256 pool);

    error NotCreator(address caller);
    error NotVerification(address caller);
    error NotDisputes(address caller);
    error TermsAlreadySet(uint256 runId);
    error TermsOnlyInRoundZero(uint64 round);
    error RateTooHigh(uint256 rateBps, uint256 max);
    error PenaltyAboveStake(uint256 penalty, uint256 verifierMinStake);
    error NotJoined(uint256 runId, address solver);
    error AnchorAlreadySet(uint256 runId, address solver);
    error NoAnchor(uint256 runId, address solver);
    error NotAfterLastReveal(uint64 round, uint64 lastRound);
    error RevealGapTooLarge(uint256 gap, uint256 max);
    error WrongSecret(uint64 round);
    error OutsideRevealWindow(uint256 opensAt, uint256 closesAt);
    error TooEarly(uint64 round);
    error ZeroAmount();
    error NotOwed(uint256 runId, uint64 round, address solver);
    error RevealWindowOpen(uint256 revealEnd);
    error UnexpectedEther(address from);
    error NotSettled(uint256 runId, uint64 round);
    error NothingHeld(uint8 slot);
    error NoRunSeed(uint256 runId);
    error RunSeedAlreadyDrawn(uint256 runId);

    modifier onlyVerification() {
        if (msg.sender != address(verification)) revert NotVerification(msg.sender);
        _;
    }

    /// @param runRegistry_ The RunRegistry (runs, rounds, membership, creators).
    /// @param verification_ Verification (seed bases; pays jackpots and forfeits passes through the hooks).
    /// @param stakeManager_ The StakeManager (slashes a solver that withholds a reveal).
    /// @param disputes_ Disputes (a plant dispute found a plant false).
    constructor(
        IRunRegistry runRegistry_,
        IVerification verification_,
        IStakeManager stakeManager_,
        address disputes_
    ) {
        runRegistry = runRegistry_;
        verification = verification_;
        stakeManager = stakeManager_;
        disputes = disputes_;
    }

    /// @notice Slash proceeds (an unrevealed plant, a lazy pass's penalty), from the StakeManager (added to the pool in
    ///         the same call).
    receive() external payable {
        if (msg.sender != address(stakeManager)) revert UnexpectedEther(msg.sender);
    }

    // ------------------------------------------------------------------ terms and pool

    /// @notice Set a run's plant terms once, during round 0 (the creator only), funding the pool with msg.value. Set
    ///         before round 0 starts (a run with a start delay), they also fix the run seed block, and every round of
    ///         the run can be planted (see the contract's notes); set later, rounds 0 and 1 are never planted.
    /// @param runId The run.
    /// @param rateBps Planted commitments per 10,000 (<= MAX_PLANT_RATE_BPS; 0 turns planting off).
    /// @param jackpot Paid to each fail on a planted commitment while the pool lasts.
    /// @param penalty Verifier stake slashed from each pass on a planted commitment (<= the run's verifierMinStake).
    function setTerms(uint256 runId, uint16 rateBps, uint96 jackpot, uint96 penalty) external payable {
        if (msg.sender != IRunCreator(address(runRegistry)).creatorOf(runId)) revert NotCreator(msg.sender);
        if (_terms[runId].set) revert TermsAlreadySet(runId);
        uint64 round = runRegistry.roundTimes(runId).round;
        // INVARIANT: terms are fixed before any round can be planted (round 2 at the earliest).
        if (round != 0) revert TermsOnlyInRoundZero(round);
        if (rateBps > Constants.MAX_PLANT_RATE_BPS) revert RateTooHigh(rateBps, Constants.MAX_PLANT_RATE_BPS);
        uint256 stake = runRegistry.runEconomics(runId).verifierMinStake;
        if (penalty > stake) revert PenaltyAboveStake(penalty, stake);
        uint64 seedBlock = _runSeedBlock(runId);
        _terms[runId] =
            PlantTerms({rateBps: rateBps, jackpot: jackpot, penalty: penalty, set: true, seedBlock: seedBlock});
        pool[runId] += msg.value;
        // INVARIANT: the event names what this call added (msg.value), so events folded never count an earlier
        //            fundPool twice (issue 36, finding 9).
        emit PlantTermsSet(runId, rateBps, jackpot, penalty, msg.value, pool[runId], seedBlock);
    }

    /// @notice Add msg.value to a run's plant pool (anyone).
    /// @param runId The run.
    function fundPool(uint256 runId) external payable {
        if (msg.value == 0) revert ZeroAmount();
        runRegistry.roundTimes(runId); // reverts for an unknown run
        _fund(runId, msg.sender, msg.value);
    }

    // ------------------------------------------------------------------ solvers

    /// @notice Register the anchor of the caller's chain of round secrets for a run (once; joined solvers only).
    ///         Plants apply to its commitments from two rounds after this one.
    /// @param runId The run.
    /// @param anchor s_N of the chain (protocol.planting.get_plant_anchor).
    function setAnchor(uint256 runId, bytes32 anchor) external {
        if (!runRegistry.hasJoined(runId, msg.sender)) revert NotJoined(runId, msg.sender);
        Chain storage c = _chains[runId][msg.sender];
        if (c.set) revert AnchorAlreadySet(runId, msg.sender);
        IRunRegistry.RoundTimes memory t = runRegistry.roundTimes(runId);
        // INVARIANT: early anchors land before the run seed block (its timestamp is >= round 0's start), so none was
        //            fixed knowing round 0's plant seed.
        bool early = t.round == 0 && block.timestamp < t.start;
        _chains[runId][msg.sender] =
            Chain({link: anchor, linkRoundPlusOne: 0, anchorRound: t.round, set: true, early: early});
        emit PlantAnchorSet(runId, msg.sender, anchor, t.round, early);
    }

    /// @notice Fix round 0's plant seed base (anyone, once) from the RANDAO value revealed in the run seed block: the
    ///         mixHash of block seedBlock + RANDAO_LAG_BLOCKS, proven by that block's RLP header (IBlockRandomness:
    ///         callable in the 256 blocks after it). Like Verification.drawSeed, not the seed block's own mixHash,
    ///         which the proposer of the block before it, where an early anchor can still land, knows. Solver nodes
    ///         with an early anchor draw it before they train round 0; until it is drawn round 0 is not planted, so
    ///         a node plants round 0 only once it reads the drawn value, and a round 0 nobody drew stays unplanted.
    /// @param runId The run (its terms set before round 0 started).
    /// @param header The RLP-encoded header of block `runSeedOf(runId).seedBlock + RANDAO_LAG_BLOCKS`.
    function drawRunSeed(uint256 runId, bytes calldata header) external {
        uint64 seedBlock = _terms[runId].seedBlock;
        if (seedBlock == 0) revert NoRunSeed(runId);
        if (_runSeeds[runId].drawn) revert RunSeedAlreadyDrawn(runId);
        // INVARIANT: the RANDAO value revealed in the run seed block (the next block's mixHash, as Verification.drawSeed)
        IBlockRandomness randomness = IBlockRandomness(verification.blockRandomness());
        bytes12 base = bytes12(randomness.randaoOf(seedBlock + Constants.RANDAO_LAG_BLOCKS, header));
        _runSeeds[runId] = RunSeed({base: base, drawn: true});
        emit RunSeedDrawn(runId, seedBlock, bytes32(base));
    }

    /// @notice Reveal the caller's secret of `round`: of the current round inside its reveal window (from attestEnd
    ///         to the middle of the challenge window), which records whether the round's commitment was planted; or
    ///         of an earlier round at any time, which only shortens the hash chain a later reveal checks (a round
    ///         revealed after its window stays unrevealed: Verification does not pay it).
    /// @param runId The run.
    /// @param round The round whose secret this is.
    /// @param secret x_round (protocol.planting.get_round_secret).
    function reveal(uint256 runId, uint64 round, bytes32 secret) external {
        Chain memory c = _chains[runId][msg.sender];
        _checkSecret(runId, c, round, secret);
        IRunRegistry.RoundTimes memory t = runRegistry.roundTimes(runId);
        bool current = round == t.round && !t.finished;
        // INVARIANT: no secret of a round that has not reached its reveal window is ever public.
        if (round > t.round || (current && block.timestamp < t.attestEnd)) revert TooEarly(round);
        _chains[runId][msg.sender].link = secret;
        _chains[runId][msg.sender].linkRoundPlusOne = round + 1;
        if (!current) return; // an older secret only shortens the chain: a round's reveal counts in its window only
        uint256 revealEnd = _revealEnd(t);
        if (block.timestamp >= revealEnd) revert OutsideRevealWindow(t.attestEnd, revealEnd);
        _recordReveal(runId, round, secret);
    }

    /// @notice Slash a solver that did not reveal its secret of the current round in the reveal window although its
    ///         opened commitment could be planted (anyone, from the window's end until the round settles).
    ///         Its commitment is not paid either (it leaves the round's paid commitments). Without this, a solver could
    ///         withhold the reveal of a planted commitment to spare an accomplice's lazy pass its bond and penalty:
    ///         unprovable must not mean unpunished. The slash uses the commitment's own fault key (FAULT_SOLVER), so
    ///         a commitment also failed for its planted segments is slashed once, not twice (issue 36, finding 6). The
    ///         stake taken (up to the run's solverMinStake) joins the plant pool.
    /// @param runId The run.
    /// @param round The current round.
    /// @param solver The solver.
    function reportUnrevealed(uint256 runId, uint64 round, address solver) external {
        IRunRegistry.RoundTimes memory t = runRegistry.roundTimes(runId);
        if (round != t.round || t.finished) revert NotOwed(runId, round, solver);
        Reveal memory r = _reveals[runId][round][solver];
        if (!_isEligible(runId, round, solver) || r.revealed || r.reported) revert NotOwed(runId, round, solver);
        // only an opened commitment was attestable (an unopened one is slashed by reportUnopened)
        if (runRegistry.openingOf(runId, round, solver) != IRunRegistry.Opening.Opened) {
            revert NotOwed(runId, round, solver);
        }
        uint256 revealEnd = _revealEnd(t);
        if (block.timestamp < revealEnd) revert RevealWindowOpen(revealEnd);
        // INVARIANT: reported once (the flag is set before the slash call), under its own fault key.
        _reveals[runId][round][solver].reported = true;
        // INVARIANT: one fault key per commitment, shared with every other proof of its fault: slashed at most once.
        bytes32 key = keccak256(abi.encode(Constants.FAULT_SOLVER, runId, round, solver));
        uint256 taken = stakeManager.slash(solver, Constants.ROLE_SOLVER, runRegistry.solverMinStake(runId), key);
        // INVARIANT: the slash proceeds arrived in this call (receive) and join the pool: every wei accounted for.
        pool[runId] += taken;
        emit UnrevealedSlashed(runId, round, solver, msg.sender, taken);
        verification.onUnpaid(runId, round, solver);
    }

    // ------------------------------------------------------------------ Verification's hooks

    /// @inheritdoc IPlants
    function onPlantedFail(uint256 runId, address verifier) external onlyVerification returns (uint256 amount) {
        uint256 available = pool[runId];
        uint256 jackpot = _terms[runId].jackpot;
        amount = jackpot < available ? jackpot : available;
        // INVARIANT: a jackpot never exceeds the pool: pool + credits == what the contract holds.
        pool[runId] = available - amount;
        credits[verifier] += amount;
        emit JackpotPaid(runId, verifier, amount, available - amount);
    }

    /// @inheritdoc IPlants
    function onPlantedPass(AttestationRef calldata ref, address verifier) external payable onlyVerification {
        // INVARIANT: the same fault key as a pass overturned by a jury: a seat's verifier is slashed once.
        bytes32 key = keccak256(abi.encode(Constants.FAULT_ATTESTATION, ref.runId, ref.round, ref.solver, ref.slot));
        uint256 taken = stakeManager.slash(verifier, Constants.ROLE_VERIFIER, _terms[ref.runId].penalty, key);
        // INVARIANT: the bond (msg.value) and the slash proceeds (received in this call) are held for the seat until
        //            the round settles (releaseForfeit): every wei accounted for.
        uint256 amount = msg.value + taken;
        _forfeits[ref.runId][ref.round][ref.solver][ref.slot] = Forfeit({verifier: verifier, amount: uint96(amount)});
        emit PlantForfeitHeld(ref.runId, ref.round, ref.solver, ref.slot, verifier, amount);
    }

    /// @notice Release the held forfeit of a pass on a planted commitment once its round is settled (anyone): to the
    ///         plant pool if the plant stood, back to the verifier (a credit) if a jury found it false.
    /// @param ref The pass's seat.
    function releaseForfeit(AttestationRef calldata ref) external {
        if (!runRegistry.isSettled(ref.runId, ref.round)) revert NotSettled(ref.runId, ref.round);
        Forfeit memory f = _forfeits[ref.runId][ref.round][ref.solver][ref.slot];
        if (f.amount == 0) revert NothingHeld(ref.slot);
        // INVARIANT: the record is deleted before the amount moves, so each forfeit is released once.
        delete _forfeits[ref.runId][ref.round][ref.solver][ref.slot];
        bool returned = _reveals[ref.runId][ref.round][ref.solver].disproven;
        uint256 updated = pool[ref.runId];
        if (returned) {
            credits[f.verifier] += f.amount;
        } else {
            updated += f.amount;
            pool[ref.runId] = updated;
        }
        emit PlantForfeitReleased(ref.runId, ref.round, ref.solver, ref.slot, f.verifier, f.amount, returned, updated);
    }

    /// @inheritdoc IPlants
    /// @dev Idempotent: several plant disputes (one per segment) may each find the plant false.
    function onFalsePlant(uint256 runId, uint64 round, address solver) external {
        if (msg.sender != disputes) revert NotDisputes(msg.sender);
        if (_reveals[runId][round][solver].disproven) return;
        _reveals[runId][round][solver].disproven = true;
        emit PlantDisproven(runId, round, solver);
        verification.onUnpaid(runId, round, solver);
    }

    // ------------------------------------------------------------------ views

    /// @inheritdoc IPlants
    function isPlantChallengeable(uint256 runId, uint64 round, address solver) external view returns (bool) {
        Reveal memory r = _reveals[runId][round][solver];
        if (!r.planted || r.disproven) return false;
        IRunRegistry.RoundTimes memory t = runRegistry.roundTimes(runId);
        return round == t.round && !t.finished && block.timestamp < t.challengeEnd;
    }

    /// @inheritdoc IPlants
    function payOf(uint256 runId, uint64 round, address solver) external view returns (Pay) {
        if (!_isPlantingRound(runId, round)) return Pay.Normal;
        // INVARIANT: while planting is on, pay needs an anchor old enough: skipping it is no way out of planting
        if (!_isEligible(runId, round, solver)) return Pay.Unpaid;
        Reveal memory r = _reveals[runId][round][solver];
        if (!r.revealed || r.disproven) return Pay.Unpaid;
        return r.planted ? Pay.Planted : Pay.Normal;
    }

    /// @inheritdoc IPlants
    function isPayBlocked(uint256 runId, uint64 round, address solver) external view returns (bool) {
        return _isPlantingRound(runId, round) && !_isEligible(runId, round, solver);
    }

    /// @notice The held forfeit of a pass on a planted commitment (zero once released, or if none).
    /// @param ref The pass's seat.
    /// @return The record.
    function forfeitOf(AttestationRef calldata ref) external view returns (Forfeit memory) {
        return _forfeits[ref.runId][ref.round][ref.solver][ref.slot];
    }

    /// @inheritdoc IPlants
    function isChallengeBlocked(uint256 runId, uint64 round, address solver) external view returns (bool) {
        Reveal memory r = _reveals[runId][round][solver];
        if (r.revealed) return r.planted;
        if (!_isEligible(runId, round, solver)) return false;
        IRunRegistry.RoundTimes memory t = runRegistry.roundTimes(runId);
        return round == t.round && !t.finished && block.timestamp < _revealEnd(t);
    }

    /// @inheritdoc IPlants
    function plantOf(uint256 runId, uint64 round, address solver)
        external
        view
        returns (bool eligible, bool revealed, bool planted, bool reported)
    {
        eligible = _isEligible(runId, round, solver);
        Reveal memory r = _reveals[runId][round][solver];
        return (eligible, r.revealed, r.planted && eligible, r.reported);
    }

    /// @inheritdoc IPlants
    function termsOf(uint256 runId) external view returns (uint256 rateBps, uint256 jackpot, uint256 penalty) {
        PlantTerms memory terms = _terms[runId];
        return (terms.rateBps, terms.jackpot, terms.penalty);
    }

    /// @notice The run seed (round 0's plant seed base): its block (0 unless the terms were set before the start),
    ///         whether it was drawn, and its value (bytes12 of the block's RANDAO value, left-aligned).
    /// @param runId The run.
    /// @return seedBlock The run seed block.
    /// @return drawn Whether `drawRunSeed` fixed it.
    /// @return seedBase The value (zero until drawn).
    function runSeedOf(uint256 runId) external view returns (uint256 seedBlock, bool drawn, bytes32 seedBase) {
        RunSeed memory rs = _runSeeds[runId];
        return (_terms[runId].seedBlock, rs.drawn, bytes32(rs.base));
    }

    /// @notice A solver's chain in a run (the last revealed link and its round + 1, the anchor's round).
    /// @param runId The run.
    /// @param solver The solver.
    /// @return The record.
    function chainOf(uint256 runId, address solver) external view returns (Chain memory) {
        return _chains[runId][solver];
    }

    // ------------------------------------------------------------------ internals

    /// @dev The plant draw of round `round` (protocol.planting.is_round_planted): only for an eligible round whose
    ///      predecessor's seed was drawn.
    function _isPlanted(uint256 runId, uint64 round, address solver, bytes32 secret) internal view returns (bool) {
        if (!_isEligible(runId, round, solver)) return false;
        bool drawn;
        bytes32 previousBase;
        if (round == 0) {
            RunSeed memory rs = _runSeeds[runId]; // an early anchor's round 0: the run seed
            (drawn, previousBase) = (rs.drawn, bytes32(rs.base));
        } else {
            (drawn, previousBase,) = verification.seedOf(runId, round - 1);
        }
        if (!drawn) return false;
        return Planting.draw(secret, runId, round, solver, previousBase) < _terms[runId].rateBps;
    }

    /// @dev Revert unless `secret` is the caller's secret of `round`: it hashes to the chain's last link in
    ///      round - linkRound steps (the anchor counts as round -1), at most MAX_REVEAL_GAP of them.
    function _checkSecret(uint256 runId, Chain memory c, uint64 round, bytes32 secret) internal view {
        if (!c.set) revert NoAnchor(runId, msg.sender);
        if (c.linkRoundPlusOne != 0 && round < c.linkRoundPlusOne) {
            revert NotAfterLastReveal(round, c.linkRoundPlusOne - 1);
        }
        uint256 gap = uint256(round) + 1 - c.linkRoundPlusOne;
        if (gap > Constants.MAX_REVEAL_GAP) revert RevealGapTooLarge(gap, Constants.MAX_REVEAL_GAP);
        bytes32 link = secret;
        // INVARIANT: bounded: at most MAX_REVEAL_GAP hashes.
        for (uint256 i; i < gap; ++i) {
            link = Planting.next(link);
        }
        if (link != c.link) revert WrongSecret(round);
    }

    /// @dev Record the reveal of the current round in its window, and have Verification apply a plant.
    function _recordReveal(uint256 runId, uint64 round, bytes32 secret) internal {
        bool planted = _isPlanted(runId, round, msg.sender, secret);
        _reveals[runId][round][msg.sender] =
            Reveal({revealed: true, planted: planted, reported: false, disproven: false});
        emit PlantRevealed(runId, round, msg.sender, secret, planted);
        // INVARIANT: checks-effects-interactions: the reveal is recorded before Verification applies it.
        if (planted) verification.onPlantRevealed(runId, round, msg.sender);
    }

    /// @dev Whether a solver's commitment of `round` can be planted: planting on, and its anchor two rounds old or,
    ///      if the terms were set before the start, registered before the start (protocol.planting.is_plant_eligible).
    function _isEligible(uint256 runId, uint64 round, address solver) internal view returns (bool) {
        Chain memory c = _chains[runId][solver];
        PlantTerms memory terms = _terms[runId];
        if (terms.rateBps == 0 || !c.set) return false;
        return (c.early && terms.seedBlock != 0) || round >= c.anchorRound + Constants.PLANT_DELAY_ROUNDS;
    }

    /// @dev Whether pay in `round` follows the plant rules (protocol.planting.is_planting_round): planting on, and the
    ///      round PLANT_DELAY_ROUNDS or later, or any round when the terms were set before the start.
    function _isPlantingRound(uint256 runId, uint64 round) internal view returns (bool) {
        PlantTerms memory terms = _terms[runId];
        return terms.rateBps > 0 && (terms.seedBlock != 0 || round >= Constants.PLANT_DELAY_ROUNDS);
    }

    /// @dev The run seed block when called before round 0 starts: the first block whose timestamp is surely at least
    ///      the start (blocks are at least blockSeconds apart); 0 once the start has passed.
    function _runSeedBlock(uint256 runId) internal view returns (uint64) {
        IRunRegistry.RoundTimes memory t = runRegistry.roundTimes(runId);
        if (block.timestamp >= t.start) return 0;
        uint256 blockSeconds = runRegistry.blockSeconds();
        // INVARIANT: block n + k is at least k * blockSeconds later than block n, so the seed block's timestamp is at
        //            least start: every anchor registered before the start (setAnchor's `early`) lands before it.
        return uint64(block.number + (t.start - block.timestamp + blockSeconds - 1) / blockSeconds);
    }

    /// @dev The end of the current round's reveal window: the middle of its challenge window.
    function _revealEnd(IRunRegistry.RoundTimes memory t) internal pure returns (uint256) {
        return t.attestEnd + (t.challengeEnd - t.attestEnd) / 2;
    }

    function _fund(uint256 runId, address from, uint256 amount) internal {
        uint256 updated = pool[runId] + amount;
        pool[runId] = updated;
        emit PlantPoolFunded(runId, from, amount, updated);
    }
}
