// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Fixture} from "./utils/Fixture.sol";
import {Constants} from "../src/Constants.sol";
import {Disputes} from "../src/Disputes.sol";
import {Verification} from "../src/Verification.sol";
import {RunShares} from "../src/RunShares.sol";
import {AttestationRef, CommitmentData, DisputeSubject} from "../src/interfaces/Types.sol";

/// @notice A whole round with an honest and a cheating solver, a wrong attestation caught by a
///         whistleblower and a BLS jury, settlement, shares and revenue.
contract EndToEndTest is Fixture {
    function test_round_honestAndCheatingSolver_succeeds() public {
        uint256 runId = createRun(defaultConfig());
        joinSolvers(runId, 2);
        registerVerifiers(runId, 4);
        registerJurors(8);
        CommitmentData memory honest = commitAs(runId, solvers[0]);
        CommitmentData memory cheat = commitAs(runId, solvers[1]);
        warpToAttest(runId);
        drawSeed(runId);

        AttestationRef memory h0 = refOf(runId, solvers[0], 0);
        AttestationRef memory c0 = refOf(runId, solvers[1], 0);
        attestPassAs(h0, honest);
        attestPassAs(refOf(runId, solvers[0], 1), honest);
        address lazy = attestPassAs(c0, cheat); // a wrong pass on the cheater
        attestFailAs(refOf(runId, solvers[1], 1), cheat, 1);

        DisputeSubject memory subject = challengeAs(outsider, c0, cheat, 0);
        drawJury(subject);
        decide(subject, true, 0);
        uint256 lazyStake = sm.bondedOf(lazy, Constants.ROLE_VERIFIER);
        dis.execute(subject);
        assertEq(sm.bondedOf(lazy, Constants.ROLE_VERIFIER), lazyStake - 5 ether, "attester slashed");
        assertEq(sm.bondedOf(solvers[1], Constants.ROLE_SOLVER), 0, "cheating solver slashed");

        warpToClaim(runId);
        ver.finalize(h0);
        ver.finalize(refOf(runId, solvers[0], 1));
        ver.finalize(refOf(runId, solvers[1], 1)); // the fail: solver already slashed, takes 0
        claimAndSettle(runId, keccak256("theta1"));

        ver.claimSolverShares(runId, 0, solvers[0]);
        vm.expectRevert(abi.encodeWithSelector(Verification.NotAccepted.selector, runId, 0, solvers[1]));
        ver.claimSolverShares(runId, 0, solvers[1]);
        RunShares token = tokenOf(runId);
        assertEq(token.balanceOf(solvers[0]), 600e18, "solver gets the whole solver share");
        ver.claimVerifierShares(h0);

        vm.prank(outsider);
        shares.payRevenue{value: 10 ether}(runId);
        vm.warp(block.timestamp + 30 days);
        uint256 before = solvers[0].balance;
        vm.prank(solvers[0]);
        token.withdrawRevenue();
        assertGt(solvers[0].balance, before);
    }
}
