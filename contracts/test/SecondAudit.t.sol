// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Constants} from "../src/Constants.sol";
import {FaultRewards} from "../src/FaultRewards.sol";
import {Verification} from "../src/Verification.sol";
import {AttestationRef, CommitmentData, DisputeSubject} from "../src/interfaces/Types.sol";
import {Fixture} from "./utils/Fixture.sol";

/// @notice The second audit's attacks on Verification's pay and seats (issue 36, findings 1, 5, 7 and 8), each
///         played as the attacker would against the fixed contracts, with the old rule's outcome on the same inputs
///         computed or asserted beside it. The plant findings (2, 3, 6, 9) are in Plants.t.sol, the blocking
///         minority (5) in JuryAttacks.t.sol, the block time (4) in Windows.t.sol, peer URLs (10) in
///         PeerDirectory.t.sol.
contract SecondAuditTest is Fixture {
    uint256 internal runId;
    /// @dev The round's solver bucket at the default terms: 1000e18 * 6000 / 10^4.
    uint256 internal constant BUCKET = 600e18;

    function setUp() public override {
        super.setUp();
        registerJurors(8);
        runId = createRun(defaultConfig());
        joinSolvers(runId, 2);
        registerVerifiers(runId, 5);
    }

    function _ref(address solver, uint8 slot) internal view returns (AttestationRef memory) {
        return refOf(runId, solver, slot);
    }

    /// @dev commitAs with a declared token count of the attacker's choosing (the leaves stay as built).
    function _commitDeclaring(address solver, uint64 tokens) internal returns (CommitmentData memory c) {
        c = buildCommitment(runId, 0, solver, reg.runParams(runId).numSegments);
        c.tokens = tokens;
        vm.prank(solver);
        reg.commit(runId, 0, c.root, c.deltaHash, c.tokens);
        _committers[runId][0].push(solver);
        _commitData[_key(runId, 0, solver)] = c;
    }

    function _settle() internal {
        warpToClaim(runId);
        claimAndSettle(runId, keccak256("theta1"));
    }

    // ------------------------------------------------------------------ finding 1: declared tokens

    /// Finding 1: pay was bucket * tokens / totalTokens with `tokens` as declared at commit; a solver wrote 2^64 - 8001
    /// tokens into a leaf no seat sampled and took 599.999e18 of the 600e18 solver shares. Now every paid commitment
    /// gets the same share: the tokens a commitment trains on follow from the run's terms (H steps of a fixed batch).
    function test_claimSolverShares_inflatedDeclaredTokens_paysEqualShares_succeeds() public {
        CommitmentData memory honest = commitAs(runId, solvers[0]);
        uint64 inflated = type(uint64).max - 8000;
        CommitmentData memory cheat = _commitDeclaring(solvers[1], inflated);
        warpToAttest(runId);
        drawSeed(runId);
        attestMajorityAs(runId, solvers[0], honest);
        attestMajorityAs(runId, solvers[1], cheat);
        _settle();
        ver.claimSolverShares(runId, 0, solvers[0]);
        ver.claimSolverShares(runId, 0, solvers[1]);
        // the old rule on the same inputs: bucket * tokens / (sum of accepted tokens)
        uint256 total = uint256(honest.tokens) + inflated;
        assertGt(BUCKET * inflated / total, 599.99e18, "old rule: the inflated claim took almost the whole bucket");
        assertLt(BUCKET * honest.tokens / total, 0.01e18, "old rule: the honest solver got dust");
        assertEq(ver.roundTally(runId, 0).paidCommitments, 2);
        assertEq(tokenOf(runId).balanceOf(solvers[0]), BUCKET / 2, "new rule: an equal half each");
        assertEq(tokenOf(runId).balanceOf(solvers[1]), BUCKET / 2, "declaring more tokens earns nothing more");
    }

    function testFuzz_claimSolverShares_anyDeclaredTokens_equalShares_succeeds(uint64 a, uint64 b) public {
        a = uint64(bound(a, 1, type(uint64).max));
        b = uint64(bound(b, 1, type(uint64).max));
        CommitmentData memory ca = _commitDeclaring(solvers[0], a);
        CommitmentData memory cb = _commitDeclaring(solvers[1], b);
        warpToAttest(runId);
        drawSeed(runId);
        attestPassAs(_ref(solvers[0], 1), ca);
        attestPassAs(_ref(solvers[1], 1), cb);
        attestMajorityAs(runId, solvers[0], ca); // tops up seat 0: a majority of the 3 seats (issue 37)
        attestMajorityAs(runId, solvers[1], cb);
        _settle();
        ver.claimSolverShares(runId, 0, solvers[0]);
        ver.claimSolverShares(runId, 0, solvers[1]);
        assertEq(tokenOf(runId).balanceOf(solvers[0]), tokenOf(runId).balanceOf(solvers[1]));
        assertLe(2 * (BUCKET / 2), BUCKET, "the mints stay inside the bucket");
    }

    // ------------------------------------------------------------------ finding 5: front-running accomplice

    /// Finding 5: the cheater's accomplice challenges the coalition's own lazy pass first. Before, it took the dispute's
    /// winner share AND, as the overturned pass's prover, the provers' half of the cheater's slash. Now a challenger of a
    /// pass is paid from the wrong attester's forfeits only; the solver's slash goes to the fault's fail provers (or the
    /// pool), so the coalition (solver 10 + verifier 5 + bond 1 = 16 ETH lost) recovers 3 ETH, not 8.
    function test_claimFaultReward_accompliceChallengesOwnLazyPass_recoversForfeitShareOnly_succeeds() public {
        CommitmentData memory cheat = commitAs(runId, solvers[1]);
        commitAs(runId, solvers[0]);
        warpToAttest(runId);
        drawSeed(runId);
        address lazy = attestPassAs(_ref(solvers[1], 0), cheat);
        address accomplice = makeAddr("accomplice");
        DisputeSubject memory s = challengeAs(accomplice, _ref(solvers[1], 0), cheat, 0);
        drawJury(s);
        decide(s, true, 0);
        dis.execute(s);
        assertEq(sm.bondedOf(solvers[1], Constants.ROLE_SOLVER), 0, "the cheater is slashed");
        assertEq(sm.bondedOf(lazy, Constants.ROLE_VERIFIER), 0, "the lazy verifier is slashed");
        // winner share: WINNER_REWARD_BPS of (bond 1 + stake 5) = 3 ETH, plus its own bond back
        assertEq(dis.credits(accomplice), 2 ether + 3 ether, "bond back + half the wrong attester's forfeits");
        _settle();
        AttestationRef memory pass = AttestationRef(runId, 0, solvers[1], 0);
        vm.expectRevert(abi.encodeWithSelector(Verification.NotAProver.selector, uint8(0)));
        faults.claimFaultReward(pass);
        FaultRewards.FaultReward memory f = faults.faultRewardOf(runId, 0, solvers[1]);
        assertEq(f.amount, 5 ether, "old rule: these 5 ETH were the accomplice's as the pass's prover");
        assertEq(f.paid, 0, "new rule: nobody but a fail prover claims them; unclaimed, they are swept to the pool");
    }

    /// The same attack with an honest fail on another seat: the honest prover gets all of the provers' half.
    function test_claimFaultReward_accompliceAndHonestFail_honestGetsProversHalf_succeeds() public {
        CommitmentData memory cheat = commitAs(runId, solvers[1]);
        warpToAttest(runId);
        drawSeed(runId);
        attestPassAs(_ref(solvers[1], 0), cheat);
        address honest = attestFailAs(_ref(solvers[1], 1), cheat, 0);
        DisputeSubject memory s = challengeAs(makeAddr("accomplice"), _ref(solvers[1], 0), cheat, 0);
        drawJury(s);
        decide(s, true, 0);
        dis.execute(s);
        AttestationRef memory fail = _ref(solvers[1], 1);
        warpToClaim(runId);
        ver.finalize(fail);
        claimAndSettle(runId, keccak256("theta1"));
        faults.claimFaultReward(fail);
        assertEq(faults.credits(honest), 5 ether, "the one fail prover takes the provers' half (before: 2.5)");
    }

    // ------------------------------------------------------------------ finding 7: overturned verifier keeps seats

    /// Finding 7: a verifier overturned early in a round kept its other seats of the round (the snapshot still names it)
    /// with its reservation released and its stake gone, so its (empty) stake still "covered" its reservations; a second
    /// wrong pass cost it only the bond. Now its reservation stays through the exit delay: uncovered, it attests nothing
    /// until it tops up, and then its new stake backs the seat.
    function test_attestPass_overturnedVerifierSecondSeat_reverts() public {
        CommitmentData memory c0 = commitAs(runId, solvers[0]);
        CommitmentData memory c1 = commitAs(runId, solvers[1]);
        warpToAttest(runId);
        drawSeed(runId);
        // find a verifier holding a seat on both commitments
        (address v, uint8 slot0, uint8 slot1) = _sharedVerifier();
        attestPassAs(_ref(solvers[0], slot0), c0);
        DisputeSubject memory s = challengeAs(outsider, _ref(solvers[0], slot0), c0, 0);
        drawJury(s);
        decide(s, true, 0);
        dis.execute(s);
        assertTrue(vreg.isReserved(runId, v), "overturned: out of the list, its reservation kept for the exit delay");
        assertEq(sm.bondedOf(v, Constants.ROLE_VERIFIER), 0, "its stake is gone");
        uint256 bond = reg.runParams(runId).attestationBond;
        AttestationRef memory second = _ref(solvers[1], slot1);
        vm.deal(v, bond);
        vm.prank(v);
        vm.expectRevert(abi.encodeWithSelector(Verification.StakeNotCovered.selector, v));
        ver.attestPass{value: bond}(second, c1);
        stakeAs(v, Constants.ROLE_VERIFIER, 5 ether); // topped up: the seat is backed by stake again
        vm.deal(v, bond);
        vm.prank(v);
        ver.attestPass{value: bond}(second, c1);
    }

    function _sharedVerifier() internal view returns (address v, uint8 slot0, uint8 slot1) {
        for (uint8 a; a < 3; ++a) {
            (address va,) = ver.assignedVerifier(_ref(solvers[0], a));
            for (uint8 b; b < 3; ++b) {
                (address vb,) = ver.assignedVerifier(_ref(solvers[1], b));
                if (va == vb) return (va, a, b);
            }
        }
        revert("no verifier holds a seat on both commitments (3 of 5 seats each: impossible)");
    }

    // ------------------------------------------------------------------ finding 8: free abstention

    /// Finding 8: a coalition verifier holding every seat it drew on a competitor's commitment stays silent; the
    /// competitor is not accepted, and the coalition solver's share doubles. Now each silent seat of an opened
    /// commitment can be reported after attestEnd: its verifier pays the attestation bond into the reward pool.
    function test_reportAbstention_silentSeatOnCompetitor_chargesTheBond_succeeds() public {
        CommitmentData memory own = commitAs(runId, solvers[0]);
        commitAs(runId, solvers[1]); // opened by the fixture's drawSeed (autoOpen), never attested
        warpToAttest(runId);
        drawSeed(runId);
        attestPassAs(_ref(solvers[0], 0), own);
        AttestationRef memory silent = _ref(solvers[1], 0);
        AttestationRef memory attested = _ref(solvers[0], 0);
        AttestationRef memory late = _ref(solvers[1], 1);
        (address abstainer,) = ver.assignedVerifier(silent);
        vm.expectRevert(); // not before attestEnd: the seat can still attest
        ver.reportAbstention(silent);
        vm.warp(reg.roundTimes(runId).attestEnd);
        uint256 stake = sm.bondedOf(abstainer, Constants.ROLE_VERIFIER);
        uint256 pool = shares.pool(runId);
        vm.expectEmit(address(ver));
        emit Verification.AbstentionReported(runId, 0, solvers[1], 0, abstainer, solvers[1], 1 ether);
        vm.prank(solvers[1]); // self-defence: the solver reports the seats left silent on its own work
        ver.reportAbstention(silent);
        assertEq(sm.bondedOf(abstainer, Constants.ROLE_VERIFIER), stake - 1 ether, "old rule: abstaining was free");
        assertEq(shares.pool(runId), pool + 1 ether, "the fee goes to the run's reward pool");
        (Verification.AttestationState state,,,) = ver.attestationOf(silent);
        assertEq(uint8(state), uint8(Verification.AttestationState.Abstained));
        vm.expectRevert(
            abi.encodeWithSelector(Verification.WrongState.selector, Verification.AttestationState.Abstained)
        );
        ver.reportAbstention(silent);
        // an attested seat is no abstention
        vm.expectRevert(
            abi.encodeWithSelector(Verification.WrongState.selector, Verification.AttestationState.Attested)
        );
        ver.reportAbstention(attested);
        vm.warp(reg.roundTimes(runId).challengeEnd);
        vm.expectRevert(); // after challengeEnd the window is closed
        ver.reportAbstention(late);
    }

    function test_reportAbstention_unopenedCommitment_reverts() public {
        autoOpen = false;
        commitAs(runId, solvers[0]);
        warpToAttest(runId);
        drawSeed(runId);
        vm.warp(reg.roundTimes(runId).attestEnd);
        AttestationRef memory ref = _ref(solvers[0], 0);
        vm.expectRevert(abi.encodeWithSelector(Verification.NotOpened.selector, runId, uint64(0), solvers[0]));
        ver.reportAbstention(ref);
    }
}
