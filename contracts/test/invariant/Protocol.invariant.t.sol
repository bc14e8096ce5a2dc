// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Fixture} from "../utils/Fixture.sol";
import {Protocol} from "../../script/ProtocolDeployer.sol";
import {Handler} from "./Handler.sol";
import {Constants} from "../../src/Constants.sol";
import {Disputes} from "../../src/Disputes.sol";
import {FaultRewards} from "../../src/FaultRewards.sol";
import {ModelShares} from "../../src/ModelShares.sol";
import {RunRegistry} from "../../src/RunRegistry.sol";
import {RunShares} from "../../src/RunShares.sol";
import {Verification} from "../../src/Verification.sol";
import {IRunRegistry} from "../../src/interfaces/IRunRegistry.sol";
import {AttestationRef, DisputeSubject, RunTerms} from "../../src/interfaces/Types.sol";

/// @notice Protocol-wide invariants under random sequences of every user action (see Handler): the set-up and the
///         checks, shared by the random campaign (ProtocolInvariantTest, below) and concrete replays of its
///         sequences (CampaignReplay.t.sol).
abstract contract ProtocolChecks is Fixture {
    Handler internal handler;
    uint256 internal runId;
    /// @dev A second run (no reward pool, never played) that the same solvers joined and the same verifiers
    ///      registered in: their stake backs both runs, each with its own reservation (issue 16, finding 5).
    uint256 internal otherRunId;

    function setUp() public override {
        super.setUp();
        RunTerms memory c = defaultConfig();
        c.verifiersPerCommitment = 2;
        c.jurySize = 3;
        c.commitWindow = 10 minutes;
        c.attestWindow = 10 minutes;
        c.challengeWindow = 10 minutes;
        c.disputeTimeout = 10 minutes;
        c.maxRounds = 3;
        c.revenueReleasePeriod = 1 days;
        runId = createRun(c);
        joinSolvers(runId, 3);
        registerVerifiers(runId, 3);
        registerJurors(5);
        vm.prank(creator);
        otherRunId = reg.createRun(c);
        joinSolvers(otherRunId, 3); // 10 ether more each: the first run's stake is reserved
        registerVerifiers(otherRunId, 3); // 5 ether more each, likewise
        address[] memory s = new address[](3);
        address[] memory v = new address[](3);
        for (uint256 i; i < 3; ++i) {
            s[i] = solvers[i];
            v[i] = verifiers[i];
        }
        handler = new Handler(
            Protocol(sm, reg, ver, dis, shares, jurors, faults, vreg, plants, directory, randomness),
            runId,
            s,
            v,
            jurorAddrs,
            jurorSks,
            jurorPks
        );
        handler.setOtherRun(otherRunId);
        targetContract(address(handler));
        bytes4[] memory selectors = new bytes4[](50);
        selectors[0] = Handler.warp.selector;
        selectors[1] = Handler.depositStake.selector;
        selectors[2] = Handler.requestUnbond.selector;
        selectors[3] = Handler.withdrawStake.selector;
        selectors[4] = Handler.commit.selector;
        selectors[5] = Handler.drawSeed.selector;
        selectors[6] = Handler.attest.selector;
        selectors[7] = Handler.finalize.selector;
        selectors[8] = Handler.challenge.selector;
        selectors[9] = Handler.postClaim.selector;
        selectors[10] = Handler.challengeClaim.selector;
        selectors[11] = Handler.resolve.selector;
        selectors[12] = Handler.expire.selector;
        selectors[13] = Handler.settle.selector;
        selectors[14] = Handler.claimShares.selector;
        selectors[15] = Handler.payRevenue.selector;
        selectors[16] = Handler.withdrawRevenue.selector;
        selectors[17] = Handler.transferShares.selector;
        selectors[18] = Handler.withdrawCredits.selector;
        selectors[19] = Handler.unbondAndTryExit.selector;
        selectors[20] = Handler.attest.selector;
        selectors[21] = Handler.warp.selector;
        selectors[22] = Handler.warp.selector;
        selectors[23] = Handler.resolve.selector;
        selectors[24] = Handler.open.selector;
        selectors[25] = Handler.reportUnopened.selector;
        selectors[26] = Handler.churnVerifier.selector;
        for (uint256 i = 27; i < 50; ++i) {
            selectors[i] = Handler.advance.selector;
        }
        targetSelector(FuzzSelector({addr: address(handler), selectors: selectors}));
        // No action spends these idle set-up balances (each deals what it pays). A campaign once came up exactly the
        // outsider's 1,000 ETH short where a replay of its calls did not (docs/contracts.md, "An open failure"): at
        // zero, a balance the campaign loses between runs cannot pass for a leak, while every wei the actions move
        // is still counted.
        vm.deal(creator, 0);
        vm.deal(outsider, 0);
        _setupTotal = _systemBalance() + _actorBalance();
    }

    uint256 internal _setupTotal;

    function _systemBalance() internal view returns (uint256) {
        return address(sm).balance + address(reg).balance + address(ver).balance + address(dis).balance
            + address(shares).balance + address(faults).balance + address(tokenOf(runId)).balance;
    }

    function _actorBalance() internal view returns (uint256 held) {
        for (uint256 i; i < handler.actorCount(); ++i) {
            held += handler.actors(i).balance;
        }
    }

    /// @notice Every invariant, each a named function below so a failure says which property broke; the campaign
    ///         calls it after every call, CampaignReplay after every replayed call.
    function checkProtocolHolds() public view {
        checkEthConserved();
        checkStakeManagerOwesItsBalance();
        checkRunRegistryOwesItsBalance();
        checkVerificationOwesItsBalance();
        checkDisputesOwesItsBalance();
        checkModelSharesOwesItsPool();
        checkRevenueSolventAndNotOverpaid();
        checkSlashOncePerFaultAndCapped();
        checkStakeCannotLeaveEarly();
        checkPayoutSplitExact();
        checkCommittedRootsAppendOnly();
        checkSharesOnlyAtSettlementAndOnce();
        checkTransfersKeepAccruedRevenue();
        checkOpeningRules();
        checkUnopenedSlashAllToPool();
        checkReservationsMatchObligations();
        checkVerdictsHaveAQuorumOfDrawnSeats();
        checkFaultRewardsOwesItsBalance();
    }

    // ------------------------------------------------------------------ reservations and juries (issue 16)

    /// @dev Every wei reserved backs an open obligation and every obligation has its stake reserved: a solver of the
    ///      run (joined, not left) solverMinStake; an active verifier entry verifierMinStake; a registered or exiting
    ///      juror JUROR_MIN_STAKE. Nothing else is reserved, so a slash takes stake from an account that reserved it.
    function checkReservationsMatchObligations() public view {
        uint256[2] memory runs = [runId, otherRunId];
        for (uint256 i; i < handler.actorCount(); ++i) {
            address who = handler.actors(i);
            uint256 solverExpected;
            uint256 verifierExpected;
            for (uint256 r; r < 2; ++r) {
                (,, bytes28 hash) = reg.commitmentOf(runs[r], who);
                if (hash != bytes28(0) && hash != bytes28(uint224(2))) solverExpected += reg.solverMinStake(runs[r]);
                verifierExpected += _verifierReservations(runs[r], who) * reg.runEconomics(runs[r]).verifierMinStake;
            }
            (,, bool jurorReserved) = jurors.jurors(who);
            if (jurorReserved) verifierExpected += Constants.JUROR_MIN_STAKE;
            (,,, uint256 solverReserved) = sm.stakeOf(who, Constants.ROLE_SOLVER);
            (,,, uint256 verifierReserved) = sm.stakeOf(who, Constants.ROLE_VERIFIER);
            assertEq(solverReserved, solverExpected, "solver reservation != memberships of both runs");
            assertEq(verifierReserved, verifierExpected, "verifier reservation != registrations in both runs");
        }
    }

    /// @dev 1 if `who` holds a verifier reservation in `run` (in the list, or exiting), checked against the list: an
    ///      entry is listed exactly at its recorded index.
    function _verifierReservations(uint256 run, address who) internal view returns (uint256 count) {
        (uint32 indexPlusOne,, bool reserved) = vreg.records(run, who);
        if (indexPlusOne != 0) {
            assertTrue(reserved, "a listed verifier holds its reservation");
            assertEq(vreg.verifierAt(run, indexPlusOne - 1, block.number), who, "the record's index holds it");
        }
        return reserved ? 1 : 0;
    }

    /// @dev A decided or executed verdict was signed by at least ceil(2/3) of the seats actually drawn, and the jury
    ///      had at least MIN_JURY_SIZE seats.
    function checkVerdictsHaveAQuorumOfDrawnSeats() public view {
        for (uint256 k; k < handler.disputeCount(); ++k) {
            Disputes.Dispute memory d = dis.disputeOf(dis.disputeIdOf(handler.disputeAt(k)));
            if (d.status != Disputes.Status.Decided && d.status != Disputes.Status.Executed) continue;
            assertGe(d.seats, Constants.MIN_JURY_SIZE, "a verdict of a jury below the minimum");
            assertEq(_popcount(d.eligible), d.seats, "seats != the jury bitmap");
            assertGe(
                _popcount(d.signers), dis.quorum(d.seats, d.appeals), "a verdict without a quorum of the drawn seats"
            );
            assertEq(d.signers & ~d.eligible, 0, "a signer outside the jury");
        }
    }

    // ------------------------------------------------------------------ accounting

    /// @dev Every wei is held by an actor or a protocol contract: the total only grows by what the handler
    ///      dealt to actors (nothing leaks to a third address, nothing appears from nowhere).
    function checkEthConserved() public view {
        assertEq(_systemBalance() + _actorBalance(), _setupTotal + handler.ghostDealt(), "ETH leaked or appeared");
    }

    /// @dev StakeManager: ETH balance == sum of bonded + unbonding stake.
    function checkStakeManagerOwesItsBalance() public view {
        uint256 owed;
        for (uint256 i; i < handler.actorCount(); ++i) {
            for (uint8 role = 1; role <= 2; ++role) {
                (uint256 bonded, uint256 unbonding,,) = sm.stakeOf(handler.actors(i), role);
                owed += bonded + unbonding;
            }
        }
        assertEq(address(sm).balance, owed);
    }

    /// @dev RunRegistry: ETH balance == bonds of live claims and settled claims not yet withdrawn.
    function checkRunRegistryOwesItsBalance() public view {
        IRunRegistry.RoundTimes memory t = reg.roundTimes(runId);
        uint256 owed;
        for (uint64 r; r <= t.round; ++r) {
            RunRegistry.Claim memory claim = reg.claimOf(runId, r);
            RunRegistry.ClaimStatus s = claim.status;
            bool held = s == RunRegistry.ClaimStatus.Posted || s == RunRegistry.ClaimStatus.Challenged
                || s == RunRegistry.ClaimStatus.Upheld || (s == RunRegistry.ClaimStatus.Settled && !claim.bondPaid);
            if (held) owed += 2 ether;
        }
        assertEq(address(reg).balance, owed);
    }

    /// @dev Verification: ETH balance == credits + bonds of attestations not yet finalized or resolved.
    function checkVerificationOwesItsBalance() public view {
        uint256 owed;
        for (uint256 i; i < handler.actorCount(); ++i) {
            owed += ver.credits(handler.actors(i));
        }
        IRunRegistry.RoundTimes memory t = reg.roundTimes(runId);
        for (uint64 r; r <= t.round; ++r) {
            for (uint256 i; i < 3; ++i) {
                for (uint8 slot; slot < 2; ++slot) {
                    (Verification.AttestationState s,,,) = ver.attestationOf(AttestationRef(runId, r, solvers[i], slot));
                    if (s == Verification.AttestationState.Attested || s == Verification.AttestationState.Challenged) {
                        owed += 1 ether;
                    }
                }
            }
        }
        assertEq(address(ver).balance, owed);
    }

    /// @dev Disputes: ETH balance == credits + bonds of unresolved disputes + unclaimed juror rewards.
    function checkDisputesOwesItsBalance() public view {
        uint256 owed;
        for (uint256 i; i < handler.actorCount(); ++i) {
            owed += dis.credits(handler.actors(i));
        }
        for (uint256 k; k < handler.disputeCount(); ++k) {
            Disputes.Dispute memory d = dis.disputeOf(dis.disputeIdOf(handler.disputeAt(k)));
            if (
                d.status == Disputes.Status.Open || d.status == Disputes.Status.JuryDrawn
                    || d.status == Disputes.Status.Decided
            ) {
                owed += 2 ether;
            }
            if (d.status == Disputes.Status.Executed) owed += d.rewardPerJuror * _popcount(d.signers & ~d.claimed);
        }
        assertEq(address(dis).balance, owed);
    }

    /// @dev FaultRewards: ETH balance == credits + what each proven fault's provers have not been paid (until swept),
    ///      and no fault's provers were paid more than its amount.
    function checkFaultRewardsOwesItsBalance() public view {
        uint256 owed;
        for (uint256 i; i < handler.actorCount(); ++i) {
            owed += faults.credits(handler.actors(i));
        }
        IRunRegistry.RoundTimes memory t = reg.roundTimes(runId);
        for (uint64 r; r <= t.round; ++r) {
            for (uint256 i; i < 3; ++i) {
                FaultRewards.FaultReward memory f = faults.faultRewardOf(runId, r, solvers[i]);
                assertLe(f.paid, f.amount, "provers paid more than the fault's reward");
                if (!f.swept) owed += f.amount - f.paid;
            }
        }
        assertEq(address(faults).balance, owed);
    }

    /// @dev ModelShares holds exactly the reward pool.
    function checkModelSharesOwesItsPool() public view {
        uint256 owed = shares.pool(runId) + shares.pool(otherRunId);
        for (uint256 i; i < handler.actorCount(); ++i) {
            owed += shares.credits(handler.actors(i));
        }
        IRunRegistry.RoundTimes memory t = reg.roundTimes(runId);
        for (uint64 r; r <= t.round; ++r) {
            ModelShares.RoundRelease memory rr = shares.roundReleaseOf(runId, r);
            assertLe(rr.credited, rr.amount, "a round's contributors credited more than its release");
            if (!rr.swept) owed += rr.amount - rr.credited;
        }
        assertEq(address(shares).balance, owed);
    }

    /// @dev The share token holds what is still to be released plus what holders can withdraw, and at most
    ///      a wei of rounding per holder (plus one) more; revenue withdrawn never exceeds revenue paid in.
    function checkRevenueSolventAndNotOverpaid() public view {
        RunShares token = tokenOf(runId);
        (uint256 remaining,,) = token.revenueState();
        uint256 withdrawable;
        for (uint256 i; i < handler.actorCount(); ++i) {
            withdrawable += token.withdrawableRevenueOf(handler.actors(i));
        }
        uint256 balance = address(token).balance;
        assertGe(balance, remaining + withdrawable, "token cannot pay what it owes");
        assertLe(balance, remaining + withdrawable + handler.actorCount() + 1, "revenue stranded beyond dust");
        assertLe(handler.ghostRevenueOut(), handler.ghostRevenueIn(), "withdrawn more revenue than paid");
        assertEq(balance, handler.ghostRevenueIn() - handler.ghostRevenueOut(), "revenue ETH unaccounted");
    }

    // ------------------------------------------------------------------ rules

    /// @dev A fault is slashed at most once and never for more than the role's minimum stake of the run.
    function checkSlashOncePerFaultAndCapped() public view {
        assertEq(handler.ghostSlashChanged(), 0, "a fault was slashed twice");
        for (uint256 i; i < handler.faultKeyCount(); ++i) {
            assertLe(sm.slashedAmount(handler.faultKeys(i)), 10 ether, "slash above the cap");
        }
    }

    /// @dev Locked stake never starts unbonding, unbonding stake never leaves before its release time.
    function checkStakeCannotLeaveEarly() public view {
        assertEq(handler.ghostEarlyStakeExit(), 0);
    }

    /// @dev Every dispute payout splits the loser's loss exactly (winner + jurors + pool).
    function checkPayoutSplitExact() public view {
        assertEq(handler.ghostPayoutMismatch(), 0);
    }

    /// @dev A commitment, once made, cannot be replaced in its round.
    function checkCommittedRootsAppendOnly() public view {
        assertEq(handler.ghostRootRewritten(), 0);
        assertTrue(handler.currentCommitmentsIntact(), "a current-round commitment changed");
    }

    /// @dev Shares exist only for settled rounds, never more than the round's allocation, and each
    ///      contribution is minted once.
    function checkSharesOnlyAtSettlementAndOnce() public view {
        IRunRegistry.RoundTimes memory t = reg.roundTimes(runId);
        uint256 minted;
        for (uint64 r; r <= t.round; ++r) {
            uint256 inRound = shares.mintedInRound(runId, r);
            if (!reg.isSettled(runId, r)) assertEq(inRound, 0, "shares minted before settlement");
            assertLe(inRound, 1000e18, "more than sharesPerRound");
            minted += inRound;
        }
        assertEq(tokenOf(runId).totalSupply(), minted);
        assertEq(handler.ghostDoubleMint(), 0, "a contribution was minted twice");
    }

    /// @dev A transfer leaves both parties' accrued revenue unchanged.
    function checkTransfersKeepAccruedRevenue() public view {
        assertEq(handler.ghostTransferMovedRevenue(), 0);
    }

    /// @dev Only opened commitments are attested, openings prove the sampled leaves, reports wait for their
    ///      deadline, a round settles only with every commitment resolved, and `unresolved` counts the rest.
    function checkOpeningRules() public view {
        assertEq(handler.ghostOpeningRuleBroken(), 0, "an opening rule was broken");
        assertTrue(handler.unresolvedMatches(), "RunState.unresolved differs from the unresolved commitments");
    }

    /// @dev An unopened report of a drawn round slashes min(solverMinStake, stake) once, all of it to the reward
    ///      pool; one of an undrawn round slashes nothing.
    function checkUnopenedSlashAllToPool() public view {
        assertEq(handler.ghostUnopenedSlashMismatch(), 0, "an unopened slash was not paid whole to the pool");
    }

    /// @dev After every window closes and everyone claims and withdraws, only rounding dust remains.
    function checkDrainedToDust() public {
        handler.drainAll();
        // every invariant must also hold in the final state
        checkProtocolHolds();
        assertEq(address(sm).balance, 0, "stake stranded");
        assertEq(address(reg).balance, 0, "claim bonds stranded");
        assertEq(address(ver).balance, 0, "attestation bonds or credits stranded");
        assertLe(address(dis).balance, 0, "dispute bonds, credits or juror rewards stranded");
        assertEq(address(faults).balance, 0, "fault rewards stranded");
        assertEq(address(shares).balance, 0, "reward pool stranded");
        assertLe(address(tokenOf(runId)).balance, handler.actorCount() + 1, "revenue stranded beyond dust");
    }

    function _popcount(uint256 bits) internal pure returns (uint256 count) {
        while (bits != 0) {
            bits &= bits - 1;
            ++count;
        }
    }
}

/// @notice The random campaign: 256 runs x 50 calls of the Handler's actions, every check after every call, and the
///         drain-to-dust check after every run.
contract ProtocolInvariantTest is ProtocolChecks {
    function invariant_protocolHolds() public view {
        checkProtocolHolds();
    }

    function afterInvariant() public {
        checkDrainedToDust();
    }
}
