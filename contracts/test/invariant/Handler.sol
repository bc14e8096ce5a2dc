// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Vm} from "forge-std/Vm.sol";
import {Protocol} from "../../script/ProtocolDeployer.sol";
import {Fixture} from "../utils/Fixture.sol";
import {Constants} from "../../src/Constants.sol";
import {Disputes} from "../../src/Disputes.sol";
import {JurorRegistry} from "../../src/JurorRegistry.sol";
import {ModelShares} from "../../src/ModelShares.sol";
import {RunRegistry} from "../../src/RunRegistry.sol";
import {RunShares} from "../../src/RunShares.sol";
import {StakeManager} from "../../src/StakeManager.sol";
import {Verification} from "../../src/Verification.sol";
import {IRunRegistry} from "../../src/interfaces/IRunRegistry.sol";
import {AttestationRef, CommitmentData, DisputeSubject, LeafData} from "../../src/interfaces/Types.sol";

/// @notice Drives random sequences of stake / commit / open / report / attest / challenge / verdict / settle /
///         pay / withdraw / transfer against one run, and keeps the ghost records the invariants compare with.
///         Every action first checks that it applies and otherwise returns, so runs stay deep.
contract Handler is Fixture {
    uint256 public runId;
    /// @dev A second run the same stakers are in (never played; they leave it at the end).
    uint256 public otherRunId;
    RunShares public token;
    address[] public actors;

    // ETH conservation: everything the handler ever dealt to actors
    uint256 public ghostDealt;
    // revenue that entered and left the share token
    uint256 public ghostRevenueIn;
    uint256 public ghostRevenueOut;
    // violations observed inside actions (checked by the invariants)
    uint256 public ghostEarlyStakeExit;
    uint256 public ghostTransferMovedRevenue;
    uint256 public ghostDoubleMint;
    uint256 public ghostPayoutMismatch;
    uint256 public ghostRootRewritten;
    uint256 public ghostSlashChanged;
    // an opening rule broken: a wrong opening accepted, an unopened commitment attested, a report before its
    // deadline, a settlement with an unresolved commitment
    uint256 public ghostOpeningRuleBroken;
    // an unopened report that took other than solverMinStake (seed drawn) or 0 (not drawn), or whose take did not
    // all go to the reward pool
    uint256 public ghostUnopenedSlashMismatch;

    mapping(uint64 round => mapping(address solver => CommitmentData)) internal _commits;
    mapping(uint64 round => mapping(address solver => bool)) public committed;
    mapping(bytes32 faultKey => uint256) public seenSlash;
    bytes32[] public faultKeys;
    DisputeSubject[] internal _disputes;
    uint256 public disputeCount;
    mapping(string action => uint256) public calls;

    constructor(
        Protocol memory p,
        uint256 runId_,
        address[] memory solvers_,
        address[] memory verifiers_,
        address[] memory jurorAddrs_,
        uint256[] memory jurorSks_,
        bytes[] memory jurorPks_
    ) {
        usePeers(p);
        runId = runId_;
        token = shares.shareToken(runId_);
        solvers = solvers_;
        verifiers = verifiers_;
        jurorAddrs = jurorAddrs_;
        jurorSks = jurorSks_;
        jurorPks = jurorPks_;
        for (uint256 i; i < solvers_.length; ++i) {
            actors.push(solvers_[i]);
            _recordFault(Constants.FAULT_SOLVER, solvers_[i], 0);
        }
        for (uint256 i; i < verifiers_.length; ++i) {
            actors.push(verifiers_[i]);
        }
        for (uint256 i; i < jurorAddrs_.length; ++i) {
            actors.push(jurorAddrs_[i]);
            jurorIndexPlusOne[jurorAddrs_[i]] = i + 1;
        }
        actors.push(outsider);
        actors.push(creator);
        autoOpen = false; // the handler opens and reports with its own actions
    }

    // ------------------------------------------------------------------ helpers

    function setOtherRun(uint256 otherRunId_) external {
        otherRunId = otherRunId_;
    }

    function actorCount() external view returns (uint256) {
        return actors.length;
    }

    function disputeAt(uint256 i) external view returns (DisputeSubject memory) {
        return _disputes[i];
    }

    function faultKeyCount() external view returns (uint256) {
        return faultKeys.length;
    }

    function _deal(address who, uint256 amount) internal {
        vm.deal(who, who.balance + amount);
        ghostDealt += amount;
    }

    function _times() internal view returns (IRunRegistry.RoundTimes memory) {
        return reg.roundTimes(runId);
    }

    function _recordFault(bytes32 domain, address solver, uint8 slot) internal {
        IRunRegistry.RoundTimes memory t = reg.roundTimes(runId);
        for (uint64 r; r <= t.round; ++r) {
            bytes32 key = domain == Constants.FAULT_SOLVER
                ? keccak256(abi.encode(domain, runId, r, solver))
                : keccak256(abi.encode(domain, runId, r, solver, slot));
            if (seenSlash[key] == 0) {
                seenSlash[key] = type(uint256).max; // registered, nothing seen yet
                faultKeys.push(key);
            }
        }
    }

    /// @dev Record every fault's slashed amount the first time it is seen; a later change is a violation.
    function _checkSlashes() internal {
        for (uint256 i; i < faultKeys.length; ++i) {
            bytes32 key = faultKeys[i];
            if (!sm.faultSlashed(key)) continue;
            uint256 amount = sm.slashedAmount(key);
            if (seenSlash[key] == type(uint256).max) seenSlash[key] = amount;
            else if (seenSlash[key] != amount) ++ghostSlashChanged;
        }
    }

    function _tokenBalance() internal view returns (uint256) {
        return address(token).balance;
    }

    modifier trackRevenueIn() {
        uint256 before = _tokenBalance();
        _;
        ghostRevenueIn += _tokenBalance() - before;
        _checkSlashes();
    }

    // ------------------------------------------------------------------ time

    function warp(uint256 secondsSeed) external {
        vm.warp(block.timestamp + bound(secondsSeed, 1, 15 minutes));
        vm.roll(block.number + 1);
        ++calls["warp"];
    }

    /// @notice Take the next protocol step that fits the round's phase (randomized by `seed` and `choice`),
    ///         so that random sequences reach attestations, disputes, verdicts and settlement.
    function advance(uint256 seed, bool choice) external {
        IRunRegistry.RoundTimes memory t = _times();
        if (t.finished) return;
        if (block.timestamp < t.commitEnd) {
            if (t.round > 0 && seed % 3 == 0) {
                // the previous round is settled: its contributors claim shares while this round commits
                this.claimShares(seed >> 2, seed >> 4, seed >> 6, seed >> 8);
                this.transferShares(seed >> 10, seed >> 14, seed >> 18);
                return this.withdrawRevenue(seed >> 22);
            }
            uint256 before = calls["commit"];
            this.commit(seed);
            if (calls["commit"] == before) vm.warp(t.commitEnd);
        } else if (block.timestamp < t.attestEnd) {
            if (seedBaseOf(runId, t.round) == bytes32(0)) {
                // the seed can be drawn only before openEnd; past it the round goes unverified (reports void it)
                if (block.timestamp < t.openEnd) return this.drawSeed();
                return vm.warp(t.attestEnd);
            }
            if (block.timestamp < t.openEnd && seed % 8 != 7) {
                // most commitments get opened before attestations; a few stay unopened and are reported
                uint256 opens = calls["open"] + calls["openCorrupt"];
                this.open(seed >> 3, choice && seed % 16 == 0);
                if (calls["open"] + calls["openCorrupt"] != opens) return;
            }
            uint256 before = calls["attest"];
            this.attest(seed, seed >> 8, choice || seed % 3 != 0, seed >> 16);
            if (calls["attest"] == before) vm.warp(t.attestEnd);
        } else if (block.timestamp < t.challengeEnd) {
            if (reg.runState(runId).unresolved != 0 && choice) this.reportUnopened(seed);
            else if (seed % 3 == 0) this.challenge(seed >> 2, seed >> 10, seed >> 20, choice);
            else if (seed % 3 == 1) this.resolve(seed >> 2, choice, seed >> 12);
            else vm.warp(t.challengeEnd);
        } else {
            _phaseAfterChallenge(t, seed, choice);
        }
        vm.roll(block.number + 1);
        ++calls["advance"];
    }

    function _phaseAfterChallenge(IRunRegistry.RoundTimes memory t, uint256 seed, bool choice) internal {
        if (reg.runState(runId).openDisputes != 0) {
            if (seed % 2 == 0) this.resolve(seed >> 1, choice, seed >> 9);
            else vm.warp(block.timestamp + 10 minutes);
            for (uint256 i; i < _disputes.length; ++i) {
                try dis.expire(_disputes[i]) {} catch {}
            }
            return;
        }
        if (seed % 4 == 0) return this.finalize(t.round, seed >> 2, seed >> 6);
        if (reg.runState(runId).unresolved != 0 && choice) return this.reportUnopened(seed >> 2);
        RunRegistry.ClaimStatus status = reg.claimOf(runId, t.round).status;
        if (status == RunRegistry.ClaimStatus.None) return this.postClaim(seed);
        if (status == RunRegistry.ClaimStatus.Posted && choice && seed % 5 == 0) return this.challengeClaim();
        this.settle();
    }

    // ------------------------------------------------------------------ stake

    function depositStake(uint256 actorSeed, uint256 amountSeed, bool verifierRole) external {
        address who = actors[bound(actorSeed, 0, actors.length - 1)];
        uint256 amount = bound(amountSeed, 1, 20 ether);
        uint8 role = verifierRole ? Constants.ROLE_VERIFIER : Constants.ROLE_SOLVER;
        _deal(who, amount);
        vm.prank(who);
        sm.deposit{value: amount}(role);
        ++calls["depositStake"];
    }

    function requestUnbond(uint256 actorSeed, uint256 amountSeed, bool verifierRole) external {
        address who = actors[bound(actorSeed, 0, actors.length - 1)];
        uint8 role = verifierRole ? Constants.ROLE_VERIFIER : Constants.ROLE_SOLVER;
        (uint256 bonded,,, uint256 reserved) = sm.stakeOf(who, role);
        if (bonded == 0) return;
        uint256 amount = bound(amountSeed, 1, bonded);
        vm.prank(who);
        try sm.requestUnbond(role, amount) {
            if (bonded - amount < reserved) ++ghostEarlyStakeExit; // reserved stake must not start unbonding
            ++calls["requestUnbond"];
        } catch {}
    }

    /// @notice A verifier leaves the run's list, returns, or releases its reservation after leaving (issue 16, finding 2):
    ///         seats of rounds already drawn stay with their snapshot, reservations follow the records
    ///         (`checkReservationsMatchObligations`).
    ///         Either run: the two share the same verifiers, each registration with its own reservation.
    function churnVerifier(uint256 actorSeed, uint8 action) external {
        address who = verifiers[actorSeed % verifiers.length];
        uint256 run = (actorSeed >> 8) % 2 == 0 ? runId : otherRunId;
        vm.prank(who);
        if (action % 3 == 0) {
            try vreg.deregister(run) {} catch {}
        } else if (action % 3 == 1) {
            try vreg.register(run) {} catch {}
        } else {
            try vreg.releaseVerifier(run) {} catch {}
        }
        ++calls["churnVerifier"];
    }

    /// @notice Unbond part of a stake and try to leave at once and just before the release time: both must fail.
    function unbondAndTryExit(uint256 actorSeed, uint256 amountSeed, uint256 waitSeed) external {
        address who = actors[actorSeed % actors.length];
        uint8 role = Constants.ROLE_SOLVER;
        (uint256 bonded,,,) = sm.stakeOf(who, role);
        if (bonded == 0) {
            role = Constants.ROLE_VERIFIER;
            (bonded,,,) = sm.stakeOf(who, role);
        }
        if (bonded == 0) return;
        vm.prank(who);
        try sm.requestUnbond(role, bound(amountSeed, 1, bonded)) {}
        catch {
            return;
        }
        (,, uint256 releaseTime,) = sm.stakeOf(who, role);
        vm.warp(block.timestamp + bound(waitSeed, 0, releaseTime - block.timestamp - 1));
        vm.prank(who);
        try sm.withdraw(role) {
            ++ghostEarlyStakeExit;
        } catch {}
        ++calls["unbondAndTryExit"];
    }

    function withdrawStake(uint256 actorSeed, bool verifierRole) external {
        address who = actors[bound(actorSeed, 0, actors.length - 1)];
        uint8 role = verifierRole ? Constants.ROLE_VERIFIER : Constants.ROLE_SOLVER;
        (, uint256 unbonding, uint256 releaseTime,) = sm.stakeOf(who, role);
        vm.prank(who);
        try sm.withdraw(role) {
            if (unbonding == 0 || block.timestamp < releaseTime) ++ghostEarlyStakeExit;
            ++calls["withdrawStake"];
        } catch {}
    }

    // ------------------------------------------------------------------ commit and attest

    function commit(uint256 solverSeed) external {
        IRunRegistry.RoundTimes memory t = _times();
        if (t.finished || block.timestamp >= t.commitEnd) return;
        for (uint256 k; k < solvers.length; ++k) {
            address solver = solvers[(solverSeed % 1024 + k) % solvers.length];
            if (committed[t.round][solver]) continue;
            if (sm.bondedOf(solver, Constants.ROLE_SOLVER) < reg.solverMinStake(runId)) continue;
            _commits[t.round][solver] = commitAs(runId, solver);
            committed[t.round][solver] = true;
            _recordFault(Constants.FAULT_SOLVER, solver, 0);
            // a second commit for the same round must fail
            vm.prank(solver);
            try reg.commit(runId, t.round, keccak256("other root"), keccak256("other delta"), 1) {
                ++ghostRootRewritten;
            } catch {}
            ++calls["commit"];
            return;
        }
    }

    /// @dev The current round's commitment hash of every committed solver still equals what was committed.
    function currentCommitmentsIntact() external view returns (bool) {
        IRunRegistry.RoundTimes memory t = _times();
        for (uint256 i; i < solvers.length; ++i) {
            if (!committed[t.round][solvers[i]]) continue;
            CommitmentData memory c = _commits[t.round][solvers[i]];
            (uint64 round, bool has, bytes28 hash) = reg.commitmentOf(runId, solvers[i]);
            if (!has || round != t.round || hash != bytes28(keccak256(abi.encode(c.root, c.deltaHash, c.tokens)))) {
                return false;
            }
        }
        return true;
    }

    function drawSeed() external {
        IRunRegistry.RoundTimes memory t = _times();
        if (t.finished || block.timestamp >= t.openEnd) return;
        if (seedBaseOf(runId, t.round) != bytes32(0)) return;
        if (block.timestamp < t.commitEnd) vm.warp(t.commitEnd); // the seed waits for the commit window
        uint256 randaoBlock = t.seedBlock + Constants.RANDAO_LAG_BLOCKS;
        vm.roll(block.number < randaoBlock ? randaoBlock + 1 : block.number + 1); // and for its RANDAO block
        ver.drawSeed(runId, t.round, seedHeader(runId));
        ++calls["drawSeed"];
    }

    function attest(uint256 solverSeed, uint256 slotSeed, bool pass, uint256 sampleSeed) external {
        IRunRegistry.RoundTimes memory t = _times();
        if (seedBaseOf(runId, t.round) == bytes32(0) || block.timestamp >= t.attestEnd) return;
        for (uint256 k; k < 2 * solvers.length; ++k) {
            address solver = solvers[(solverSeed % 1024 + k / 2) % solvers.length];
            AttestationRef memory ref = AttestationRef(runId, t.round, solver, uint8((slotSeed % 1024 + k) % 2));
            if (!committed[t.round][solver] || !_canAttest(ref)) continue;
            if (reg.openingOf(runId, t.round, solver) != IRunRegistry.Opening.Opened) {
                _attestUnopened(ref);
                continue;
            }
            ghostDealt += 1 ether; // the Fixture helper deals the attestation bond
            if (pass) attestPassAs(ref, _commits[t.round][solver]);
            else attestFailAs(ref, _commits[t.round][solver], uint16(bound(sampleSeed, 0, 1)));
            _recordFault(Constants.FAULT_ATTESTATION, solver, ref.slot);
            ++calls["attest"];
            return;
        }
    }

    function _canAttest(AttestationRef memory ref) internal view returns (bool) {
        try ver.assignedVerifier(ref) returns (address, bool eligible) {
            if (!eligible) return false;
        } catch {
            return false;
        }
        (Verification.AttestationState state,,,) = ver.attestationOf(ref);
        return state == Verification.AttestationState.None;
    }

    /// @dev An attestation of a commitment that is not opened must fail.
    function _attestUnopened(AttestationRef memory ref) internal {
        (address verifier,) = ver.assignedVerifier(ref);
        _deal(verifier, 1 ether);
        vm.prank(verifier);
        try ver.attestPass{value: 1 ether}(ref, _commits[ref.round][ref.solver]) {
            ++ghostOpeningRuleBroken;
        } catch {}
        ++calls["attestUnopened"];
    }

    // ------------------------------------------------------------------ open and report

    /// @notice Open an unresolved commitment of the current round (by its solver or a third party); `corrupt`
    ///         alters one leaf instead, and that opening must fail.
    function open(uint256 solverSeed, bool corrupt) external {
        IRunRegistry.RoundTimes memory t = _times();
        if (t.finished || block.timestamp >= t.openEnd) return;
        (bool drawn,,) = ver.seedOf(runId, t.round);
        if (!drawn) return;
        for (uint256 k; k < solvers.length; ++k) {
            address solver = solvers[(solverSeed % 1024 + k) % solvers.length];
            if (!committed[t.round][solver]) continue;
            if (reg.openingOf(runId, t.round, solver) != IRunRegistry.Opening.None) continue;
            (LeafData[] memory leaves, bytes32[][] memory proofs) = buildOpening(runId, t.round, solver);
            if (corrupt && leaves.length > 0) {
                leaves[(solverSeed >> 10) % leaves.length].tokens += 1;
                vm.prank(outsider);
                try reg.open(runId, t.round, solver, _commits[t.round][solver], leaves, proofs) {
                    ++ghostOpeningRuleBroken;
                } catch {}
                ++calls["openCorrupt"];
                return;
            }
            vm.prank(solverSeed % 3 == 0 ? outsider : solver);
            reg.open(runId, t.round, solver, _commits[t.round][solver], leaves, proofs);
            ++calls["open"];
            return;
        }
    }

    /// @notice Report an unresolved commitment of the current round (only succeeds from its deadline on).
    function reportUnopened(uint256 solverSeed) external trackRevenueIn {
        IRunRegistry.RoundTimes memory t = _times();
        if (t.finished) return;
        for (uint256 k; k < solvers.length; ++k) {
            address solver = solvers[(solverSeed % 1024 + k) % solvers.length];
            if (!committed[t.round][solver]) continue;
            if (reg.openingOf(runId, t.round, solver) != IRunRegistry.Opening.None) continue;
            if (_report(t, solver)) ++calls["reportUnopened"];
            return;
        }
    }

    /// @dev Report `solver`'s commitment of the current round; check the deadline and that a drawn round's report
    ///      takes min(solverMinStake, stake) once and sends all of it to the pool, an undrawn one takes nothing.
    function _report(IRunRegistry.RoundTimes memory t, address solver) internal returns (bool reported) {
        (bool drawn,,) = ver.seedOf(runId, t.round);
        uint256 held = _solverStake(solver);
        uint256 expected = drawn
            && !sm.faultSlashed(keccak256(abi.encode(Constants.FAULT_SOLVER, runId, t.round, solver)))
            ? _min(held, reg.solverMinStake(runId))
            : 0;
        uint256 poolBefore = shares.pool(runId);
        vm.prank(outsider);
        try reg.reportUnopened(runId, t.round, solver) {}
        catch {
            return false;
        }
        if (block.timestamp < t.openEnd) ++ghostOpeningRuleBroken; // drawn or not: nobody can open or draw after it
        uint256 taken = held - _solverStake(solver);
        if (taken != expected || shares.pool(runId) != poolBefore + taken) ++ghostUnopenedSlashMismatch;
        if (reg.openingOf(runId, t.round, solver) != IRunRegistry.Opening.Unopened) ++ghostUnopenedSlashMismatch;
        return true;
    }

    function _solverStake(address solver) internal view returns (uint256) {
        (uint256 bonded, uint256 unbonding,,) = sm.stakeOf(solver, Constants.ROLE_SOLVER);
        return bonded + unbonding;
    }

    function _min(uint256 a, uint256 b) internal pure returns (uint256) {
        return a < b ? a : b;
    }

    /// @dev Report every unresolved commitment of the current round (those past their deadline).
    function _reportAll(IRunRegistry.RoundTimes memory t) internal {
        for (uint256 i; i < solvers.length; ++i) {
            if (!committed[t.round][solvers[i]]) continue;
            if (reg.openingOf(runId, t.round, solvers[i]) != IRunRegistry.Opening.None) continue;
            _report(t, solvers[i]);
        }
    }

    /// @dev RunState.unresolved equals the current round's commitments neither opened nor reported.
    function unresolvedMatches() external view returns (bool) {
        IRunRegistry.RoundTimes memory t = _times();
        uint256 count;
        for (uint256 i; i < solvers.length; ++i) {
            if (!committed[t.round][solvers[i]]) continue;
            if (reg.openingOf(runId, t.round, solvers[i]) == IRunRegistry.Opening.None) ++count;
        }
        return reg.runState(runId).unresolved == count;
    }

    function finalize(uint256 roundSeed, uint256 solverSeed, uint256 slotSeed) external trackRevenueIn {
        IRunRegistry.RoundTimes memory t = _times();
        uint64 round = uint64(bound(roundSeed, 0, t.round));
        for (uint256 k; k < 2 * solvers.length; ++k) {
            AttestationRef memory ref = AttestationRef(
                runId, round, solvers[(solverSeed % 1024 + k / 2) % solvers.length], uint8((slotSeed % 1024 + k) % 2)
            );
            try ver.finalize(ref) {
                ++calls["finalize"];
                return;
            } catch {}
        }
    }

    // ------------------------------------------------------------------ disputes

    function challenge(uint256 solverSeed, uint256 slotSeed, uint256 sampleSeed, bool bySolver) external {
        IRunRegistry.RoundTimes memory t = _times();
        if (block.timestamp >= t.challengeEnd) return;
        for (uint256 k; k < 2 * solvers.length; ++k) {
            address solver = solvers[(solverSeed % 1024 + k / 2) % solvers.length];
            if (!committed[t.round][solver]) continue;
            AttestationRef memory ref = AttestationRef(runId, t.round, solver, uint8((slotSeed % 1024 + k) % 2));
            (Verification.AttestationState state, bool isFail,, uint16 failSample) = ver.attestationOf(ref);
            if (state != Verification.AttestationState.Attested) continue;
            uint16 sampleIndex = isFail ? failSample : uint16(bound(sampleSeed, 0, 1));
            address challenger = bySolver ? solver : outsider;
            ghostDealt += 2 ether; // the Fixture helper deals the challenge bond
            _disputes.push(challengeAs(challenger, ref, _commits[t.round][solver], sampleIndex));
            ++disputeCount;
            ++calls["challenge"];
            return;
        }
    }

    function postClaim(uint256 thetaSeed) external {
        IRunRegistry.RoundTimes memory t = _times();
        if (t.finished) return;
        if (block.timestamp < t.challengeEnd) vm.warp(t.challengeEnd); // claims wait for the challenge window
        if (reg.runState(runId).openDisputes != 0) return;
        if (reg.claimOf(runId, t.round).status != RunRegistry.ClaimStatus.None) return;
        _deal(creator, 2 ether);
        vm.prank(creator);
        reg.postClaim{value: 2 ether}(runId, t.round, keccak256(abi.encode(thetaSeed)));
        ++calls["postClaim"];
    }

    function challengeClaim() external {
        IRunRegistry.RoundTimes memory t = _times();
        if (t.finished) return;
        RunRegistry.Claim memory claim = reg.claimOf(runId, t.round);
        if (claim.status != RunRegistry.ClaimStatus.Posted || block.timestamp >= claim.windowEnd) return;
        _deal(outsider, 2 ether);
        vm.prank(outsider);
        dis.challengeClaim{value: 2 ether}(runId, t.round, claim.nonce);
        _disputes.push(DisputeSubject(2, runId, t.round, address(0), 0, claim.nonce));
        ++disputeCount;
        ++calls["challengeClaim"];
    }

    function resolve(uint256 disputeSeed, bool challengerWins, uint256 signerSeed) external trackRevenueIn {
        uint256 n = _disputes.length;
        if (n == 0) return;
        DisputeSubject memory s;
        bytes32 id;
        Disputes.Dispute memory d;
        for (uint256 k; k < n; ++k) {
            s = _disputes[(disputeSeed % 1024 + k) % n];
            id = dis.disputeIdOf(s);
            d = dis.disputeOf(id);
            bool live = d.status == Disputes.Status.Open || d.status == Disputes.Status.JuryDrawn;
            if ((live && block.timestamp < d.deadline) || d.status == Disputes.Status.Decided) break;
        }
        if (d.status != Disputes.Status.Decided && block.timestamp >= d.deadline) return;
        if (d.status == Disputes.Status.Open) {
            vm.roll(block.number + 2);
            dis.drawJury(s, poolOf(s));
            d = dis.disputeOf(id);
        }
        if (d.status == Disputes.Status.JuryDrawn) {
            uint256 eligible = _popcount(d.eligible);
            if (eligible != d.seats) ++ghostPayoutMismatch; // the recorded jury size is the drawn seats
            if (d.seats < Constants.MIN_JURY_SIZE) return;
            uint256 quorum = dis.quorum(d.seats, d.appeals);
            decide(s, challengerWins, bound(signerSeed, quorum, eligible));
            d = dis.disputeOf(id);
        }
        if (d.status != Disputes.Status.Decided) return;
        vm.recordLogs();
        dis.execute(s);
        _checkPayout(id);
        ++calls["resolve"];
    }

    function _checkPayout(bytes32 id) internal {
        Vm.Log[] memory logs = vm.getRecordedLogs();
        for (uint256 i; i < logs.length; ++i) {
            if (logs[i].topics[0] != Disputes.DisputeExecuted.selector || logs[i].topics[1] != id) continue;
            (,, uint256 total, uint256 toWinner,, uint256 perJuror, uint256 signers, uint256 toPool) =
                abi.decode(logs[i].data, (bool, address, uint256, uint256, uint256, uint256, uint256, uint256));
            if (toWinner + perJuror * signers + toPool != total) ++ghostPayoutMismatch;
            if (toWinner != total * Constants.WINNER_REWARD_BPS / Constants.BPS_DENOMINATOR) ++ghostPayoutMismatch;
        }
    }

    function expire(uint256 disputeSeed) external trackRevenueIn {
        if (_disputes.length == 0) return;
        DisputeSubject memory s = _disputes[bound(disputeSeed, 0, _disputes.length - 1)];
        try dis.expire(s) {
            ++calls["expire"];
        } catch {}
    }

    function settle() external trackRevenueIn {
        IRunRegistry.RoundTimes memory t = _times();
        if (t.finished) return;
        RunRegistry.Claim memory claim = reg.claimOf(runId, t.round);
        if (claim.status == RunRegistry.ClaimStatus.Posted && block.timestamp < claim.windowEnd) {
            vm.warp(claim.windowEnd); // settlement waits for the claim's challenge window
        }
        if (reg.runState(runId).unresolved != 0) {
            // settlement waits for every commitment to be opened or reported
            try reg.settle(runId, t.round) {
                ++ghostOpeningRuleBroken;
            } catch {}
            _reportAll(t);
        }
        try reg.settle(runId, t.round) {
            ++calls["settle"];
            _checkResolved(t.round);
        } catch {}
    }

    /// @dev Every commitment of a round just settled was opened or reported.
    function _checkResolved(uint64 round) internal {
        for (uint256 i; i < solvers.length; ++i) {
            if (committed[round][solvers[i]] && reg.openingOf(runId, round, solvers[i]) == IRunRegistry.Opening.None) {
                ++ghostOpeningRuleBroken;
            }
        }
    }

    // ------------------------------------------------------------------ shares and revenue

    function claimShares(uint256 roundSeed, uint256 solverSeed, uint256 slotSeed, uint256 disputeSeed) external {
        IRunRegistry.RoundTimes memory t = _times();
        if (t.round == 0) return;
        uint64 round = uint64(roundSeed % t.round);
        address solver = solvers[solverSeed % solvers.length];
        try ver.claimSolverShares(runId, round, solver) {
            ++calls["claimShares"];
            try ver.claimSolverShares(runId, round, solver) {
                ++ghostDoubleMint;
            } catch {}
        } catch {}
        AttestationRef memory ref = AttestationRef(runId, round, solver, uint8(slotSeed % 2));
        try ver.claimVerifierShares(ref) {
            try ver.claimVerifierShares(ref) {
                ++ghostDoubleMint;
            } catch {}
        } catch {}
        if (_disputes.length == 0) return;
        DisputeSubject memory s = _disputes[disputeSeed % _disputes.length];
        Disputes.Dispute memory d = dis.disputeOf(dis.disputeIdOf(s));
        for (uint8 seat; seat < d.poolSize; ++seat) {
            if (d.signers >> seat & 1 == 0 || d.claimed >> seat & 1 == 1) continue;
            uint256 idx = jurorIndexAtSeat(s, seat);
            vm.prank(jurorAddrs[idx]);
            try dis.claimJurorReward(s, seat) {
                vm.prank(jurorAddrs[idx]);
                try dis.claimJurorReward(s, seat) {
                    ++ghostDoubleMint;
                } catch {}
            } catch {}
        }
    }

    function payRevenue(uint256 amountSeed) external trackRevenueIn {
        uint256 amount = bound(amountSeed, 1, 50 ether);
        _deal(outsider, amount);
        vm.prank(outsider);
        shares.payRevenue{value: amount}(runId);
        ++calls["payRevenue"];
    }

    function withdrawRevenue(uint256 actorSeed) external {
        address who = actors[actorSeed % actors.length];
        for (uint256 k; k < actors.length && token.withdrawableRevenueOf(who) == 0; ++k) {
            who = actors[(actorSeed % 1024 + k) % actors.length];
        }
        uint256 before = who.balance;
        vm.prank(who);
        try token.withdrawRevenue() {
            ghostRevenueOut += who.balance - before;
            ++calls["withdrawRevenue"];
        } catch {}
    }

    function transferShares(uint256 fromSeed, uint256 toSeed, uint256 amountSeed) external {
        address from = actors[fromSeed % actors.length];
        for (uint256 k; k < actors.length && token.balanceOf(from) == 0; ++k) {
            from = actors[(fromSeed % 1024 + k) % actors.length];
        }
        address to = actors[toSeed % actors.length];
        uint256 balance = token.balanceOf(from);
        if (balance == 0 || from == to) return;
        uint256 amount = bound(amountSeed, 1, balance);
        uint256 fromBefore = token.withdrawableRevenueOf(from);
        uint256 toBefore = token.withdrawableRevenueOf(to);
        vm.prank(from);
        token.transfer(to, amount);
        if (token.withdrawableRevenueOf(from) != fromBefore || token.withdrawableRevenueOf(to) != toBefore) {
            ++ghostTransferMovedRevenue;
        }
        ++calls["transferShares"];
    }

    function withdrawCredits(uint256 actorSeed, uint256 roundSeed) external {
        address who = actors[bound(actorSeed, 0, actors.length - 1)];
        vm.prank(who);
        try ver.withdraw() {} catch {}
        vm.prank(who);
        try dis.withdraw() {} catch {}
        vm.prank(who);
        try faults.withdraw() {} catch {}
        vm.prank(who);
        try shares.withdraw() {} catch {}
        uint64 round = uint64(bound(roundSeed, 0, _times().round));
        vm.prank(who);
        try reg.withdrawClaimBond(runId, round) {} catch {}
        ++calls["withdrawCredits"];
    }

    // ------------------------------------------------------------------ the end of everything

    /// @dev Close every window and pay everyone: expire or execute disputes, finalize attestations, settle
    ///      the remaining rounds, claim all shares, withdraw every credit, stake, bond and revenue.
    function drainAll() external {
        for (uint256 step; step < 200; ++step) {
            IRunRegistry.RoundTimes memory t = _times();
            vm.warp(block.timestamp + 1 hours);
            vm.roll(block.number + 3);
            for (uint256 i; i < _disputes.length; ++i) {
                _closeDispute(_disputes[i]);
            }
            _finalizeAll(t.round);
            if (t.finished) break;
            RunRegistry.Claim memory claim = reg.claimOf(runId, t.round);
            if (claim.status == RunRegistry.ClaimStatus.None && reg.runState(runId).openDisputes == 0) {
                _deal(creator, 2 ether);
                vm.prank(creator);
                reg.postClaim{value: 2 ether}(runId, t.round, keccak256("final"));
            }
            _reportAll(t);
            uint256 before = _tokenBalance();
            try reg.settle(runId, t.round) {} catch {}
            ghostRevenueIn += _tokenBalance() - before;
        }
        IRunRegistry.RoundTimes memory end = _times();
        _finalizeAll(end.round);
        for (uint64 r; r < end.round; ++r) {
            _claimEverything(r);
        }
        // what no prover claimed goes to the pool once the claim window after the unbonding delay has passed, and
        // what no contributor of a round claimed goes to the (finished run's) revenue stream
        vm.warp(block.timestamp + sm.unbondingDelay() + Constants.REWARD_CLAIM_WINDOW);
        for (uint64 r; r < end.round; ++r) {
            for (uint256 i; i < solvers.length; ++i) {
                uint256 before = _tokenBalance();
                try faults.sweepFaultReward(runId, r, solvers[i]) {} catch {}
                ghostRevenueIn += _tokenBalance() - before;
            }
            uint256 beforeSweep = _tokenBalance();
            try shares.sweepRoundRelease(runId, r) {} catch {}
            ghostRevenueIn += _tokenBalance() - beforeSweep;
        }
        vm.warp(block.timestamp + token.releasePeriod() + Constants.UNOWNED_REVENUE_GRACE + 1);
        if (token.totalSupply() < Constants.MIN_SUPPLY_FOR_RELEASE) {
            uint256 before = creator.balance;
            try shares.reclaimUnownedRevenue(runId) {
                ghostRevenueOut += creator.balance - before;
            } catch {}
        }
        _exitEveryone(end.round);
        vm.warp(block.timestamp + sm.unbondingDelay());
        for (uint256 i; i < actors.length; ++i) {
            for (uint8 role = 1; role <= 2; ++role) {
                vm.prank(actors[i]);
                try sm.withdraw(role) {} catch {}
            }
            uint256 before = actors[i].balance;
            vm.prank(actors[i]);
            try token.withdrawRevenue() {
                ghostRevenueOut += actors[i].balance - before;
            } catch {}
        }
    }

    function _closeDispute(DisputeSubject memory s) internal {
        Disputes.Dispute memory d = dis.disputeOf(dis.disputeIdOf(s));
        uint256 before = _tokenBalance();
        if (d.status == Disputes.Status.Decided) dis.execute(s);
        else if (d.status == Disputes.Status.Open || d.status == Disputes.Status.JuryDrawn) dis.expire(s);
        ghostRevenueIn += _tokenBalance() - before;
    }

    function _finalizeAll(uint64 upTo) internal {
        for (uint64 r; r <= upTo; ++r) {
            for (uint256 i; i < solvers.length; ++i) {
                for (uint8 slot; slot < 2; ++slot) {
                    uint256 before = _tokenBalance();
                    try ver.finalize(AttestationRef(runId, r, solvers[i], slot)) {} catch {}
                    ghostRevenueIn += _tokenBalance() - before;
                }
            }
        }
    }

    function _claimEverything(uint64 round) internal {
        for (uint256 i; i < solvers.length; ++i) {
            try ver.claimSolverShares(runId, round, solvers[i]) {} catch {}
            for (uint8 slot; slot < 2; ++slot) {
                try ver.claimVerifierShares(AttestationRef(runId, round, solvers[i], slot)) {} catch {}
                if (slot == 0) continue; // seat 0's fault reward is left unclaimed: swept to the pool at the end
                try faults.claimFaultReward(AttestationRef(runId, round, solvers[i], slot)) {} catch {}
            }
        }
        for (uint256 k; k < _disputes.length; ++k) {
            DisputeSubject memory s = _disputes[k];
            if (s.round != round) continue;
            Disputes.Dispute memory d = dis.disputeOf(dis.disputeIdOf(s));
            for (uint8 seat; seat < d.poolSize; ++seat) {
                if (d.signers >> seat & 1 == 0) continue;
                uint256 idx = jurorIndexAtSeat(s, seat);
                vm.prank(jurorAddrs[idx]);
                try dis.claimJurorReward(s, seat) {} catch {}
            }
        }
    }

    function _exitEveryone(uint64 rounds) internal {
        for (uint256 i; i < actors.length; ++i) {
            address who = actors[i];
            vm.prank(who);
            try ver.withdraw() {} catch {}
            vm.prank(who);
            try dis.withdraw() {} catch {}
            vm.prank(who);
            try faults.withdraw() {} catch {}
            vm.prank(who);
            try shares.withdraw() {} catch {}
            for (uint64 r; r < rounds; ++r) {
                vm.prank(who);
                try reg.withdrawClaimBond(runId, r) {} catch {}
            }
            vm.prank(who);
            try vreg.deregister(runId) {} catch {}
            vm.prank(who);
            try jurors.deregisterJuror() {} catch {}
            vm.prank(who);
            try reg.leaveRun(runId) {} catch {} // the run is finished: every solver may leave
            vm.prank(who);
            try reg.leaveRun(otherRunId) {} catch {} // never committed there: it may leave
            vm.prank(who);
            try vreg.deregister(otherRunId) {} catch {}
        }
        vm.warp(block.timestamp + Constants.JUROR_EXIT_DELAY + 2 * WINDOW); // both exit delays
        for (uint256 i; i < actors.length; ++i) {
            address who = actors[i];
            vm.prank(who);
            try jurors.releaseJuror() {} catch {}
            vm.prank(who);
            try vreg.releaseVerifier(runId) {} catch {}
            vm.prank(who);
            try vreg.releaseVerifier(otherRunId) {} catch {}
            for (uint8 role = 1; role <= 2; ++role) {
                (uint256 bonded,,,) = sm.stakeOf(who, role);
                if (bonded == 0) continue;
                vm.prank(who);
                try sm.requestUnbond(role, bonded) {} catch {}
            }
        }
    }

    function _popcount(uint256 bits) internal pure returns (uint256 count) {
        while (bits != 0) {
            bits &= bits - 1;
            ++count;
        }
    }
}
