// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {PullPayments} from "../src/base/PullPayments.sol";
import {Fixture} from "./utils/Fixture.sol";
import {Constants} from "../src/Constants.sol";
import {FaultRewards} from "../src/FaultRewards.sol";
import {Verification} from "../src/Verification.sol";
import {AttestationRef, CommitmentData, DisputeSubject} from "../src/interfaces/Types.sol";

/// @notice Issue 16, finding 6 ("whoever finalizes first is paid"): the reward for proving a solver's fault is shared
///         equally by every prover of the fault (its standing fails; since issue 36, finding 5, no longer the challengers
///         of overturned passes, which Disputes pays from the wrong attester's forfeits), whatever order the
///         proofs were finalized or executed in. Before, the first finalize (or execute) took WINNER_REWARD_BPS of the
///         slash and every later prover got nothing, so a cheater's accomplice holding a seat recovered half of the
///         cheater's slash by finalizing its own fail first.
contract FaultRewardsTest is Fixture {
    uint256 internal runId;
    CommitmentData internal c0;
    CommitmentData internal c1;
    /// @dev The provers' part of solver 1's slash: WINNER_REWARD_BPS of its 10 ether.
    uint256 internal constant POT = 5 ether;

    function setUp() public override {
        super.setUp();
        registerJurors(8);
        runId = createRun(defaultConfig());
        joinSolvers(runId, 2);
        registerVerifiers(runId, 4);
        c0 = commitAs(runId, solvers[0]);
        c1 = commitAs(runId, solvers[1]);
        warpToAttest(runId);
        drawSeed(runId);
    }

    function _ref(uint8 slot) internal view returns (AttestationRef memory) {
        return AttestationRef({runId: runId, round: 0, solver: solvers[1], slot: slot});
    }

    function _settle() internal {
        warpToClaim(runId);
        for (uint8 slot; slot < 3; ++slot) {
            try ver.finalize(_ref(slot)) {} catch {}
        }
        claimAndSettle(runId, keccak256("theta1"));
    }

    // ------------------------------------------------------------------ the attack of finding 6

    function test_finalize_accompliceFinalizesFirst_honestProverSharesEqually_succeeds() public {
        address honest = attestFailAs(_ref(0), c1, 0);
        address accomplice = attestFailAs(_ref(1), c1, 0);
        warpToClaim(runId);
        // the accomplice controls when the permissionless finalize runs: its own fail goes first
        ver.finalize(_ref(1));
        ver.finalize(_ref(0));
        claimAndSettle(runId, keccak256("theta1"));
        faults.claimFaultReward(_ref(0));
        faults.claimFaultReward(_ref(1));
        assertEq(faults.credits(honest), POT / 2, "the honest prover gets its equal share");
        assertEq(faults.credits(accomplice), POT / 2, "the accomplice gets one share, not the whole reward");
        assertEq(ver.credits(accomplice), 1 ether, "finalizing first pays only the finalizer's own bond back");
    }

    function testFuzz_claimFaultReward_anyFinalizeOrder_equalShares_succeeds(uint256 orderSeed) public {
        address[3] memory v;
        for (uint8 slot; slot < 3; ++slot) {
            v[slot] = attestFailAs(_ref(slot), c1, 1);
        }
        warpToClaim(runId);
        uint8 first = uint8(bound(orderSeed, 0, 2));
        ver.finalize(_ref(first));
        for (uint8 k = 1; k < 3; ++k) {
            ver.finalize(_ref((first + k) % 3));
        }
        claimAndSettle(runId, keccak256("theta1"));
        for (uint8 k; k < 3; ++k) {
            faults.claimFaultReward(_ref((first + 2 * k) % 3));
        }
        for (uint8 slot; slot < 3; ++slot) {
            assertEq(faults.credits(v[slot]), POT / 3, "every prover the same share");
        }
        FaultRewards.FaultReward memory f = faults.faultRewardOf(runId, 0, solvers[1]);
        assertEq(f.paid, 3 * (POT / 3));
        assertEq(address(faults).balance, POT, "the division dust stays for the sweep");
    }

    /// Issue 36, finding 5: the challenger of an overturned pass is paid from the wrong attester's forfeits (Disputes)
    /// and is no prover of the solver's fault, so a cheater's accomplice that challenges its coalition's own lazy pass
    /// first recovers none of the cheater's stake; the standing fail takes the provers' half (before: half each).
    function test_claimFaultReward_overturnedPassAndStandingFail_failTakesAll_succeeds() public {
        address lazy = attestPassAs(_ref(0), c1);
        address honest = attestFailAs(_ref(1), c1, 0);
        address whistleblower = makeAddr("whistleblower");
        DisputeSubject memory s = challengeAs(whistleblower, _ref(0), c1, 0);
        drawJury(s);
        decide(s, true, 5);
        dis.execute(s); // the verdict proves the fault first: it slashes the solver
        assertEq(faults.faultRewardOf(runId, 0, solvers[1]).amount, POT);
        _settle();
        faults.claimFaultReward(_ref(1));
        vm.expectRevert(abi.encodeWithSelector(Verification.NotAProver.selector, uint8(0)));
        faults.claimFaultReward(_ref(0));
        assertEq(faults.credits(honest), POT, "the standing fail's verifier: the whole provers' half");
        assertEq(faults.credits(whistleblower), 0, "the pass's challenger: paid by Disputes, not here");
        assertEq(faults.credits(lazy), 0);
        (address prover, uint256 provers) = ver.proverOf(_ref(1));
        assertEq(prover, honest);
        assertEq(provers, 1);
    }

    function test_claimFaultReward_upheldFailFirst_standingFailShares_succeeds() public {
        address challenged = attestFailAs(_ref(0), c1, 0);
        address other = attestFailAs(_ref(1), c1, 0);
        DisputeSubject memory s = challengeAs(outsider, _ref(0), c1, 0); // an accomplice disputes the right fail
        drawJury(s);
        decide(s, false, 5);
        dis.execute(s);
        _settle();
        faults.claimFaultReward(_ref(0));
        faults.claimFaultReward(_ref(1));
        assertEq(faults.credits(challenged), POT / 2);
        assertEq(faults.credits(other), POT / 2);
        assertEq(faults.credits(outsider), 0, "the losing challenger proves nothing");
    }

    // ------------------------------------------------------------------ who is a prover

    function test_claimFaultReward_overturnedFail_reverts() public {
        attestFailAs(_ref(0), c1, 0);
        address standing = attestFailAs(_ref(1), c1, 1);
        DisputeSubject memory s = challengeAs(outsider, _ref(0), c1, 0);
        drawJury(s);
        decide(s, true, 5); // the jury finds this fail wrong
        dis.execute(s);
        _settle();
        vm.expectRevert(abi.encodeWithSelector(Verification.NotAProver.selector, 0));
        faults.claimFaultReward(_ref(0));
        faults.claimFaultReward(_ref(1));
        assertEq(faults.credits(standing), POT, "the only standing proof takes the whole reward");
    }

    function test_claimFaultReward_passSeat_reverts() public {
        attestPassAs(_ref(0), c1);
        attestFailAs(_ref(1), c1, 0);
        _settle();
        vm.expectRevert(abi.encodeWithSelector(Verification.NotAProver.selector, 0));
        faults.claimFaultReward(_ref(0));
    }

    function test_claimFaultReward_failNotFinalized_reverts() public {
        attestFailAs(_ref(0), c1, 0);
        address late = attestFailAs(_ref(1), c1, 0);
        warpToClaim(runId);
        ver.finalize(_ref(0));
        claimAndSettle(runId, keccak256("theta1"));
        vm.expectRevert(abi.encodeWithSelector(Verification.NotAProver.selector, 1));
        faults.claimFaultReward(_ref(1));
        faults.claimFaultReward(_ref(0));
        assertEq(faults.credits(ver.attesterOf(_ref(0))), POT / 2, "the unfinalized fail still counts");
        ver.finalize(_ref(1));
        faults.claimFaultReward(_ref(1));
        assertEq(faults.credits(late), POT / 2);
    }

    function test_claimFaultReward_beforeSettle_reverts() public {
        attestFailAs(_ref(0), c1, 0);
        warpToClaim(runId);
        ver.finalize(_ref(0));
        vm.expectRevert(abi.encodeWithSelector(FaultRewards.NotSettled.selector, runId, 0));
        faults.claimFaultReward(_ref(0));
    }

    function test_claimFaultReward_twice_reverts() public {
        attestFailAs(_ref(0), c1, 0);
        _settle();
        faults.claimFaultReward(_ref(0));
        vm.expectRevert(abi.encodeWithSelector(FaultRewards.AlreadyRewarded.selector, 0));
        faults.claimFaultReward(_ref(0));
    }

    function test_claimFaultReward_noFault_reverts() public {
        attestPassAs(AttestationRef(runId, 0, solvers[0], 0), c0);
        _settle();
        vm.expectRevert(abi.encodeWithSelector(FaultRewards.NoFaultReward.selector, runId, 0, solvers[0]));
        faults.claimFaultReward(AttestationRef(runId, 0, solvers[0], 0));
    }

    function test_onFaultProven_notVerification_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(FaultRewards.NotVerification.selector, outsider));
        vm.prank(outsider);
        faults.onFaultProven{value: 0}(runId, 0, solvers[1]);
    }

    // ------------------------------------------------------------------ payout and sweep

    function test_withdraw_paysCredits_succeeds() public {
        address verifier = attestFailAs(_ref(0), c1, 0);
        _settle();
        faults.claimFaultReward(_ref(0));
        uint256 before = verifier.balance;
        vm.prank(verifier);
        faults.withdraw();
        assertEq(verifier.balance - before, POT);
        assertEq(address(faults).balance, 0);
        vm.prank(verifier);
        vm.expectRevert(PullPayments.NothingToWithdraw.selector);
        faults.withdraw();
    }

    function test_sweepFaultReward_afterWindow_unclaimedToPool_succeeds() public {
        attestFailAs(_ref(0), c1, 0);
        attestFailAs(_ref(1), c1, 0);
        _settle();
        faults.claimFaultReward(_ref(0));
        uint256 provenAt = faults.faultRewardOf(runId, 0, solvers[1]).provenAt;
        uint256 closesAt = provenAt + sm.unbondingDelay() + Constants.REWARD_CLAIM_WINDOW;
        vm.warp(closesAt - 1);
        vm.expectRevert(abi.encodeWithSelector(FaultRewards.ClaimWindowOpen.selector, closesAt));
        faults.sweepFaultReward(runId, 0, solvers[1]);
        vm.warp(closesAt);
        uint256 poolBefore = shares.pool(runId);
        vm.expectEmit(address(faults));
        emit FaultRewards.FaultRewardSwept(runId, 0, solvers[1], POT / 2);
        faults.sweepFaultReward(runId, 0, solvers[1]);
        assertEq(shares.pool(runId) - poolBefore, POT / 2, "the unclaimed share goes to the pool");
        assertEq(address(faults).balance, POT / 2, "the claimed share stays owed to its prover");
        vm.expectRevert(abi.encodeWithSelector(FaultRewards.NoFaultReward.selector, runId, 0, solvers[1]));
        faults.claimFaultReward(_ref(1));
        vm.expectRevert(abi.encodeWithSelector(FaultRewards.NoFaultReward.selector, runId, 0, solvers[1]));
        faults.sweepFaultReward(runId, 0, solvers[1]);
    }
}
