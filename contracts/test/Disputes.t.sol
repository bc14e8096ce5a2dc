// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {stdStorage, StdStorage} from "forge-std/Test.sol";
import {PullPayments} from "../src/base/PullPayments.sol";
import {Fixture} from "./utils/Fixture.sol";
import {Rejector} from "./utils/Rejector.sol";
import {Constants} from "../src/Constants.sol";
import {Disputes} from "../src/Disputes.sol";
import {RunRegistry} from "../src/RunRegistry.sol";
import {Verification} from "../src/Verification.sol";
import {BLS} from "../src/libraries/BLS.sol";
import {AttestationRef, CommitmentData, DisputeSubject, LeafData, NonSigner} from "../src/interfaces/Types.sol";

contract DisputesTest is Fixture {
    using stdStorage for StdStorage;

    uint256 internal runId;
    CommitmentData internal c0;
    CommitmentData internal c1;
    AttestationRef internal passRef;
    AttestationRef internal failRef;
    address internal passVerifier;
    address internal failVerifier;

    function setUp() public override {
        super.setUp();
        registerJurors(8); // <= the pool of a 5-juror jury (5 + 3): every juror sits, in registry order
        runId = createRun(defaultConfig());
        joinSolvers(runId, 2);
        registerVerifiers(runId, 4);
        c0 = commitAs(runId, solvers[0]);
        c1 = commitAs(runId, solvers[1]);
        warpToAttest(runId);
        drawSeed(runId);
        passRef = AttestationRef(runId, 0, solvers[0], 0);
        failRef = AttestationRef(runId, 0, solvers[1], 0);
        passVerifier = attestPassAs(passRef, c0);
        failVerifier = attestFailAs(failRef, c1, 1);
    }

    function _id(DisputeSubject memory s) internal pure returns (bytes32) {
        return keccak256(abi.encode(s));
    }

    function _claimSubject(uint16 nonce) internal view returns (DisputeSubject memory) {
        return DisputeSubject(2, runId, 0, address(0), 0, nonce);
    }

    // ------------------------------------------------------------------ challenges

    function test_challengeAttestation_pass_succeeds() public {
        DisputeSubject memory s = challengeAs(outsider, passRef, c0, 0);
        Disputes.Dispute memory d = dis.disputeOf(_id(s));
        assertEq(d.challenger, outsider);
        assertEq(uint8(d.status), uint8(Disputes.Status.Open));
        assertEq(d.deadline, block.timestamp + WINDOW);
        assertTrue(dis.isAttestationDisputed(passRef));
        assertEq(reg.runState(runId).openDisputes, 1);
        assertEq(dis.disputeIdOf(s), _id(s));
    }

    function test_challengeAttestation_twice_reverts() public {
        DisputeSubject memory s = challengeAs(outsider, passRef, c0, 0);
        (LeafData memory leaf, bytes32[] memory proof) = leafAt(runId, 0, solvers[0], sampleSegment(passRef, 0));
        vm.prank(outsider);
        vm.expectRevert(abi.encodeWithSelector(Disputes.DisputeExists.selector, _id(s)));
        dis.challengeAttestation{value: 2 ether}(passRef, c0, 0, leaf, proof);
    }

    function test_challengeAttestation_wrongBond_reverts() public {
        (LeafData memory leaf, bytes32[] memory proof) = leafAt(runId, 0, solvers[0], sampleSegment(passRef, 0));
        vm.prank(outsider);
        vm.expectRevert(abi.encodeWithSelector(Disputes.WrongBond.selector, 1 ether, 2 ether));
        dis.challengeAttestation{value: 1 ether}(passRef, c0, 0, leaf, proof);
    }

    function test_challengeAttestation_wrongCommitment_reverts() public {
        (LeafData memory leaf, bytes32[] memory proof) = leafAt(runId, 0, solvers[0], sampleSegment(passRef, 0));
        CommitmentData memory wrong = c0;
        wrong.deltaHash = keccak256("other");
        vm.prank(outsider);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.CommitmentMismatch.selector, runId, 0, solvers[0]));
        dis.challengeAttestation{value: 2 ether}(passRef, wrong, 0, leaf, proof);
    }

    function test_challengeAttestation_unattested_reverts() public {
        AttestationRef memory empty = AttestationRef(runId, 0, solvers[0], 2);
        (LeafData memory leaf, bytes32[] memory proof) = leafAt(runId, 0, solvers[0], sampleSegment(passRef, 0));
        vm.prank(outsider);
        vm.expectRevert(abi.encodeWithSelector(Verification.WrongState.selector, Verification.AttestationState.None));
        dis.challengeAttestation{value: 2 ether}(empty, c0, 0, leaf, proof);
    }

    function test_challengeClaim_posted_succeeds() public {
        warpToClaim(runId);
        vm.prank(creator);
        reg.postClaim{value: 2 ether}(runId, 0, keccak256("t1"));
        vm.prank(outsider);
        bytes32 id = dis.challengeClaim{value: 2 ether}(runId, 0, 0);
        assertEq(id, _id(_claimSubject(0)));
        assertEq(uint8(reg.claimOf(runId, 0).status), uint8(RunRegistry.ClaimStatus.Challenged));
        vm.prank(outsider);
        vm.expectRevert(abi.encodeWithSelector(Disputes.DisputeExists.selector, id));
        dis.challengeClaim{value: 2 ether}(runId, 0, 0);
    }

    function test_challengeClaim_wrongBond_reverts() public {
        vm.prank(outsider);
        vm.expectRevert(abi.encodeWithSelector(Disputes.WrongBond.selector, 0, 2 ether));
        dis.challengeClaim(runId, 0, 0);
    }

    // ------------------------------------------------------------------ jury

    function test_drawJury_afterSeedBlock_succeeds() public {
        DisputeSubject memory s = challengeAs(outsider, passRef, c0, 0);
        drawJury(s);
        Disputes.Dispute memory d = dis.disputeOf(_id(s));
        assertEq(uint8(d.status), uint8(Disputes.Status.JuryDrawn));
        assertEq(d.poolSize, 8, "jury size 5 + 3 slack seats");
        assertEq(d.seats, 5);
        assertEq(d.eligible, 0x1f, "the jury is the first five seats (the whole registry fits the pool)");
        assertEq(d.jurySeed, keccak256(abi.encode(blockhash(uint256(d.openedBlock) + 1), _id(s))));
    }

    function test_drawJury_skipsParties_succeeds() public {
        // the challenger is a registered juror: it may not sit on the jury, a slack seat replaces it
        DisputeSubject memory s = challengeAs(jurorAddrs[0], passRef, c0, 0);
        drawJury(s);
        Disputes.Dispute memory d = dis.disputeOf(_id(s));
        assertEq(jurorIndexAtSeat(s, 0), 0);
        assertEq(d.eligible, 0x3e, "seat 0 (the challenger) skipped, seats 1-5 sit");
        assertEq(d.seats, 5);
    }

    function test_drawJury_leftAfterChallenge_stillSits_succeeds() public {
        // the jury comes from the registry of the challenge's block: a juror that leaves afterwards still sits
        DisputeSubject memory s = challengeAs(outsider, passRef, c0, 0);
        vm.roll(block.number + 1);
        vm.prank(jurorAddrs[1]);
        jurors.deregisterJuror();
        drawJury(s);
        Disputes.Dispute memory d = dis.disputeOf(_id(s));
        assertEq(jurorIndexAtSeat(s, 1), 1, "seat 1 is the juror that left, from the snapshot");
        assertEq(d.eligible, 0x1f);
    }

    function test_drawJury_sameBlock_reverts() public {
        DisputeSubject memory s = challengeAs(outsider, passRef, c0, 0);
        bytes[] memory pool = new bytes[](0);
        vm.expectRevert(abi.encodeWithSelector(Disputes.JurySeedNotReady.selector, block.number + 1));
        dis.drawJury(s, pool);
    }

    function test_drawJury_tooLate_reverts() public {
        DisputeSubject memory s = challengeAs(outsider, passRef, c0, 0);
        uint256 seedBlock = block.number + 1;
        vm.roll(block.number + 300);
        bytes[] memory pool = new bytes[](0);
        vm.expectRevert(abi.encodeWithSelector(Disputes.JurySeedUnavailable.selector, seedBlock));
        dis.drawJury(s, pool);
    }

    function test_drawJury_afterDeadline_reverts() public {
        DisputeSubject memory s = challengeAs(outsider, passRef, c0, 0);
        uint256 deadline = block.timestamp + WINDOW;
        vm.warp(deadline);
        vm.roll(block.number + 2);
        bytes[] memory pool = new bytes[](0);
        vm.expectRevert(abi.encodeWithSelector(Disputes.DeadlinePassed.selector, deadline));
        dis.drawJury(s, pool);
    }

    function test_drawJury_wrongPoolSize_reverts() public {
        DisputeSubject memory s = challengeAs(outsider, passRef, c0, 0);
        vm.roll(block.number + 2);
        bytes[] memory pool = new bytes[](3);
        vm.expectRevert(abi.encodeWithSelector(Disputes.WrongPoolSize.selector, 3, 8));
        dis.drawJury(s, pool);
    }

    function test_drawJury_wrongKey_reverts() public {
        DisputeSubject memory s = challengeAs(outsider, passRef, c0, 0);
        vm.roll(block.number + 2);
        bytes[] memory pool = poolOf(s);
        pool[4] = jurorPks[5]; // seat 4 is juror 4 (the whole registry sits, in order)
        vm.expectRevert(abi.encodeWithSelector(Disputes.JurorKeyMismatch.selector, 4));
        dis.drawJury(s, pool);
    }

    function test_drawJury_twice_reverts() public {
        DisputeSubject memory s = challengeAs(outsider, passRef, c0, 0);
        drawJury(s);
        bytes[] memory pool = poolOf(s);
        vm.expectRevert(abi.encodeWithSelector(Disputes.WrongStatus.selector, Disputes.Status.JuryDrawn));
        dis.drawJury(s, pool);
    }

    function test_drawJury_noJurors_reverts() public {
        for (uint256 i; i < jurorAddrs.length; ++i) {
            vm.prank(jurorAddrs[i]);
            jurors.deregisterJuror();
        }
        vm.roll(block.number + 1);
        DisputeSubject memory s = challengeAs(outsider, passRef, c0, 0);
        vm.roll(block.number + 2);
        bytes[] memory pool = new bytes[](0);
        vm.expectRevert(Disputes.NoJurors.selector);
        dis.drawJury(s, pool);
    }

    function test_drawJury_unknownSubject_reverts() public {
        // a subject that was never challenged (here: an unknown kind) finds an empty record
        DisputeSubject memory s = DisputeSubject(3, runId, 0, solvers[0], 0, 0);
        bytes[] memory pool = new bytes[](0);
        vm.expectRevert(abi.encodeWithSelector(Disputes.WrongStatus.selector, Disputes.Status.None));
        dis.drawJury(s, pool);
    }

    // ------------------------------------------------------------------ verdicts

    function _drawn(AttestationRef memory ref, CommitmentData memory c) internal returns (DisputeSubject memory s) {
        s = challengeAs(outsider, ref, c, ref.solver == solvers[1] ? 1 : 0);
        drawJury(s);
    }

    function test_submitVerdict_allJurors_succeeds() public {
        DisputeSubject memory s = _drawn(passRef, c0);
        VerdictInput memory v = buildVerdict(s, true, 0);
        vm.expectEmit(address(dis));
        emit Disputes.VerdictSubmitted(_id(s), true, v.signers, 5);
        dis.submitVerdict(s, true, v.signers, v.signature, v.aggregate, v.nonSigners);
        Disputes.Dispute memory d = dis.disputeOf(_id(s));
        assertEq(uint8(d.status), uint8(Disputes.Status.Decided));
        assertTrue(d.challengerWins);
        assertEq(d.signers, v.signers);
    }

    function test_submitVerdict_quorumOnly_succeeds() public {
        DisputeSubject memory s = _drawn(passRef, c0);
        assertEq(dis.quorum(5, 0), 4);
        VerdictInput memory v = buildVerdict(s, false, 4);
        assertEq(v.nonSigners.length, 1);
        dis.submitVerdict(s, false, v.signers, v.signature, v.aggregate, v.nonSigners);
        assertFalse(dis.disputeOf(_id(s)).challengerWins);
    }

    function test_submitVerdict_belowQuorum_reverts() public {
        DisputeSubject memory s = _drawn(passRef, c0);
        VerdictInput memory v = buildVerdict(s, true, 3);
        vm.expectRevert(abi.encodeWithSelector(Disputes.QuorumNotReached.selector, 3, 4));
        dis.submitVerdict(s, true, v.signers, v.signature, v.aggregate, v.nonSigners);
    }

    function test_submitVerdict_wrongBitmap_reverts() public {
        DisputeSubject memory s = _drawn(passRef, c0);
        VerdictInput memory v = buildVerdict(s, true, 4);
        // claim the non-signer signed and a signer did not: the aggregate key no longer matches
        uint8 absent = v.nonSigners[0].seat;
        uint32 eligible = dis.disputeOf(_id(s)).eligible;
        uint8 present = 0;
        while ((v.signers >> present) & 1 == 0) ++present;
        uint32 swapped = (v.signers & ~(uint32(1) << present)) | (uint32(1) << absent);
        uint256 idx = jurorIndexAtSeat(s, present);
        NonSigner[] memory ns = new NonSigner[](1);
        ns[0] = NonSigner(present, jurorAddrs[idx], jurorPks[idx]);
        assertEq(swapped & ~eligible, 0);
        vm.expectRevert(Disputes.InvalidSignature.selector);
        dis.submitVerdict(s, true, swapped, v.signature, v.aggregate, ns);
    }

    function test_submitVerdict_wrongVerdict_reverts() public {
        DisputeSubject memory s = _drawn(passRef, c0);
        VerdictInput memory v = buildVerdict(s, true, 0);
        vm.expectRevert(Disputes.InvalidSignature.selector);
        dis.submitVerdict(s, false, v.signers, v.signature, v.aggregate, v.nonSigners);
    }

    function test_submitVerdict_otherDisputesSignature_reverts() public {
        DisputeSubject memory s = _drawn(passRef, c0);
        DisputeSubject memory other = _drawn(failRef, c1);
        VerdictInput memory v = buildVerdict(other, true, 0);
        VerdictInput memory mine = buildVerdict(s, true, 0);
        vm.expectRevert(Disputes.InvalidSignature.selector);
        dis.submitVerdict(s, true, mine.signers, v.signature, mine.aggregate, mine.nonSigners);
    }

    function test_submitVerdict_infinitySignature_reverts() public {
        DisputeSubject memory s = _drawn(passRef, c0);
        VerdictInput memory v = buildVerdict(s, true, 0);
        vm.expectRevert(BLS.BlsPointAtInfinity.selector);
        dis.submitVerdict(s, true, v.signers, new bytes(256), v.aggregate, v.nonSigners);
    }

    function test_submitVerdict_ineligibleSigner_reverts() public {
        DisputeSubject memory s = _drawn(passRef, c0);
        VerdictInput memory v = buildVerdict(s, true, 0);
        uint32 eligible = dis.disputeOf(_id(s)).eligible;
        uint8 outside = 0;
        while ((eligible >> outside) & 1 == 1) ++outside;
        uint32 bad = v.signers | (uint32(1) << outside);
        vm.expectRevert(abi.encodeWithSelector(Disputes.NotEligible.selector, bad, eligible));
        dis.submitVerdict(s, true, bad, v.signature, v.aggregate, v.nonSigners);
    }

    function test_submitVerdict_wrongAggregate_reverts() public {
        DisputeSubject memory s = _drawn(passRef, c0);
        VerdictInput memory v = buildVerdict(s, true, 0);
        vm.expectRevert(Disputes.AggregateMismatch.selector);
        dis.submitVerdict(s, true, v.signers, v.signature, jurorPks[0], v.nonSigners);
    }

    function test_submitVerdict_missingNonSigner_reverts() public {
        DisputeSubject memory s = _drawn(passRef, c0);
        VerdictInput memory v = buildVerdict(s, true, 4);
        NonSigner[] memory none = new NonSigner[](0);
        vm.expectRevert(Disputes.WrongNonSigners.selector);
        dis.submitVerdict(s, true, v.signers, v.signature, v.aggregate, none);
    }

    function test_submitVerdict_signerListedAsNonSigner_reverts() public {
        DisputeSubject memory s = _drawn(passRef, c0);
        VerdictInput memory v = buildVerdict(s, true, 0);
        uint8 seat = 0;
        while ((v.signers >> seat) & 1 == 0) ++seat;
        uint256 idx = jurorIndexAtSeat(s, seat);
        NonSigner[] memory ns = new NonSigner[](1);
        ns[0] = NonSigner(seat, jurorAddrs[idx], jurorPks[idx]);
        vm.expectRevert(Disputes.WrongNonSigners.selector);
        dis.submitVerdict(s, true, v.signers, v.signature, v.aggregate, ns);
    }

    function test_submitVerdict_nonSignerWrongKey_reverts() public {
        DisputeSubject memory s = _drawn(passRef, c0);
        VerdictInput memory v = buildVerdict(s, true, 4);
        v.nonSigners[0].publicKey = jurorPks[(jurorIndexAtSeat(s, v.nonSigners[0].seat) + 1) % 8];
        vm.expectRevert(abi.encodeWithSelector(Disputes.JurorKeyMismatch.selector, v.nonSigners[0].seat));
        dis.submitVerdict(s, true, v.signers, v.signature, v.aggregate, v.nonSigners);
    }

    function test_submitVerdict_afterDeadline_reverts() public {
        DisputeSubject memory s = _drawn(passRef, c0);
        VerdictInput memory v = buildVerdict(s, true, 0);
        uint256 deadline = dis.disputeOf(_id(s)).deadline;
        vm.warp(deadline);
        vm.expectRevert(abi.encodeWithSelector(Disputes.DeadlinePassed.selector, deadline));
        dis.submitVerdict(s, true, v.signers, v.signature, v.aggregate, v.nonSigners);
    }

    function test_submitVerdict_noJury_reverts() public {
        DisputeSubject memory s = challengeAs(outsider, passRef, c0, 0);
        NonSigner[] memory none = new NonSigner[](0);
        vm.expectRevert(abi.encodeWithSelector(Disputes.WrongStatus.selector, Disputes.Status.Open));
        dis.submitVerdict(s, true, 0, "", "", none);
    }

    // ------------------------------------------------------------------ execution and payouts

    function _decide(DisputeSubject memory s, bool challengerWins) internal {
        decide(s, challengerWins, 0);
    }

    function test_execute_passOverturned_paysExactly_succeeds() public {
        attestPassAs(AttestationRef(runId, 0, solvers[0], 1), c0); // a majority of the 3 seats (issue 37)
        assertEq(ver.roundTally(runId, 0).paidCommitments, 1, "accepted before the dispute");
        DisputeSubject memory s = _drawn(passRef, c0);
        _decide(s, true);
        uint256 poolBefore = shares.pool(runId);
        dis.execute(s);
        // total = attestation bond 1 + verifier stake 5 = 6 ether; the solver's 10 ether is Verification's: half
        // to the pool, half to FaultRewards for every prover of the fault
        uint256 total = 6 ether;
        uint256 toWinner = total / 2;
        uint256 perJuror = total / 5 / 5;
        assertEq(dis.credits(outsider), 2 ether + toWinner, "challenger: bond back + half");
        Disputes.Dispute memory d = dis.disputeOf(_id(s));
        assertEq(d.rewardPerJuror, perJuror);
        assertEq(shares.pool(runId) - poolBefore, total - toWinner - 5 * perJuror + 5 ether);
        assertEq(faults.faultRewardOf(runId, 0, solvers[0]).amount, 5 ether, "the provers' half of the slash");
        assertEq(sm.bondedOf(passVerifier, Constants.ROLE_VERIFIER), 0);
        assertEq(sm.bondedOf(solvers[0], Constants.ROLE_SOLVER), 0);
        (Verification.AttestationState state,,,) = ver.attestationOf(passRef);
        assertEq(uint8(state), uint8(Verification.AttestationState.Overturned));
        (uint32 indexPlusOne,, bool reserved) = vreg.records(runId, passVerifier);
        assertEq(indexPlusOne, 0, "a wrong attester leaves the run's list");
        assertTrue(reserved, "its reservation stays for its exit delay (issue 36, finding 7)");
        assertEq(reg.runState(runId).openDisputes, 0);
        assertEq(dis.jurorVotes(runId, 0), 5);
        assertEq(ver.roundTally(runId, 0).paidCommitments, 0, "the commitment is rejected");
        assertEq(address(dis).balance, dis.credits(outsider) + 5 * perJuror);
    }

    function test_execute_passUpheld_succeeds() public {
        DisputeSubject memory s = _drawn(passRef, c0);
        _decide(s, false);
        dis.execute(s);
        assertEq(dis.credits(passVerifier), 1 ether, "attester wins half of the challenger's bond");
        assertEq(ver.credits(passVerifier), 1 ether, "attestation bond back");
        assertEq(dis.credits(outsider), 0);
        (Verification.AttestationState state,,,) = ver.attestationOf(passRef);
        assertEq(uint8(state), uint8(Verification.AttestationState.Upheld));
        assertEq(sm.bondedOf(solvers[0], Constants.ROLE_SOLVER), 10 ether);
    }

    function test_execute_failOverturned_succeeds() public {
        DisputeSubject memory s = _drawn(failRef, c1);
        _decide(s, true);
        dis.execute(s);
        assertEq(sm.bondedOf(failVerifier, Constants.ROLE_VERIFIER), 0, "wrong fail: verifier slashed");
        assertEq(sm.bondedOf(solvers[1], Constants.ROLE_SOLVER), 10 ether, "solver untouched");
        assertEq(dis.credits(outsider), 2 ether + 3 ether, "bond back + half of 6");
        Verification.CommitmentStatus memory st = ver.commitmentStatusOf(runId, 0, solvers[1]);
        assertEq(st.faults, 0);
        assertEq(st.passes, 1, "the cleared fail counts as a pass: the jury's replay (issue 37)");
        assertEq(ver.roundTally(runId, 0).paidCommitments, 0, "1 cleared fail of 3 seats is no majority");
    }

    function test_execute_failUpheld_slashesSolver_succeeds() public {
        DisputeSubject memory s = _drawn(failRef, c1);
        _decide(s, false);
        dis.execute(s);
        assertEq(sm.bondedOf(solvers[1], Constants.ROLE_SOLVER), 0);
        assertEq(dis.credits(failVerifier), 1 ether, "half of the challenger's bond");
        assertEq(ver.credits(failVerifier), 1 ether);
        assertEq(faults.faultRewardOf(runId, 0, solvers[1]).amount, 5 ether, "half of the solver's stake, to share");
    }

    function test_execute_claimRejected_thenNewClaim_succeeds() public {
        warpToClaim(runId);
        vm.prank(creator);
        reg.postClaim{value: 2 ether}(runId, 0, keccak256("wrong theta"));
        vm.prank(outsider);
        dis.challengeClaim{value: 2 ether}(runId, 0, 0);
        DisputeSubject memory s = _claimSubject(0);
        drawJury(s);
        _decide(s, true);
        dis.execute(s);
        assertEq(dis.credits(outsider), 3 ether, "bond back + half of the claim bond");
        assertEq(reg.claimOf(runId, 0).nonce, 1);
        vm.prank(outsider);
        reg.postClaim{value: 2 ether}(runId, 0, keccak256("right theta"));
        vm.warp(block.timestamp + WINDOW);
        reg.settle(runId, 0);
        assertEq(reg.thetaOf(runId, 1), keccak256("right theta"));
    }

    function test_execute_claimUpheld_succeeds() public {
        warpToClaim(runId);
        vm.prank(creator);
        reg.postClaim{value: 2 ether}(runId, 0, keccak256("theta"));
        vm.prank(outsider);
        dis.challengeClaim{value: 2 ether}(runId, 0, 0);
        DisputeSubject memory s = _claimSubject(0);
        drawJury(s);
        _decide(s, false);
        dis.execute(s);
        assertEq(dis.credits(creator), 1 ether);
        reg.settle(runId, 0);
    }

    function test_execute_notDecided_reverts() public {
        DisputeSubject memory s = _drawn(passRef, c0);
        vm.expectRevert(abi.encodeWithSelector(Disputes.WrongStatus.selector, Disputes.Status.JuryDrawn));
        dis.execute(s);
    }

    function test_execute_twice_reverts() public {
        DisputeSubject memory s = _drawn(passRef, c0);
        _decide(s, true);
        dis.execute(s);
        vm.expectRevert(abi.encodeWithSelector(Disputes.WrongStatus.selector, Disputes.Status.Executed));
        dis.execute(s);
    }

    function testFuzz_execute_payoutSplitExact_succeeds(uint8 signers, bool challengerWins) public {
        DisputeSubject memory s = _drawn(passRef, c0);
        uint256 count = bound(signers, 4, 5);
        decide(s, challengerWins, count);
        uint256 poolBefore = shares.pool(runId);
        uint256 credited = dis.credits(outsider) + dis.credits(passVerifier);
        dis.execute(s);
        uint256 total = challengerWins ? 6 ether : 2 ether; // + the solver's slash, which Verification splits
        if (challengerWins) poolBefore += 5 ether;
        uint256 bondBack = challengerWins ? 2 ether : 0;
        uint256 paid = dis.credits(outsider) + dis.credits(passVerifier) - credited - bondBack;
        uint256 jurors = dis.disputeOf(_id(s)).rewardPerJuror * count;
        assertEq(paid + jurors + shares.pool(runId) - poolBefore, total, "every wei of the loser's loss is paid out");
    }

    // ------------------------------------------------------------------ appeals and the unresolved end

    /// @dev Let every jury of `s` stay silent: expire at each deadline until the dispute ends (2 appeals, then the end).
    function _silence(DisputeSubject memory s) internal {
        for (uint256 i; i <= Constants.MAX_APPEALS; ++i) {
            vm.warp(dis.disputeOf(_id(s)).deadline);
            dis.expire(s);
        }
    }

    function test_expire_firstDeadline_appealsToALargerJury_succeeds() public {
        DisputeSubject memory s = _drawn(passRef, c0);
        Disputes.Dispute memory before = dis.disputeOf(_id(s));
        vm.warp(before.deadline);
        vm.roll(block.number + 1);
        vm.expectEmit(address(dis));
        emit Disputes.DisputeAppealed(_id(s), 1, 11, block.timestamp + WINDOW);
        dis.expire(s);
        Disputes.Dispute memory d = dis.disputeOf(_id(s));
        assertEq(uint8(d.status), uint8(Disputes.Status.Open), "re-opened, not decided by default");
        assertEq(d.appeals, 1);
        assertEq(d.deadline, block.timestamp + WINDOW);
        assertEq(d.openedBlock, block.number, "a new snapshot: this block's registry");
        assertEq(d.eligible, 0);
        assertEq(dis.credits(outsider), 0, "the bond stays with the dispute");
        assertEq(ver.credits(passVerifier), 0);
        drawJury(s);
        d = dis.disputeOf(_id(s));
        assertEq(d.poolSize, 14, "jury size 5 -> 2 * 5 + 1 = 11, + 3 slack seats");
        assertEq(d.seats, 8, "the 8 registered jurors sit");
        decide(s, true, 0);
        dis.execute(s);
        assertEq(sm.bondedOf(passVerifier, Constants.ROLE_VERIFIER), 0, "the appeal's jury decided");
    }

    function test_expire_afterLastAppeal_voidsThePassAndSlashesNobody_succeeds() public {
        attestPassAs(AttestationRef(runId, 0, solvers[0], 1), c0); // a majority of the 3 seats (issue 37)
        DisputeSubject memory s = challengeAs(outsider, passRef, c0, 0);
        assertEq(ver.roundTally(runId, 0).paidCommitments, 1, "accepted before the dispute");
        uint256 poolBefore = shares.pool(runId);
        for (uint256 i; i < Constants.MAX_APPEALS; ++i) {
            vm.warp(dis.disputeOf(_id(s)).deadline);
            dis.expire(s);
        }
        vm.warp(dis.disputeOf(_id(s)).deadline);
        vm.expectEmit(address(dis));
        emit Disputes.DisputeExpired(_id(s), outsider, 1.6 ether, 0.4 ether);
        dis.expire(s);
        assertEq(uint8(dis.disputeOf(_id(s)).status), uint8(Disputes.Status.Expired));
        assertEq(dis.credits(outsider), 1.6 ether, "the bond back less 20%");
        assertEq(shares.pool(runId) - poolBefore, 0.4 ether, "the fee goes to the run's pool");
        assertEq(ver.credits(passVerifier), 1 ether, "the attestation bond back");
        assertEq(sm.bondedOf(passVerifier, Constants.ROLE_VERIFIER), 5 ether, "nobody slashed");
        assertEq(sm.bondedOf(solvers[0], Constants.ROLE_SOLVER), 10 ether, "nobody slashed");
        (Verification.AttestationState state,,,) = ver.attestationOf(passRef);
        assertEq(uint8(state), uint8(Verification.AttestationState.Voided), "a silent jury is no pass");
        assertEq(ver.roundTally(runId, 0).paidCommitments, 0, "no default pass: the commitment is not paid");
        assertEq(reg.runState(runId).openDisputes, 0);
        assertEq(address(dis).balance, dis.credits(outsider), "every wei of the bond accounted");
    }

    function test_expire_afterLastAppeal_failKeepsBlocking_succeeds() public {
        DisputeSubject memory s = challengeAs(outsider, failRef, c1, 1);
        _silence(s);
        (Verification.AttestationState state,,,) = ver.attestationOf(failRef);
        assertEq(uint8(state), uint8(Verification.AttestationState.Voided));
        assertEq(ver.commitmentStatusOf(runId, 0, solvers[1]).faults, 1, "an unproven fail still blocks payment");
        assertEq(sm.bondedOf(solvers[1], Constants.ROLE_SOLVER), 10 ether, "but slashes nobody");
        assertEq(ver.credits(failVerifier), 1 ether);
    }

    function test_expire_claimUnresolved_withdrawsTheClaim_succeeds() public {
        warpToClaim(runId);
        vm.prank(creator);
        reg.postClaim{value: 2 ether}(runId, 0, keccak256("theta"));
        vm.prank(outsider);
        dis.challengeClaim{value: 2 ether}(runId, 0, 0);
        _silence(_claimSubject(0));
        assertEq(dis.credits(outsider), 1.6 ether);
        assertEq(dis.credits(creator), 2 ether, "the withdrawn claim's bond goes back to its claimer");
        assertEq(reg.claimOf(runId, 0).nonce, 1, "a new claim may be posted");
        vm.expectRevert(RunRegistry.NoClaim.selector);
        reg.settle(runId, 0);
        vm.prank(outsider);
        reg.postClaim{value: 2 ether}(runId, 0, keccak256("theta"));
        vm.warp(block.timestamp + WINDOW);
        reg.settle(runId, 0);
    }

    function test_expire_beforeDeadline_reverts() public {
        DisputeSubject memory s = challengeAs(outsider, passRef, c0, 0);
        uint256 deadline = dis.disputeOf(_id(s)).deadline;
        vm.expectRevert(abi.encodeWithSelector(Disputes.DeadlineNotReached.selector, deadline));
        dis.expire(s);
    }

    function test_expire_unresolvedTwice_reverts() public {
        DisputeSubject memory s = challengeAs(outsider, passRef, c0, 0);
        _silence(s);
        vm.expectRevert(abi.encodeWithSelector(Disputes.WrongStatus.selector, Disputes.Status.Expired));
        dis.expire(s);
    }

    function test_expire_decided_reverts() public {
        DisputeSubject memory s = _drawn(passRef, c0);
        _decide(s, true);
        vm.warp(block.timestamp + WINDOW);
        vm.expectRevert(abi.encodeWithSelector(Disputes.WrongStatus.selector, Disputes.Status.Decided));
        dis.expire(s);
    }

    // ------------------------------------------------------------------ juror rewards

    /// @dev A challenged pass overturned by `signing` signers (all when 0), executed, and its round settled.
    function _settledVerdict(uint256 signing) internal returns (DisputeSubject memory s) {
        s = _drawn(passRef, c0);
        decide(s, true, signing);
        dis.execute(s);
        warpToClaim(runId);
        claimAndSettle(runId, keccak256("theta1"));
    }

    function test_claimJurorReward_afterSettle_succeeds() public {
        DisputeSubject memory s = _settledVerdict(0);
        Disputes.Dispute memory d = dis.disputeOf(_id(s));
        uint8 seat = 0;
        while ((d.signers >> seat) & 1 == 0) ++seat;
        uint256 idx = jurorIndexAtSeat(s, seat);
        vm.prank(jurorAddrs[idx]);
        dis.claimJurorReward(s, seat);
        assertEq(dis.credits(jurorAddrs[idx]), d.rewardPerJuror);
        assertEq(tokenOf(runId).balanceOf(jurorAddrs[idx]), 100e18 / 5, "juror share split by signatures");
        vm.prank(jurorAddrs[idx]);
        vm.expectRevert(abi.encodeWithSelector(Disputes.AlreadyClaimed.selector, seat));
        dis.claimJurorReward(s, seat);
        uint256 before = jurorAddrs[idx].balance;
        vm.prank(jurorAddrs[idx]);
        dis.withdraw();
        assertEq(jurorAddrs[idx].balance - before, d.rewardPerJuror);
    }

    function test_claimJurorReward_beforeSettle_reverts() public {
        DisputeSubject memory s = _drawn(passRef, c0);
        _decide(s, true);
        dis.execute(s);
        vm.expectRevert(abi.encodeWithSelector(Disputes.NotSettled.selector, runId, 0));
        dis.claimJurorReward(s, 0);
    }

    function test_claimJurorReward_notSigner_reverts() public {
        DisputeSubject memory s = _settledVerdict(4);
        Disputes.Dispute memory d = dis.disputeOf(_id(s));
        uint8 seat = 0;
        while ((d.signers >> seat) & 1 == 1) ++seat;
        vm.expectRevert(abi.encodeWithSelector(Disputes.NotASigner.selector, seat));
        dis.claimJurorReward(s, seat);
    }

    function test_claimJurorReward_wrongClaimant_reverts() public {
        DisputeSubject memory s = _settledVerdict(0);
        uint8 seat = 0;
        while ((dis.disputeOf(_id(s)).signers >> seat) & 1 == 0) ++seat;
        vm.prank(outsider);
        vm.expectRevert(abi.encodeWithSelector(Disputes.NotASigner.selector, seat));
        dis.claimJurorReward(s, seat);
    }

    function test_claimJurorReward_notExecuted_reverts() public {
        DisputeSubject memory s = _drawn(passRef, c0);
        vm.expectRevert(abi.encodeWithSelector(Disputes.WrongStatus.selector, Disputes.Status.JuryDrawn));
        dis.claimJurorReward(s, 0);
    }

    /// Finding 9 of issue 16: juror rewards never claimed used to stay in the contract forever.
    function test_sweepUnclaimedJurorRewards_afterWindow_succeeds() public {
        DisputeSubject memory s = _settledVerdict(0);
        Disputes.Dispute memory d = dis.disputeOf(_id(s));
        uint8 seat = 0;
        while ((d.signers >> seat) & 1 == 0) ++seat;
        vm.prank(jurorAddrs[jurorIndexAtSeat(s, seat)]);
        dis.claimJurorReward(s, seat); // one signer claims; four never do
        uint256 closesAt = uint256(d.deadline) + Constants.REWARD_CLAIM_WINDOW;
        vm.warp(closesAt - 1);
        vm.expectRevert(abi.encodeWithSelector(Disputes.ClaimWindowOpen.selector, closesAt));
        dis.sweepUnclaimedJurorRewards(s);
        vm.warp(closesAt);
        uint256 pool = shares.pool(runId);
        uint32 unclaimed = d.signers & ~(uint32(1) << seat);
        vm.expectEmit(address(dis));
        emit Disputes.JurorRewardsSwept(_id(s), unclaimed, 4 * d.rewardPerJuror);
        dis.sweepUnclaimedJurorRewards(s);
        assertEq(shares.pool(runId) - pool, 4 * d.rewardPerJuror, "the unclaimed rewards went to the pool");
        assertEq(address(dis).balance, dis.credits(outsider) + dis.credits(jurorAddrs[jurorIndexAtSeat(s, seat)]));
        uint8 late = seat + 1;
        while ((d.signers >> late) & 1 == 0) ++late;
        vm.prank(jurorAddrs[jurorIndexAtSeat(s, late)]);
        vm.expectRevert(abi.encodeWithSelector(Disputes.AlreadyClaimed.selector, late));
        dis.claimJurorReward(s, late);
        vm.expectRevert(Disputes.NothingToSweep.selector);
        dis.sweepUnclaimedJurorRewards(s);
    }

    function test_sweepUnclaimedJurorRewards_notExecuted_reverts() public {
        DisputeSubject memory s = _drawn(passRef, c0);
        vm.expectRevert(abi.encodeWithSelector(Disputes.WrongStatus.selector, Disputes.Status.JuryDrawn));
        dis.sweepUnclaimedJurorRewards(s);
    }

    // ------------------------------------------------------------------ plumbing

    function test_receive_fromOutsider_reverts() public {
        vm.prank(outsider);
        (bool ok, bytes memory data) = address(dis).call{value: 1}("");
        assertFalse(ok);
        assertEq(data, abi.encodeWithSelector(Disputes.UnexpectedEther.selector, outsider));
    }

    function test_withdraw_nothing_reverts() public {
        vm.expectRevert(PullPayments.NothingToWithdraw.selector);
        dis.withdraw();
    }

    function test_withdraw_receiverRejects_reverts() public {
        Rejector r = new Rejector();
        stdstore.target(address(dis)).sig("credits(address)").with_key(address(r)).checked_write(1 ether);
        vm.deal(address(dis), 1 ether);
        vm.expectRevert(abi.encodeWithSelector(PullPayments.TransferFailed.selector, address(r), 1 ether));
        r.call(address(dis), abi.encodeCall(PullPayments.withdraw, ()));
    }
}
