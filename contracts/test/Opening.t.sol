// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Vm} from "forge-std/Vm.sol";
import {Fixture} from "./utils/Fixture.sol";
import {Constants} from "../src/Constants.sol";
import {RunRegistry} from "../src/RunRegistry.sol";
import {StakeManager} from "../src/StakeManager.sol";
import {Verification} from "../src/Verification.sol";
import {IRunRegistry} from "../src/interfaces/IRunRegistry.sol";
import {AttestationRef, CommitmentData, LeafData, RunTerms} from "../src/interfaces/Types.sol";

/// @notice Opening commitments (RunRegistry.open / reportUnopened), the settlement gate on unresolved commitments,
///         and the issue-15 attacks opening stops: a root nobody can open for (run, round, solver) is never attested
///         and its solver is slashed, all of it to the reward pool.
contract OpeningTest is Fixture {
    uint256 internal runId;
    address internal attacker;

    function setUp() public override {
        super.setUp();
        autoOpen = false; // every opening and report here is explicit
        runId = createRun(defaultConfig());
        joinSolvers(runId, 3);
        registerVerifiers(runId, 4);
        attacker = solvers[1];
    }

    // ------------------------------------------------------------------ helpers

    function _faultKey(uint64 round, address solver) internal view returns (bytes32) {
        return keccak256(abi.encode(Constants.FAULT_SOLVER, runId, round, solver));
    }

    function _openCall(
        uint256 id,
        uint64 round,
        address solver,
        CommitmentData memory c,
        LeafData[] memory leaves,
        bytes32[][] memory proofs
    ) internal pure returns (bytes memory) {
        return abi.encodeCall(RunRegistry.open, (id, round, solver, c, leaves, proofs));
    }

    /// @dev `opener` opens `solver`'s round-0 commitment, expecting CommitmentOpened with the exact call data.
    function _openAs(
        address opener,
        uint256 id,
        address solver,
        CommitmentData memory c,
        LeafData[] memory leaves,
        bytes32[][] memory proofs
    ) internal {
        vm.expectEmit(address(reg));
        emit RunRegistry.CommitmentOpened(id, 0, solver, opener, _openCall(id, 0, solver, c, leaves, proofs));
        vm.prank(opener);
        reg.open(id, 0, solver, c, leaves, proofs);
    }

    /// @dev `n` made-up leaves with empty proofs: all an attacker without a tree can offer.
    function _madeUpOpening(uint256 n) internal pure returns (LeafData[] memory leaves, bytes32[][] memory proofs) {
        leaves = new LeafData[](n);
        proofs = new bytes32[][](n);
        for (uint256 k; k < n; ++k) {
            leaves[k] = LeafData(keccak256(abi.encode("s", k)), keccak256(abi.encode("e", k)), bytes32(0), 1000);
        }
    }

    /// @dev Entries an opening of the current round has: min(verifiersPerCommitment, verifierCount) x samples.
    function _entries(uint256 id) internal view returns (uint256) {
        uint64 round = reg.roundTimes(id).round;
        IRunRegistry.RunParams memory p = reg.runParams(id);
        uint256 count = ver.roundSeed(id, round).verifierCount;
        return (p.verifiers < count ? p.verifiers : count) * p.samples;
    }

    function _commitRaw(address solver, CommitmentData memory c) internal {
        uint64 round = reg.roundTimes(runId).round;
        vm.prank(solver);
        reg.commit(runId, round, c.root, c.deltaHash, c.tokens);
    }

    function _toAttest() internal {
        warpToAttest(runId);
        drawSeed(runId);
    }

    function _postClaimAndWait(uint256 id) internal {
        warpToClaim(id);
        vm.prank(creator);
        reg.postClaim{value: 2 ether}(id, reg.roundTimes(id).round, keccak256("theta"));
        vm.warp(block.timestamp + WINDOW);
    }

    /// @dev The second half of every attack: `bad` (the attacker's commitment of the current round) cannot be opened
    ///      (the caller showed that), so a colluding verifier cannot pass it; the round does not settle until it is
    ///      reported; the report slashes solverMinStake, all of it to the pool (none to the reporter); a second report
    ///      fails; after settlement the honest solver (solvers[0], commitment `honest`, opened) gets the whole solver
    ///      share and the attacker nothing.
    function _attackerSlashedAndUnpaid(CommitmentData memory honest, CommitmentData memory bad) internal {
        uint64 round = reg.roundTimes(runId).round;
        AttestationRef memory colluded = refOf(runId, attacker, 0);
        (address colluder,) = ver.assignedVerifier(colluded);
        vm.deal(colluder, colluder.balance + 1 ether);
        vm.prank(colluder);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.NotOpened.selector, runId, round, attacker));
        ver.attestPass{value: 1 ether}(colluded, bad);
        attestMajorityAs(runId, solvers[0], honest);

        _postClaimAndWait(runId);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.CommitmentsUnresolved.selector, 1));
        reg.settle(runId, round);

        uint256 stake = sm.bondedOf(attacker, Constants.ROLE_SOLVER);
        uint256 pool = shares.pool(runId);
        uint256 reporterBalance = outsider.balance;
        uint256 registryBalance = address(reg).balance;
        vm.expectEmit(address(reg));
        emit RunRegistry.CommitmentUnopened(runId, round, attacker, outsider, true);
        vm.expectEmit(address(reg));
        emit RunRegistry.UnopenedSlashed(runId, round, attacker, _faultKey(round, attacker), 10 ether);
        vm.prank(outsider);
        reg.reportUnopened(runId, round, attacker);
        assertEq(stake - sm.bondedOf(attacker, Constants.ROLE_SOLVER), 10 ether, "solverMinStake slashed");
        assertEq(shares.pool(runId) - pool, 10 ether, "all of it to the pool");
        assertEq(outsider.balance, reporterBalance, "nothing to the reporter");
        assertEq(address(reg).balance, registryBalance, "the registry keeps none of it");
        assertEq(uint8(reg.openingOf(runId, round, attacker)), uint8(IRunRegistry.Opening.Unopened));
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.AlreadyResolved.selector, IRunRegistry.Opening.Unopened));
        reg.reportUnopened(runId, round, attacker);

        reg.settle(runId, round);
        uint256 before = tokenOf(runId).balanceOf(solvers[0]);
        ver.claimSolverShares(runId, round, solvers[0]);
        assertEq(tokenOf(runId).balanceOf(solvers[0]) - before, 600e18, "the honest solver gets the whole share");
        vm.expectRevert(abi.encodeWithSelector(Verification.NotAccepted.selector, runId, round, attacker));
        ver.claimSolverShares(runId, round, attacker);
    }

    // ------------------------------------------------------------------ open

    function test_open_honestOneSeat_succeeds() public {
        RunTerms memory cfg = defaultConfig();
        cfg.verifiersPerCommitment = 1;
        uint256 id = createRun(cfg);
        joinSolvers(id, 2);
        registerVerifiers(id, 4);
        CommitmentData memory c = commitAs(id, solvers[0]);
        commitAs(id, solvers[1]);
        assertEq(reg.runState(id).unresolved, 2);
        warpToAttest(id);
        drawSeed(id);
        (LeafData[] memory leaves, bytes32[][] memory proofs) = buildOpening(id, 0, solvers[0]);
        assertEq(leaves.length, 2, "one seat x two samples");
        _openAs(solvers[0], id, solvers[0], c, leaves, proofs);
        assertEq(uint8(reg.openingOf(id, 0, solvers[0])), uint8(IRunRegistry.Opening.Opened));
        assertEq(uint8(reg.openingOf(id, 0, solvers[1])), uint8(IRunRegistry.Opening.None));
        assertEq(reg.runState(id).unresolved, 1, "one commitment left to resolve");
        reg.checkCommitment(id, 0, solvers[0], c); // attestable now
        attestPassAs(refOf(id, solvers[0], 0), c);
        assertEq(ver.roundTally(id, 0).paidCommitments, 1, "the opened commitment's tokens are accepted");
    }

    function test_open_honestThreeSeatsTwoSamples_succeeds() public {
        CommitmentData memory c = commitAs(runId, solvers[0]);
        _toAttest();
        (LeafData[] memory leaves, bytes32[][] memory proofs) = buildOpening(runId, 0, solvers[0]);
        assertEq(leaves.length, 6, "three seats x two samples");
        for (uint256 k; k < 6; ++k) {
            (LeafData memory leaf,) =
                leafAt(runId, 0, solvers[0], ver.sampledSegment(runId, 0, solvers[0], uint8(k / 2), k % 2));
            assertEq(leaves[k].endHash, leaf.endHash, "seat-major: entry q * samples + j is draw j of seat q");
        }
        _openAs(solvers[0], runId, solvers[0], c, leaves, proofs);
        assertEq(uint8(reg.openingOf(runId, 0, solvers[0])), uint8(IRunRegistry.Opening.Opened));
        assertEq(reg.runState(runId).unresolved, 0);
        for (uint8 slot; slot < 3; ++slot) {
            attestPassAs(refOf(runId, solvers[0], slot), c);
        }
        assertEq(ver.commitmentStatusOf(runId, 0, solvers[0]).passes, 3);
        assertTrue(ver.commitmentStatusOf(runId, 0, solvers[0]).attested);
    }

    /// @dev Any seats x samples within MAX_OPENED_LEAVES, with 0..6 verifiers in the list (seats = min(v, count)).
    function testFuzz_open_anySeatsAndSamples_succeeds(uint256 verifiersSeed, uint256 samplesSeed, uint256 listSeed)
        public
    {
        RunTerms memory cfg = defaultConfig();
        cfg.verifiersPerCommitment = uint8(bound(verifiersSeed, 1, Constants.MAX_VERIFIERS_PER_COMMITMENT));
        cfg.samplesPerCommitment =
            uint16(bound(samplesSeed, 1, Constants.MAX_OPENED_LEAVES / cfg.verifiersPerCommitment));
        uint256 listed = bound(listSeed, 0, 6);
        uint256 id = createRun(cfg);
        joinSolvers(id, 1);
        registerVerifiers(id, listed);
        CommitmentData memory c = commitAs(id, solvers[0]);
        warpToAttest(id);
        drawSeed(id);
        uint256 seats = cfg.verifiersPerCommitment < listed ? cfg.verifiersPerCommitment : listed;
        assertEq(_entries(id), seats * cfg.samplesPerCommitment);
        openCommitment(id, solvers[0], c);
        assertEq(uint8(reg.openingOf(id, 0, solvers[0])), uint8(IRunRegistry.Opening.Opened));
        assertEq(reg.runState(id).unresolved, 0);
    }

    /// @dev The entries must be seat-major: the same leaves sample-major fail at the first entry whose segment
    ///      differs.
    function test_open_sampleMajorOrder_reverts() public {
        CommitmentData memory c = commitAs(runId, solvers[0]);
        _toAttest();
        (LeafData[] memory leaves, bytes32[][] memory proofs) = buildOpening(runId, 0, solvers[0]);
        LeafData[] memory swapped = new LeafData[](6);
        bytes32[][] memory swappedProofs = new bytes32[][](6);
        uint256 first = type(uint256).max;
        for (uint256 k; k < 6; ++k) {
            uint256 from = (k % 3) * 2 + k / 3; // entry k sample-major: draw k / 3 of seat k % 3
            swapped[k] = leaves[from];
            swappedProofs[k] = proofs[from];
            if (first == type(uint256).max && leaves[from].endHash != leaves[k].endHash) first = k;
        }
        assertTrue(first != type(uint256).max, "both orders name the same segments");
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.InvalidLeafProof.selector, first));
        reg.open(runId, 0, solvers[0], c, swapped, swappedProofs);
    }

    function test_open_seedNotDrawn_reverts() public {
        CommitmentData memory c = commitAs(runId, solvers[0]);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.SeedNotDrawn.selector, runId, 0));
        reg.open(runId, 0, solvers[0], c, new LeafData[](0), new bytes32[][](0)); // in the commit window
        warpToAttest(runId);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.SeedNotDrawn.selector, runId, 0));
        reg.open(runId, 0, solvers[0], c, new LeafData[](0), new bytes32[][](0));
    }

    function test_open_lastSecondBeforeOpenEnd_succeeds() public {
        CommitmentData memory c = commitAs(runId, solvers[0]);
        _toAttest();
        vm.warp(reg.roundTimes(runId).openEnd - 1);
        openCommitment(runId, solvers[0], c);
        assertEq(uint8(reg.openingOf(runId, 0, solvers[0])), uint8(IRunRegistry.Opening.Opened));
    }

    function testFuzz_open_afterOpenEnd_reverts(uint256 wait) public {
        CommitmentData memory c = commitAs(runId, solvers[0]);
        _toAttest();
        (LeafData[] memory leaves, bytes32[][] memory proofs) = buildOpening(runId, 0, solvers[0]);
        uint256 openEnd = reg.roundTimes(runId).openEnd;
        vm.warp(bound(wait, openEnd, openEnd + 30 days));
        vm.prank(solvers[0]);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.OpenWindowClosed.selector, openEnd));
        reg.open(runId, 0, solvers[0], c, leaves, proofs);
    }

    function testFuzz_open_wrongLength_reverts(uint256 leavesSeed, uint256 proofsSeed) public {
        CommitmentData memory c = commitAs(runId, solvers[0]);
        _toAttest();
        (LeafData[] memory all, bytes32[][] memory allProofs) = buildOpening(runId, 0, solvers[0]);
        uint256 nLeaves = bound(leavesSeed, 0, 12);
        uint256 nProofs = bound(proofsSeed, 0, 12);
        if (nLeaves == 6 && nProofs == 6) nLeaves = leavesSeed % 2 == 0 ? 5 : 7;
        LeafData[] memory leaves = new LeafData[](nLeaves);
        bytes32[][] memory proofs = new bytes32[][](nProofs);
        for (uint256 k; k < nLeaves && k < 6; ++k) {
            leaves[k] = all[k];
        }
        for (uint256 k; k < nProofs && k < 6; ++k) {
            proofs[k] = allProofs[k];
        }
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.WrongOpeningLength.selector, nLeaves, nProofs, 6));
        reg.open(runId, 0, solvers[0], c, leaves, proofs);
    }

    function test_open_wrongCommitmentFields_reverts() public {
        CommitmentData memory c = commitAs(runId, solvers[0]);
        CommitmentData memory other = commitAs(runId, solvers[2]);
        _toAttest();
        (LeafData[] memory leaves, bytes32[][] memory proofs) = buildOpening(runId, 0, solvers[0]);
        CommitmentData[4] memory wrong = [
            CommitmentData(c.root, c.deltaHash, c.tokens + 1),
            CommitmentData(c.root, keccak256("another delta"), c.tokens),
            CommitmentData(keccak256("another root"), c.deltaHash, c.tokens),
            other
        ];
        for (uint256 i; i < wrong.length; ++i) {
            vm.expectRevert(abi.encodeWithSelector(RunRegistry.CommitmentMismatch.selector, runId, 0, solvers[0]));
            reg.open(runId, 0, solvers[0], wrong[i], leaves, proofs);
        }
    }

    function test_open_twice_reverts() public {
        CommitmentData memory c = commitAs(runId, solvers[0]);
        _toAttest();
        openCommitment(runId, solvers[0], c);
        (LeafData[] memory leaves, bytes32[][] memory proofs) = buildOpening(runId, 0, solvers[0]);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.AlreadyResolved.selector, IRunRegistry.Opening.Opened));
        reg.open(runId, 0, solvers[0], c, leaves, proofs);
        assertEq(reg.runState(runId).unresolved, 0, "resolved once");
    }

    /// @dev Entry k replaced by a committed leaf of another segment (with its valid proof), or by a tampered leaf.
    function testFuzz_open_leafOfOtherSegment_reverts(uint256 entrySeed, uint256 segmentSeed, bool tamper) public {
        CommitmentData memory c = commitAs(runId, solvers[0]);
        _toAttest();
        (LeafData[] memory leaves, bytes32[][] memory proofs) = buildOpening(runId, 0, solvers[0]);
        uint256 k = bound(entrySeed, 0, 5);
        uint256 sampled = ver.sampledSegment(runId, 0, solvers[0], uint8(k / 2), k % 2);
        if (tamper) {
            leaves[k].sketchHash = keccak256("not what was committed");
        } else {
            uint256 segment = bound(segmentSeed, 0, 7);
            if (segment == sampled) segment = (segment + 1) % 8;
            (leaves[k], proofs[k]) = leafAt(runId, 0, solvers[0], segment);
        }
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.InvalidLeafProof.selector, k));
        reg.open(runId, 0, solvers[0], c, leaves, proofs);
    }

    function test_open_wrongRound_reverts() public {
        CommitmentData memory c = commitAs(runId, solvers[0]);
        _toAttest();
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.WrongRound.selector, 1, 0));
        reg.open(runId, 1, solvers[0], c, new LeafData[](0), new bytes32[][](0));
    }

    function test_open_finishedRun_reverts() public {
        RunTerms memory cfg = defaultConfig();
        cfg.maxRounds = 1;
        uint256 id = createRun(cfg);
        _postClaimAndWait(id);
        reg.settle(id, 0);
        CommitmentData memory c;
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.RunIsFinished.selector, id));
        reg.open(id, 1, solvers[0], c, new LeafData[](0), new bytes32[][](0));
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.RunIsFinished.selector, id));
        reg.reportUnopened(id, 1, solvers[0]);
    }

    /// @dev A third party holding the leaves opens for the solver (who serves nothing itself): the solver is
    ///      attested, paid and never slashed.
    function test_open_byThirdParty_succeeds() public {
        CommitmentData memory c = commitAs(runId, solvers[0]);
        _toAttest();
        uint256 stake = sm.bondedOf(solvers[0], Constants.ROLE_SOLVER);
        (LeafData[] memory leaves, bytes32[][] memory proofs) = buildOpening(runId, 0, solvers[0]);
        _openAs(outsider, runId, solvers[0], c, leaves, proofs);
        attestMajorityAs(runId, solvers[0], c);
        vm.warp(reg.roundTimes(runId).openEnd);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.AlreadyResolved.selector, IRunRegistry.Opening.Opened));
        reg.reportUnopened(runId, 0, solvers[0]);
        _postClaimAndWait(runId);
        reg.settle(runId, 0);
        ver.claimSolverShares(runId, 0, solvers[0]);
        assertEq(tokenOf(runId).balanceOf(solvers[0]), 600e18);
        assertEq(sm.bondedOf(solvers[0], Constants.ROLE_SOLVER), stake, "not slashed");
        assertFalse(sm.faultSlashed(_faultKey(0, solvers[0])));
    }

    /// @dev Opening is per round: the next commit resets it, and the new commitment is not attestable until opened.
    function test_openingOf_nextRoundCommitResets_succeeds() public {
        CommitmentData memory c = commitAs(runId, solvers[0]);
        _toAttest();
        openCommitment(runId, solvers[0], c);
        _postClaimAndWait(runId);
        reg.settle(runId, 0);
        assertEq(uint8(reg.openingOf(runId, 0, solvers[0])), uint8(IRunRegistry.Opening.Opened), "until it commits");
        CommitmentData memory next = commitAs(runId, solvers[0]);
        assertEq(uint8(reg.openingOf(runId, 1, solvers[0])), uint8(IRunRegistry.Opening.None));
        assertEq(uint8(reg.openingOf(runId, 0, solvers[0])), uint8(IRunRegistry.Opening.None), "latest round only");
        assertEq(reg.runState(runId).unresolved, 1);
        _toAttest();
        AttestationRef memory ref = refOf(runId, solvers[0], 0);
        (address verifier,) = ver.assignedVerifier(ref);
        vm.deal(verifier, 1 ether);
        vm.prank(verifier);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.NotOpened.selector, runId, 1, solvers[0]));
        ver.attestPass{value: 1 ether}(ref, next);
        openCommitment(runId, solvers[0], next);
        attestPassAs(ref, next);
    }

    function test_attestFail_unopened_reverts() public {
        CommitmentData memory c = commitAs(runId, solvers[0]);
        _toAttest();
        AttestationRef memory ref = refOf(runId, solvers[0], 0);
        (LeafData memory leaf, bytes32[] memory proof) = leafAt(runId, 0, solvers[0], sampleSegment(ref, 0));
        (address verifier,) = ver.assignedVerifier(ref);
        vm.deal(verifier, 1 ether);
        vm.prank(verifier);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.NotOpened.selector, runId, 0, solvers[0]));
        ver.attestFail{value: 1 ether}(ref, c, 0, leaf, proof);
    }

    // ------------------------------------------------------------------ issue 15: roots nobody can open

    /// @dev (a) A random root: no leaf of it can be proven.
    function test_open_randomRoot_slashedAndUnpaid_reverts() public {
        CommitmentData memory honest = commitAs(runId, solvers[0]);
        CommitmentData memory bad = CommitmentData(keccak256("random root"), keccak256("delta"), 8000);
        _commitRaw(attacker, bad);
        _toAttest();
        openCommitment(runId, solvers[0], honest);
        (LeafData[] memory leaves, bytes32[][] memory proofs) = _madeUpOpening(_entries(runId));
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.InvalidLeafProof.selector, 0));
        reg.open(runId, 0, attacker, bad, leaves, proofs);
        _attackerSlashedAndUnpaid(honest, bad);
    }

    /// @dev (b) Another solver's root of the same round, opened with that solver's leaves and proofs at the
    ///      attacker's sampled segments: the leaves bind the solver, so none verifies for the attacker.
    function test_open_rootCopiedFromOtherSolver_slashedAndUnpaid_reverts() public {
        CommitmentData memory honest = commitAs(runId, solvers[0]);
        _commitRaw(attacker, honest);
        _toAttest();
        openCommitment(runId, solvers[0], honest);
        (LeafData[] memory leaves, bytes32[][] memory proofs) = buildOpeningFrom(runId, 0, attacker, 0, solvers[0]);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.InvalidLeafProof.selector, 0));
        reg.open(runId, 0, attacker, honest, leaves, proofs);
        _attackerSlashedAndUnpaid(honest, honest);
    }

    /// @dev (c) The attacker's own root of the previous round (which it opened then): the leaves bind the round.
    function test_open_ownRootOfPreviousRound_slashedAndUnpaid_reverts() public {
        commitAs(runId, solvers[0]);
        CommitmentData memory previous = commitAs(runId, attacker);
        _toAttest();
        openCommitment(runId, solvers[0], _commitData[_key(runId, 0, solvers[0])]);
        openCommitment(runId, attacker, previous);
        _postClaimAndWait(runId);
        reg.settle(runId, 0);

        CommitmentData memory honest = commitAs(runId, solvers[0]);
        _commitRaw(attacker, previous);
        _toAttest();
        openCommitment(runId, solvers[0], honest);
        (LeafData[] memory leaves, bytes32[][] memory proofs) = buildOpeningFrom(runId, 1, attacker, 0, attacker);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.InvalidLeafProof.selector, 0));
        reg.open(runId, 1, attacker, previous, leaves, proofs);
        _attackerSlashedAndUnpaid(honest, previous);
    }

    /// @dev (d) A short document: a tree of the first M segments only (M the largest segment sampled for the
    ///      attacker, found by drawing the seed on a snapshot first) committed with the whole document's tokens.
    ///      Every entry sampling a segment below M opens; the first entry sampling segment M has no leaf.
    function test_open_shortDocument_slashedAndUnpaid_reverts() public {
        uint256 snap = vm.snapshotState();
        _toAttest();
        uint256[] memory segments = new uint256[](_entries(runId));
        uint256 missing;
        for (uint256 k; k < segments.length; ++k) {
            segments[k] = ver.sampledSegment(runId, 0, attacker, uint8(k / 2), k % 2);
            if (segments[k] > missing) missing = segments[k];
        }
        assertGt(missing, 0, "every draw sampled segment 0");
        vm.revertToState(snap);

        CommitmentData memory honest = commitAs(runId, solvers[0]);
        CommitmentData memory bad = buildCommitment(runId, 0, attacker, missing);
        bad.tokens = uint64(SEGMENT_TOKENS * reg.runParams(runId).numSegments); // claims the whole document
        _commitRaw(attacker, bad);
        _toAttest();
        openCommitment(runId, solvers[0], honest);
        LeafData[] memory leaves = new LeafData[](segments.length);
        bytes32[][] memory proofs = new bytes32[][](segments.length);
        uint256 firstMissing = type(uint256).max;
        for (uint256 k; k < segments.length; ++k) {
            assertEq(ver.sampledSegment(runId, 0, attacker, uint8(k / 2), k % 2), segments[k], "same seed");
            if (segments[k] < missing) {
                (leaves[k], proofs[k]) = leafAt(runId, 0, attacker, segments[k]);
            } else {
                // the best it has: its last leaf, and a made-up one
                (leaves[k], proofs[k]) = leafAt(runId, 0, attacker, missing - 1);
                leaves[k].startHash = keccak256("made up");
                if (firstMissing == type(uint256).max) firstMissing = k;
            }
        }
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.InvalidLeafProof.selector, firstMissing));
        reg.open(runId, 0, attacker, bad, leaves, proofs);
        _attackerSlashedAndUnpaid(honest, bad);
    }

    /// @dev (e) A random root claiming type(uint64).max tokens, with a colluding verifier ready to pass it: it
    ///      would take the whole solver share, but the pass reverts NotOpened.
    function test_open_randomRootMaxTokensColludingVerifier_slashedAndUnpaid_reverts() public {
        CommitmentData memory honest = commitAs(runId, solvers[0]);
        CommitmentData memory bad = CommitmentData(keccak256("random root"), keccak256("delta"), type(uint64).max);
        _commitRaw(attacker, bad);
        _toAttest();
        openCommitment(runId, solvers[0], honest);
        (LeafData[] memory leaves, bytes32[][] memory proofs) = _madeUpOpening(_entries(runId));
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.InvalidLeafProof.selector, 0));
        reg.open(runId, 0, attacker, bad, leaves, proofs);
        for (uint8 slot; slot < 3; ++slot) {
            AttestationRef memory ref = refOf(runId, attacker, slot);
            (address colluder,) = ver.assignedVerifier(ref);
            vm.deal(colluder, 1 ether);
            vm.prank(colluder);
            vm.expectRevert(abi.encodeWithSelector(RunRegistry.NotOpened.selector, runId, 0, attacker));
            ver.attestPass{value: 1 ether}(ref, bad);
        }
        _attackerSlashedAndUnpaid(honest, bad);
        assertEq(ver.roundTally(runId, 0).paidCommitments, 1, "only the honest tokens were accepted");
    }

    // ------------------------------------------------------------------ reportUnopened

    function test_reportUnopened_afterOpenEnd_slashesAllToPool_succeeds() public {
        commitAs(runId, solvers[0]);
        commitAs(runId, solvers[1]);
        _toAttest();
        uint256 openEnd = reg.roundTimes(runId).openEnd;
        vm.warp(openEnd);
        uint256 pool = shares.pool(runId);
        uint256 smBalance = address(sm).balance;
        vm.recordLogs();
        vm.prank(outsider);
        reg.reportUnopened(runId, 0, solvers[1]);
        Vm.Log[] memory logs = vm.getRecordedLogs();
        assertEq(sm.bondedOf(solvers[1], Constants.ROLE_SOLVER), 0, "solverMinStake slashed");
        assertEq(sm.slashedAmount(_faultKey(0, solvers[1])), 10 ether);
        assertEq(shares.pool(runId), pool + 10 ether);
        assertEq(address(sm).balance, smBalance - 10 ether);
        assertEq(address(reg).balance, 0, "nothing kept");
        assertEq(reg.runState(runId).unresolved, 1);
        assertEq(uint8(reg.openingOf(runId, 0, solvers[1])), uint8(IRunRegistry.Opening.Unopened));
        uint256 slashEvents;
        for (uint256 i; i < logs.length; ++i) {
            if (logs[i].emitter == address(reg) && logs[i].topics[0] == RunRegistry.UnopenedSlashed.selector) {
                ++slashEvents;
                (bytes32 key, uint256 taken) = abi.decode(logs[i].data, (bytes32, uint256));
                assertEq(key, _faultKey(0, solvers[1]));
                assertEq(taken, 10 ether);
            }
        }
        assertEq(slashEvents, 1);
    }

    /// @dev The solver reporting itself gets nothing back.
    function test_reportUnopened_bySolverItself_recoversNothing_succeeds() public {
        commitAs(runId, solvers[1]);
        _toAttest();
        vm.warp(reg.roundTimes(runId).openEnd);
        uint256 balance = solvers[1].balance;
        vm.prank(solvers[1]);
        reg.reportUnopened(runId, 0, solvers[1]);
        assertEq(solvers[1].balance, balance);
        assertEq(sm.bondedOf(solvers[1], Constants.ROLE_SOLVER), 0);
    }

    /// @dev Stake beyond the minimum stays; a stake partly unbonding is still slashed up to the minimum.
    function test_reportUnopened_reservedStakeCannotUnbond_slashedInFull_succeeds() public {
        stakeAs(solvers[1], Constants.ROLE_SOLVER, 5 ether);
        commitAs(runId, solvers[1]);
        vm.prank(solvers[1]);
        vm.expectRevert(
            abi.encodeWithSelector(StakeManager.InsufficientFreeStake.selector, 15 ether, 10 ether, 12 ether)
        );
        sm.requestUnbond(Constants.ROLE_SOLVER, 12 ether); // the run's 10 ether are reserved
        vm.prank(solvers[1]);
        sm.requestUnbond(Constants.ROLE_SOLVER, 5 ether);
        _toAttest();
        vm.warp(reg.roundTimes(runId).openEnd);
        uint256 pool = shares.pool(runId);
        reg.reportUnopened(runId, 0, solvers[1]);
        (uint256 bonded, uint256 unbonding,,) = sm.stakeOf(solvers[1], Constants.ROLE_SOLVER);
        assertEq(bonded, 0, "the reserved 10 ether were slashed");
        assertEq(unbonding, 5 ether, "the free 5 ether left untouched");
        assertEq(shares.pool(runId), pool + 10 ether);
    }

    function testFuzz_reportUnopened_beforeOpenEnd_reverts(uint256 wait) public {
        commitAs(runId, solvers[1]);
        _toAttest();
        uint256 openEnd = reg.roundTimes(runId).openEnd;
        vm.warp(bound(wait, block.timestamp, openEnd - 1));
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.OpenWindowOpen.selector, openEnd));
        reg.reportUnopened(runId, 0, solvers[1]);
    }

    function test_reportUnopened_duringCommitWindow_reverts() public {
        commitAs(runId, solvers[1]);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.OpenWindowOpen.selector, reg.roundTimes(runId).openEnd));
        reg.reportUnopened(runId, 0, solvers[1]);
    }

    function test_reportUnopened_opened_reverts() public {
        CommitmentData memory c = commitAs(runId, solvers[0]);
        _toAttest();
        openCommitment(runId, solvers[0], c);
        vm.warp(reg.roundTimes(runId).attestEnd);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.AlreadyResolved.selector, IRunRegistry.Opening.Opened));
        reg.reportUnopened(runId, 0, solvers[0]);
    }

    function test_reportUnopened_notCommitted_reverts() public {
        commitAs(runId, solvers[0]);
        _toAttest();
        vm.warp(reg.roundTimes(runId).openEnd);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.NotCommitted.selector, runId, 0, solvers[2]));
        reg.reportUnopened(runId, 0, solvers[2]); // joined, did not commit
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.NotCommitted.selector, runId, 0, outsider));
        reg.reportUnopened(runId, 0, outsider); // never joined
    }

    /// @dev A solver that committed in round 0 but not in round 1 has nothing to report in round 1.
    function test_reportUnopened_committedOnlyInPreviousRound_reverts() public {
        CommitmentData memory c = commitAs(runId, solvers[0]);
        _toAttest();
        openCommitment(runId, solvers[0], c);
        _postClaimAndWait(runId);
        reg.settle(runId, 0);
        _toAttest();
        vm.warp(reg.roundTimes(runId).openEnd);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.NotCommitted.selector, runId, 1, solvers[0]));
        reg.reportUnopened(runId, 1, solvers[0]);
    }

    function test_reportUnopened_pastRound_reverts() public {
        commitAs(runId, solvers[1]);
        _toAttest();
        vm.warp(reg.roundTimes(runId).openEnd);
        reg.reportUnopened(runId, 0, solvers[1]);
        _postClaimAndWait(runId);
        reg.settle(runId, 0);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.WrongRound.selector, 0, 1));
        reg.reportUnopened(runId, 0, solvers[1]);
    }

    /// @dev Seed never drawn: nobody could open, so the report waits for attestEnd (when drawing is over) ...
    function testFuzz_reportUnopened_seedNeverDrawnBeforeOpenEnd_reverts(uint256 wait) public {
        commitAs(runId, solvers[1]);
        IRunRegistry.RoundTimes memory t = reg.roundTimes(runId);
        vm.warp(bound(wait, t.commitEnd, t.openEnd - 1));
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.OpenWindowOpen.selector, t.openEnd));
        reg.reportUnopened(runId, 0, solvers[1]);
    }

    /// @dev The seed block mined only after openEnd (a chain slower than its blockSeconds per block): the seed can
    ///      no longer be drawn, so no solver can be slashed for not opening -- the commitments are only void.
    ///      (Before drawSeed closed at openEnd, a late draw made an honest solver's report a slash it could not
    ///      have avoided: open was already closed.)
    function test_reportUnopened_seedBlockAfterOpenEnd_voidNotSlashed_succeeds() public {
        commitAs(runId, solvers[0]);
        IRunRegistry.RoundTimes memory t = reg.roundTimes(runId);
        vm.warp(t.openEnd);
        vm.roll(t.seedBlock + 1);
        bytes memory header = seedHeader(runId);
        vm.expectRevert(abi.encodeWithSelector(Verification.OutsideDrawWindow.selector, t.commitEnd, t.openEnd));
        ver.drawSeed(runId, 0, header);
        vm.expectEmit(address(reg));
        emit RunRegistry.CommitmentUnopened(runId, 0, solvers[0], outsider, false);
        vm.prank(outsider);
        reg.reportUnopened(runId, 0, solvers[0]);
        assertEq(sm.bondedOf(solvers[0], Constants.ROLE_SOLVER), 10 ether, "an honest solver that could not open");
    }

    /// @dev ... and then only voids the commitment: no slash, nothing to the pool, and the round settles.
    function test_reportUnopened_seedNeverDrawn_voidWithoutSlash_succeeds() public {
        commitAs(runId, solvers[0]);
        commitAs(runId, solvers[1]);
        IRunRegistry.RoundTimes memory t = reg.roundTimes(runId);
        vm.warp(t.openEnd);
        vm.roll(t.seedBlock + Constants.SEED_HORIZON_BLOCKS + 1);
        uint256 pool = shares.pool(runId);
        vm.recordLogs();
        for (uint256 i; i < 2; ++i) {
            vm.expectEmit(address(reg));
            emit RunRegistry.CommitmentUnopened(runId, 0, solvers[i], outsider, false);
            vm.prank(outsider);
            reg.reportUnopened(runId, 0, solvers[i]);
            assertEq(sm.bondedOf(solvers[i], Constants.ROLE_SOLVER), 10 ether, "stake unchanged");
            assertFalse(sm.faultSlashed(_faultKey(0, solvers[i])));
            assertEq(uint8(reg.openingOf(runId, 0, solvers[i])), uint8(IRunRegistry.Opening.Unopened));
        }
        Vm.Log[] memory logs = vm.getRecordedLogs();
        for (uint256 i; i < logs.length; ++i) {
            assertTrue(logs[i].topics[0] != RunRegistry.UnopenedSlashed.selector, "no slash");
        }
        assertEq(shares.pool(runId), pool);
        assertEq(reg.runState(runId).unresolved, 0);
        _postClaimAndWait(runId);
        reg.settle(runId, 0);
        assertTrue(reg.isSettled(runId, 0));
        vm.expectRevert(abi.encodeWithSelector(Verification.NotAccepted.selector, runId, 0, solvers[0]));
        ver.claimSolverShares(runId, 0, solvers[0]);
    }

    // ------------------------------------------------------------------ commit, settle, views, config

    function test_commit_countsUnresolved_succeeds() public {
        CommitmentData memory c0 = commitAs(runId, solvers[0]);
        commitAs(runId, solvers[1]);
        commitAs(runId, solvers[2]);
        assertEq(reg.runState(runId).unresolved, 3);
        _toAttest();
        openCommitment(runId, solvers[0], c0);
        assertEq(reg.runState(runId).unresolved, 2);
        vm.warp(reg.roundTimes(runId).openEnd);
        reg.reportUnopened(runId, 0, solvers[1]);
        assertEq(reg.runState(runId).unresolved, 1);
        reg.reportUnopened(runId, 0, solvers[2]);
        assertEq(reg.runState(runId).unresolved, 0);
    }

    /// @dev `unresolved` is a uint16: the 65,536th commitment of a round is refused rather than wrapping the count.
    function test_commit_unresolvedAtMax_reverts() public {
        bytes32 slot = keccak256(abi.encode(runId, uint256(1))); // _state[runId]: unresolved is its top 16 bits
        vm.store(address(reg), slot, vm.load(address(reg), slot) | bytes32(uint256(type(uint16).max) << 240));
        assertEq(reg.runState(runId).unresolved, type(uint16).max);
        CommitmentData memory c = buildCommitment(runId, 0, solvers[0], 8);
        vm.prank(solvers[0]);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.TooManyCommitments.selector, runId, 0));
        reg.commit(runId, 0, c.root, c.deltaHash, c.tokens);
    }

    function test_settle_unresolvedCommitments_reverts() public {
        commitAs(runId, solvers[0]);
        commitAs(runId, solvers[1]);
        _toAttest();
        _postClaimAndWait(runId);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.CommitmentsUnresolved.selector, 2));
        reg.settle(runId, 0);
        reg.reportUnopened(runId, 0, solvers[0]);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.CommitmentsUnresolved.selector, 1));
        reg.settle(runId, 0);
        reg.reportUnopened(runId, 0, solvers[1]);
        reg.settle(runId, 0);
        assertTrue(reg.isSettled(runId, 0));
    }

    function testFuzz_roundTimes_openEndHalfAttestWindow_succeeds(uint256 attestSeed) public {
        RunTerms memory cfg = defaultConfig();
        // every attest window that fits the fixture's chain, its commit window being whole blocks (Windows.t.sol)
        cfg.attestWindow =
            uint32(bound(attestSeed, 6 * BLOCK_SECONDS, 2 * (Constants.SEED_HORIZON_BLOCKS + 1) * BLOCK_SECONDS + 1));
        uint256 id = createRun(cfg);
        IRunRegistry.RoundTimes memory t = reg.roundTimes(id);
        assertEq(t.openEnd, t.commitEnd + cfg.attestWindow / 2);
        assertLe(t.openEnd, t.attestEnd);
        assertGe(t.openEnd, t.commitEnd);
        _postClaimAndWait(id);
        reg.settle(id, 0);
        t = reg.roundTimes(id);
        assertEq(t.openEnd, block.timestamp + WINDOW + cfg.attestWindow / 2, "round 1: from its own start");
    }

    function test_createRun_solverMinStakeAboveUint88_reverts() public {
        RunTerms memory cfg = defaultConfig();
        cfg.solverMinStake = uint96(type(uint88).max) + 1;
        vm.expectRevert(
            abi.encodeWithSelector(RunRegistry.InvalidConfig.selector, "solverMinStake must be below 2^88 wei")
        );
        reg.createRun(cfg);
        cfg.solverMinStake = type(uint88).max;
        uint256 id = reg.createRun(cfg);
        assertEq(reg.solverMinStake(id), type(uint88).max, "stored without truncation");
    }

    function testFuzz_createRun_openedLeavesWithinBound_succeeds(uint256 verifiersSeed, uint256 samplesSeed) public {
        RunTerms memory cfg = defaultConfig();
        cfg.verifiersPerCommitment = uint8(bound(verifiersSeed, 1, Constants.MAX_VERIFIERS_PER_COMMITMENT));
        cfg.samplesPerCommitment =
            uint16(bound(samplesSeed, 1, Constants.MAX_OPENED_LEAVES / cfg.verifiersPerCommitment));
        uint256 id = reg.createRun(cfg);
        assertEq(reg.runParams(id).samples, cfg.samplesPerCommitment);
    }

    function testFuzz_createRun_openedLeavesAboveBound_reverts(uint256 verifiersSeed, uint256 samplesSeed) public {
        RunTerms memory cfg = defaultConfig();
        cfg.verifiersPerCommitment = uint8(bound(verifiersSeed, 1, Constants.MAX_VERIFIERS_PER_COMMITMENT));
        cfg.samplesPerCommitment = uint16(
            bound(samplesSeed, Constants.MAX_OPENED_LEAVES / cfg.verifiersPerCommitment + 1, Constants.MAX_SAMPLES)
        );
        vm.expectRevert(
            abi.encodeWithSelector(
                RunRegistry.InvalidConfig.selector,
                "samplesPerCommitment * verifiersPerCommitment exceeds MAX_OPENED_LEAVES"
            )
        );
        reg.createRun(cfg);
    }

    function test_receive_fromOutsider_reverts() public {
        vm.prank(outsider);
        (bool ok, bytes memory data) = address(reg).call{value: 1 ether}("");
        assertFalse(ok);
        assertEq(data, abi.encodeWithSelector(RunRegistry.UnexpectedEther.selector, outsider));
    }
}
