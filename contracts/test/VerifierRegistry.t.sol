// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Fixture} from "./utils/Fixture.sol";
import {Constants} from "../src/Constants.sol";
import {RunRegistry} from "../src/RunRegistry.sol";
import {StakeManager} from "../src/StakeManager.sol";
import {VerifierRegistry} from "../src/VerifierRegistry.sol";
import {IRunRegistry} from "../src/interfaces/IRunRegistry.sol";
import {AttestationRef, CommitmentData, DisputeSubject} from "../src/interfaces/Types.sol";

/// @notice Each run's verifier list: active entries only, snapshots by block, exit delay. Finding 2 of issue 16
///         (second half): the list used to be append-only with a cap of 256, so 253 sybils that registered and left
///         locked every new verifier out and left ~98% of commitments without a live seat, then withdrew their
///         whole stake.
contract VerifierRegistryTest is Fixture {
    uint256 internal runId;

    function setUp() public override {
        super.setUp();
        runId = createRun(defaultConfig());
        registerVerifiers(runId, 4);
    }

    function _sybil(uint256 i) internal returns (address) {
        return makeAddr(string.concat("sybil ", vm.toString(i)));
    }

    function _exitDelay() internal view returns (uint256) {
        return reg.runParams(runId).attestWindow + reg.runParams(runId).challengeWindow;
    }

    // ------------------------------------------------------------------ finding 2 (verifier list half)

    /// @dev 253 sybils register and leave; an honest verifier still registers, every seat of the next round goes to
    ///      a verifier in the list (no dead entry), and the sybils' stake stays reserved through the exit delay.
    function test_register_afterRegisterAndLeaveChurn_noDeadSeats_succeeds() public {
        for (uint256 i; i < 253; ++i) {
            address s = _sybil(i);
            stakeAs(s, Constants.ROLE_VERIFIER, 5 ether);
            vm.prank(s);
            vreg.register(runId);
            vm.prank(s);
            vreg.deregister(runId);
        }
        assertEq(vreg.size(runId), 4, "no dead entries");
        address honest = makeAddr("honest latecomer");
        stakeAs(honest, Constants.ROLE_VERIFIER, 5 ether);
        vm.prank(honest);
        vreg.register(runId); // before: VerifierListFull
        joinSolvers(runId, 2);
        commitAs(runId, solvers[0]);
        commitAs(runId, solvers[1]);
        warpToAttest(runId);
        drawSeed(runId);
        assertEq(ver.roundSeed(runId, 0).verifierCount, 5);
        for (uint256 k; k < 2; ++k) {
            for (uint8 slot; slot < 3; ++slot) {
                (address v, bool eligible) = ver.assignedVerifier(AttestationRef(runId, 0, solvers[k], slot));
                assertTrue(eligible, "a live seat");
                (uint32 indexPlusOne,,) = vreg.records(runId, v);
                assertGt(indexPlusOne, 0, "held by a verifier in the list");
            }
        }
        // the leavers cannot take their stake out before the exit delay
        address leaver = _sybil(0);
        vm.prank(leaver);
        vm.expectRevert(abi.encodeWithSelector(StakeManager.InsufficientFreeStake.selector, 5 ether, 5 ether, 5 ether));
        sm.requestUnbond(Constants.ROLE_VERIFIER, 5 ether);
    }

    // ------------------------------------------------------------------ register

    function test_register_staked_succeeds() public {
        assertEq(vreg.size(runId), 4);
        assertEq(vreg.verifierAt(runId, 2, block.number), verifiers[2]);
        (uint32 indexPlusOne, uint40 exitAt, bool reserved) = vreg.records(runId, verifiers[2]);
        assertEq(indexPlusOne, 3);
        assertEq(exitAt, 0);
        assertTrue(reserved);
        (,,, uint256 stakeReserved) = sm.stakeOf(verifiers[2], Constants.ROLE_VERIFIER);
        assertEq(stakeReserved, 5 ether, "registration reserves the run's verifierMinStake");
    }

    function test_register_twice_reverts() public {
        vm.prank(verifiers[0]);
        vm.expectRevert(abi.encodeWithSelector(VerifierRegistry.AlreadyRegistered.selector, runId, verifiers[0]));
        vreg.register(runId);
    }

    function test_register_lowStake_reverts() public {
        stakeAs(outsider, Constants.ROLE_VERIFIER, 1 ether);
        vm.prank(outsider);
        vm.expectRevert(abi.encodeWithSelector(StakeManager.InsufficientFreeStake.selector, 1 ether, 0, 5 ether));
        vreg.register(runId);
    }

    /// Finding 5 of issue 16: one verifierMinStake used to back registrations in many runs.
    function test_register_stakeReservedByAnotherRun_reverts() public {
        uint256 other = createRun(defaultConfig());
        vm.prank(verifiers[0]); // 5 ether, reserved by `runId`
        vm.expectRevert(abi.encodeWithSelector(StakeManager.InsufficientFreeStake.selector, 5 ether, 5 ether, 5 ether));
        vreg.register(other);
    }

    function test_register_finishedRun_reverts() public {
        vm.mockCall(
            address(reg),
            abi.encodeWithSelector(RunRegistry.roundTimes.selector, runId),
            abi.encode(0, 0, 0, 0, 0, true, 0, 0)
        );
        vm.prank(outsider);
        vm.expectRevert(abi.encodeWithSelector(VerifierRegistry.RunIsFinished.selector, runId));
        vreg.register(runId);
    }

    // ------------------------------------------------------------------ deregister and release

    function test_deregister_swapsLastIntoHole_succeeds() public {
        vm.roll(block.number + 5);
        vm.expectEmit(address(vreg));
        emit VerifierRegistry.VerifierDeregistered(
            runId, verifiers[1], 1, verifiers[3], block.timestamp + _exitDelay(), false
        );
        vm.prank(verifiers[1]);
        vreg.deregister(runId);
        assertEq(vreg.size(runId), 3);
        assertEq(vreg.verifierAt(runId, 1, block.number), verifiers[3]);
        (uint32 movedIndexPlusOne,,) = vreg.records(runId, verifiers[3]);
        assertEq(movedIndexPlusOne, 2, "the moved verifier's record follows it");
        // the past is kept: a block before the exit still sees the old list
        assertEq(vreg.verifierAt(runId, 1, block.number - 1), verifiers[1]);
        assertEq(vreg.verifierAt(runId, 3, block.number - 1), verifiers[3]);
        assertEq(vreg.sizeAt(runId, block.number - 1), 4);
    }

    function test_deregister_last_succeeds() public {
        vm.prank(verifiers[3]);
        vreg.deregister(runId);
        assertEq(vreg.size(runId), 3);
        assertEq(vreg.verifierAt(runId, 2, block.number), verifiers[2]);
    }

    function test_deregister_notRegistered_reverts() public {
        vm.prank(outsider);
        vm.expectRevert(abi.encodeWithSelector(VerifierRegistry.NotRegistered.selector, runId, outsider));
        vreg.deregister(runId);
    }

    function test_releaseVerifier_afterExitDelay_succeeds() public {
        vm.prank(verifiers[1]);
        vreg.deregister(runId);
        uint256 exitAt = block.timestamp + _exitDelay();
        vm.warp(exitAt - 1);
        vm.prank(verifiers[1]);
        vm.expectRevert(abi.encodeWithSelector(VerifierRegistry.ExitNotReady.selector, exitAt));
        vreg.releaseVerifier(runId);
        vm.warp(exitAt);
        vm.prank(verifiers[1]);
        vreg.releaseVerifier(runId);
        (,,, uint256 reserved) = sm.stakeOf(verifiers[1], Constants.ROLE_VERIFIER);
        assertEq(reserved, 0);
        vm.prank(verifiers[1]);
        vm.expectRevert(abi.encodeWithSelector(VerifierRegistry.NotExiting.selector, runId, verifiers[1]));
        vreg.releaseVerifier(runId);
    }

    /// @dev Issue 39: leaving a finished run releases the reservation in the same call, and a verifier overturned
    ///      before the end releases it without waiting out its exit delay: no seat of the run is drawn again.
    function test_deregister_finishedRun_releasesAtOnce_succeeds() public {
        vm.prank(verifiers[2]);
        vreg.deregister(runId); // left during the run: its exit delay runs
        vm.mockCall(
            address(reg),
            abi.encodeWithSelector(RunRegistry.roundTimes.selector, runId),
            abi.encode(0, 0, 0, 0, 0, true, 0, 0)
        );
        vm.expectEmit(true, true, false, true, address(vreg));
        emit VerifierRegistry.VerifierReleased(runId, verifiers[1]);
        vm.prank(verifiers[1]);
        vreg.deregister(runId);
        (uint32 indexPlusOne, uint40 exitAt, bool reserved) = vreg.records(runId, verifiers[1]);
        assertEq(indexPlusOne, 0);
        assertEq(exitAt, block.timestamp);
        assertFalse(reserved);
        (,,, uint256 stakeReserved) = sm.stakeOf(verifiers[1], Constants.ROLE_VERIFIER);
        assertEq(stakeReserved, 0, "released in the same call");
        vm.prank(verifiers[1]);
        vm.expectRevert(abi.encodeWithSelector(VerifierRegistry.NotExiting.selector, runId, verifiers[1]));
        vreg.releaseVerifier(runId); // nothing left to release: no second release
        vm.prank(verifiers[2]);
        vreg.releaseVerifier(runId); // its exit delay is not over, but the run is
        (,,, stakeReserved) = sm.stakeOf(verifiers[2], Constants.ROLE_VERIFIER);
        assertEq(stakeReserved, 0);
    }

    function test_releaseVerifier_stillRegistered_reverts() public {
        vm.prank(verifiers[0]);
        vm.expectRevert(abi.encodeWithSelector(VerifierRegistry.NotExiting.selector, runId, verifiers[0]));
        vreg.releaseVerifier(runId);
    }

    /// @dev A return during the exit delay keeps the reservation it still holds (no second reservation).
    function test_register_returnDuringExit_keepsOneReservation_succeeds() public {
        vm.prank(verifiers[1]);
        vreg.deregister(runId);
        vm.roll(block.number + 1);
        vm.prank(verifiers[1]);
        vreg.register(runId);
        (uint32 indexPlusOne, uint40 exitAt, bool reserved) = vreg.records(runId, verifiers[1]);
        assertEq(indexPlusOne, 4, "appended at the end");
        assertEq(exitAt, 0);
        assertTrue(reserved);
        (,,, uint256 stakeReserved) = sm.stakeOf(verifiers[1], Constants.ROLE_VERIFIER);
        assertEq(stakeReserved, 5 ether);
    }

    /// @dev Issue 39: an overturned attester, slashed below its reservation, came back to the list during its exit
    ///      delay, held seats it could not attest (Verification: StakeNotCovered) and left honest work unaccepted.
    function test_register_returnDuringExitSlashedBelowReservation_reverts() public {
        vm.prank(address(ver));
        vreg.onOverturned(runId, verifiers[1]);
        vm.prank(address(ver));
        sm.slash(verifiers[1], Constants.ROLE_VERIFIER, 1 ether, keccak256("a wrong attestation"));
        vm.roll(block.number + 1);
        vm.prank(verifiers[1]);
        vm.expectRevert(abi.encodeWithSelector(VerifierRegistry.StakeNotCovered.selector, verifiers[1]));
        vreg.register(runId);
        stakeAs(verifiers[1], Constants.ROLE_VERIFIER, 1 ether); // topped up: covered again, it may return
        vm.prank(verifiers[1]);
        vreg.register(runId);
        (uint32 indexPlusOne,, bool reserved) = vreg.records(runId, verifiers[1]);
        assertGt(indexPlusOne, 0);
        assertTrue(reserved);
    }

    function test_onOverturned_notVerification_reverts() public {
        vm.prank(outsider);
        vm.expectRevert(abi.encodeWithSelector(VerifierRegistry.NotVerification.selector, outsider));
        vreg.onOverturned(runId, verifiers[0]);
    }

    /// @dev A verifier that left keeps its exit as it was: its reservation backs the seats it still holds until then
    ///      (issue 36, finding 7: an overturn used to release it at once).
    function test_onOverturned_exitingVerifier_keepsItsExit_succeeds() public {
        vm.prank(verifiers[1]);
        vreg.deregister(runId);
        (, uint40 exitAt,) = vreg.records(runId, verifiers[1]);
        vm.prank(address(ver));
        vreg.onOverturned(runId, verifiers[1]);
        (,,, uint256 reserved) = sm.stakeOf(verifiers[1], Constants.ROLE_VERIFIER);
        assertEq(reserved, 5 ether, "still reserved");
        (, uint40 exitAfter, bool isReserved) = vreg.records(runId, verifiers[1]);
        assertEq(exitAfter, exitAt, "the exit is unchanged");
        assertTrue(isReserved);
        vm.warp(exitAt);
        vm.prank(verifiers[1]);
        vreg.releaseVerifier(runId);
        (,,, reserved) = sm.stakeOf(verifiers[1], Constants.ROLE_VERIFIER);
        assertEq(reserved, 0, "released after the exit delay");
    }

    /// @dev Any sequence of registrations and exits keeps the list dense and consistent with the records, and every
    ///      past block's view unchanged by later moves.
    function testFuzz_deregister_listStaysDenseAndHistoryFixed_succeeds(uint256 movesSeed) public {
        address[8] memory pool;
        for (uint256 i; i < 8; ++i) {
            pool[i] = _sybil(i);
            stakeAs(pool[i], Constants.ROLE_VERIFIER, 5 ether);
        }
        uint256 firstBlock = block.number;
        uint256 sizeThen = vreg.size(runId);
        for (uint256 step; step < 24; ++step) {
            vm.roll(block.number + 1);
            address who = pool[uint256(keccak256(abi.encode(movesSeed, step))) % 8];
            (uint32 indexPlusOne,, bool reserved) = vreg.records(runId, who);
            vm.prank(who);
            if (indexPlusOne == 0 && !reserved) vreg.register(runId);
            else if (indexPlusOne != 0) vreg.deregister(runId);
        }
        uint256 n = vreg.size(runId);
        for (uint256 k; k < n; ++k) {
            address v = vreg.verifierAt(runId, k, block.number);
            (uint32 indexPlusOne,,) = vreg.records(runId, v);
            assertEq(indexPlusOne, k + 1, "every index holds the verifier whose record names it");
        }
        assertEq(vreg.sizeAt(runId, firstBlock), sizeThen, "the past size is kept");
        for (uint256 k; k < sizeThen; ++k) {
            assertEq(vreg.verifierAt(runId, k, firstBlock), verifiers[k], "the past entries are kept");
        }
    }

    /// @dev An overturned attester leaves the list at once and its reservation for the run is released.
    function test_onOverturned_removesAndKeepsReservationUntilExit_succeeds() public {
        registerJurors(8);
        joinSolvers(runId, 1);
        CommitmentData memory c = commitAs(runId, solvers[0]);
        warpToAttest(runId);
        drawSeed(runId);
        AttestationRef memory ref = AttestationRef(runId, 0, solvers[0], 0);
        address attester = attestPassAs(ref, c);
        DisputeSubject memory subject = challengeAs(outsider, ref, c, 0);
        drawJury(subject);
        decide(subject, true, 5);
        dis.execute(subject);
        (uint32 indexPlusOne, uint40 exitAt, bool reserved) = vreg.records(runId, attester);
        assertEq(indexPlusOne, 0, "out of the list");
        assertTrue(reserved, "its reservation backs the seats it still holds this round");
        IRunRegistry.RunParams memory p = reg.runParams(runId);
        assertEq(exitAt, block.timestamp + p.attestWindow + p.challengeWindow, "exits like a leaver");
        assertFalse(sm.isCovered(attester, Constants.ROLE_VERIFIER), "slashed below its reservation: attests nowhere");
        assertEq(vreg.size(runId), 3);
        vm.warp(exitAt);
        vm.prank(attester);
        vreg.releaseVerifier(runId);
        assertTrue(sm.isCovered(attester, Constants.ROLE_VERIFIER));
    }
}
