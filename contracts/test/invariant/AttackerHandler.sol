// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Protocol} from "../../script/ProtocolDeployer.sol";
import {Fixture} from "../utils/Fixture.sol";
import {TestMerkle} from "../utils/TestMerkle.sol";
import {TestHeaders} from "../utils/TestHeaders.sol";
import {Constants} from "../../src/Constants.sol";
import {Disputes} from "../../src/Disputes.sol";
import {IModelShares} from "../../src/interfaces/IModelShares.sol";
import {IPlants} from "../../src/interfaces/IPlants.sol";
import {IVerification} from "../../src/interfaces/IVerification.sol";
import {RunRegistry} from "../../src/RunRegistry.sol";
import {RunShares} from "../../src/RunShares.sol";
import {Verification} from "../../src/Verification.sol";
import {IRunRegistry} from "../../src/interfaces/IRunRegistry.sol";
import {Planting} from "../../src/libraries/Planting.sol";
import {SegmentLeaf} from "../../src/libraries/SegmentLeaf.sol";
import {AttestationRef, CommitmentData, DisputeSubject, LeafData, RunTerms} from "../../src/interfaces/Types.sol";

/// @notice Who plays the adversarial campaign (issue 36): the honest side (its solvers train, its verifiers replay, its
///         jurors vote the truth, its whistleblower challenges every wrong attestation, false plant and wrong claim, its
///         coordinator reports, claims and settles) and the attacker's accounts (solvers, verifiers, a juror, a
///         challenger and a sybil that joins later), all of them free to call anything.
struct Cast {
    address[] honestSolvers;
    address[] honestVerifiers;
    address[] honestJurors;
    address whistleblower;
    address coordinator;
    address[] attackerSolvers; // the last one is a sybil: not joined, no stake at the start
    address[] attackerVerifiers; // attackerVerifiers[0] is also a registered juror
    address attackerJuror;
    address challenger;
}

/// @notice What the attacker asks of the honest world: time (which only moves with every honest duty done before each
///         deadline it crosses: the campaign's synchrony assumption), the event ledger's scope, and the public data an
///         attacker could read off the chain (commitment fields, opened leaves, juror keys, disputes).
interface IAdversarialWorld {
    function begin() external;
    function end() external;
    function fold() external;
    function draining() external view returns (bool);
    function advance(uint256 when) external;
    function book(uint64 round, address solver, LeafData[] memory leaves) external returns (bytes32 root);
    function treeLeaf(bytes32 root, uint256 segment) external view returns (LeafData memory, bytes32[] memory);
    function treeSize(bytes32 root) external view returns (uint256);
    function openingOf(uint64 round, address solver, bytes32 root)
        external
        view
        returns (LeafData[] memory, bytes32[][] memory);
    function commitmentOf(uint64 round, address solver) external view returns (CommitmentData memory, bool);
    function committerCount(uint64 round) external view returns (uint256);
    function committerAt(uint64 round, uint256 i) external view returns (address);
    function disputeCount() external view returns (uint256);
    function disputeAt(uint256 i) external view returns (DisputeSubject memory);
    function poolKeys(DisputeSubject calldata subject) external view returns (bytes[] memory);
}

/// @notice Ground truth and the checks both handlers make at the call they watch.
abstract contract AdversarialBase is Fixture {
    uint256 public runId;
    uint256 internal _maxRounds;
    Cast internal _cast;
    uint256 internal _anchorTime;
    uint256 internal _anchorBlock;

    /// @notice Property 3 (reservations), counted where the call happens: an attestation by an account without the
    ///         run's reservation or whose verifier stake does not cover its reservations; a jury seat (drawn, or signing
    ///         a verdict) held by an account without its juror reservation or not covered.
    uint256 public ghostUnreservedAttest;
    uint256 public ghostUncoveredJuror;
    /// @notice The first violation seen by this handler, in words (for the report and the shrinker).
    string public firstViolation;

    function _setCast(Cast memory c) internal {
        _cast = c;
    }

    function cast() external view returns (Cast memory) {
        return _cast;
    }

    function _violation(string memory what) internal {
        if (bytes(firstViolation).length == 0) firstViolation = what;
    }

    function _isHonest(address who) internal view returns (bool) {
        Cast storage c = _cast;
        if (who == c.whistleblower || who == c.coordinator) return true;
        for (uint256 i; i < c.honestSolvers.length; ++i) {
            if (c.honestSolvers[i] == who) return true;
        }
        for (uint256 i; i < c.honestVerifiers.length; ++i) {
            if (c.honestVerifiers[i] == who) return true;
        }
        for (uint256 i; i < c.honestJurors.length; ++i) {
            if (c.honestJurors[i] == who) return true;
        }
        return false;
    }

    // ------------------------------------------------------------------ ground truth

    /// @notice The leaf of segment i of honest training (the committed batches, replayed): Fixture.buildCommitment's.
    function honestLeaf(uint64 round, address solver, uint256 i) public pure returns (LeafData memory) {
        return LeafData({
            startHash: keccak256(abi.encode("state", solver, round, i)),
            endHash: keccak256(abi.encode("state", solver, round, i + 1)),
            sketchHash: keccak256(abi.encode("sketch", solver, round, i)),
            tokens: SEGMENT_TOKENS
        });
    }

    /// @notice The leaf of segment i of planted training (the batches permuted by the round secret): genuine states,
    ///         none of them what a replay on the committed batches gives.
    function plantedLeaf(uint64 round, address solver, uint256 i) public pure returns (LeafData memory) {
        return LeafData({
            startHash: keccak256(abi.encode("planted state", solver, round, i)),
            endHash: keccak256(abi.encode("planted state", solver, round, i + 1)),
            sketchHash: keccak256(abi.encode("planted sketch", solver, round, i)),
            tokens: SEGMENT_TOKENS
        });
    }

    /// @notice A leaf nobody trained.
    function forgedLeaf(uint64 round, address solver, uint256 i, uint256 salt) public pure returns (LeafData memory) {
        return LeafData({
            startHash: keccak256(abi.encode("forged", solver, round, i, salt)),
            endHash: keccak256(abi.encode("forged end", solver, round, i, salt)),
            sketchHash: keccak256(abi.encode("forged sketch", solver, round, i, salt)),
            tokens: uint64(uint256(keccak256(abi.encode(salt, i))) % 1e18)
        });
    }

    /// @notice The theta_(r+1) the accepted pseudo-gradients give (every honest claim posts it).
    function correctTheta(uint64 round) public view returns (bytes32) {
        return keccak256(abi.encode("theta", runId, round));
    }

    /// @notice Link s_i of a solver's chain of round secrets (s_(i+1) = keccak256(s_i)).
    function chainLink(address solver, uint256 i) public pure returns (bytes32 link) {
        link = keccak256(abi.encode("chain", solver));
        for (uint256 k; k < i; ++k) {
            link = Planting.next(link);
        }
    }

    function secretOf(address solver, uint64 round) public view returns (bytes32) {
        if (round >= _maxRounds) return bytes32(0); // no such round: no secret
        return chainLink(solver, _maxRounds - 1 - round);
    }

    function anchorOf(address solver) public view returns (bytes32) {
        return chainLink(solver, _maxRounds);
    }

    function _sameLeaf(LeafData memory a, LeafData memory b) internal pure returns (bool) {
        return
            a.startHash == b.startHash && a.endHash == b.endHash && a.sketchHash == b.sketchHash && a.tokens == b.tokens;
    }

    // ------------------------------------------------------------------ property 3, where it happens

    /// @dev Right after an attestation by `verifier` in `run`: it holds the run's reservation and is covered.
    function _checkAttester(uint256 run, address verifier) internal {
        (,, bool reserved) = vreg.records(run, verifier);
        if (!reserved || !sm.isCovered(verifier, Constants.ROLE_VERIFIER)) {
            ++ghostUnreservedAttest;
            _violation(string.concat("attested without reservation covering it: ", vm.toString(verifier)));
        }
    }

    /// @dev Right after a jury draw or a verdict: every seat of the jury (or every signer) holds its juror reservation
    ///      and its verifier stake covers its reservations.
    function _checkJury(DisputeSubject memory s, bool signersOnly) internal {
        Disputes.Dispute memory d = dis.disputeOf(dis.disputeIdOf(s));
        uint32 seats = signersOnly ? d.signers : d.eligible;
        for (uint256 seat; seat < d.poolSize; ++seat) {
            if (seats >> seat & 1 == 0) continue;
            (address juror,) = jurors.seatOf(d.jurySeed, seat, d.poolSize, d.openedBlock);
            (,, bool reserved) = jurors.jurors(juror);
            if (!reserved || !sm.isCovered(juror, Constants.ROLE_VERIFIER)) {
                ++ghostUncoveredJuror;
                _violation(
                    string.concat(
                        signersOnly ? "signed a verdict" : "sat on a jury",
                        " without reserved stake covering it: ",
                        vm.toString(juror)
                    )
                );
            }
        }
    }

    // ------------------------------------------------------------------ time

    /// @dev Warp to `t` (never back); blocks follow time, one per blockSeconds, as the chain promises.
    function _warpTo(uint256 t) internal {
        if (t > block.timestamp) vm.warp(t);
        uint256 b = _anchorBlock + (block.timestamp - _anchorTime) / reg.blockSeconds();
        if (b > block.number) vm.roll(b);
    }

    /// @dev Forget the logs recorded since the last fold: those of a call that reverted (vm.recordLogs keeps the logs
    ///      of reverted calls, which the chain does not have). Every state-changing call is preceded by a fold.
    function _drop() internal {
        vm.getRecordedLogs();
    }

    function _give(address who, uint256 amount) internal {
        vm.deal(who, who.balance + amount);
    }

    function _times() internal view returns (IRunRegistry.RoundTimes memory) {
        return reg.roundTimes(runId);
    }

    function _seedDrawn(uint64 round) internal view returns (bool drawn) {
        (drawn,,) = ver.seedOf(runId, round);
    }
}

/// @notice The attacker: several accounts calling every external function of every protocol contract with fuzzed
///         arguments at fuzzed times (each action first moves time through the world, which lets the honest side do
///         what is due before every deadline crossed; `when` picks: now, a few seconds on, just before, at or just
///         after the next deadline, or 40 days on). Reverts are caught: an action that applies does its thing, one
///         that does not returns. Calls that must fail for anyone outside the protocol (hooks, stray ETH) count a
///         violation when they succeed. Property 3 is checked right after each attestation and jury draw it makes.
contract AttackerHandler is AdversarialBase {
    IAdversarialWorld public immutable world;
    uint256 public immutable attackerJurorSk;

    /// @notice Calls to a protocol-only hook (or a plain ETH transfer into a protocol contract) that succeeded.
    uint256 public ghostOpenHook;
    /// @notice Runs the attacker created (their ids).
    uint256[] public attackerRuns;
    mapping(string action => uint256) public calls;

    modifier act(uint256 when) {
        world.begin();
        world.advance(when);
        _;
        world.end();
    }

    constructor(
        Protocol memory p,
        IAdversarialWorld world_,
        uint256 runId_,
        uint256 maxRounds_,
        Cast memory c,
        address[] memory jurorAddrs_,
        bytes[] memory jurorPks_,
        uint256 attackerJurorSk_
    ) {
        usePeers(p);
        world = world_;
        runId = runId_;
        _maxRounds = maxRounds_;
        _setCast(c);
        attackerJurorSk = attackerJurorSk_;
        for (uint256 i; i < jurorAddrs_.length; ++i) {
            jurorAddrs.push(jurorAddrs_[i]);
            jurorPks.push(jurorPks_[i]);
            // the attacker knows its own secret key only
            jurorSks.push(jurorAddrs_[i] == c.attackerJuror ? attackerJurorSk_ : 0);
            jurorIndexPlusOne[jurorAddrs_[i]] = i + 1;
        }
        autoOpen = false;
    }

    // ------------------------------------------------------------------ accounts

    function _attacker(uint256 seed) internal view returns (address) {
        Cast storage c = _cast;
        uint256 n = c.attackerSolvers.length + c.attackerVerifiers.length + 1;
        uint256 i = seed % n;
        if (i < c.attackerSolvers.length) return c.attackerSolvers[i];
        i -= c.attackerSolvers.length;
        if (i < c.attackerVerifiers.length) return c.attackerVerifiers[i];
        return c.challenger;
    }

    function _attackerSolver(uint256 seed) internal view returns (address) {
        return _cast.attackerSolvers[seed % _cast.attackerSolvers.length];
    }

    /// @dev Any committer of the round (honest or not), or an attacker solver if nobody committed.
    function _committer(uint64 round, uint256 seed) internal view returns (address) {
        uint256 n = world.committerCount(round);
        if (n == 0) return _attackerSolver(seed);
        return world.committerAt(round, seed % n);
    }

    /// @dev The main run mostly; sometimes an attacker run, a run that does not exist, or run 0.
    function _run(uint256 seed) internal view returns (uint256) {
        uint256 k = seed % 16;
        if (k < 12 || attackerRuns.length == 0) return k == 15 ? 999 : runId;
        return attackerRuns[seed % attackerRuns.length];
    }

    /// @dev The current round mostly; sometimes the one before or after.
    function _round(uint256 seed) internal view returns (uint64 r) {
        r = _times().round;
        uint256 k = seed % 8;
        if (k == 6 && r > 0) return r - 1;
        if (k == 7) return r + 1;
    }

    // ------------------------------------------------------------------ time

    /// @notice Let time pass (the honest side does what each deadline crossed asks).
    function warp(uint256 when) external act(when) {
        ++calls["warp"];
    }

    // ------------------------------------------------------------------ the coalition's game, phase by phase

    /// @notice The coalition's strategy seed: fuzzed by every `play`, read by every coalition move (`onPoint`).
    uint256 public coalitionSeed;

    /// @notice Re-draw the coalition's strategy (from `seed`), let time pass (`when`) and make its move now.
    function play(uint256 seed, uint256 when) external act(when) {
        coalitionSeed = uint256(keccak256(abi.encode(coalitionSeed, seed)));
        _coalitionMove();
        ++calls["play"];
    }

    /// @notice The world asks the coalition for its move at every point where the honest side acts (one second before,
    ///         and at, every deadline), before the honest side: the coalition plays a whole strategy per round (commit
    ///         honest, planted, forged or unopenable work with any declared tokens, false plants when drawn to plant;
    ///         open late or never; attest its seats with lazy passes, wrong fails, right ones or silence, early or at
    ///         the last second; reveal, withhold or lie; challenge seats and plant segments, its own included; post
    ///         wrong claims; vote alone), while the honest side keeps the last word before each deadline.
    function onPoint() external {
        require(msg.sender == address(world), "the world only");
        _coalitionMove();
    }

    /// @dev The coalition's move for the round's phase, its choices drawn from coalitionSeed, the round and the time.
    function _coalitionMove() internal {
        IRunRegistry.RoundTimes memory t = _times();
        if (t.finished) return;
        uint256 seed = uint256(keccak256(abi.encode(coalitionSeed, t.round)));
        uint256 moment = uint256(keccak256(abi.encode(seed, block.timestamp)));
        if (seed % 8 != 0) _upkeep();
        uint256 revealEnd = t.attestEnd + (t.challengeEnd - t.attestEnd) / 2;
        if (block.timestamp < t.commitEnd) {
            for (uint256 i; i < _cast.attackerSolvers.length; ++i) {
                _playCommit(t, uint256(keccak256(abi.encode(seed, "commit", i))), _cast.attackerSolvers[i]);
            }
        } else if (block.timestamp < t.openEnd) {
            for (uint256 i; i < _cast.attackerSolvers.length; ++i) {
                _playOpen(t, uint256(keccak256(abi.encode(seed, "open", i))), _cast.attackerSolvers[i]);
            }
        } else if (block.timestamp < t.attestEnd) {
            // a third of the rounds the coalition attests at the last second only
            if (seed % 3 != 0 || block.timestamp + 1 >= t.attestEnd) _playAttest(t, seed);
        } else if (block.timestamp < revealEnd) {
            for (uint256 i; i < _cast.attackerSolvers.length; ++i) {
                _playReveal(t, uint256(keccak256(abi.encode(seed, "reveal", i))), _cast.attackerSolvers[i]);
            }
        } else if (block.timestamp < t.challengeEnd) {
            if (moment % 2 == 0) _playChallenge(t, moment);
        } else {
            // no claim games while the world plays the run to its end (a wrong claim per window stalls a run forever)
            if (moment % 3 == 0 && !world.draining()) _playClaim(t, moment);
            _playJuries(moment);
        }
    }

    /// @dev A persistent coalition: slashed accounts top their stake up, overturned verifiers register again.
    function _upkeep() internal {
        for (uint256 i; i < _cast.attackerSolvers.length; ++i) {
            _topUp(_cast.attackerSolvers[i], Constants.ROLE_SOLVER, 0);
        }
        uint256 minStake = reg.runEconomics(runId).verifierMinStake;
        for (uint256 i; i < _cast.attackerVerifiers.length; ++i) {
            address v = _cast.attackerVerifiers[i];
            bool listed = vreg.isReserved(runId, v);
            _topUp(v, Constants.ROLE_VERIFIER, listed ? 0 : minStake);
            if (listed) continue;
            world.fold();
            vm.prank(v);
            try vreg.register(runId) {}
            catch {
                _drop();
            }
        }
    }

    function _topUp(address who, uint8 role, uint256 extra) internal {
        (uint256 bonded,,, uint256 reserved) = sm.stakeOf(who, role);
        if (bonded >= reserved + extra) return;
        uint256 amount = reserved + extra - bonded;
        _give(who, amount);
        vm.prank(who);
        sm.deposit{value: amount}(role);
    }

    /// @dev The coalition's juror signs the wrong verdict of every dispute it sits on (alone: never a quorum).
    function _playJuries(uint256 seed) internal {
        uint256 n = world.disputeCount();
        for (uint256 i; i < n && i < 8; ++i) {
            _verdict(world.disputeAt(n - 1 - i), seed % 2 == 0, 0);
        }
    }

    function _playCommit(IRunRegistry.RoundTimes memory t, uint256 seed, address solver) internal {
        (, bool done) = world.commitmentOf(t.round, solver);
        // one commitment in eight is skipped; the sybil commits only once it joined (unanchored: unpaid)
        if (done || seed % 8 == 0 || block.number >= t.seedBlock || !reg.hasJoined(runId, solver)) return;
        uint256 kindSeed = seed >> 8;
        if (_drawnToPlant(t.round, solver)) {
            // drawn to plant: the planted training (2), a false plant on honest training (0), or planted with forgeries (5)
            uint256 pick = (seed >> 16) % 3;
            ++calls[pick == 0 ? "truePlant" : "falsePlant"];
            kindSeed = (kindSeed & ~uint256(0xf0)) | ((pick == 0 ? 2 : pick == 1 ? 0 : 5) << 4);
        }
        bytes32 root = _attackerRoot(t.round, solver, kindSeed);
        uint64 tokens = _tokens(seed >> 40);
        world.fold();
        vm.prank(solver);
        try reg.commit(runId, t.round, root, keccak256(abi.encode("delta", solver)), tokens) {
            ++calls["commit"];
        } catch {
            _drop();
        }
    }

    /// @dev Whether `solver`'s true chain draws `round` as planted (what the solver knows at the round's start).
    function _drawnToPlant(uint64 round, address solver) internal view returns (bool) {
        (uint256 rate,,) = plants.termsOf(runId);
        (bool eligible,,,) = plants.plantOf(runId, round, solver);
        if (rate == 0 || !eligible || round == 0 || round >= _maxRounds) return false;
        (bool drawn, bytes32 previousBase,) = ver.seedOf(runId, round - 1);
        return drawn && Planting.draw(secretOf(solver, round), runId, round, solver, previousBase) < rate;
    }

    function _playOpen(IRunRegistry.RoundTimes memory t, uint256 seed, address solver) internal {
        if (!_seedDrawn(t.round)) {
            bytes memory header = seedHeader(runId);
            world.fold();
            try ver.drawSeed(runId, t.round, header) {}
            catch {
                _drop();
            }
        }
        (CommitmentData memory c, bool known) = world.commitmentOf(t.round, solver);
        // one in five commitments stays unopened (reported and slashed later); one in three is opened at the last second
        if (!known || seed % 5 == 0 || world.treeSize(c.root) == 0 || !_seedDrawn(t.round)) return;
        if (seed % 3 == 0 && block.timestamp + 1 < t.openEnd) return;
        if (reg.openingOf(runId, t.round, solver) != IRunRegistry.Opening.None) return;
        (LeafData[] memory leaves, bytes32[][] memory proofs) = world.openingOf(t.round, solver, c.root);
        world.fold();
        vm.prank(solver);
        try reg.open(runId, t.round, solver, c, leaves, proofs) {}
        catch {
            _drop();
        }
    }

    /// @dev Every coalition seat of every opened commitment gets the strategy `seed` picks for it: a lazy pass, a
    ///      wrong fail, the right attestation, or silence.
    function _playAttest(IRunRegistry.RoundTimes memory t, uint256 seed) internal {
        uint256 n = world.committerCount(t.round);
        for (uint256 i; i < n; ++i) {
            address solver = world.committerAt(t.round, i);
            if (reg.openingOf(runId, t.round, solver) != IRunRegistry.Opening.Opened) continue;
            for (uint8 slot; slot < 2; ++slot) {
                _playSeat(AttestationRef(runId, t.round, solver, slot), uint256(keccak256(abi.encode(seed, i, slot))));
            }
        }
    }

    function _playSeat(AttestationRef memory ref, uint256 seed) internal {
        address verifier;
        try ver.assignedVerifier(ref) returns (address assigned, bool eligible) {
            if (!eligible || !_isAttacker(assigned)) return;
            verifier = assigned;
        } catch {
            return;
        }
        (Verification.AttestationState state,,,) = ver.attestationOf(ref);
        if (state != Verification.AttestationState.None) return;
        (CommitmentData memory c,) = world.commitmentOf(ref.round, ref.solver);
        (bool right, uint16 bad) = _replay(ref, c.root);
        uint256 strategy = seed % 4; // 0 lazy pass, 1 wrong or arbitrary fail, 2 the truth, 3 silence
        // covering for a coalition solver: a seat whose samples would show its forgery stays silent half the time
        if (!right && _isAttacker(ref.solver) && (seed >> 4) % 2 == 0) strategy = 3;
        if (strategy == 3) return;
        bool pass = strategy == 0 || (strategy == 2 && right);
        uint256 bond = reg.runParams(runId).attestationBond;
        _give(verifier, bond);
        world.fold();
        if (pass) {
            vm.prank(verifier);
            try ver.attestPass{value: bond}(ref, c) {
                _attested(ref, verifier);
            } catch {
                _drop();
            }
            return;
        }
        uint16 sample = strategy == 2 ? bad : uint16((seed >> 8) % reg.runParams(runId).samples);
        (LeafData memory leaf, bytes32[] memory proof) = _sampledLeaf(ref, c.root, sample);
        vm.prank(verifier);
        try ver.attestFail{value: bond}(ref, c, sample, leaf, proof) {
            _attested(ref, verifier);
        } catch {
            _drop();
        }
    }

    /// @dev The honest replay of a seat (what a right attestation says).
    function _replay(AttestationRef memory ref, bytes32 root) internal view returns (bool right, uint16 bad) {
        uint256 samples = reg.runParams(runId).samples;
        if (world.treeSize(root) == 0) return (false, 0);
        for (uint256 j; j < samples; ++j) {
            uint256 segment = ver.sampledSegment(ref.runId, ref.round, ref.solver, ref.slot, j);
            (LeafData memory leaf,) = world.treeLeaf(root, segment);
            if (!_sameLeaf(leaf, honestLeaf(ref.round, ref.solver, segment))) return (false, uint16(j));
        }
        return (true, 0);
    }

    function _playReveal(IRunRegistry.RoundTimes memory t, uint256 seed, address solver) internal {
        (, bool revealed,,) = plants.plantOf(runId, t.round, solver);
        if (revealed) return;
        uint256 k = (seed >> 8) % 10;
        if (k < 2) return; // withheld: reported and slashed after the window
        bytes32 secret = k == 2 ? keccak256(abi.encode("lie", seed)) : secretOf(solver, t.round);
        world.fold();
        vm.prank(solver);
        try plants.reveal(runId, t.round, secret) {
            ++calls["reveal"];
        } catch {
            _drop();
        }
    }

    function _playChallenge(IRunRegistry.RoundTimes memory t, uint256 seed) internal {
        uint256 n = world.committerCount(t.round);
        if (n == 0) return;
        address solver = world.committerAt(t.round, seed % n);
        (CommitmentData memory c,) = world.commitmentOf(t.round, solver);
        uint256 size = world.treeSize(c.root);
        if (size == 0) return;
        uint256 bond = reg.runEconomics(runId).challengeBond;
        address who = (seed >> 8) % 3 == 0 ? solver : _attacker(seed >> 16);
        _give(who, bond);
        if ((seed >> 24) % 2 == 0) {
            uint32 segment = uint32((seed >> 32) % size);
            (LeafData memory leaf, bytes32[] memory proof) = world.treeLeaf(c.root, segment);
            world.fold();
            vm.prank(who);
            try dis.challengePlant{value: bond}(runId, t.round, solver, c, segment, leaf, proof) {
                ++calls["challengePlant"];
            } catch {
                _drop();
            }
            return;
        }
        AttestationRef memory ref = AttestationRef(runId, t.round, solver, uint8((seed >> 40) % 2));
        uint16 sample = uint16((seed >> 48) % 2);
        try ver.attestationOf(ref) returns (Verification.AttestationState, bool isFail, bool, uint16 named) {
            if (isFail) sample = named;
        } catch {}
        (LeafData memory l, bytes32[] memory p) = _sampledLeaf(ref, c.root, sample);
        world.fold();
        vm.prank(who);
        try dis.challengeAttestation{value: bond}(ref, c, sample, l, p) {
            ++calls["challenge"];
        } catch {
            _drop();
        }
    }

    function _playClaim(IRunRegistry.RoundTimes memory t, uint256 seed) internal {
        RunRegistry.Claim memory claim = reg.claimOf(runId, t.round);
        address who = _attacker(seed >> 8);
        uint256 bond = reg.runEconomics(runId).challengeBond;
        _give(who, bond);
        world.fold();
        if (claim.status == RunRegistry.ClaimStatus.None) {
            bytes32 theta = seed % 3 == 0 ? correctTheta(t.round) : keccak256(abi.encode("wrong theta", seed));
            vm.prank(who);
            try reg.postClaim{value: bond}(runId, t.round, theta) {}
            catch {
                _drop();
            }
        } else if (claim.status == RunRegistry.ClaimStatus.Posted && seed % 4 == 0) {
            vm.prank(who);
            try dis.challengeClaim{value: bond}(runId, t.round, claim.nonce) {}
            catch {
                _drop();
            }
        } else {
            vm.prank(who);
            try reg.settle(runId, t.round) {}
            catch {
                _drop();
            }
        }
    }

    // ------------------------------------------------------------------ stake and memberships

    /// @notice Deposit, unbond or withdraw stake of either role, any attacker account, any amount.
    function stake(uint256 whoSeed, uint256 amountSeed, uint256 op, uint256 when) external act(when) {
        address who = _attacker(whoSeed);
        uint8 role = op % 2 == 0 ? Constants.ROLE_SOLVER : Constants.ROLE_VERIFIER;
        uint256 amount = bound(amountSeed, 1, 30 ether);
        vm.startPrank(who);
        if (op % 6 < 2) {
            _give(who, amount);
            sm.deposit{value: amount}(role);
        } else if (op % 6 < 4) {
            world.fold();
            try sm.requestUnbond(role, amount % 2 == 0 ? amount : type(uint256).max) {}
            catch {
                _drop();
            }
            world.fold();
            try sm.requestUnbond(role, amount) {}
            catch {
                _drop();
            }
        } else {
            world.fold();
            try sm.withdraw(role) {}
            catch {
                _drop();
            }
        }
        vm.stopPrank();
        ++calls["stake"];
    }

    /// @notice Join or leave runs, register or leave verifier lists and the juror registry, release reservations.
    function membership(uint256 whoSeed, uint256 runSeed, uint256 op, uint256 when) external act(when) {
        address who = _attacker(whoSeed);
        uint256 run = _run(runSeed);
        vm.startPrank(who);
        uint256 k = op % 8;
        if (k == 0) {
            world.fold();
            try reg.join(run) {}
            catch {
                _drop();
            }
        } else if (k == 1) {
            world.fold();
            try reg.leaveRun(run) {}
            catch {
                _drop();
            }
        } else if (k == 2) {
            world.fold();
            try vreg.register(run) {}
            catch {
                _drop();
            }
        } else if (k == 3) {
            world.fold();
            try vreg.deregister(run) {}
            catch {
                _drop();
            }
        } else if (k == 4) {
            world.fold();
            try vreg.releaseVerifier(run) {}
            catch {
                _drop();
            }
        } else if (k == 5 && who == _cast.attackerJuror) {
            // a return with the registered key (a first registration's proof of possession was made in setUp)
            world.fold();
            try jurors.registerJuror(jurorPks[jurorIndexPlusOne[who] - 1], "") {}
            catch {
                _drop();
            }
        } else if (k == 6) {
            world.fold();
            try jurors.deregisterJuror() {}
            catch {
                _drop();
            }
        } else {
            world.fold();
            try jurors.releaseJuror() {}
            catch {
                _drop();
            }
        }
        vm.stopPrank();
        ++calls["membership"];
    }

    // ------------------------------------------------------------------ commitments

    /// @notice Commit as an attacker solver: honest training, planted training, either with some segments forged, a
    ///         root nobody can open (random, or another committer's), with any declared token count, sometimes for the
    ///         wrong round.
    function commit(uint256 whoSeed, uint256 kindSeed, uint256 tokensSeed, uint256 when) external act(when) {
        address solver = _attackerSolver(whoSeed);
        IRunRegistry.RoundTimes memory t = _times();
        uint64 round = kindSeed % 16 == 15 ? t.round + 1 : t.round;
        uint64 tokens = _tokens(tokensSeed);
        bytes32 root = _attackerRoot(round, solver, kindSeed);
        bytes32 delta = keccak256(abi.encode("delta", solver, round, kindSeed % 3));
        world.fold();
        vm.prank(solver);
        try reg.commit(runId, round, root, delta, tokens) {
            ++calls["commit"];
        } catch {
            _drop();
        }
    }

    function _tokens(uint256 seed) internal pure returns (uint64) {
        uint256 k = seed % 5;
        if (k == 0) return uint64(SEGMENT_TOKENS * 8);
        if (k == 1) return type(uint64).max;
        if (k == 2) return 1;
        if (k == 3) return 0;
        return uint64(seed >> 8);
    }

    /// @dev The root of the commitment kind `seed` picks (booked with the world unless it is not openable).
    function _attackerRoot(uint64 round, address solver, uint256 seed) internal returns (bytes32) {
        uint256 kind = (seed >> 4) % 8;
        if (kind == 6) return keccak256(abi.encode("random root", seed));
        if (kind == 7) {
            uint256 n = world.committerCount(round);
            if (n == 0) return keccak256(abi.encode("random root", seed));
            (CommitmentData memory other,) = world.commitmentOf(round, world.committerAt(round, (seed >> 8) % n));
            return other.root;
        }
        uint256 segments = reg.runParams(runId).numSegments;
        LeafData[] memory leaves = new LeafData[](segments);
        // kinds 0, 1: honest; 2, 3: planted; 4: honest with forged segments; 5: planted with forged segments
        uint256 forged = kind >= 4 ? (seed >> 12) % (1 << segments) : 0;
        if (kind >= 4 && forged == 0) forged = 1 << ((seed >> 24) % segments);
        for (uint256 i; i < segments; ++i) {
            if (forged >> i & 1 == 1) leaves[i] = forgedLeaf(round, solver, i, seed);
            else if (kind == 2 || kind == 3 || kind == 5) leaves[i] = plantedLeaf(round, solver, i);
            else leaves[i] = honestLeaf(round, solver, i);
        }
        return world.book(round, solver, leaves);
    }

    /// @notice Open a commitment of the current round (any committer's, by an attacker account): the right opening,
    ///         or one with a corrupted leaf, a missing entry or another root's leaves.
    function open(uint256 solverSeed, uint256 corruptSeed, uint256 when) external act(when) {
        IRunRegistry.RoundTimes memory t = _times();
        address solver = _committer(t.round, solverSeed);
        (CommitmentData memory c, bool known) = world.commitmentOf(t.round, solver);
        if (!known || world.treeSize(c.root) == 0 || !_seedDrawn(t.round)) return;
        (LeafData[] memory leaves, bytes32[][] memory proofs) = world.openingOf(t.round, solver, c.root);
        uint256 k = corruptSeed % 8;
        if (k == 1 && leaves.length > 0) leaves[(corruptSeed >> 8) % leaves.length].sketchHash ^= bytes32(uint256(1));
        if (k == 2 && leaves.length > 0) {
            LeafData[] memory shorter = new LeafData[](leaves.length - 1);
            for (uint256 i; i < shorter.length; ++i) {
                shorter[i] = leaves[i];
            }
            leaves = shorter;
        }
        if (k == 3) c.tokens ^= 1;
        world.fold();
        vm.prank(_attacker(corruptSeed >> 16));
        try reg.open(runId, t.round, solver, c, leaves, proofs) {
            if (k == 1 || k == 2 || k == 3) {
                ++ghostOpenHook;
                _violation("a corrupted opening was accepted");
            }
            ++calls["open"];
        } catch {
            _drop();
        }
    }

    function reportUnopened(uint256 solverSeed, uint256 when) external act(when) {
        uint64 round = _round(solverSeed >> 8);
        address solver = _committer(round, solverSeed);
        vm.prank(_attacker(solverSeed >> 16));
        try reg.reportUnopened(runId, round, solver) {
            ++calls["reportUnopened"];
        } catch {
            _drop();
        }
    }

    /// @notice An attacker draws a round's seed, with the seed block's header or (one time in four) a forged one:
    ///         the same block with a RANDAO value of its choice, which must be refused (HeaderMismatch).
    function drawRoundSeed(uint256 roundSeed, uint256 when) external act(when) {
        uint64 round = _round(roundSeed);
        uint256 run = _run(roundSeed >> 16);
        (bytes memory header, uint256 seedBlock) = _seedHeaderOf(run, (roundSeed >> 24) % 4 == 0);
        vm.prank(_attacker(roundSeed >> 8));
        try ver.drawSeed(run, round, header) {
            ++calls["drawSeed"];
            (, bytes32 base,) = ver.seedOf(run, round);
            if (base != bytes32(bytes12(TestHeaders.mixOf(seedBlock)))) {
                _violation("a seed was drawn from other than the seed block's RANDAO value");
            }
        } catch {
            _drop();
        }
    }

    /// @dev The header of `run`'s current seed block (empty for a run that does not exist), or a forged one.
    function _seedHeaderOf(uint256 run, bool forged) internal returns (bytes memory header, uint256 seedBlock) {
        try reg.roundTimes(run) returns (IRunRegistry.RoundTimes memory t) {
            seedBlock = t.seedBlock;
        } catch {
            return (header, 0);
        }
        header = seedHeader(run);
        uint256 randaoBlock = seedBlock + Constants.RANDAO_LAG_BLOCKS;
        if (forged) header = TestHeaders.build(randaoBlock, keccak256(abi.encode("forged", seedBlock)), "");
    }

    // ------------------------------------------------------------------ attestations

    /// @notice An attacker verifier attests a seat: a lazy pass, a fail naming a draw (right or wrong), with the
    ///         wrong bond, or as an account not assigned to the seat.
    function attest(uint256 solverSeed, uint256 slotSeed, uint256 modeSeed, uint256 when) external act(when) {
        uint64 round = _times().round;
        AttestationRef memory ref = AttestationRef(runId, round, _committer(round, solverSeed), uint8(slotSeed % 3));
        address verifier = _cast.attackerVerifiers[(slotSeed >> 8) % _cast.attackerVerifiers.length];
        try ver.assignedVerifier(ref) returns (address assigned, bool) {
            if (modeSeed % 8 != 7 && _isAttacker(assigned)) verifier = assigned;
        } catch {}
        (CommitmentData memory c,) = world.commitmentOf(round, ref.solver);
        uint256 bond = reg.runParams(runId).attestationBond;
        if (modeSeed % 16 == 15) bond += 1;
        _give(verifier, bond);
        if (modeSeed % 2 == 0) {
            world.fold();
            vm.prank(verifier);
            try ver.attestPass{value: bond}(ref, c) {
                _attested(ref, verifier);
            } catch {
                _drop();
            }
            return;
        }
        uint16 sample = uint16((modeSeed >> 4) % 3);
        (LeafData memory leaf, bytes32[] memory proof) = _sampledLeaf(ref, c.root, sample);
        world.fold();
        vm.prank(verifier);
        try ver.attestFail{value: bond}(ref, c, sample, leaf, proof) {
            _attested(ref, verifier);
        } catch {
            _drop();
        }
    }

    function _attested(AttestationRef memory ref, address verifier) internal {
        _checkAttester(ref.runId, verifier);
        ++calls["attest"];
    }

    function _isAttacker(address who) internal view returns (bool) {
        for (uint256 i; i < _cast.attackerVerifiers.length; ++i) {
            if (_cast.attackerVerifiers[i] == who) return true;
        }
        for (uint256 i; i < _cast.attackerSolvers.length; ++i) {
            if (_cast.attackerSolvers[i] == who) return true;
        }
        return who == _cast.challenger;
    }

    /// @dev The committed leaf of the seat's draw `sample` with its proof (an empty leaf when unknown).
    function _sampledLeaf(AttestationRef memory ref, bytes32 root, uint16 sample)
        internal
        view
        returns (LeafData memory leaf, bytes32[] memory proof)
    {
        if (world.treeSize(root) == 0) return (leaf, proof);
        try ver.sampledSegment(ref.runId, ref.round, ref.solver, ref.slot, sample) returns (uint256 segment) {
            if (segment < world.treeSize(root)) return world.treeLeaf(root, segment);
        } catch {}
    }

    function reportAbstention(uint256 solverSeed, uint256 slotSeed, uint256 when) external act(when) {
        uint64 round = _round(slotSeed >> 8);
        AttestationRef memory ref = AttestationRef(runId, round, _committer(round, solverSeed), uint8(slotSeed % 3));
        world.fold();
        vm.prank(_attacker(solverSeed >> 8));
        try ver.reportAbstention(ref) {
            ++calls["reportAbstention"];
        } catch {
            _drop();
        }
    }

    function finalize(uint256 roundSeed, uint256 solverSeed, uint256 slotSeed, uint256 when) external act(when) {
        uint64 round = _round(roundSeed);
        AttestationRef memory ref = AttestationRef(runId, round, _committer(round, solverSeed), uint8(slotSeed % 2));
        world.fold();
        try ver.finalize(ref) {
            ++calls["finalize"];
        } catch {
            _drop();
        }
    }

    // ------------------------------------------------------------------ disputes

    /// @notice Challenge any seat (the attacker's own, an accomplice's, an honest one) naming any draw, from any
    ///         attacker account (a solver challenging a fail on itself, an accomplice pre-empting the whistleblower).
    function challenge(uint256 solverSeed, uint256 slotSeed, uint256 sampleSeed, uint256 whoSeed, uint256 when)
        external
        act(when)
    {
        uint64 round = _round(sampleSeed >> 8);
        AttestationRef memory ref = AttestationRef(runId, round, _committer(round, solverSeed), uint8(slotSeed % 2));
        (CommitmentData memory c,) = world.commitmentOf(round, ref.solver);
        uint16 sample = uint16(sampleSeed % 2);
        try ver.attestationOf(ref) returns (Verification.AttestationState, bool isFail, bool, uint16 named) {
            if (isFail && sampleSeed % 4 != 3) sample = named;
        } catch {}
        (LeafData memory leaf, bytes32[] memory proof) = _sampledLeaf(ref, c.root, sample);
        address who = whoSeed % 3 == 0 ? ref.solver : _attacker(whoSeed);
        uint256 bond = reg.runEconomics(runId).challengeBond;
        _give(who, bond);
        world.fold();
        vm.prank(who);
        try dis.challengeAttestation{value: bond}(ref, c, sample, leaf, proof) {
            ++calls["challenge"];
        } catch {
            _drop();
        }
    }

    /// @notice Dispute a segment of a commitment revealed as planted (the planter disputing its own plant too).
    function challengePlant(uint256 solverSeed, uint256 segmentSeed, uint256 whoSeed, uint256 when) external act(when) {
        uint64 round = _times().round;
        address solver = _committer(round, solverSeed);
        (CommitmentData memory c,) = world.commitmentOf(round, solver);
        uint256 size = world.treeSize(c.root);
        if (size == 0) return;
        uint256 segment = segmentSeed % size;
        (LeafData memory leaf, bytes32[] memory proof) = world.treeLeaf(c.root, segment);
        address who = whoSeed % 3 == 0 ? solver : _attacker(whoSeed);
        uint256 bond = reg.runEconomics(runId).challengeBond;
        _give(who, bond);
        world.fold();
        vm.prank(who);
        try dis.challengePlant{value: bond}(runId, round, solver, c, uint32(segment), leaf, proof) {
            ++calls["challengePlant"];
        } catch {
            _drop();
        }
    }

    /// @notice Claims: post a right or wrong theta_(r+1), challenge the current claim, settle, withdraw a claim bond.
    function claim(uint256 thetaSeed, uint256 op, uint256 when) external act(when) {
        IRunRegistry.RoundTimes memory t = _times();
        address who = _attacker(thetaSeed >> 8);
        uint256 bond = reg.runEconomics(runId).challengeBond;
        uint256 k = op % 4;
        if (k == 0) {
            bytes32 theta = thetaSeed % 2 == 0 ? correctTheta(t.round) : keccak256(abi.encode("wrong", thetaSeed));
            _give(who, bond);
            world.fold();
            vm.prank(who);
            try reg.postClaim{value: bond}(runId, t.round, theta) {
                ++calls["postClaim"];
            } catch {
                _drop();
            }
        } else if (k == 1) {
            _give(who, bond);
            uint16 nonce = reg.claimOf(runId, t.round).nonce;
            vm.prank(who);
            try dis.challengeClaim{value: bond}(runId, t.round, nonce) {
                ++calls["challengeClaim"];
            } catch {
                _drop();
            }
        } else if (k == 2) {
            world.fold();
            vm.prank(who);
            try reg.settle(_run(thetaSeed), t.round) {
                ++calls["settle"];
            } catch {
                _drop();
            }
        } else {
            uint64 round = _round(thetaSeed);
            vm.prank(who);
            try reg.withdrawClaimBond(runId, round) {}
            catch {
                _drop();
            }
        }
    }

    /// @notice Juries: draw one, submit a verdict signed by the attacker's juror alone (or claiming honest seats
    ///         signed: a forgery), execute, expire.
    function jury(uint256 disputeSeed, uint256 op, bool wins, uint256 when) external act(when) {
        uint256 n = world.disputeCount();
        if (n == 0) return;
        DisputeSubject memory s = world.disputeAt(disputeSeed % n);
        uint256 k = op % 4;
        if (k == 0) {
            world.fold();
            try dis.drawJury(s, world.poolKeys(s)) {
                _checkJury(s, false);
                ++calls["drawJury"];
            } catch {
                _drop();
            }
        } else if (k == 1) {
            _verdict(s, wins, op >> 8);
        } else if (k == 2) {
            world.fold();
            try dis.execute(s) {
                ++calls["execute"];
            } catch {
                _drop();
            }
        } else {
            world.fold();
            try dis.expire(s) {
                ++calls["expire"];
            } catch {
                _drop();
            }
        }
    }

    function _verdict(DisputeSubject memory s, bool wins, uint256 forgeSeed) internal {
        Disputes.Dispute memory d = dis.disputeOf(dis.disputeIdOf(s));
        if (d.status != Disputes.Status.JuryDrawn) return;
        uint32 signing;
        for (uint256 seat; seat < d.poolSize; ++seat) {
            if (d.eligible >> seat & 1 == 0) continue;
            (address juror,) = jurors.seatOf(d.jurySeed, seat, d.poolSize, d.openedBlock);
            // the attacker's own seats; with forgeSeed odd, also claim honest seats signed (their keys sign nothing)
            if (juror == _cast.attackerJuror || (forgeSeed % 2 == 1 && forgeSeed >> seat & 2 != 0)) {
                signing |= uint32(1) << seat;
            }
        }
        if (signing == 0) return;
        VerdictInput memory v = buildVerdictOf(s, wins, signing);
        world.fold();
        vm.prank(_cast.attackerJuror);
        try dis.submitVerdict(s, wins, v.signers, v.signature, v.aggregate, v.nonSigners) {
            _checkJury(s, true);
            ++calls["submitVerdict"];
        } catch {
            _drop();
        }
    }

    // ------------------------------------------------------------------ plants

    /// @notice Plants: set an anchor (its true chain, or one it cannot reveal), reveal (the right secret, a wrong
    ///         one, another round's), report an unrevealed plant, fund the pool, release a held forfeit.
    function plant(uint256 whoSeed, uint256 op, uint256 roundSeed, uint256 when) external act(when) {
        address solver = _attackerSolver(whoSeed);
        uint64 round = _round(roundSeed);
        uint256 k = op % 6;
        vm.startPrank(solver);
        if (k == 0) {
            bytes32 anchor = op % 12 == 6 ? keccak256(abi.encode("garbage anchor", solver)) : anchorOf(solver);
            world.fold();
            try plants.setAnchor(_run(roundSeed >> 8), anchor) {}
            catch {
                _drop();
            }
        } else if (k == 1) {
            bytes32 secret = op % 12 == 7 ? keccak256(abi.encode("wrong", op)) : secretOf(solver, round);
            world.fold();
            try plants.reveal(runId, round, secret) {
                ++calls["reveal"];
            } catch {
                _drop();
            }
        } else if (k == 2) {
            world.fold();
            try plants.reportUnrevealed(runId, round, _committer(round, roundSeed >> 8)) {
                ++calls["reportUnrevealed"];
            } catch {
                _drop();
            }
        } else if (k == 3) {
            uint256 amount = bound(roundSeed >> 16, 1, 5 ether);
            _give(solver, amount);
            world.fold();
            try plants.fundPool{value: amount}(_run(roundSeed >> 8)) {}
            catch {
                _drop();
            }
        } else {
            AttestationRef memory ref = AttestationRef(runId, round, _committer(round, roundSeed >> 8), uint8(op % 2));
            world.fold();
            try plants.releaseForfeit(ref) {
                ++calls["releaseForfeit"];
            } catch {
                _drop();
            }
        }
        vm.stopPrank();
    }

    // ------------------------------------------------------------------ pay

    /// @notice Every claim, sweep and withdrawal, for any round, seat, dispute and account.
    function payouts(uint256 whoSeed, uint256 roundSeed, uint256 solverSeed, uint256 op, uint256 when)
        external
        act(when)
    {
        address who = _attacker(whoSeed);
        uint64 round = uint64(roundSeed % (_times().round + 1));
        address solver = _committer(round, solverSeed);
        AttestationRef memory ref = AttestationRef(runId, round, solver, uint8(solverSeed >> 8) % 2);
        vm.startPrank(who);
        uint256 k = op % 12;
        if (k == 0) {
            world.fold();
            try ver.claimSolverShares(runId, round, solver) {}
            catch {
                _drop();
            }
        } else if (k == 1) {
            world.fold();
            try ver.claimVerifierShares(ref) {}
            catch {
                _drop();
            }
        } else if (k == 2) {
            world.fold();
            try faults.claimFaultReward(ref) {}
            catch {
                _drop();
            }
        } else if (k == 3) {
            _claimJuror(roundSeed);
        } else if (k == 4) {
            world.fold();
            try faults.sweepFaultReward(runId, round, solver) {}
            catch {
                _drop();
            }
        } else if (k == 5) {
            world.fold();
            try shares.sweepRoundRelease(_run(roundSeed >> 8), round) {}
            catch {
                _drop();
            }
        } else if (k == 6) {
            uint256 n = world.disputeCount();
            if (n > 0) {
                DisputeSubject memory subject = world.disputeAt(roundSeed % n);
                world.fold();
                try dis.sweepUnclaimedJurorRewards(subject) {}
                catch {
                    _drop();
                }
            }
        } else if (k == 7) {
            world.fold();
            try shares.reclaimUnownedRevenue(_run(roundSeed >> 8)) {}
            catch {
                _drop();
            }
        } else {
            _withdrawAll();
        }
        vm.stopPrank();
        ++calls["payouts"];
    }

    function _claimJuror(uint256 seed) internal {
        uint256 n = world.disputeCount();
        if (n == 0) return;
        DisputeSubject memory s = world.disputeAt(seed % n);
        Disputes.Dispute memory d = dis.disputeOf(dis.disputeIdOf(s));
        for (uint8 seat; seat < d.poolSize; ++seat) {
            world.fold();
            try dis.claimJurorReward(s, seat) {}
            catch {
                _drop();
            }
        }
    }

    function _withdrawAll() internal {
        world.fold();
        try ver.withdraw() {}
        catch {
            _drop();
        }
        world.fold();
        try dis.withdraw() {}
        catch {
            _drop();
        }
        world.fold();
        try faults.withdraw() {}
        catch {
            _drop();
        }
        world.fold();
        try plants.withdraw() {}
        catch {
            _drop();
        }
        world.fold();
        try shares.withdraw() {}
        catch {
            _drop();
        }
        RunShares t = shares.shareToken(runId);
        world.fold();
        try t.withdrawRevenue() {}
        catch {
            _drop();
        }
    }

    /// @notice Revenue and the share token: pay revenue, transfer, approve, transferFrom, withdraw revenue.
    function revenue(uint256 whoSeed, uint256 toSeed, uint256 amountSeed, uint256 op) external {
        world.begin();
        address who = _attacker(whoSeed);
        address to = toSeed % 4 == 0 ? _cast.honestSolvers[0] : _attacker(toSeed);
        RunShares t = shares.shareToken(runId);
        uint256 amount = bound(amountSeed, 1, 20 ether);
        vm.startPrank(who);
        uint256 k = op % 5;
        if (k == 0) {
            _give(who, amount);
            world.fold();
            try shares.payRevenue{value: amount}(_run(toSeed)) {}
            catch {
                _drop();
            }
        } else if (k == 1) {
            world.fold();
            try t.transfer(to, amountSeed % (t.balanceOf(who) + 1)) {}
            catch {
                _drop();
            }
        } else if (k == 2) {
            world.fold();
            try t.approve(to, amountSeed) {}
            catch {
                _drop();
            }
        } else if (k == 3) {
            world.fold();
            try t.transferFrom(to, who, amountSeed % (t.balanceOf(to) + 1)) {}
            catch {
                _drop();
            }
        } else {
            world.fold();
            try t.withdrawRevenue() {}
            catch {
                _drop();
            }
        }
        vm.stopPrank();
        ++calls["revenue"];
        world.end();
    }

    /// @notice Announce or withdraw a peer URL (any length, empty included).
    function peer(uint256 whoSeed, uint256 urlSeed, bool withdraw_) external {
        world.begin();
        address who = _attacker(whoSeed);
        if (withdraw_) {
            vm.prank(who);
            try directory.withdraw() {}
            catch {
                _drop();
            }
        } else {
            uint256 length = urlSeed % 300;
            bytes memory url = new bytes(length);
            for (uint256 i; i < length; ++i) {
                url[i] = bytes1(uint8(0x61 + (uint256(keccak256(abi.encode(urlSeed, i))) % 26)));
            }
            vm.prank(who);
            try directory.announce(string(url)) {}
            catch {
                _drop();
            }
        }
        ++calls["peer"];
        world.end();
    }

    // ------------------------------------------------------------------ runs

    /// @notice Create a run with a fuzzed config (mostly invalid), set plant terms on it (or try to on the main run),
    ///         fund its pool.
    function createRun(uint256 seed, uint256 op) external {
        world.begin();
        address who = _cast.challenger;
        uint256 k = op % 3;
        if (k == 0) {
            RunTerms memory c = defaultConfig();
            c.commitWindow = uint32(bound(seed, 1, 2 hours));
            c.attestWindow = uint32(bound(seed >> 32, 1, 2 hours));
            c.challengeWindow = uint32(bound(seed >> 64, 1, 2 hours));
            c.disputeTimeout = uint32(bound(seed >> 96, 1, 1 hours));
            c.verifiersPerCommitment = uint8(seed >> 128) % 4;
            c.jurySize = uint8(seed >> 136) % 24;
            c.maxRounds = uint32(seed >> 144) % 4;
            c.solverMinStake = uint96(seed >> 160) % 12 ether;
            uint256 pool = (seed >> 200) % 3 ether;
            _give(who, pool);
            world.fold();
            vm.prank(who);
            try reg.createRun{value: pool}(c) returns (uint256 created) {
                attackerRuns.push(created);
                ++calls["createRun"];
            } catch {
                _drop();
            }
        } else {
            uint256 run = k == 1 ? runId : _run(seed);
            uint256 pool = (seed >> 200) % 3 ether;
            _give(who, pool);
            world.fold();
            vm.prank(who);
            try plants.setTerms{value: pool}(run, uint16(seed % 2500), uint96(seed >> 16), uint96(seed >> 112)) {
                ++calls["setTerms"];
            } catch {
                _drop();
            }
        }
        world.end();
    }

    // ------------------------------------------------------------------ what only the protocol may call

    /// @notice Call a protocol-only hook (or send plain ETH to a protocol contract) as an attacker: each must revert.
    function hooks(uint256 which, uint256 seed) external {
        world.begin();
        address who = _attacker(seed);
        AttestationRef memory ref = AttestationRef(runId, _times().round, _attackerSolver(seed >> 8), 0);
        CommitmentData memory c;
        uint256 k = which % 22;
        bool ok;
        _give(who, 2 ether);
        world.fold();
        vm.startPrank(who);
        if (k == 0) {
            (ok,) = address(reg).call(abi.encodeCall(reg.onDisputeOpened, (runId, ref.round, ref.solver, c)));
        } else if (k == 1) {
            (ok,) = address(reg).call(abi.encodeCall(reg.onDisputeClosed, (runId)));
        } else if (k == 2) {
            (ok,) = address(reg).call(abi.encodeCall(reg.onClaimChallenged, (runId, ref.round, 0)));
        } else if (k == 3) {
            (ok,) = address(reg)
                .call(abi.encodeCall(reg.onClaimResolved, (runId, ref.round, IRunRegistry.ClaimOutcome.Rejected)));
        } else if (k == 4) {
            (ok,) = address(ver).call(abi.encodeCall(ver.onSolverJoined, (runId, who)));
        } else if (k == 5) {
            (ok,) = address(ver).call(abi.encodeCall(ver.onPlantRevealed, (runId, ref.round, ref.solver)));
        } else if (k == 6) {
            (ok,) = address(ver).call(abi.encodeCall(ver.onUnpaid, (runId, ref.round, ref.solver)));
        } else if (k == 7) {
            (ok,) = address(ver).call(abi.encodeCall(ver.onResolved, (ref, IVerification.Resolution.Overturned)));
        } else if (k == 8) {
            (ok,) = address(plants).call(abi.encodeCall(plants.onPlantedFail, (runId, who)));
        } else if (k == 9) {
            (ok,) = address(plants).call{value: 1}(abi.encodeCall(plants.onPlantedPass, (ref, who)));
        } else if (k == 10) {
            (ok,) = address(plants).call(abi.encodeCall(plants.onFalsePlant, (runId, ref.round, who)));
        } else if (k == 11) {
            (ok,) = address(faults).call{value: 1}(abi.encodeCall(faults.onFaultProven, (runId, 0, who)));
        } else if (k == 12) {
            (ok,) = address(shares).call{value: 1}(abi.encodeCall(shares.createRunShares, (77, 1)));
        } else if (k == 13) {
            (ok,) = address(shares).call{value: 1}(abi.encodeCall(shares.fundPool, (runId)));
        } else if (k == 14) {
            (ok,) = address(shares).call(abi.encodeCall(shares.releasePool, (runId, ref.round, 1)));
        } else if (k == 15) {
            (ok,) = address(shares).call(abi.encodeCall(shares.mint, (runId, 0, who, 1, IModelShares.ShareKind.Solver)));
        } else if (k == 16) {
            (ok,) = address(sm).call(abi.encodeCall(sm.reserve, (who, 1, 1)));
        } else if (k == 17) {
            (ok,) = address(sm).call(abi.encodeCall(sm.slash, (ref.solver, 1, 1, bytes32(seed))));
        } else if (k == 18) {
            (ok,) = address(vreg).call(abi.encodeCall(vreg.onOverturned, (runId, ref.solver)));
        } else if (k == 19) {
            RunShares t = shares.shareToken(runId);
            (ok,) = address(t).call{value: 1}(abi.encodeCall(t.notifyRevenue, ()));
            if (!ok) (ok,) = address(t).call(abi.encodeCall(t.mint, (who, 1)));
            if (!ok) (ok,) = address(t).call(abi.encodeCall(t.sweepUnowned, (who)));
        } else if (k == 20) {
            (ok,) = address(sm).call(abi.encodeCall(sm.release, (ref.solver, 1, 1)));
        } else {
            // plain ETH into every protocol contract and the share token
            address[11] memory targets = [
                address(sm),
                address(reg),
                address(ver),
                address(dis),
                address(shares),
                address(jurors),
                address(faults),
                address(vreg),
                address(plants),
                address(directory),
                address(shares.shareToken(runId))
            ];
            (ok,) = targets[seed % 11].call{value: 1 + seed % 1 ether}("");
        }
        vm.stopPrank();
        if (!ok) _drop(); // a reverted call's logs are recorded too
        if (ok) {
            ++ghostOpenHook;
            _violation(string.concat("a protocol-only entry point accepted an outsider: hook ", vm.toString(k)));
        }
        ++calls["hooks"];
        world.end();
    }
}
