// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Vm} from "forge-std/Vm.sol";
import {Protocol} from "../../script/ProtocolDeployer.sol";
import {Fixture} from "../utils/Fixture.sol";
import {TestBLS} from "../utils/TestBLS.sol";
import {TestMerkle} from "../utils/TestMerkle.sol";
import {AdversarialBase, AttackerHandler, Cast, IAdversarialWorld} from "./AttackerHandler.sol";
import {Constants} from "../../src/Constants.sol";
import {Disputes} from "../../src/Disputes.sol";
import {FaultRewards} from "../../src/FaultRewards.sol";
import {ModelShares} from "../../src/ModelShares.sol";
import {Plants} from "../../src/Plants.sol";
import {PullPayments} from "../../src/base/PullPayments.sol";
import {RunRegistry} from "../../src/RunRegistry.sol";
import {RunShares} from "../../src/RunShares.sol";
import {StakeManager} from "../../src/StakeManager.sol";
import {Verification} from "../../src/Verification.sol";
import {IPlants} from "../../src/interfaces/IPlants.sol";
import {IRunRegistry} from "../../src/interfaces/IRunRegistry.sol";
import {Planting} from "../../src/libraries/Planting.sol";
import {SegmentLeaf} from "../../src/libraries/SegmentLeaf.sol";
import {AttestationRef, CommitmentData, DisputeSubject, LeafData, RunTerms} from "../../src/interfaces/Types.sol";

/// @notice The honest side of the adversarial campaign, and the world the attacker acts in.
/// @dev Honest play, from ground truth: honest solvers commit honest training (planted training in a round their
///      secret draws as planted), open at once and reveal in the reveal window; honest verifiers replay their seat's
///      samples and attest pass iff every sampled leaf is the honest training's (else fail naming the first bad draw);
///      honest jurors sign the true verdict (attestation wrong? plant segment not the planted training? claim not the
///      right theta?) and sign nothing else; the whistleblower challenges every wrong attestation, disputes a segment of
///      every false plant and challenges every wrong claim; the coordinator draws seeds, reports unopened, unrevealed
///      and abstaining commitments and seats, posts the right claim, settles, and the honest accounts claim what they
///      earned. Synchrony: time moves only through `advance`/`step`, which stop one second before and at every
///      deadline (round windows, reveal window, claim window, dispute deadlines, the second after a round started),
///      ask the coalition for its move there first (AttackerHandler.onPoint) and then do every honest duty, so the
///      honest side always has the last word before a deadline. Blocks follow time (one per blockSeconds). An honest
///      verifier whose right pass a false plant overturned tops up and registers again.
///      The world also folds every event the protocol emits (`_fold`): the ETH ledger (per contract, and in total as
///      protocol/ledger.py folds it), the public record the attacker reads (commitments, openings, seats, reveals,
///      disputes), and properties 1 and 2 at the event that decides them. vm.recordLogs also records the logs of calls
///      that reverted, so every state-changing call is preceded by a fold and a reverted one's logs are dropped
///      (`_drop`); the outermost call of each action restarts the recording.
contract HonestWorld is AdversarialBase, IAdversarialWorld {
    struct Seat {
        bool attested;
        bool isFail;
        uint16 sample;
        address verifier;
    }

    uint256 internal constant SLOTS = 2;

    // ------------------------------------------------------------------ public record (from events)
    mapping(bytes32 root => LeafData[]) internal _tree;
    mapping(bytes32 root => uint64) internal _treeRound;
    mapping(bytes32 root => address) internal _treeSolver;
    mapping(uint64 round => address[]) internal _roundCommitters;
    mapping(uint64 round => mapping(address solver => CommitmentData)) internal _roundCommitments;
    mapping(uint64 round => mapping(address solver => bool)) internal _committed;
    mapping(uint64 round => mapping(address solver => bool)) internal _opened;
    mapping(uint64 round => mapping(address solver => mapping(uint256 slot => Seat))) internal _seats;
    mapping(uint64 round => mapping(address solver => bool)) internal _revealedPlanted;
    mapping(uint64 round => mapping(address solver => bool)) internal _disproven;
    mapping(uint64 round => mapping(uint16 nonce => bytes32)) internal _claimTheta;
    DisputeSubject[] internal _disputes;

    // ------------------------------------------------------------------ the ledger (property 4)
    /// @notice ETH each contract must hold by its events: inflows minus outflows (transfers between protocol contracts
    ///         move it from the sender's ledger to the recipient's).
    mapping(address account => int256) public implied;
    /// @notice protocol/ledger.py's fold: outside inflows minus outside outflows, summed over all contracts.
    int256 public ledgerPyImplied;
    address[] internal _shareTokens;
    mapping(address token => bool) internal _isShareToken;
    mapping(uint256 run => uint256) internal _attestationBond;
    mapping(uint256 run => uint256) internal _challengeBond;
    uint256 internal _depth;

    // ------------------------------------------------------------------ property 1 (pay)
    mapping(uint64 round => mapping(address solver => uint256)) public payBound;
    mapping(uint64 round => mapping(address solver => bool)) public mustBePaid;
    mapping(uint64 round => mapping(address solver => uint256)) public minted;
    mapping(uint64 round => bool) internal _snapshotTaken;
    mapping(uint64 round => bool) internal _settledDutiesDone;
    uint256 public ghostUnderpaid;
    uint256 public ghostHonestUnpaid;
    uint256 public ghostPaidCountMismatch;
    // rounds where a bad commitment was paid (the property's precondition failed), by cause
    uint256 public ghostAbstentionEscape;
    uint256 public ghostSamplingEscape;
    uint256 public ghostMissedChallenge;

    // ------------------------------------------------------------------ property 2 (slashes)
    struct KeyInfo {
        uint8 kind; // 1: a commitment (FAULT_SOLVER), 2: a seat (FAULT_ATTESTATION)
        uint64 round;
        address solver;
        uint8 slot;
    }

    mapping(bytes32 faultKey => KeyInfo) internal _keys;
    /// @notice Forfeits (bond + penalty) of right passes overturned by a false plant: owed back to their verifier.
    mapping(bytes32 faultKey => uint256) public refundOwed;
    bytes32[] internal _refundKeys;
    uint256 public ghostUnjustifiedSlash;
    uint256 public ghostRefundWrong;
    uint256 public ghostHonestAttestFailed;
    uint256 public ghostFalseVerdict;

    mapping(string action => uint256) public calls;
    /// @notice The attacker, asked for its move at every point before the honest side acts (AttackerHandler.onPoint).
    AttackerHandler public coalition;
    /// @inheritdoc IAdversarialWorld
    bool public draining;

    constructor(
        Protocol memory p,
        uint256 runId_,
        uint256 maxRounds_,
        Cast memory c,
        address[] memory jurorAddrs_,
        uint256[] memory jurorSks_,
        bytes[] memory jurorPks_
    ) {
        usePeers(p);
        runId = runId_;
        _maxRounds = maxRounds_;
        _setCast(c);
        for (uint256 i; i < jurorAddrs_.length; ++i) {
            jurorAddrs.push(jurorAddrs_[i]);
            jurorSks.push(jurorSks_[i]);
            jurorPks.push(jurorPks_[i]);
            jurorIndexPlusOne[jurorAddrs_[i]] = i + 1;
        }
        _anchorTime = block.timestamp;
        _anchorBlock = block.number;
        autoOpen = false;
    }

    // ================================================================== the world's interface

    /// @inheritdoc IAdversarialWorld
    /// @dev The outermost call (re)starts the recording: what is left from before is a reverted call's (or the previous
    ///      sequence's) and never happened.
    function begin() external {
        if (_depth == 0) vm.recordLogs();
        ++_depth;
    }

    /// @inheritdoc IAdversarialWorld
    function end() external {
        _fold();
        --_depth;
    }

    function setCoalition(AttackerHandler coalition_) external {
        coalition = coalition_;
    }

    /// @notice Fold what was emitted so far (the set-up; the attacker before each of its calls).
    function fold() external {
        _fold();
    }

    /// @inheritdoc IAdversarialWorld
    /// @dev `when % 8`: 0-3 now; 4: 1-300 s on; 5: one second before the next deadline; 6: at it; 7: 1-60 s after it;
    ///      one in 64 of the moves jumps 40 days (past every claim window).
    function advance(uint256 when) public {
        uint256 mode = when % 8;
        if (mode < 4) return;
        uint256 seed = when >> 8;
        uint256 next = _nextPoint(true);
        uint256 target;
        if (mode == 4 || next == 0) target = block.timestamp + 1 + seed % 300;
        else if (mode == 5) target = next - 1 > block.timestamp ? next - 1 : next;
        else if (mode == 6) target = next;
        else target = next + 1 + seed % 60;
        if (seed % 64 == 63) target = block.timestamp + 40 days;
        _advanceTo(target);
    }

    /// @notice The honest side's own move: every duty now, then on to the next deadline (duties one second before and at
    ///         it), sometimes a little past it.
    function step(uint256 seed) external {
        if (_depth == 0) vm.recordLogs();
        ++_depth;
        _duties();
        uint256 next = _nextPoint(true);
        if (next != 0) _advanceTo(seed % 4 == 0 ? next + 1 + (seed >> 8) % 120 : next);
        _duties();
        ++calls["step"];
        _fold();
        --_depth;
    }

    /// @inheritdoc IAdversarialWorld
    function book(uint64 round, address solver, LeafData[] memory leaves) public returns (bytes32 root) {
        bytes32[] memory hashes = new bytes32[](leaves.length);
        for (uint256 i; i < leaves.length; ++i) {
            hashes[i] = _leafHash(round, solver, i, leaves[i]);
        }
        root = TestMerkle.root(hashes);
        delete _tree[root];
        for (uint256 i; i < leaves.length; ++i) {
            _tree[root].push(leaves[i]);
        }
        _treeRound[root] = round;
        _treeSolver[root] = solver;
    }

    /// @inheritdoc IAdversarialWorld
    function treeSize(bytes32 root) external view returns (uint256) {
        return _tree[root].length;
    }

    /// @inheritdoc IAdversarialWorld
    function treeLeaf(bytes32 root, uint256 segment) public view returns (LeafData memory, bytes32[] memory) {
        return (_tree[root][segment], TestMerkle.proof(_hashes(root), segment));
    }

    /// @inheritdoc IAdversarialWorld
    function openingOf(uint64 round, address solver, bytes32 root)
        public
        view
        returns (LeafData[] memory leaves, bytes32[][] memory proofs)
    {
        IRunRegistry.RunParams memory p = reg.runParams(runId);
        uint256 count = ver.roundSeed(runId, round).verifierCount;
        uint256 seats = p.verifiers < count ? p.verifiers : count;
        bytes32[] memory hashes = _hashes(root);
        leaves = new LeafData[](seats * p.samples);
        proofs = new bytes32[][](seats * p.samples);
        for (uint256 k; k < leaves.length; ++k) {
            uint256 segment = ver.sampledSegment(runId, round, solver, uint8(k / p.samples), k % p.samples);
            leaves[k] = _tree[root][segment];
            proofs[k] = TestMerkle.proof(hashes, segment);
        }
    }

    /// @inheritdoc IAdversarialWorld
    function commitmentOf(uint64 round, address solver) external view returns (CommitmentData memory, bool) {
        return (_roundCommitments[round][solver], _committed[round][solver]);
    }

    /// @inheritdoc IAdversarialWorld
    function committerCount(uint64 round) external view returns (uint256) {
        return _roundCommitters[round].length;
    }

    /// @inheritdoc IAdversarialWorld
    function committerAt(uint64 round, uint256 i) external view returns (address) {
        return _roundCommitters[round][i];
    }

    /// @inheritdoc IAdversarialWorld
    function disputeCount() external view returns (uint256) {
        return _disputes.length;
    }

    /// @inheritdoc IAdversarialWorld
    function disputeAt(uint256 i) external view returns (DisputeSubject memory) {
        return _disputes[i];
    }

    /// @inheritdoc IAdversarialWorld
    function poolKeys(DisputeSubject calldata subject) external view returns (bytes[] memory) {
        return poolOf(subject);
    }

    function shareTokenCount() external view returns (uint256) {
        return _shareTokens.length;
    }

    function shareTokenAt(uint256 i) external view returns (address) {
        return _shareTokens[i];
    }

    /// @notice What a sequence reached (for tuning the campaign).
    function stats() external view returns (string memory) {
        string[14] memory keys = [
            "step",
            "honestCommit",
            "settled",
            "slash",
            "planted",
            "disproven",
            "payChecked",
            "verdictChallenger",
            "verdictDefendant",
            "refundOwed",
            "abstention",
            "escape",
            "plantDispute",
            "falsePlantSeen"
        ];
        string memory out;
        for (uint256 i; i < keys.length; ++i) {
            out = string.concat(out, keys[i], "=", vm.toString(calls[keys[i]]), " ");
        }
        return string.concat(out, "disputes=", vm.toString(_disputes.length), " round=", vm.toString(_times().round));
    }

    function refundKeyCount() external view returns (uint256) {
        return _refundKeys.length;
    }

    function refundKeyAt(uint256 i) external view returns (bytes32) {
        return _refundKeys[i];
    }

    function _leafHash(uint64 round, address solver, uint256 i, LeafData memory l) internal view returns (bytes32) {
        return SegmentLeaf.hash(
            SegmentLeaf.Leaf(runId, round, solver, uint32(i), l.startHash, l.endHash, l.sketchHash, l.tokens)
        );
    }

    function _hashes(bytes32 root) internal view returns (bytes32[] memory hashes) {
        LeafData[] storage leaves = _tree[root];
        hashes = new bytes32[](leaves.length);
        for (uint256 i; i < leaves.length; ++i) {
            hashes[i] = _leafHash(_treeRound[root], _treeSolver[root], i, leaves[i]);
        }
    }

    // ================================================================== time

    function _advanceTo(uint256 target) internal {
        // INVARIANT (of the campaign): time never passes a deadline before the honest side did its duties there.
        for (uint256 i; i < 600; ++i) {
            uint256 p = _nextPoint(false);
            if (p == 0 || p > target) break;
            _warpTo(p);
            this.duties();
        }
        _warpTo(target);
    }

    /// @notice The honest duties at the current time, in a call of their own (its memory is freed when it returns: a
    ///         move across a whole run does hundreds of them). The world itself only.
    function duties() external {
        require(msg.sender == address(this), "the world only");
        _duties();
    }

    /// @dev The next time strictly after now at which the honest side acts: one second before, and at, each deadline
    ///      (the round's windows, a posted claim's window, every live dispute's deadline, and the second after a round
    ///      started). With `deadlineOnly`, the next deadline itself.
    function _nextPoint(bool deadlineOnly) internal view returns (uint256 best) {
        IRunRegistry.RoundTimes memory t = _times();
        uint256[8] memory d;
        if (!t.finished) {
            d[0] = t.start + 1;
            d[1] = t.commitEnd;
            d[2] = t.openEnd;
            d[3] = t.attestEnd;
            d[4] = t.attestEnd + (t.challengeEnd - t.attestEnd) / 2;
            d[5] = t.challengeEnd;
            RunRegistry.Claim memory claim = reg.claimOf(runId, t.round);
            if (claim.status == RunRegistry.ClaimStatus.Posted) d[6] = claim.windowEnd;
        }
        d[7] = _nextDisputeDeadline();
        for (uint256 i; i < 8; ++i) {
            if (d[i] == 0) continue;
            if (!deadlineOnly && d[i] - 1 > block.timestamp && (best == 0 || d[i] - 1 < best)) best = d[i] - 1;
            if (d[i] > block.timestamp && (best == 0 || d[i] < best)) best = d[i];
        }
    }

    function _nextDisputeDeadline() internal view returns (uint256 best) {
        for (uint256 i; i < _disputes.length; ++i) {
            Disputes.Dispute memory d = dis.disputeOf(dis.disputeIdOf(_disputes[i]));
            bool live = d.status == Disputes.Status.Open || d.status == Disputes.Status.JuryDrawn
                || d.status == Disputes.Status.Decided;
            if (live && d.deadline > block.timestamp && (best == 0 || d.deadline < best)) best = d.deadline;
        }
    }

    // ================================================================== honest duties

    function _duties() internal {
        _fold();
        if (address(coalition) != address(0)) {
            try coalition.onPoint() {}
            catch {
                _drop();
            }
            _fold();
        }
        _disputeDuties();
        IRunRegistry.RoundTimes memory t = _times();
        if (!t.finished) {
            _verifierUpkeep();
            _roundDuties(t);
        }
        _settledDuties();
        _fold();
    }

    function _roundDuties(IRunRegistry.RoundTimes memory t) internal {
        if (block.timestamp < t.commitEnd) return _commitAll(t);
        uint64 r = t.round;
        if (block.timestamp < t.openEnd) {
            if (!_seedDrawn(r)) _drawSeedNow(t);
            if (_seedDrawn(r)) _openAll(r);
        } else {
            _reportUnopenedAll(r);
        }
        bool drawn = _seedDrawn(r);
        if (drawn && block.timestamp < t.attestEnd) _attestAll(r);
        uint256 revealEnd = t.attestEnd + (t.challengeEnd - t.attestEnd) / 2;
        if (block.timestamp >= t.attestEnd && block.timestamp < revealEnd) _revealAll(r);
        if (block.timestamp >= revealEnd) _reportUnrevealedAll(r);
        if (drawn && block.timestamp >= t.attestEnd && block.timestamp < t.challengeEnd) _reportAbstentionsAll(r);
        if (drawn && block.timestamp < t.challengeEnd) _challengeAll(r);
        if (block.timestamp >= t.challengeEnd) {
            if (drawn) _finalizeRound(r);
            _claimAndSettle(t);
        }
    }

    // ------------------------------------------------------------------ solvers

    function _commitAll(IRunRegistry.RoundTimes memory t) internal {
        for (uint256 i; i < _cast.honestSolvers.length; ++i) {
            address h = _cast.honestSolvers[i];
            if (_committed[t.round][h] || block.number >= t.seedBlock) continue;
            uint256 segments = reg.runParams(runId).numSegments;
            bool planted = _drawnToPlant(t.round, h);
            LeafData[] memory leaves = new LeafData[](segments);
            for (uint256 s; s < segments; ++s) {
                leaves[s] = planted ? plantedLeaf(t.round, h, s) : honestLeaf(t.round, h, s);
            }
            bytes32 root = book(t.round, h, leaves);
            _fold();
            vm.prank(h);
            try reg.commit(
                runId, t.round, root, keccak256(abi.encode("delta", h, t.round)), uint64(SEGMENT_TOKENS * segments)
            ) {
                ++calls["honestCommit"];
            } catch {
                _drop();
                _violation("an honest solver could not commit");
            }
            _fold();
        }
    }

    /// @dev Whether `solver`'s secret draws round `round` as planted (its anchor is its true chain's).
    function _drawnToPlant(uint64 round, address solver) internal view returns (bool) {
        (uint256 rate,,) = plants.termsOf(runId);
        (bool eligible,,,) = plants.plantOf(runId, round, solver);
        if (rate == 0 || !eligible || round == 0) return false;
        (bool drawn, bytes32 previousBase,) = ver.seedOf(runId, round - 1);
        if (!drawn) return false;
        return Planting.draw(secretOf(solver, round), runId, round, solver, previousBase) < rate;
    }

    function _drawSeedNow(IRunRegistry.RoundTimes memory t) internal {
        uint256 randaoBlock = t.seedBlock + Constants.RANDAO_LAG_BLOCKS;
        if (block.number <= randaoBlock || block.number > randaoBlock + Constants.SEED_HORIZON_BLOCKS) return;
        bytes memory header = seedHeader(runId);
        _fold();
        vm.prank(_cast.coordinator);
        try ver.drawSeed(runId, t.round, header) {}
        catch {
            _drop();
        }
    }

    function _openAll(uint64 r) internal {
        for (uint256 i; i < _cast.honestSolvers.length; ++i) {
            address h = _cast.honestSolvers[i];
            if (!_committed[r][h] || _opened[r][h] || reg.openingOf(runId, r, h) != IRunRegistry.Opening.None) {
                continue;
            }
            CommitmentData memory c = _roundCommitments[r][h];
            (LeafData[] memory leaves, bytes32[][] memory proofs) = openingOf(r, h, c.root);
            _fold();
            vm.prank(h);
            try reg.open(runId, r, h, c, leaves, proofs) {}
            catch {
                _drop();
                _violation("an honest solver could not open");
            }
            _fold();
        }
    }

    function _revealAll(uint64 r) internal {
        for (uint256 i; i < _cast.honestSolvers.length; ++i) {
            address h = _cast.honestSolvers[i];
            (bool eligible, bool revealed,,) = plants.plantOf(runId, r, h);
            if (!eligible || revealed || !_opened[r][h]) continue;
            _fold();
            vm.prank(h);
            try plants.reveal(runId, r, secretOf(h, r)) {}
            catch {
                _drop();
                _violation("an honest solver could not reveal");
            }
            _fold();
        }
    }

    // ------------------------------------------------------------------ verifiers

    /// @dev An honest verifier removed from the list (a false plant overturned its right pass) tops up and returns;
    ///      one not covered tops up.
    function _verifierUpkeep() internal {
        uint256 minStake = reg.runEconomics(runId).verifierMinStake;
        for (uint256 i; i < _cast.honestVerifiers.length; ++i) {
            address v = _cast.honestVerifiers[i];
            (uint256 bonded,,, uint256 reserved) = sm.stakeOf(v, Constants.ROLE_VERIFIER);
            bool listed = vreg.isReserved(runId, v);
            uint256 needed = reserved + (listed ? 0 : minStake);
            if (bonded < needed) {
                _give(v, needed - bonded);
                vm.prank(v);
                sm.deposit{value: needed - bonded}(Constants.ROLE_VERIFIER);
            }
            if (!listed) {
                _fold();
                vm.prank(v);
                try vreg.register(runId) {}
                catch {
                    _drop();
                }
            }
        }
    }

    function _attestAll(uint64 r) internal {
        address[] storage committers = _roundCommitters[r];
        for (uint256 i; i < committers.length; ++i) {
            if (!_opened[r][committers[i]]) continue;
            for (uint8 slot; slot < SLOTS; ++slot) {
                _attestSeat(AttestationRef(runId, r, committers[i], slot));
            }
        }
    }

    function _attestSeat(AttestationRef memory ref) internal {
        address v;
        try ver.assignedVerifier(ref) returns (address assigned, bool eligible) {
            if (!eligible || !_isHonestVerifier(assigned)) return;
            v = assigned;
        } catch {
            return;
        }
        (Verification.AttestationState state,,,) = ver.attestationOf(ref);
        if (state != Verification.AttestationState.None) return;
        CommitmentData memory c = _roundCommitments[ref.round][ref.solver];
        uint256 bond = reg.runParams(runId).attestationBond;
        _give(v, bond);
        (bool right, uint16 badSample) = _replay(ref);
        if (right) {
            _fold();
            vm.prank(v);
            try ver.attestPass{value: bond}(ref, c) {
                _checkAttester(runId, v);
            } catch {
                _drop();
                _honestAttestFailed();
            }
        } else {
            (LeafData memory leaf, bytes32[] memory proof) = treeLeaf(c.root, _segment(ref, badSample));
            _fold();
            vm.prank(v);
            try ver.attestFail{value: bond}(ref, c, badSample, leaf, proof) {
                _checkAttester(runId, v);
            } catch {
                _drop();
                _honestAttestFailed();
            }
        }
        _fold();
    }

    function _honestAttestFailed() internal {
        ++ghostHonestAttestFailed;
        _violation("an honest verifier could not attest its seat");
    }

    function _isHonestVerifier(address who) internal view returns (bool) {
        for (uint256 i; i < _cast.honestVerifiers.length; ++i) {
            if (_cast.honestVerifiers[i] == who) return true;
        }
        return false;
    }

    function _segment(AttestationRef memory ref, uint256 sample) internal view returns (uint256) {
        return ver.sampledSegment(ref.runId, ref.round, ref.solver, ref.slot, sample);
    }

    /// @dev The honest replay of a seat: every sampled leaf is the honest training's (else the first draw that is not).
    function _replay(AttestationRef memory ref) internal view returns (bool right, uint16 badSample) {
        bytes32 root = _roundCommitments[ref.round][ref.solver].root;
        uint256 samples = reg.runParams(runId).samples;
        for (uint256 j; j < samples; ++j) {
            uint256 segment = _segment(ref, j);
            if (!_sameLeaf(_tree[root][segment], honestLeaf(ref.round, ref.solver, segment))) {
                return (false, uint16(j));
            }
        }
        return (true, 0);
    }

    // ------------------------------------------------------------------ coordinator

    function _reportUnopenedAll(uint64 r) internal {
        address[] storage committers = _roundCommitters[r];
        for (uint256 i; i < committers.length; ++i) {
            if (reg.openingOf(runId, r, committers[i]) != IRunRegistry.Opening.None) continue;
            _fold();
            vm.prank(_cast.coordinator);
            try reg.reportUnopened(runId, r, committers[i]) {}
            catch {
                _drop();
            }
            _fold();
        }
    }

    function _reportUnrevealedAll(uint64 r) internal {
        address[] storage committers = _roundCommitters[r];
        for (uint256 i; i < committers.length; ++i) {
            (bool eligible, bool revealed,, bool reported) = plants.plantOf(runId, r, committers[i]);
            if (!eligible || revealed || reported || !_opened[r][committers[i]]) continue;
            _fold();
            vm.prank(_cast.coordinator);
            try plants.reportUnrevealed(runId, r, committers[i]) {}
            catch {
                _drop();
            }
            _fold();
        }
    }

    function _reportAbstentionsAll(uint64 r) internal {
        address[] storage committers = _roundCommitters[r];
        for (uint256 i; i < committers.length; ++i) {
            if (!_opened[r][committers[i]]) continue;
            for (uint8 slot; slot < SLOTS; ++slot) {
                AttestationRef memory ref = AttestationRef(runId, r, committers[i], slot);
                try ver.assignedVerifier(ref) returns (address, bool eligible) {
                    if (!eligible) continue;
                } catch {
                    continue;
                }
                (Verification.AttestationState state,,,) = ver.attestationOf(ref);
                if (state != Verification.AttestationState.None) continue;
                _fold();
                vm.prank(_cast.coordinator);
                try ver.reportAbstention(ref) {}
                catch {
                    _drop();
                }
                _fold();
            }
        }
    }

    function _finalizeRound(uint64 r) internal {
        address[] storage committers = _roundCommitters[r];
        for (uint256 i; i < committers.length; ++i) {
            for (uint8 slot; slot < SLOTS; ++slot) {
                _fold();
                try ver.finalize(AttestationRef(runId, r, committers[i], slot)) {}
                catch {
                    _drop();
                }
            }
        }
        _fold();
    }

    function _claimAndSettle(IRunRegistry.RoundTimes memory t) internal {
        if (reg.runState(runId).openDisputes != 0) return;
        RunRegistry.Claim memory claim = reg.claimOf(runId, t.round);
        uint256 bond = reg.runEconomics(runId).challengeBond;
        if (claim.status == RunRegistry.ClaimStatus.None) {
            _give(_cast.coordinator, bond);
            _fold();
            vm.prank(_cast.coordinator);
            try reg.postClaim{value: bond}(runId, t.round, correctTheta(t.round)) {}
            catch {
                _drop();
            }
            _fold();
            return;
        }
        bool wrong = claim.thetaHash != correctTheta(t.round);
        if (claim.status == RunRegistry.ClaimStatus.Posted && wrong) {
            if (block.timestamp >= claim.windowEnd) {
                _violation("a wrong claim outlived its window");
                return;
            }
            _give(_cast.whistleblower, bond);
            _fold();
            vm.prank(_cast.whistleblower);
            try dis.challengeClaim{value: bond}(runId, t.round, claim.nonce) {}
            catch {
                _drop();
            }
            _fold();
            return;
        }
        bool ready = claim.status == RunRegistry.ClaimStatus.Upheld
            || (claim.status == RunRegistry.ClaimStatus.Posted && block.timestamp >= claim.windowEnd);
        if (!ready) return;
        _fold();
        vm.prank(_cast.coordinator);
        try reg.settle(runId, t.round) {
            _fold();
            IRunRegistry.RoundTimes memory next = _times();
            if (!next.finished) _commitAll(next);
        } catch {
            _drop();
        }
    }

    // ------------------------------------------------------------------ whistleblower

    function _challengeAll(uint64 r) internal {
        address[] storage committers = _roundCommitters[r];
        for (uint256 i; i < committers.length; ++i) {
            address s = committers[i];
            if (!_opened[r][s]) continue;
            if (_revealedPlanted[r][s]) {
                _disputePlant(r, s);
                continue;
            }
            if (plants.isChallengeBlocked(runId, r, s)) continue;
            for (uint8 slot; slot < SLOTS; ++slot) {
                _challengeSeat(AttestationRef(runId, r, s, slot));
            }
        }
    }

    function _challengeSeat(AttestationRef memory ref) internal {
        Seat memory seat = _seats[ref.round][ref.solver][ref.slot];
        if (!seat.attested) return;
        (Verification.AttestationState state,,,) = ver.attestationOf(ref);
        if (state != Verification.AttestationState.Attested) return;
        if (!_attestationWrong(ref.round, ref.solver, ref.slot)) return;
        uint16 sample = seat.sample;
        if (!seat.isFail) {
            (, sample) = _replay(ref);
        }
        CommitmentData memory c = _roundCommitments[ref.round][ref.solver];
        (LeafData memory leaf, bytes32[] memory proof) = treeLeaf(c.root, _segment(ref, sample));
        uint256 bond = reg.runEconomics(runId).challengeBond;
        _give(_cast.whistleblower, bond);
        _fold();
        vm.prank(_cast.whistleblower);
        try dis.challengeAttestation{value: bond}(ref, c, sample, leaf, proof) {}
        catch {
            _drop();
            _violation("the whistleblower could not challenge a wrong attestation");
        }
        _fold();
    }

    /// @dev Dispute the first segment of a revealed plant that is not the planted training (if none is disputed yet).
    function _disputePlant(uint64 r, address s) internal {
        if (!_contentGood(r, s)) ++calls["falsePlantSeen"];
        if (_disproven[r][s] || !plants.isPlantChallengeable(runId, r, s)) return;
        CommitmentData memory c = _roundCommitments[r][s];
        LeafData[] storage leaves = _tree[c.root];
        for (uint256 segment; segment < leaves.length; ++segment) {
            if (_sameLeaf(leaves[segment], plantedLeaf(r, s, segment))) continue;
            DisputeSubject memory subject = DisputeSubject(dis.KIND_PLANT(), runId, r, s, 0, uint16(segment));
            Disputes.Status status = dis.disputeOf(dis.disputeIdOf(subject)).status;
            if (status == Disputes.Status.Expired) continue;
            if (status != Disputes.Status.None) return; // one is running
            (LeafData memory leaf, bytes32[] memory proof) = treeLeaf(c.root, segment);
            uint256 bond = reg.runEconomics(runId).challengeBond;
            _give(_cast.whistleblower, bond);
            _fold();
            vm.prank(_cast.whistleblower);
            try dis.challengePlant{value: bond}(runId, r, s, c, uint32(segment), leaf, proof) {
                ++calls["plantDispute"];
            } catch {
                _drop();
                _violation("the whistleblower could not dispute a false plant");
            }
            _fold();
            return;
        }
    }

    // ------------------------------------------------------------------ jurors

    function _disputeDuties() internal {
        for (uint256 i; i < _disputes.length; ++i) {
            _disputeDuty(_disputes[i]);
        }
    }

    function _disputeDuty(DisputeSubject memory s) internal {
        bytes32 id = dis.disputeIdOf(s);
        Disputes.Dispute memory d = dis.disputeOf(id);
        bool live = d.status == Disputes.Status.Open || d.status == Disputes.Status.JuryDrawn;
        if (live && block.timestamp >= d.deadline) {
            _fold();
            try dis.expire(s) {}
            catch {
                _drop();
            }
            _fold();
            d = dis.disputeOf(id);
        }
        if (d.status == Disputes.Status.Open && block.timestamp < d.deadline) {
            uint256 seedBlock = uint256(d.openedBlock) + 1;
            if (block.number <= seedBlock || blockhash(seedBlock) == bytes32(0)) return;
            _fold();
            try dis.drawJury(s, poolOf(s)) {
                _checkJury(s, false);
            } catch {
                _drop();
            }
            d = dis.disputeOf(id);
        }
        if (d.status == Disputes.Status.JuryDrawn && d.seats >= Constants.MIN_JURY_SIZE) {
            uint32 honestSeats = _honestSeats(d);
            if (_popcount(honestSeats) >= dis.quorum(d.seats, d.appeals)) {
                bool wins = _challengerRight(s);
                VerdictInput memory v = buildVerdictOf(s, wins, honestSeats);
                _fold();
                try dis.submitVerdict(s, wins, v.signers, v.signature, v.aggregate, v.nonSigners) {
                    ++calls[wins ? "verdictChallenger" : "verdictDefendant"];
                    _checkJury(s, true);
                } catch {
                    _drop();
                }
            }
            d = dis.disputeOf(id);
        }
        if (d.status == Disputes.Status.Decided) {
            bytes32 verdict = keccak256(abi.encode(d.challengerWins));
            if (verdict != keccak256(abi.encode(_challengerRight(s)))) {
                ++ghostFalseVerdict;
                _violation("a false verdict was decided (the honest quorum assumption broke)");
            }
            _fold();
            try dis.execute(s) {}
            catch {
                _drop();
            }
            _fold();
        }
    }

    function _honestSeats(Disputes.Dispute memory d) internal view returns (uint32 seats) {
        for (uint256 seat; seat < d.poolSize; ++seat) {
            if (d.eligible >> seat & 1 == 0) continue;
            (address juror,) = jurors.seatOf(d.jurySeed, seat, d.poolSize, d.openedBlock);
            for (uint256 i; i < _cast.honestJurors.length; ++i) {
                if (_cast.honestJurors[i] == juror) seats |= uint32(1) << seat;
            }
        }
    }

    /// @dev The true verdict: is the challenged attestation wrong, the plant's segment not the planted training, the
    ///      claimed theta not the right one?
    function _challengerRight(DisputeSubject memory s) internal view returns (bool) {
        if (s.kind == dis.KIND_ATTESTATION()) return _attestationWrong(s.round, s.solver, s.slot);
        if (s.kind == dis.KIND_PLANT()) {
            LeafData storage leaf = _tree[_roundCommitments[s.round][s.solver].root][s.claimNonce];
            return !_sameLeaf(leaf, plantedLeaf(s.round, s.solver, s.claimNonce));
        }
        return _claimTheta[s.round][s.claimNonce] != correctTheta(s.round);
    }

    /// @dev Ground truth of an attestation: a pass is wrong iff a sampled leaf of its seat is not the honest training's
    ///      (planted training included: a replay on the committed batches ends elsewhere); a fail iff the leaf it names is.
    function _attestationWrong(uint64 r, address s, uint8 slot) internal view returns (bool) {
        Seat memory seat = _seats[r][s][slot];
        AttestationRef memory ref = AttestationRef(runId, r, s, slot);
        if (seat.isFail) {
            uint256 segment = _segment(ref, seat.sample);
            return _sameLeaf(_tree[_roundCommitments[r][s].root][segment], honestLeaf(r, s, segment));
        }
        (bool right,) = _replay(ref);
        return !right;
    }

    // ------------------------------------------------------------------ after settlement

    function _settledDuties() internal {
        uint64 current = _times().round;
        for (uint64 r; r < current; ++r) {
            if (_settledDutiesDone[r]) continue;
            _settledDutiesDone[r] = true;
            _finalizeRound(r);
            _claimSolvers(r);
            _claimSeats(r);
            _claimJurors(r);
        }
    }

    function _claimSolvers(uint64 r) internal {
        for (uint256 i; i < _cast.honestSolvers.length; ++i) {
            address h = _cast.honestSolvers[i];
            if (!mustBePaid[r][h] || minted[r][h] != 0) continue;
            _fold();
            try ver.claimSolverShares(runId, r, h) {}
            catch {
                _drop();
                ++ghostHonestUnpaid;
                _violation(
                    string.concat("an honest accepted commitment could not claim its shares, round ", vm.toString(r))
                );
            }
            _fold();
        }
    }

    function _claimSeats(uint64 r) internal {
        address[] storage committers = _roundCommitters[r];
        for (uint256 i; i < committers.length; ++i) {
            for (uint8 slot; slot < SLOTS; ++slot) {
                AttestationRef memory ref = AttestationRef(runId, r, committers[i], slot);
                if (_isHonestVerifier(_seats[r][committers[i]][slot].verifier)) {
                    _fold();
                    try ver.claimVerifierShares(ref) {}
                    catch {
                        _drop();
                    }
                    _fold();
                    try faults.claimFaultReward(ref) {}
                    catch {
                        _drop();
                    }
                }
                _fold();
                try plants.releaseForfeit(ref) {}
                catch {
                    _drop();
                }
            }
        }
        _fold();
    }

    function _claimJurors(uint64 r) internal {
        for (uint256 k; k < _disputes.length; ++k) {
            DisputeSubject memory s = _disputes[k];
            if (s.round != r) continue;
            Disputes.Dispute memory d = dis.disputeOf(dis.disputeIdOf(s));
            if (d.status != Disputes.Status.Executed) continue;
            uint32 honestSigners = d.signers & _honestSeats(d);
            for (uint8 seat; seat < d.poolSize; ++seat) {
                if (honestSigners >> seat & 1 == 0 || d.claimed >> seat & 1 == 1) continue;
                (address juror,) = jurors.seatOf(d.jurySeed, seat, d.poolSize, d.openedBlock);
                _fold();
                vm.prank(juror);
                try dis.claimJurorReward(s, seat) {}
                catch {
                    _drop();
                }
            }
        }
        _fold();
    }

    // ================================================================== the end of a run

    /// @notice Play the run to its end (the coalition keeps playing its strategy but posts no claims), then claim and
    ///         release everything owed.
    function drain() external {
        if (_depth == 0) vm.recordLogs();
        ++_depth;
        draining = true;
        for (uint256 i; i < 200; ++i) {
            uint256 next = _nextPoint(false);
            this.duties();
            if (next == 0) break;
            _advanceTo(next);
        }
        this.duties();
        draining = false;
        --_depth;
    }

    /// @notice After the drain: every forfeit owed back was returned, every honest accepted commitment was paid.
    function checkDrained() external view returns (string memory) {
        for (uint256 i; i < _refundKeys.length; ++i) {
            if (refundOwed[_refundKeys[i]] != 0) return "a right pass's forfeit was never returned";
        }
        uint64 rounds = _times().round;
        for (uint64 r; r < rounds; ++r) {
            for (uint256 i; i < _cast.honestSolvers.length; ++i) {
                address h = _cast.honestSolvers[i];
                if (mustBePaid[r][h] && minted[r][h] == 0) return "an honest accepted commitment was never paid";
            }
        }
        return "";
    }

    // ================================================================== the event fold

    function _fold() internal {
        Vm.Log[] memory logs = vm.getRecordedLogs();
        for (uint256 i; i < logs.length; ++i) {
            _onLog(logs[i]);
        }
    }

    function _flow(address from, address to, uint256 amount) internal {
        if (from != address(0)) implied[from] -= int256(amount);
        if (to != address(0)) implied[to] += int256(amount);
    }

    function _py(int256 amount) internal {
        ledgerPyImplied += amount;
    }

    function _onLog(Vm.Log memory log) internal {
        if (log.topics.length == 0) return;
        address e = log.emitter;
        if (e == address(sm)) return _onStake(log);
        if (e == address(reg)) return _onRegistry(log);
        if (e == address(ver)) return _onVerification(log);
        if (e == address(dis)) return _onDisputes(log);
        if (e == address(plants)) return _onPlants(log);
        if (e == address(shares)) return _onShares(log);
        if (e == address(faults)) return _onFaults(log);
        if (_isShareToken[e]) return _onToken(log);
    }

    function _amount(Vm.Log memory log) internal pure returns (uint256 a) {
        (a) = abi.decode(log.data, (uint256));
    }

    function _onStake(Vm.Log memory log) internal {
        bytes32 sig = log.topics[0];
        if (sig == StakeManager.StakeDeposited.selector) {
            uint256 amount = _amount(log);
            _flow(address(0), address(sm), amount);
            _py(int256(amount));
        } else if (sig == StakeManager.StakeWithdrawn.selector) {
            uint256 amount = _amount(log);
            _flow(address(sm), address(0), amount);
            _py(-int256(amount));
        } else if (sig == StakeManager.StakeSlashed.selector) {
            (, uint256 taken, address recipient,,) = abi.decode(log.data, (uint256, uint256, address, uint256, uint256));
            _flow(address(sm), recipient, taken);
            ++calls["slash"];
            _onSlash(address(uint160(uint256(log.topics[1]))), log.topics[3], taken);
        }
    }

    function _onRegistry(Vm.Log memory log) internal {
        bytes32 sig = log.topics[0];
        if (sig == RunRegistry.RunCreated.selector) {
            (RunTerms memory c, address token, uint256 pool) = abi.decode(log.data, (RunTerms, address, uint256));
            uint256 run = uint256(log.topics[1]);
            _attestationBond[run] = c.attestationBond;
            _challengeBond[run] = c.challengeBond;
            _shareTokens.push(token);
            _isShareToken[token] = true;
            _py(int256(pool));
        } else if (sig == RunRegistry.ThetaClaimed.selector) {
            (bytes32 theta, uint16 nonce, uint256 bond) = abi.decode(log.data, (bytes32, uint16, uint256));
            _flow(address(0), address(reg), bond);
            _py(int256(bond));
            if (uint256(log.topics[1]) == runId) _claimTheta[uint64(uint256(log.topics[2]))][nonce] = theta;
        } else if (sig == RunRegistry.ClaimBondWithdrawn.selector) {
            uint256 amount = _amount(log);
            _flow(address(reg), address(0), amount);
            _py(-int256(amount));
        } else if (sig == RunRegistry.ClaimResolved.selector) {
            (,, uint256 forfeited) = abi.decode(log.data, (uint16, uint8, uint256));
            _flow(address(reg), address(dis), forfeited);
        } else if (uint256(log.topics[1]) != runId) {
            return;
        } else if (sig == RunRegistry.Committed.selector) {
            _onCommitted(log);
        } else if (sig == RunRegistry.CommitmentOpened.selector) {
            _opened[uint64(uint256(log.topics[2]))][address(uint160(uint256(log.topics[3])))] = true;
        } else if (sig == RunRegistry.RoundSettled.selector) {
            _snapshot(uint64(uint256(log.topics[2])));
        }
    }

    function _onCommitted(Vm.Log memory log) internal {
        uint64 r = uint64(uint256(log.topics[2]));
        address s = address(uint160(uint256(log.topics[3])));
        (bytes32 root, bytes32 delta,, uint64 tokens) = abi.decode(log.data, (bytes32, bytes32, uint32, uint64));
        _roundCommitters[r].push(s);
        _committed[r][s] = true;
        _roundCommitments[r][s] = CommitmentData(root, delta, tokens);
        _keys[keccak256(abi.encode(Constants.FAULT_SOLVER, runId, r, s))] = KeyInfo(1, r, s, 0);
        for (uint8 slot; slot < 8; ++slot) {
            _keys[keccak256(abi.encode(Constants.FAULT_ATTESTATION, runId, r, s, slot))] = KeyInfo(2, r, s, slot);
        }
    }

    function _onVerification(Vm.Log memory log) internal {
        bytes32 sig = log.topics[0];
        if (sig == PullPayments.Withdrawn.selector) {
            uint256 amount = _amount(log);
            _flow(address(ver), address(0), amount);
            _py(-int256(amount));
        } else if (sig == Verification.PassAttested.selector || sig == Verification.FailAttested.selector) {
            uint256 run = uint256(log.topics[1]);
            _flow(address(0), address(ver), _attestationBond[run]);
            _py(int256(_attestationBond[run]));
            if (run == runId) _onAttested(log, sig == Verification.FailAttested.selector);
        } else if (sig == Verification.AttestationResolved.selector) {
            (,, Verification.AttestationState state, uint256 bond) =
                abi.decode(log.data, (uint8, address, Verification.AttestationState, uint256));
            if (state == Verification.AttestationState.Overturned) _flow(address(ver), address(dis), bond);
        } else if (sig == Verification.PlantApplied.selector) {
            (, uint256 forfeited) = abi.decode(log.data, (uint256, uint256));
            _flow(address(ver), address(plants), forfeited);
        } else if (sig == Verification.SolverSharesClaimed.selector && uint256(log.topics[1]) == runId) {
            _onSolverShares(uint64(uint256(log.topics[2])), address(uint160(uint256(log.topics[3]))), _amount(log));
        }
    }

    function _onAttested(Vm.Log memory log, bool isFail) internal {
        uint64 r = uint64(uint256(log.topics[2]));
        address s = address(uint160(uint256(log.topics[3])));
        if (isFail) {
            (address verifier, uint8 slot, uint16 sample) = abi.decode(log.data, (address, uint8, uint16));
            _seats[r][s][slot] = Seat(true, true, sample, verifier);
        } else {
            (address verifier, uint8 slot) = abi.decode(log.data, (address, uint8));
            _seats[r][s][slot] = Seat(true, false, 0, verifier);
        }
    }

    function _onDisputes(Vm.Log memory log) internal {
        bytes32 sig = log.topics[0];
        if (sig == PullPayments.Withdrawn.selector) {
            uint256 amount = _amount(log);
            _flow(address(dis), address(0), amount);
            _py(-int256(amount));
            return;
        }
        uint8 kind;
        DisputeSubject memory s;
        if (sig == Disputes.AttestationChallenged.selector) {
            (address solver, uint8 slot) = abi.decode(log.data, (address, uint8));
            kind = 1;
            s = DisputeSubject(1, uint256(log.topics[2]), uint64(uint256(log.topics[3])), solver, slot, 0);
        } else if (sig == Disputes.PlantChallenged.selector) {
            (address solver,, uint32 segment) = abi.decode(log.data, (address, address, uint32));
            kind = 3;
            s = DisputeSubject(3, uint256(log.topics[2]), uint64(uint256(log.topics[3])), solver, 0, uint16(segment));
        } else if (sig == Disputes.ClaimChallenged.selector) {
            (uint16 nonce) = abi.decode(log.data, (uint16));
            kind = 2;
            s = DisputeSubject(2, uint256(log.topics[2]), uint64(uint256(log.topics[3])), address(0), 0, nonce);
        }
        if (kind == 0) return;
        uint256 bond = _challengeBond[s.runId];
        _flow(address(0), address(dis), bond);
        _py(int256(bond));
        if (s.runId == runId) _disputes.push(s);
    }

    function _onPlants(Vm.Log memory log) internal {
        bytes32 sig = log.topics[0];
        if (sig == PullPayments.Withdrawn.selector) {
            uint256 amount = _amount(log);
            _flow(address(plants), address(0), amount);
            _py(-int256(amount));
        } else if (sig == Plants.PlantTermsSet.selector) {
            (,,, uint256 funded,,) = abi.decode(log.data, (uint256, uint256, uint256, uint256, uint256, uint256));
            _flow(address(0), address(plants), funded);
            _py(int256(funded));
        } else if (sig == Plants.PlantPoolFunded.selector) {
            uint256 amount = _amount(log);
            _flow(address(0), address(plants), amount);
            _py(int256(amount));
        } else if (uint256(log.topics[1]) != runId) {
            return;
        } else if (sig == Plants.PlantRevealed.selector) {
            (, bool planted) = abi.decode(log.data, (bytes32, bool));
            if (planted) ++calls["planted"];
            if (planted) {
                _revealedPlanted[uint64(uint256(log.topics[2]))][address(uint160(uint256(log.topics[3])))] = true;
            }
        } else if (sig == Plants.PlantDisproven.selector) {
            ++calls["disproven"];
            _disproven[uint64(uint256(log.topics[2]))][address(uint160(uint256(log.topics[3])))] = true;
        } else if (sig == Plants.PlantForfeitReleased.selector) {
            _onForfeitReleased(log);
        }
    }

    function _onShares(Vm.Log memory log) internal {
        bytes32 sig = log.topics[0];
        if (sig == PullPayments.Withdrawn.selector) {
            uint256 amount = _amount(log);
            _flow(address(shares), address(0), amount);
            _py(-int256(amount));
        } else if (sig == ModelShares.RunSharesCreated.selector) {
            (,, uint256 pool) = abi.decode(log.data, (address, uint256, uint256));
            _flow(address(0), address(shares), pool);
        } else if (sig == ModelShares.PoolFunded.selector) {
            address from = address(uint160(uint256(log.topics[2])));
            if (from != address(shares)) _flow(from, address(shares), _amount(log));
        } else if (sig == ModelShares.RevenuePaid.selector) {
            uint256 amount = _amount(log);
            _flow(address(0), address(shares), amount);
            _py(int256(amount));
        }
    }

    function _onFaults(Vm.Log memory log) internal {
        bytes32 sig = log.topics[0];
        if (sig == PullPayments.Withdrawn.selector) {
            uint256 amount = _amount(log);
            _flow(address(faults), address(0), amount);
            _py(-int256(amount));
        } else if (sig == FaultRewards.FaultRewardFunded.selector) {
            _flow(address(ver), address(faults), _amount(log));
        }
    }

    function _onToken(Vm.Log memory log) internal {
        bytes32 sig = log.topics[0];
        if (sig == RunShares.RevenueNotified.selector) {
            _flow(address(shares), log.emitter, _amount(log));
        } else if (sig == RunShares.RevenueWithdrawn.selector || sig == RunShares.UnownedRevenueSwept.selector) {
            uint256 amount = _amount(log);
            _flow(log.emitter, address(0), amount);
            _py(-int256(amount));
        }
    }

    // ================================================================== property 1: pay

    /// @dev At the settlement of round r: which commitments the protocol pays (recomputed from the seats' states and
    ///      Plants), which of them are good work (ground truth), and for every honest solver whose work was accepted
    ///      the least its shares may be, bucket / (good paid commitments), when no bad commitment is paid.
    function _snapshot(uint64 r) internal {
        if (_snapshotTaken[r]) return;
        _snapshotTaken[r] = true;
        ++calls["settled"];
        address[] storage committers = _roundCommitters[r];
        uint256 paid;
        uint256 goodPaid;
        uint256 badPaid;
        for (uint256 i; i < committers.length; ++i) {
            (bool accepted, bool isPaid) = _payStatus(r, committers[i]);
            if (_isHonest(committers[i]) && accepted) {
                mustBePaid[r][committers[i]] = true;
                if (!isPaid) {
                    ++ghostHonestUnpaid;
                    _violation(string.concat("an honest accepted commitment is not paid, round ", vm.toString(r)));
                }
            }
            if (!isPaid) continue;
            ++paid;
            if (_contentGood(r, committers[i])) ++goodPaid;
            else ++badPaid;
        }
        if (ver.roundTally(runId, r).paidCommitments != paid) {
            ++ghostPaidCountMismatch;
            _violation(string.concat("paidCommitments != the round's paid commitments, round ", vm.toString(r)));
        }
        if (badPaid != 0) {
            ++calls["escape"];
            return _classifyEscape(r);
        }
        uint256 bucket = reg.sharesPerRound(runId) * reg.runEconomics(runId).solverShareBps / Constants.BPS_DENOMINATOR;
        for (uint256 i; i < committers.length && goodPaid != 0; ++i) {
            if (mustBePaid[r][committers[i]]) payBound[r][committers[i]] = bucket / goodPaid;
        }
    }

    /// @dev accepted: standing passes and overturned (cleared) fails on a strict majority of the round's seats,
    ///      min(verifiersPerCommitment, verifierCount) / 2 + 1 (issue 37: a seat nobody attested counts against it), no
    ///      standing (or voided) fail and no overturned pass; or revealed as planted (not disproven) and attested;
    ///      paid: accepted and Plants does not hold it unpaid.
    function _payStatus(uint64 r, address s) internal view returns (bool accepted, bool paid) {
        uint256 standing;
        bool blockingFail;
        bool attested;
        for (uint8 slot; slot < SLOTS; ++slot) {
            (Verification.AttestationState state, bool isFail,,) = ver.attestationOf(AttestationRef(runId, r, s, slot));
            if (state == Verification.AttestationState.None || state == Verification.AttestationState.Abstained) {
                continue;
            }
            attested = true;
            bool stands = state == Verification.AttestationState.Attested
                || state == Verification.AttestationState.Finalized || state == Verification.AttestationState.Upheld;
            if (!isFail && stands) ++standing;
            // a fail a jury overturned is a replay that came out right: it counts like a pass
            if (isFail && state == Verification.AttestationState.Overturned) ++standing;
            // a standing or voided fail blocks, and so does an overturned pass (a proven fault)
            if (isFail && (stands || state == Verification.AttestationState.Voided)) blockingFail = true;
            if (!isFail && state == Verification.AttestationState.Overturned) blockingFail = true;
        }
        Verification.RoundSeed memory rs = ver.roundSeed(runId, r);
        uint256 seats = rs.verifiers < rs.verifierCount ? rs.verifiers : rs.verifierCount;
        bool majority = rs.attestEnd != 0 && standing >= seats / 2 + 1;
        accepted = _revealedPlanted[r][s] ? attested && !_disproven[r][s] : majority && !blockingFail;
        paid = accepted && plants.payOf(runId, r, s) != IPlants.Pay.Unpaid;
    }

    /// @dev Good work: every leaf the honest training's, or (revealed as planted) every leaf the planted training's.
    function _contentGood(uint64 r, address s) internal view returns (bool) {
        bytes32 root = _roundCommitments[r][s].root;
        LeafData[] storage leaves = _tree[root];
        if (leaves.length == 0 || _treeSolver[root] != s || _treeRound[root] != r) return false;
        bool planted = _revealedPlanted[r][s];
        for (uint256 i; i < leaves.length; ++i) {
            LeafData memory truth = planted ? plantedLeaf(r, s, i) : honestLeaf(r, s, i);
            if (!_sameLeaf(leaves[i], truth)) return false;
        }
        return true;
    }

    /// @dev A bad commitment was paid: say how it escaped (the precondition of property 1 failed for the round).
    function _classifyEscape(uint64 r) internal {
        address[] storage committers = _roundCommitters[r];
        for (uint256 i; i < committers.length; ++i) {
            (, bool isPaid) = _payStatus(r, committers[i]);
            if (!isPaid || _contentGood(r, committers[i])) continue;
            uint256 cause = _escapeCause(r, committers[i]);
            if (cause == 1) ++ghostAbstentionEscape;
            else if (cause == 2) ++ghostMissedChallenge;
            else ++ghostSamplingEscape;
        }
    }

    /// @dev 1: a seat whose samples show the bad leaf abstained; 2: a pass whose samples show it stands (a challenge
    ///      the whistleblower should have made); 0: no seat's samples show it.
    function _escapeCause(uint64 r, address s) internal view returns (uint256) {
        for (uint8 slot; slot < SLOTS; ++slot) {
            AttestationRef memory ref = AttestationRef(runId, r, s, slot);
            try ver.sampledSegment(runId, r, s, slot, 0) returns (uint256) {}
            catch {
                continue;
            }
            (bool right,) = _replay(ref);
            if (right) continue;
            (Verification.AttestationState state,,,) = ver.attestationOf(ref);
            if (state == Verification.AttestationState.Abstained) return 1;
            if (_seats[r][s][slot].attested && !_seats[r][s][slot].isFail) return 2;
        }
        return 0;
    }

    function _onSolverShares(uint64 r, address s, uint256 amount) internal {
        if (payBound[r][s] != 0) ++calls["payChecked"];
        minted[r][s] = amount == 0 ? 1 : amount;
        if (payBound[r][s] != 0 && amount < payBound[r][s]) {
            ++ghostUnderpaid;
            _violation(
                string.concat(
                    "an honest accepted solver was paid less than its share, round ",
                    vm.toString(r),
                    ": ",
                    vm.toString(amount),
                    " < ",
                    vm.toString(payBound[r][s])
                )
            );
        }
    }

    // ================================================================== property 2: slashes

    function _onSlash(address account, bytes32 key, uint256 taken) internal {
        KeyInfo memory k = _keys[key];
        if (k.kind == 0) {
            if (_isHonest(account)) {
                ++ghostUnjustifiedSlash;
                _violation("an honest account was slashed under a key of no commitment of the run");
            }
            return;
        }
        if (k.kind == 1) return _onSolverSlash(account, k);
        _onSeatSlash(account, key, k, taken);
    }

    function _onSolverSlash(address account, KeyInfo memory k) internal {
        bool justified = account == k.solver && _solverFaulty(k.round, k.solver);
        if (!justified) {
            ++ghostUnjustifiedSlash;
            _violation(
                string.concat(
                    "a solver was slashed without a fault: ", vm.toString(account), " round ", vm.toString(k.round)
                )
            );
        }
    }

    /// @dev A commitment's fault: no opening known for it (random or copied root), not opened, a plant not revealed in
    ///      its window, or content that is not the training it claims (honest, or planted once revealed as planted).
    function _solverFaulty(uint64 r, address s) internal view returns (bool) {
        if (!_opened[r][s]) return true;
        (, bool revealed,, bool reported) = plants.plantOf(runId, r, s);
        if (reported && !revealed) return true;
        return !_contentGood(r, s);
    }

    function _onSeatSlash(address account, bytes32 key, KeyInfo memory k, uint256 taken) internal {
        AttestationRef memory ref = AttestationRef(runId, k.round, k.solver, k.slot);
        if (account != ver.attesterOf(ref)) {
            ++ghostUnjustifiedSlash;
            _violation("a seat's slash hit an account other than its verifier");
            return;
        }
        (Verification.AttestationState state,,,) = ver.attestationOf(ref);
        if (state == Verification.AttestationState.Abstained) {
            ++calls["abstention"];
            // an abstention: a fault of its verifier, unless it was an honest one (they attest every seat they hold)
            if (_isHonest(account)) {
                ++ghostUnjustifiedSlash;
                _violation("an honest verifier was slashed for abstaining");
            }
            return;
        }
        if (_attestationWrong(k.round, k.solver, k.slot)) return;
        if (_revealedPlanted[k.round][k.solver] && !_seats[k.round][k.solver][k.slot].isFail) {
            // a right pass overturned by a false plant: its bond and penalty must come back once the plant is disproven
            ++calls["refundOwed"];
            refundOwed[key] = taken + _attestationBond[runId];
            _refundKeys.push(key);
            return;
        }
        ++ghostUnjustifiedSlash;
        _violation(
            string.concat(
                "a verifier was slashed for a right attestation: ",
                vm.toString(account),
                " round ",
                vm.toString(k.round)
            )
        );
    }

    function _onForfeitReleased(Vm.Log memory log) internal {
        (uint8 slot,, uint256 amount, bool returned,) = abi.decode(log.data, (uint8, address, uint256, bool, uint256));
        uint64 r = uint64(uint256(log.topics[2]));
        address s = address(uint160(uint256(log.topics[3])));
        bytes32 key = keccak256(abi.encode(Constants.FAULT_ATTESTATION, runId, r, s, slot));
        uint256 owed = refundOwed[key];
        if (owed == 0) return;
        refundOwed[key] = 0;
        if (!returned || amount != owed) {
            ++ghostRefundWrong;
            _violation("a right pass's forfeit was not returned in full after its false plant");
        }
    }

    function _popcount(uint256 bits) internal pure returns (uint256 count) {
        while (bits != 0) {
            bits &= bits - 1;
            ++count;
        }
    }
}

/// @notice The adversarial campaign (issue 36): the honest world (HonestWorld.step, and every deadline any call crosses)
///         against a coalition calling every external function with fuzzed arguments at fuzzed times (AttackerHandler:
///         its accounts' entry points, and a whole strategy per round through `play` and `onPoint`), every property
///         after every call, and the run played to its end (the coalition posting no claims) after every sequence.
///         The set-up, the checks and the replays of failing sequences share this contract.
/// @dev Cast: 2 honest solvers, 3 honest verifiers, 6 honest jurors, a whistleblower and the run's creator as
///      coordinator; the coalition: 3 solvers (2 joined with plant anchors, a sybil with neither), 2 verifiers (the first
///      also a juror) and a challenger. Run: 4 rounds, 2 seats x 2 samples of 8 segments, juries of 3, 10-minute windows,
///      plants at the maximum rate (20%) from round 2.
///      Trust assumption (what the honest world enforces, see HonestWorld): an honest whistleblower challenges every
///      wrong attestation, disputes a segment of every false plant and challenges every wrong claim before its window
///      closes; the honest jurors (6 of the 7 registered, so every jury of 3 or more seats has an honest quorum) sign
///      the true verdict of every dispute before its deadline; the coordinator reports every unopened commitment,
///      unrevealed plant and abstaining seat; time never passes a deadline before the honest side acted there.
///
///      Property 1 (pay). For every settled round r in which no commitment with bad content is paid (every bad
///      commitment was caught): every honest solver whose commitment of r is accepted -- standing passes (Attested,
///      Finalized, Upheld) and overturned fails on a strict majority of the round's seats (min(verifiersPerCommitment,
///      verifierCount) / 2 + 1, issue 37), no standing or voided fail and no overturned pass; or revealed as planted,
///      not disproven, and attested -- is paid (claimSolverShares succeeds) and mints at least floor(bucket / G)
///      shares, where bucket = sharesPerRound * solverShareBps / 10^4 and G = the number of r's paid commitments that
///      are good work (every leaf the honest training's, or every leaf the planted training's for a true plant): the
///      honest accepted commitments plus the accepted planted ones. Every commitment trains the run's fixed H steps of
///      a fixed batch, so this is its tokens' share of the good accepted tokens. Also (the denominator): Verification's
///      roundTally.paidCommitments equals the number of r's commitments the protocol pays, recomputed from the seats'
///      states and Plants.payOf. Rounds where a bad commitment was paid are counted by cause (a seat whose samples show
///      the forgery abstained, a wrong pass left standing, or no seat's samples show it), not failed.
///      Property 2 (slashes). Every slash hits the account its fault key names (the commitment's solver, the seat's
///      verifier) for a ground-truth fault of it: a commitment not opened (seed drawn), an eligible plant not revealed,
///      or content that is not the training it claims (honest, or planted once revealed as planted); an attestation
///      that is wrong (a pass on a seat with a sampled leaf that is not the honest training's, a fail naming a leaf that
///      is), or a seat its verifier left unattested (never an honest verifier's: they attest every seat they hold).
///      The one exception, the plant penalty of a right pass overturned by a false plant, is returned in full (bond +
///      penalty, PlantForfeitReleased returned = true) to its verifier after settlement. No honest account is slashed
///      under any other key, and no jury decides against the truth.
///      Property 3 (reservations). Right after every successful attestation, its verifier holds the run's reservation
///      (VerifierRegistry.records(run, v).reserved) and its verifier stake covers its reservations
///      (StakeManager.isCovered); right after every jury draw (every seated juror) and every verdict (every signer),
///      the juror holds its juror reservation (JurorRegistry.jurors(j).reserved) and is covered.
///      Property 4 (ETH). For every protocol contract and share token, its ETH balance equals what its events imply,
///      inflows minus outflows (a transfer between protocol contracts out of the sender's and into the recipient's
///      ledger); and their total equals protocol/ledger.py's fold of the same events.
///      Property 5 (access). No protocol-only hook accepts an outsider's call, no corrupted opening is accepted, and no
///      protocol contract accepts plain ETH.
abstract contract AdversarialSetup is Fixture {
    uint256 internal constant PLANT_RATE = 2000;
    uint256 internal constant MAX_ROUNDS = 4;
    uint256 internal constant HONEST_JURORS = 6;

    HonestWorld internal world;
    AttackerHandler internal attacker;
    uint256 internal runId;

    function setUp() public virtual override {
        super.setUp();
        vm.recordLogs();
        RunTerms memory c = defaultConfig();
        c.verifiersPerCommitment = 2;
        c.jurySize = 3;
        c.commitWindow = 10 minutes;
        c.attestWindow = 10 minutes;
        c.challengeWindow = 10 minutes;
        c.disputeTimeout = 10 minutes;
        c.maxRounds = uint32(MAX_ROUNDS);
        c.revenueReleasePeriod = 1 days;
        runId = createRun(c);
        vm.prank(creator);
        plants.setTerms{value: 10 ether}(runId, uint16(PLANT_RATE), 1 ether, 2 ether);

        Cast memory cast_ = _cast();
        // 6 honest jurors and the coalition's: more than a first jury's pool (3 + 3), so every seat is a random draw
        registerJurors(HONEST_JURORS);
        _registerAttackerJuror(cast_.attackerJuror);
        cast_.honestJurors = new address[](HONEST_JURORS);
        for (uint256 i; i < HONEST_JURORS; ++i) {
            cast_.honestJurors[i] = jurorAddrs[i];
        }
        for (uint256 i; i < cast_.honestSolvers.length; ++i) {
            _joinAs(cast_.honestSolvers[i]);
        }
        for (uint256 i; i + 1 < cast_.attackerSolvers.length; ++i) {
            _joinAs(cast_.attackerSolvers[i]); // the last one is a sybil that joins later, if at all
        }
        for (uint256 i; i < cast_.honestVerifiers.length; ++i) {
            _registerVerifierAs(cast_.honestVerifiers[i]);
        }
        for (uint256 i; i < cast_.attackerVerifiers.length; ++i) {
            _registerVerifierAs(cast_.attackerVerifiers[i]);
        }

        Protocol memory p = Protocol(sm, reg, ver, dis, shares, jurors, faults, vreg, plants, directory, randomness);
        world = new HonestWorld(p, runId, MAX_ROUNDS, cast_, jurorAddrs, jurorSks, jurorPks);
        attacker = new AttackerHandler(
            p,
            IAdversarialWorld(address(world)),
            runId,
            MAX_ROUNDS,
            cast_,
            jurorAddrs,
            jurorPks,
            jurorSks[HONEST_JURORS]
        );
        // the solvers register their plant anchors in round 0 (the sybil has none: unpaid if it ever commits)
        for (uint256 i; i < cast_.honestSolvers.length; ++i) {
            bytes32 anchor = world.anchorOf(cast_.honestSolvers[i]);
            vm.prank(cast_.honestSolvers[i]);
            plants.setAnchor(runId, anchor);
        }
        for (uint256 i; i + 1 < cast_.attackerSolvers.length; ++i) {
            bytes32 anchor = world.anchorOf(cast_.attackerSolvers[i]);
            vm.prank(cast_.attackerSolvers[i]);
            plants.setAnchor(runId, anchor);
        }
        world.setCoalition(attacker);
        world.fold();

        // weights: the honest side's step 6, the coalition's phase-by-phase move 10, every other attacker entry point 1
        targetContract(address(world));
        bytes4[] memory honest = new bytes4[](6);
        for (uint256 i; i < honest.length; ++i) {
            honest[i] = HonestWorld.step.selector;
        }
        targetSelector(FuzzSelector({addr: address(world), selectors: honest}));
        targetContract(address(attacker));
        targetSelector(FuzzSelector({addr: address(attacker), selectors: _attackerSelectors()}));
    }

    function _attackerSelectors() internal pure returns (bytes4[] memory s) {
        bytes4[22] memory each = [
            AttackerHandler.warp.selector,
            AttackerHandler.stake.selector,
            AttackerHandler.membership.selector,
            AttackerHandler.commit.selector,
            AttackerHandler.open.selector,
            AttackerHandler.reportUnopened.selector,
            AttackerHandler.drawRoundSeed.selector,
            AttackerHandler.attest.selector,
            AttackerHandler.reportAbstention.selector,
            AttackerHandler.finalize.selector,
            AttackerHandler.challenge.selector,
            AttackerHandler.challengePlant.selector,
            AttackerHandler.claim.selector,
            AttackerHandler.jury.selector,
            AttackerHandler.plant.selector,
            AttackerHandler.payouts.selector,
            AttackerHandler.revenue.selector,
            AttackerHandler.peer.selector,
            AttackerHandler.createRun.selector,
            AttackerHandler.hooks.selector,
            AttackerHandler.jury.selector,
            AttackerHandler.challenge.selector
        ];
        s = new bytes4[](each.length + 10);
        for (uint256 i; i < each.length; ++i) {
            s[i] = each[i];
        }
        for (uint256 i = each.length; i < s.length; ++i) {
            s[i] = AttackerHandler.play.selector;
        }
    }

    function _cast() internal returns (Cast memory c) {
        c.honestSolvers = new address[](2);
        c.honestVerifiers = new address[](3);
        c.attackerSolvers = new address[](3);
        c.attackerVerifiers = new address[](2);
        for (uint256 i; i < 2; ++i) {
            c.honestSolvers[i] = makeAddr(string.concat("honestSolver", vm.toString(i)));
            c.attackerVerifiers[i] = makeAddr(string.concat("attackerVerifier", vm.toString(i)));
        }
        for (uint256 i; i < 3; ++i) {
            c.honestVerifiers[i] = makeAddr(string.concat("honestVerifier", vm.toString(i)));
            c.attackerSolvers[i] = makeAddr(string.concat("attackerSolver", vm.toString(i)));
        }
        c.whistleblower = makeAddr("whistleblower");
        c.coordinator = creator;
        c.attackerJuror = c.attackerVerifiers[0];
        c.challenger = makeAddr("attackerChallenger");
    }

    function _joinAs(address solver) internal {
        stakeAs(solver, Constants.ROLE_SOLVER, 10 ether);
        vm.prank(solver);
        reg.join(runId);
    }

    function _registerVerifierAs(address verifier) internal {
        stakeAs(verifier, Constants.ROLE_VERIFIER, 5 ether);
        vm.prank(verifier);
        vreg.register(runId);
    }

    function _registerAttackerJuror(address juror) internal {
        uint256 sk = uint256(keccak256(abi.encode("attacker juror key"))) % 2 ** 250 + 1;
        bytes memory pk = TestBLS.publicKey(sk);
        stakeAs(juror, Constants.ROLE_VERIFIER, Constants.JUROR_MIN_STAKE);
        bytes memory pop = TestBLS.proofOfPossession(sk, juror);
        vm.prank(juror);
        jurors.registerJuror(pk, pop);
        jurorAddrs.push(juror);
        jurorSks.push(sk);
        jurorPks.push(pk);
        jurorIndexPlusOne[juror] = jurorAddrs.length;
    }

    // ------------------------------------------------------------------ the properties

    function checkAll() public view {
        checkPay();
        checkSlashes();
        checkReservations();
        checkLedger();
        checkAccess();
    }

    /// @dev Property 5.
    function checkAccess() public view {
        assertEq(attacker.ghostOpenHook(), 0, attacker.firstViolation());
    }

    /// @dev Property 1.
    function checkPay() public view {
        assertEq(world.ghostUnderpaid(), 0, world.firstViolation());
        assertEq(world.ghostHonestUnpaid(), 0, world.firstViolation());
        assertEq(world.ghostPaidCountMismatch(), 0, world.firstViolation());
    }

    /// @dev Property 2.
    function checkSlashes() public view {
        assertEq(world.ghostUnjustifiedSlash(), 0, world.firstViolation());
        assertEq(world.ghostRefundWrong(), 0, world.firstViolation());
        assertEq(world.ghostHonestAttestFailed(), 0, world.firstViolation());
        assertEq(world.ghostFalseVerdict(), 0, world.firstViolation());
    }

    /// @dev Property 3.
    function checkReservations() public view virtual {
        assertEq(world.ghostUnreservedAttest() + attacker.ghostUnreservedAttest(), 0, _firstOf());
        assertEq(world.ghostUncoveredJuror() + attacker.ghostUncoveredJuror(), 0, _firstOf());
    }

    function _firstOf() internal view returns (string memory) {
        string memory w = world.firstViolation();
        return bytes(w).length != 0 ? w : attacker.firstViolation();
    }

    /// @dev Property 4.
    function checkLedger() public view {
        address[10] memory contracts = [
            address(sm),
            address(reg),
            address(ver),
            address(dis),
            address(shares),
            address(jurors),
            address(faults),
            address(vreg),
            address(plants),
            address(directory)
        ];
        uint256 total;
        for (uint256 i; i < contracts.length; ++i) {
            assertEq(int256(contracts[i].balance), world.implied(contracts[i]), _name(i));
            total += contracts[i].balance;
        }
        for (uint256 i; i < world.shareTokenCount(); ++i) {
            address token = world.shareTokenAt(i);
            assertEq(int256(token.balance), world.implied(token), "a share token's ETH != its events");
            total += token.balance;
        }
        assertEq(int256(total), world.ledgerPyImplied(), "the protocol's ETH != protocol/ledger.py's fold");
    }

    function _name(uint256 i) internal pure returns (string memory) {
        string[10] memory names = [
            "StakeManager ETH != its events",
            "RunRegistry ETH != its events",
            "Verification ETH != its events",
            "Disputes ETH != its events",
            "ModelShares ETH != its events",
            "JurorRegistry ETH != its events",
            "FaultRewards ETH != its events",
            "VerifierRegistry ETH != its events",
            "Plants ETH != its events",
            "PeerDirectory ETH != its events"
        ];
        return names[i];
    }
}

/// @notice The campaign: 256 sequences x 50 calls (foundry.toml; `make check`: 16), every property after every call, the
///         run played to its end after every sequence.
contract AdversarialInvariantTest is AdversarialSetup {
    /// @notice Every property after every call (one campaign; each check's message names the property and the first
    ///         violation seen, in words).
    function invariant_adversarialProperties() public view virtual {
        checkAll();
    }

    /// @notice After every sequence: the run played to its end honestly, everything owed claimed; every property again,
    ///         every forfeit owed back returned, every honest accepted commitment paid.
    function afterInvariant() public virtual {
        world.drain();
        checkAll();
        assertEq(world.checkDrained(), "", "after the run's end");
    }
}

/// @notice Concrete replays of the adversarial campaign's failing sequences (call by call from the campaign's set-up,
///         every property after every call, the run played to its end at the close), and the same failures written
///         as the shortest protocol-level scenario. A failure here is a protocol (or handler) bug.
contract AdversarialReplayTest is AdversarialSetup {
    function _check() internal view {
        this.checkAll();
    }

    /// @dev 2026-11-27, the campaign at 256 x 50 (random seed), shrunk from 51 calls to these 27 (the coalition's
    ///      strategy is a hash chain of every `play`, so no single call can be dropped): property 3 broke,
    ///      "sat on a jury without reserved stake covering it: 0xa1be9A4f26AFC0A71998aed0Cc4833D51E2B1CC0"
    ///      (attackerVerifier0, the coalition's verifier that is also a juror): a seat it held was reported abstained
    ///      (slashed the 1 ETH attestation bond, leaving 5 ETH bonded against 6 reserved: not covered), and the honest
    ///      side then drew a jury, for a dispute of the same round, that seated it. Fails until Disputes seats (or
    ///      JurorRegistry keeps) only jurors whose verifier stake covers their reservations.
    function test_replay_uncoveredJurorSeated_campaign() public {
        attacker.play(
            303934634437768298922026103919549295794301817117659, 3032491646683882318773363081490316349650981461471
        );
        _check();
        attacker.membership(
            70791948069527155821501283551487547841357701766223096882921363,
            438697386753463538933982685826381128171551473181546743517699,
            14919399691816682907209736585825152779355578573758154227180606082,
            737201976472853563927712764847955236829101816818638847
        );
        _check();
        attacker.play(1114834189756804343956061570801220534579899816750068400, 2798759203043001208124504505124426144487);
        _check();
        attacker.play(2115, 10000000000000000000);
        _check();
        world.step(22);
        _check();
        attacker.play(1023, 1000);
        _check();
        attacker.play(
            477427584967211211101326376078546755928593107219783778299739865794803994,
            197195236200128929325845058060935663368523088216411437
        );
        _check();
        attacker.play(672251611436877136647118659819761168176565951375, 265696364625578804765632810353175516405658860);
        _check();
        world.step(261443419008044);
        _check();
        world.step(763076740);
        _check();
        attacker.play(181, 127);
        _check();
        world.step(15047);
        _check();
        world.step(4269);
        _check();
        world.step(3096936523221396381621423843);
        _check();
        attacker.play(3, 69335584758701236);
        _check();
        attacker.claim(72080, 47455056256527547592148892308980349530178733511832110499843060021592323, 6879);
        _check();
        attacker.warp(367598859844589391826581257801438582);
        _check();
        world.step(23226);
        _check();
        attacker.warp(15638);
        _check();
        attacker.play(90686436402344675134300375528245, 43483179640629760709932447030);
        _check();
        attacker.jury(14473, 58, false, 10295);
        _check();
        attacker.payouts(
            4956478411924892569573396474569209798533909240420895649656,
            8022894975291732110342042239003254226,
            115792089237316195423570985008687907853269984665640564039457584007913129639935,
            2,
            9803945624696582938920677381195555833086048302
        );
        _check();
        attacker.play(737193834440792958646806450765163316853406335649318695226, 91742873971150988750900);
        _check();
        attacker.play(0, 23806);
        _check();
        attacker.play(54720751493501611368184488473476, 556882859465590353803471);
        _check();
        attacker.play(126, 14);
        _check();
        attacker.play(16773, 92);
        _check();
        world.drain();
        _check();
        assertEq(world.checkDrained(), "", "after the run's end");
    }
}

/// @notice Property 3's failure in the fewest protocol calls, outside the campaign: a verifier that is also a juror is
///         slashed for an abstention (its stake no longer covers its reservations) and is then seated on a jury.
contract AdversarialRegressionTest is Fixture {
    /// @dev Fails until an account whose verifier stake does not cover its reservations can no longer sit on a jury.
    function test_drawJury_jurorNotCovered_neverSeated_succeeds() public {
        RunTerms memory c = defaultConfig();
        c.verifiersPerCommitment = 2;
        c.jurySize = 3;
        uint256 run = createRun(c);
        joinSolvers(run, 1);
        registerVerifiers(run, 2); // verifiers[0] (the coalition's) and verifiers[1] (honest) hold the two seats
        address coalition = verifiers[0];
        _registerJuror(coalition); // registry index 0: with 4 jurors every pool seat is its index, so it sits
        registerJurors(3);
        CommitmentData memory cm = commitAs(run, solvers[0]);
        warpToAttest(run);
        drawSeed(run); // opens the commitment
        AttestationRef memory honestSeat = refOf(run, solvers[0], 0);
        AttestationRef memory coalitionSeat = refOf(run, solvers[0], 1);
        if (ver.attesterOf(honestSeat) == coalition) (honestSeat, coalitionSeat) = (coalitionSeat, honestSeat);
        attestPassAs(honestSeat, cm); // the honest verifier attests; the coalition's stays silent
        vm.warp(reg.roundTimes(run).attestEnd);
        ver.reportAbstention(coalitionSeat); // slashed the attestation bond: 5 ETH bonded, 6 reserved
        assertFalse(sm.isCovered(coalition, Constants.ROLE_VERIFIER), "the abstention left it not covered");
        DisputeSubject memory s = challengeAs(outsider, honestSeat, cm, 0); // any dispute of any run
        drawJury(s);
        Disputes.Dispute memory d = dis.disputeOf(dis.disputeIdOf(s));
        for (uint256 seat; seat < d.poolSize; ++seat) {
            if (d.eligible >> seat & 1 == 0) continue;
            (address juror,) = jurors.seatOf(d.jurySeed, seat, d.poolSize, d.openedBlock);
            (,, bool reserved) = jurors.jurors(juror);
            assertTrue(
                reserved && sm.isCovered(juror, Constants.ROLE_VERIFIER),
                "sat on a jury without reserved stake covering it"
            );
        }
    }

    function _registerJuror(address juror) internal {
        uint256 sk = uint256(keccak256(abi.encode("regression juror key"))) % 2 ** 250 + 1;
        bytes memory pk = TestBLS.publicKey(sk);
        bytes memory pop = TestBLS.proofOfPossession(sk, juror);
        stakeAs(juror, Constants.ROLE_VERIFIER, Constants.JUROR_MIN_STAKE);
        vm.prank(juror);
        jurors.registerJuror(pk, pop);
        jurorAddrs.push(juror);
        jurorSks.push(sk);
        jurorPks.push(pk);
        jurorIndexPlusOne[juror] = jurorAddrs.length;
    }
}
