// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Constants} from "../src/Constants.sol";
import {RunRegistry} from "../src/RunRegistry.sol";
import {Verification} from "../src/Verification.sol";
import {IVerification} from "../src/interfaces/IVerification.sol";
import {AttestationRef, CommitmentData, DisputeSubject, RunTerms} from "../src/interfaces/Types.sol";
import {Fixture} from "./utils/Fixture.sol";

/// @notice Issue 37, majority acceptance: a commitment is accepted when its standing passes and cleared fails (fails a
///         jury overturned) hold a strict majority of its round's seats, min(verifiersPerCommitment, verifierCount) / 2
///         + 1, and no fault stands. Before, one standing pass and no fault accepted it, so a colluding verifier's lazy
///         pass accepted bad work whenever the honest seats were late; and a solver griefed by a false fail could win
///         the dispute and still stay unpaid with too few passes. Each test plays the attack first, with the old rule's
///         outcome on the same status computed beside the new one.
contract LivenessTest is Fixture {
    /// @dev The round's solver bucket at the default terms: 1000e18 * 6000 / 10^4.
    uint256 internal constant BUCKET = 600e18;

    uint256 internal runId;

    function setUp() public override {
        super.setUp();
        // 8 verifier accounts (the fixture has 6): enough to list as many verifiers as a commitment has seats
        for (uint256 i = verifiers.length; i < Constants.MAX_VERIFIERS_PER_COMMITMENT; ++i) {
            verifiers.push(makeAddr(string.concat("verifier", vm.toString(i))));
        }
    }

    // ------------------------------------------------------------------ helpers

    /// @dev A run of `seats` verifiers per commitment with `listed` verifiers registered and `committers` solvers
    ///      committed in round 0, at the start of the attest window: seed drawn, every commitment opened.
    function _round(uint8 seats, uint256 listed, uint256 committers) internal returns (CommitmentData[] memory c) {
        RunTerms memory cfg = defaultConfig();
        cfg.verifiersPerCommitment = seats;
        runId = createRun(cfg);
        joinSolvers(runId, committers);
        registerVerifiers(runId, listed);
        c = new CommitmentData[](committers);
        for (uint256 i; i < committers; ++i) {
            c[i] = commitAs(runId, solvers[i]);
        }
        warpToAttest(runId);
        drawSeed(runId);
    }

    function _ref(address solver, uint8 slot) internal view returns (AttestationRef memory) {
        return AttestationRef(runId, 0, solver, slot);
    }

    function _status(address solver) internal view returns (Verification.CommitmentStatus memory) {
        return ver.commitmentStatusOf(runId, 0, solver);
    }

    /// @dev The acceptance rule before issue 37: one standing pass and no standing fault.
    function _oldRuleAccepts(Verification.CommitmentStatus memory st) internal pure returns (bool) {
        return !st.unpaid && (st.planted ? st.attested : st.passes > 0 && st.faults == 0);
    }

    function _settle() internal {
        warpToClaim(runId);
        claimAndSettle(runId, keccak256("theta1"));
    }

    // ------------------------------------------------------------------ (a) late honest verifiers + one lazy pass

    /// The attack: a cheater's colluding verifier holds seat 0 of its commitment and passes it without replaying it;
    /// the honest verifiers of seats 1 and 2 are late (their replay outlasts the attest window). Before, the lone lazy
    /// pass accepted the bad work and paid it the whole solver bucket. Now a seat nobody attested counts against
    /// acceptance: 1 pass of 3 seats is no majority, the commitment is not paid and leaves the round's paid
    /// commitments.
    function test_claimSolverShares_lazyPassHonestSeatsLate_reverts() public {
        CommitmentData[] memory c = _round(3, 4, 1);
        address cheater = solvers[0];
        attestPassAs(_ref(cheater, 0), c[0]); // the accomplice's lazy pass
        uint256 attestEnd = reg.roundTimes(runId).attestEnd;
        vm.warp(attestEnd);
        // the honest seats come too late to fail it
        AttestationRef memory late = _ref(cheater, 1);
        (address honest,) = ver.assignedVerifier(late);
        vm.deal(honest, 1 ether);
        vm.prank(honest);
        vm.expectRevert(abi.encodeWithSelector(Verification.OutsideAttestWindow.selector, 0, attestEnd));
        ver.attestPass{value: 1 ether}(late, c[0]);

        Verification.CommitmentStatus memory st = _status(cheater);
        assertEq(st.passes, 1);
        assertEq(st.faults, 0);
        assertEq(st.needed, 2, "a strict majority of 3 seats");
        assertTrue(_oldRuleAccepts(st), "old rule: one standing pass and no fault accepted the lazy pass");
        assertEq(ver.roundTally(runId, 0).paidCommitments, 0, "new rule: not among the round's paid commitments");

        _settle();
        vm.expectRevert(abi.encodeWithSelector(Verification.NotAccepted.selector, runId, 0, cheater));
        ver.claimSolverShares(runId, 0, cheater);
        assertEq(shares.mintedInRound(runId, 0), 0, "old rule: the cheater took the whole bucket, 600e18");
    }

    /// The same attack with 2 seats per commitment: the lazy pass holds one of two seats, and a strict majority of 2 is
    /// both of them.
    function test_claimSolverShares_lazyPassOneOfTwoSeats_reverts() public {
        CommitmentData[] memory c = _round(2, 4, 2);
        attestPassAs(_ref(solvers[0], 0), c[0]); // lazy, the other seat late
        attestMajorityAs(runId, solvers[1], c[1]); // an honest solver, both seats passed
        Verification.CommitmentStatus memory st = _status(solvers[0]);
        assertEq(st.needed, 2, "2 seats: 2 / 2 + 1");
        assertTrue(_oldRuleAccepts(st), "old rule: accepted");
        assertEq(ver.roundTally(runId, 0).paidCommitments, 1, "only the honest commitment is paid");
        _settle();
        vm.expectRevert(abi.encodeWithSelector(Verification.NotAccepted.selector, runId, 0, solvers[0]));
        ver.claimSolverShares(runId, 0, solvers[0]);
        ver.claimSolverShares(runId, 0, solvers[1]);
        assertEq(tokenOf(runId).balanceOf(solvers[1]), BUCKET, "old rule: half each; now the honest solver's whole");
    }

    // ------------------------------------------------------------------ (b) majority reached, one seat silent

    /// 2 of 3 seats pass and the third stays silent: a majority, so the commitment is accepted and paid; the silent
    /// seat is still an abstention, reported after attestEnd and charged the attestation bond.
    function test_claimSolverShares_twoOfThreePassOneSilent_succeeds() public {
        CommitmentData[] memory c = _round(3, 4, 1);
        address solver = solvers[0];
        attestPassAs(_ref(solver, 0), c[0]);
        assertEq(ver.roundTally(runId, 0).paidCommitments, 0, "1 of 3: not yet");
        attestPassAs(_ref(solver, 1), c[0]);
        assertEq(ver.roundTally(runId, 0).paidCommitments, 1, "2 of 3: accepted");

        AttestationRef memory silent = _ref(solver, 2);
        (address abstainer,) = ver.assignedVerifier(silent);
        vm.warp(reg.roundTimes(runId).attestEnd);
        uint256 stake = sm.bondedOf(abstainer, Constants.ROLE_VERIFIER);
        uint256 pool = shares.pool(runId);
        vm.expectEmit(address(ver));
        emit Verification.AbstentionReported(runId, 0, solver, 2, abstainer, outsider, 1 ether);
        vm.prank(outsider);
        ver.reportAbstention(silent);
        assertEq(sm.bondedOf(abstainer, Constants.ROLE_VERIFIER), stake - 1 ether, "the silent seat is charged");
        assertEq(shares.pool(runId), pool + 1 ether, "into the run's reward pool");
        assertEq(ver.roundTally(runId, 0).paidCommitments, 1, "the report does not unaccept a majority");

        _settle();
        ver.claimSolverShares(runId, 0, solver);
        assertEq(tokenOf(runId).balanceOf(solver), BUCKET);
    }

    // ------------------------------------------------------------------ (c) a griefed solver defends itself

    /// The attack: a griefer holding seat 1 of an honest commitment fails it falsely (the named leaf is right), seat 0
    /// passes and seat 2 stays silent. The solver challenges the fail itself, with the challenge bond; the jury replays
    /// the segment and overturns the fail. Before, the overturned fail simply stopped counting: 1 pass of 3 seats would
    /// now be no majority, so a griefer could still keep an honest solver unpaid. Now the cleared fail counts like a
    /// pass: 1 pass + 1 cleared = 2 of 3 seats, the solver is accepted and paid, and the griefer lost its bond and
    /// stake.
    function test_claimSolverShares_griefedSolverWinsItsOwnChallenge_succeeds() public {
        registerJurors(8);
        CommitmentData[] memory c = _round(3, 4, 1);
        address solver = solvers[0];
        attestPassAs(_ref(solver, 0), c[0]);
        AttestationRef memory fail = _ref(solver, 1);
        address griefer = attestFailAs(fail, c[0], 1);
        Verification.CommitmentStatus memory st = _status(solver);
        assertEq(st.faults, 1);
        assertEq(ver.roundTally(runId, 0).paidCommitments, 0, "a standing fail blocks");
        uint256 solverStake = sm.bondedOf(solver, Constants.ROLE_SOLVER);
        uint256 grieferStake = sm.bondedOf(griefer, Constants.ROLE_VERIFIER);

        DisputeSubject memory s = challengeAs(solver, fail, c[0], 1); // the solver, from its own account
        assertEq(dis.disputeOf(dis.disputeIdOf(s)).challenger, solver);
        drawJury(s);
        decide(s, true, 0);
        dis.execute(s);

        (Verification.AttestationState state, bool isFail,,) = ver.attestationOf(fail);
        assertEq(uint8(state), uint8(Verification.AttestationState.Overturned));
        assertTrue(isFail);
        st = _status(solver);
        assertEq(st.faults, 0, "the false fail no longer blocks");
        assertEq(st.passes, 2, "the cleared fail counts as a pass: the jury's replay counts towards acceptance");
        assertTrue(st.passes - 1 < st.needed, "without the cleared fail: 1 pass of 3 seats, no majority, unpaid");
        assertEq(ver.roundTally(runId, 0).paidCommitments, 1, "accepted: 1 pass + 1 cleared fail of 3 seats");
        assertEq(sm.bondedOf(griefer, Constants.ROLE_VERIFIER), grieferStake - 5 ether, "the griefer is slashed");
        assertEq(sm.bondedOf(solver, Constants.ROLE_SOLVER), solverStake, "the solver is not");
        // bond back + WINNER_REWARD_BPS of the griefer's forfeits (attestation bond 1 + stake 5)
        assertEq(dis.credits(solver), 2 ether + 3 ether, "the solver's challenge paid for itself");

        _settle();
        ver.claimSolverShares(runId, 0, solver);
        assertEq(tokenOf(runId).balanceOf(solver), BUCKET, "the griefed solver is paid");
        assertEq(ver.credits(griefer), 0, "the griefer's attestation bond is gone");
        vm.expectRevert(abi.encodeWithSelector(Verification.WrongState.selector, state));
        ver.finalize(fail);
    }

    // ------------------------------------------------------------------ (d) needed against the listed verifiers

    /// 5 seats per commitment but only 3 verifiers listed: seats 3 and 4 are void, and the majority is of the 3 seats
    /// that exist (3 / 2 + 1 = 2), not of 5 (which no commitment could reach).
    function test_commitmentStatusOf_fewerListedThanSeats_succeeds() public {
        CommitmentData[] memory c = _round(5, 3, 1);
        address solver = solvers[0];
        vm.expectRevert(abi.encodeWithSelector(Verification.SeatVoid.selector, 3));
        ver.assignedVerifier(_ref(solver, 3));
        attestPassAs(_ref(solver, 0), c[0]);
        assertEq(_status(solver).needed, 2, "min(5 seats, 3 listed) / 2 + 1");
        assertEq(neededOf(runId, 0), 2);
        assertEq(ver.roundTally(runId, 0).paidCommitments, 0);
        attestPassAs(_ref(solver, 1), c[0]);
        assertEq(ver.roundTally(runId, 0).paidCommitments, 1, "2 of the 3 seats that exist");
    }

    /// One verifier listed: a single seat, and its pass is the majority (1 / 2 + 1 = 1). The lone-pass case stays only
    /// where the run has nobody else to ask.
    function test_commitmentStatusOf_oneListedVerifier_succeeds() public {
        CommitmentData[] memory c = _round(3, 1, 1);
        attestPassAs(_ref(solvers[0], 0), c[0]);
        assertEq(_status(solvers[0]).needed, 1);
        assertEq(ver.roundTally(runId, 0).paidCommitments, 1);
        _settle();
        ver.claimSolverShares(runId, 0, solvers[0]);
        assertEq(tokenOf(runId).balanceOf(solvers[0]), BUCKET);
    }

    /// @dev What happens to each seat: 0 silent, 1 pass, 2 fail, 3 fail overturned (cleared), 4 pass overturned (a
    ///      proven fault), 5 pass voided (no verdict: stops counting), 6 fail voided (keeps blocking), 7 pass upheld.
    ///      Disputes' outcome is applied through its hook (Verification.onResolved, pranked as Disputes): the jury
    ///      itself is Disputes.t.sol's business.
    function testFuzz_claimSolverShares_majorityRule_succeeds(uint8 seatsSeed, uint8 listedSeed, uint24 actionsSeed)
        public
    {
        uint8 seats = uint8(bound(seatsSeed, 1, Constants.MAX_VERIFIERS_PER_COMMITMENT));
        uint256 listed = bound(listedSeed, 1, Constants.MAX_VERIFIERS_PER_COMMITMENT);
        CommitmentData[] memory c = _round(seats, listed, 1);
        address solver = solvers[0];
        uint256 live = seats < listed ? seats : listed;
        uint256 passes;
        uint256 cleared;
        uint256 faultCount;
        for (uint8 slot; slot < live; ++slot) {
            uint256 action = (actionsSeed >> (3 * slot)) & 7;
            if (action == 0) continue;
            AttestationRef memory ref = _ref(solver, slot);
            bool isFail = action == 2 || action == 3 || action == 6;
            if (isFail) attestFailAs(ref, c[0], 0);
            else attestPassAs(ref, c[0]);
            if (action >= 3) {
                IVerification.Resolution resolution = action == 7
                    ? IVerification.Resolution.Upheld
                    : action == 3 || action == 4
                        ? IVerification.Resolution.Overturned
                        : IVerification.Resolution.Unresolved;
                vm.prank(address(dis));
                ver.onResolved(ref, resolution);
            }
            if (action == 1 || action == 7) ++passes;
            else if (action == 3) ++cleared;
            else if (action == 2 || action == 4 || action == 6) ++faultCount;
        }
        uint256 needed = live / 2 + 1;
        bool paid = passes + cleared >= needed && faultCount == 0;

        Verification.CommitmentStatus memory st = _status(solver);
        if (st.roundPlusOne == 1) {
            assertEq(st.needed, needed, "needed");
            assertEq(st.passes, passes + cleared, "passes (standing passes and cleared fails)");
            assertEq(st.faults, faultCount, "faults");
        }
        assertEq(ver.roundTally(runId, 0).paidCommitments, paid ? 1 : 0, "paidCommitments != the majority rule");
        _settle();
        if (paid) {
            ver.claimSolverShares(runId, 0, solver);
            assertEq(tokenOf(runId).balanceOf(solver), BUCKET);
        } else {
            vm.expectRevert(abi.encodeWithSelector(Verification.NotAccepted.selector, runId, 0, solver));
            ver.claimSolverShares(runId, 0, solver);
        }
    }

    // ------------------------------------------------------------------ (e) a status never opened

    /// A status no attestation (or abstention report) of the round opened has needed == 0: 0 passes would otherwise be
    /// "at least the 0 needed". A solver that joined and committed but was never attested, and an account that never
    /// committed at all, are not paid.
    function test_claimSolverShares_neverOpenedStatus_reverts() public {
        _round(3, 4, 2);
        attestMajorityAs(runId, solvers[1], _commitData[_key(runId, 0, solvers[1])]);
        Verification.CommitmentStatus memory st = _status(solvers[0]);
        assertEq(st.roundPlusOne, 0, "never opened for round 0 (the view falls back to the empty archive)");
        assertEq(st.needed, 0);
        assertEq(st.passes, 0);
        assertEq(st.faults, 0, "nothing blocks it but needed == 0");
        assertEq(ver.commitmentStatusOf(runId, 0, outsider).needed, 0);
        assertEq(ver.roundTally(runId, 0).paidCommitments, 1, "only the attested commitment");
        _settle();
        vm.expectRevert(abi.encodeWithSelector(Verification.NotAccepted.selector, runId, 0, solvers[0]));
        ver.claimSolverShares(runId, 0, solvers[0]);
        vm.expectRevert(abi.encodeWithSelector(Verification.NotAccepted.selector, runId, 0, outsider));
        ver.claimSolverShares(runId, 0, outsider);
        ver.claimSolverShares(runId, 0, solvers[1]);
        assertEq(tokenOf(runId).balanceOf(solvers[1]), BUCKET);
    }

    /// A status opened by abstention reports alone (every seat silent) has its needed set and no pass: not paid.
    function test_claimSolverShares_openedByAbstentionsOnly_reverts() public {
        _round(3, 4, 1);
        vm.warp(reg.roundTimes(runId).attestEnd);
        for (uint8 slot; slot < 3; ++slot) {
            ver.reportAbstention(_ref(solvers[0], slot));
        }
        Verification.CommitmentStatus memory st = _status(solvers[0]);
        assertEq(st.roundPlusOne, 1);
        assertEq(st.needed, 2);
        assertFalse(st.attested);
        assertEq(ver.roundTally(runId, 0).paidCommitments, 0);
        _settle();
        vm.expectRevert(abi.encodeWithSelector(Verification.NotAccepted.selector, runId, 0, solvers[0]));
        ver.claimSolverShares(runId, 0, solvers[0]);
    }

    // ------------------------------------------------------------------ (f) room to challenge a late pass

    /// The attack: a lazy pass lands in the last second of the attest window, when a whistleblower needs as long as a
    /// verifier had to replay it (attestWindow / 2) and two blocks to land its challenge. Before, a run could choose a
    /// challenge window one second shorter than that: the challenge reverted ChallengeWindowClosed and the wrong pass
    /// stood (the demo in issue 37). Now createRun refuses that window, and with the shortest one it accepts the late
    /// challenge lands.
    function test_challengeAttestation_passInTheLastSecond_challengerStillInTime_succeeds() public {
        RunTerms memory cfg = defaultConfig();
        cfg.verifiersPerCommitment = 1;
        uint256 room = cfg.attestWindow / 2 + 2 * BLOCK_SECONDS;
        cfg.challengeWindow = uint32(room - 1); // what the old rules let a run choose
        vm.expectRevert(
            abi.encodeWithSelector(
                RunRegistry.InvalidConfig.selector, "challengeWindow must cover attestWindow / 2 and 2 more blocks"
            )
        );
        createRun(cfg);

        cfg.challengeWindow = uint32(room);
        runId = createRun(cfg);
        joinSolvers(runId, 1);
        registerVerifiers(runId, 2);
        CommitmentData memory c = commitAs(runId, solvers[0]);
        warpToAttest(runId);
        drawSeed(runId);
        uint256 attestEnd = reg.roundTimes(runId).attestEnd;
        vm.warp(attestEnd - 1);
        attestPassAs(_ref(solvers[0], 0), c); // the lazy pass, in the last second
        // a replay as long as the verifier's, then 2 blocks: with the old window this is challengeEnd itself (reverts)
        vm.warp(attestEnd - 1 + room);
        assertEq(block.timestamp, attestEnd + (room - 1), "the old rules' challengeEnd");
        assertLt(block.timestamp, reg.roundTimes(runId).challengeEnd, "inside the window the new rule guarantees");
        challengeAs(outsider, _ref(solvers[0], 0), c, 0);
        (Verification.AttestationState state,,,) = ver.attestationOf(_ref(solvers[0], 0));
        assertEq(uint8(state), uint8(Verification.AttestationState.Challenged), "the late challenge landed");
    }
}
