// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Fixture} from "./utils/Fixture.sol";
import {Rejector} from "./utils/Rejector.sol";
import {Constants} from "../src/Constants.sol";
import {RunRegistry} from "../src/RunRegistry.sol";
import {StakeManager} from "../src/StakeManager.sol";
import {IRunRegistry} from "../src/interfaces/IRunRegistry.sol";
import {CommitmentData, DisputeSubject, RunTerms} from "../src/interfaces/Types.sol";

contract RunRegistryTest is Fixture {
    uint256 internal runId;

    function setUp() public override {
        super.setUp();
        runId = createRun(defaultConfig());
    }

    // ------------------------------------------------------------------ createRun

    function test_createRun_defaultConfig_succeeds() public {
        RunTerms memory c = defaultConfig();
        vm.expectEmit(address(reg));
        emit RunRegistry.RoundStarted(2, 0, block.timestamp, c.theta0Hash);
        uint256 id = createRun(c);
        assertEq(id, 2);
        assertEq(reg.runCount(), 2);
        assertEq(reg.creatorOf(id), creator);
        assertEq(reg.theta0Hash(id), c.theta0Hash);
        assertEq(reg.thetaOf(id, 0), c.theta0Hash);
        assertEq(reg.runParams(id).numSegments, 8);
        assertEq(reg.runEconomics(id).challengeBond, c.challengeBond);
        assertEq(reg.disputeTerms(id).jurySize, c.jurySize);
        assertEq(reg.runInfo(id).maxRounds, c.maxRounds);
        assertEq(reg.solverMinStake(id), c.solverMinStake);
        assertEq(reg.sharesPerRound(id), c.sharesPerRound);
        assertEq(shares.pool(id), REWARD_POOL);
        assertTrue(address(shares.shareToken(id)) != address(0));
        RunRegistry.RunState memory s = reg.runState(id);
        assertEq(s.round, 0);
        assertEq(s.roundStart, block.timestamp);
        assertEq(reg.roundTimes(id).seedBlock, block.number + WINDOW / BLOCK_SECONDS);
    }

    function _expectInvalid(RunTerms memory c, string memory reason) internal {
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.InvalidConfig.selector, reason));
        reg.createRun(c);
    }

    function test_createRun_badSegments_reverts() public {
        RunTerms memory c = defaultConfig();
        c.stepsPerSegment = 3;
        _expectInvalid(c, "innerSteps must be a positive multiple of stepsPerSegment");
        c.stepsPerSegment = 0;
        _expectInvalid(c, "innerSteps must be a positive multiple of stepsPerSegment");
        c = defaultConfig();
        c.innerSteps = 70_000;
        c.stepsPerSegment = 1;
        _expectInvalid(c, "a commitment has at most 65535 segments");
    }

    function test_createRun_badSamples_reverts() public {
        RunTerms memory c = defaultConfig();
        c.samplesPerCommitment = 0;
        _expectInvalid(c, "samplesPerCommitment must be in [1, MAX_SAMPLES]");
        c.samplesPerCommitment = uint16(Constants.MAX_SAMPLES + 1);
        _expectInvalid(c, "samplesPerCommitment must be in [1, MAX_SAMPLES]");
    }

    function test_createRun_badVerifiers_reverts() public {
        RunTerms memory c = defaultConfig();
        c.verifiersPerCommitment = uint8(Constants.MAX_VERIFIERS_PER_COMMITMENT + 1);
        _expectInvalid(c, "verifiersPerCommitment must be in [1, MAX_VERIFIERS_PER_COMMITMENT]");
    }

    function test_createRun_badJury_reverts() public {
        RunTerms memory c = defaultConfig();
        c.jurySize = uint8(Constants.MAX_JURY_SIZE + 1);
        _expectInvalid(c, "jurySize must be in [MIN_JURY_SIZE, MAX_JURY_SIZE]");
    }

    /// Finding 9 of issue 16 (part): a jury below MIN_JURY_SIZE cannot decide anything, so no run may ask for one.
    function test_createRun_juryBelowMinimum_reverts() public {
        RunTerms memory c = defaultConfig();
        c.jurySize = uint8(Constants.MIN_JURY_SIZE - 1);
        _expectInvalid(c, "jurySize must be in [MIN_JURY_SIZE, MAX_JURY_SIZE]");
    }

    function test_createRun_zeroWindow_reverts() public {
        RunTerms memory c = defaultConfig();
        c.disputeTimeout = 0;
        _expectInvalid(c, "every window must be positive");
    }

    function test_createRun_windowsBeyondUnbonding_reverts() public {
        RunTerms memory c = defaultConfig();
        c.challengeWindow = uint32(UNBONDING_DELAY);
        _expectInvalid(c, "commit + attest + 2 * (challenge + 3 dispute timeouts) exceed the unbonding delay");
    }

    function test_createRun_appealsBeyondUnbonding_reverts() public {
        // fits with one dispute timeout per challenge, not with the two appeals a dispute may take
        RunTerms memory c = defaultConfig();
        c.disputeTimeout = uint32((UNBONDING_DELAY - 2 * WINDOW - 2 * WINDOW) / 2);
        _expectInvalid(c, "commit + attest + 2 * (challenge + 3 dispute timeouts) exceed the unbonding delay");
        c.disputeTimeout = uint32((UNBONDING_DELAY - 2 * WINDOW - 2 * WINDOW) / 6);
        vm.prank(creator);
        reg.createRun{value: 1 ether}(c);
    }

    function test_createRun_zeroBond_reverts() public {
        RunTerms memory c = defaultConfig();
        c.attestationBond = 0;
        _expectInvalid(c, "bonds must be positive");
    }

    /// Finding 9 of issue 16: stakes below the bonds they back were accepted (catching a cheat could cost more
    /// than it paid).
    function test_createRun_stakeBelowBond_reverts() public {
        RunTerms memory c = defaultConfig();
        c.solverMinStake = c.challengeBond - 1;
        _expectInvalid(c, "stakes must be at least the bonds (solver >= challenge, verifier >= attestation)");
        c = defaultConfig();
        c.verifierMinStake = c.attestationBond - 1;
        _expectInvalid(c, "stakes must be at least the bonds (solver >= challenge, verifier >= attestation)");
    }

    function test_createRun_splitNotWhole_reverts() public {
        RunTerms memory c = defaultConfig();
        c.jurorShareBps = 999;
        _expectInvalid(c, "share split must sum to BPS_DENOMINATOR");
    }

    function test_createRun_badRounds_reverts() public {
        RunTerms memory c = defaultConfig();
        c.maxRounds = 0;
        _expectInvalid(c, "maxRounds must be in [1, 2^24) and revenueReleasePeriod positive");
    }

    function test_createRun_tooFewShares_reverts() public {
        RunTerms memory c = defaultConfig();
        c.sharesPerRound = 1e17;
        _expectInvalid(c, "sharesPerRound must be at least one whole share");
    }

    function test_createRun_tooManyShares_reverts() public {
        RunTerms memory c = defaultConfig();
        c.sharesPerRound = uint128(Constants.MAX_TOTAL_SHARES);
        _expectInvalid(c, "sharesPerRound * maxRounds exceeds MAX_TOTAL_SHARES");
    }

    function testFuzz_createRun_windows_succeeds(uint32 commitW, uint32 attestW, uint32 challengeW, uint32 disputeW)
        public
    {
        RunTerms memory c = defaultConfig();
        // commit + attest + 2 * (challenge + 3 * dispute) <= 10 tenths of the unbonding delay; the attest window's
        // first half holds the seed block and 3 more blocks and ends within reach of its RANDAO block (Windows.t.sol)
        c.commitWindow = uint32(bound(commitW, 2 * BLOCK_SECONDS, UNBONDING_DELAY / 10));
        uint256 seedAt = (c.commitWindow + BLOCK_SECONDS - 1) / BLOCK_SECONDS * BLOCK_SECONDS;
        c.attestWindow = uint32(
            bound(
                attestW,
                2 * (seedAt + (2 + Constants.RANDAO_LAG_BLOCKS) * BLOCK_SECONDS - c.commitWindow),
                2
                    * (seedAt
                        + (Constants.SEED_HORIZON_BLOCKS + Constants.RANDAO_LAG_BLOCKS)
                        * BLOCK_SECONDS
                        - c.commitWindow) + 1
            )
        );
        // the challenge window covers attestWindow / 2 and 2 more blocks (issue 37: an attestation at the attest
        // window's end can still be replayed and challenged)
        c.challengeWindow = uint32(bound(challengeW, c.attestWindow / 2 + 2 * BLOCK_SECONDS, UNBONDING_DELAY / 10));
        c.disputeTimeout = uint32(bound(disputeW, 1, UNBONDING_DELAY / 10));
        uint256 id = reg.createRun(c);
        IRunRegistry.RoundTimes memory t = reg.roundTimes(id);
        assertEq(t.commitEnd, block.timestamp + c.commitWindow);
        assertEq(t.attestEnd, t.commitEnd + c.attestWindow);
        assertEq(t.challengeEnd, t.attestEnd + c.challengeWindow);
        uint256 blocks = c.commitWindow / BLOCK_SECONDS;
        if (blocks * BLOCK_SECONDS < c.commitWindow) ++blocks;
        assertEq(t.seedBlock, block.number + blocks, "start block + ceil(commitWindow / blockSeconds)");
    }

    // ------------------------------------------------------------------ join and commit

    function test_join_staked_succeeds() public {
        stakeAs(solvers[0], Constants.ROLE_SOLVER, 10 ether);
        vm.expectEmit(address(reg));
        emit RunRegistry.SolverJoined(runId, solvers[0]);
        vm.prank(solvers[0]);
        reg.join(runId);
        assertTrue(reg.hasJoined(runId, solvers[0]));
        (, bool committed,) = reg.commitmentOf(runId, solvers[0]);
        assertFalse(committed);
    }

    function test_join_twice_reverts() public {
        joinSolvers(runId, 1);
        vm.prank(solvers[0]);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.AlreadyJoined.selector, runId, solvers[0]));
        reg.join(runId);
    }

    function test_join_lowStake_reverts() public {
        stakeAs(solvers[0], Constants.ROLE_SOLVER, 1 ether);
        vm.prank(solvers[0]);
        vm.expectRevert(abi.encodeWithSelector(StakeManager.InsufficientFreeStake.selector, 1 ether, 0, 10 ether));
        reg.join(runId);
    }

    /// Finding 5 of issue 16: one solverMinStake used to back commitments in many runs (only the first slash took
    /// anything). Joining reserves the run's stake, so the same stake cannot join a second run.
    function test_join_stakeReservedByAnotherRun_reverts() public {
        joinSolvers(runId, 1); // 10 ether, all reserved by this run
        uint256 other = createRun(defaultConfig());
        vm.prank(solvers[0]);
        vm.expectRevert(
            abi.encodeWithSelector(StakeManager.InsufficientFreeStake.selector, 10 ether, 10 ether, 10 ether)
        );
        reg.join(other);
        stakeAs(solvers[0], Constants.ROLE_SOLVER, 10 ether);
        vm.prank(solvers[0]);
        reg.join(other); // with its own stake, it may
        (,,, uint256 reserved) = sm.stakeOf(solvers[0], Constants.ROLE_SOLVER);
        assertEq(reserved, 20 ether);
    }

    function test_leaveRun_afterSettle_releasesStake_succeeds() public {
        joinSolvers(runId, 1);
        commitAs(runId, solvers[0]);
        vm.prank(solvers[0]);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.CommitmentPending.selector, runId, 0));
        reg.leaveRun(runId);
        warpToClaim(runId);
        claimAndSettle(runId, keccak256("theta1"));
        vm.expectEmit(address(reg));
        emit RunRegistry.SolverLeft(runId, solvers[0]);
        vm.prank(solvers[0]);
        reg.leaveRun(runId);
        (,,, uint256 reserved) = sm.stakeOf(solvers[0], Constants.ROLE_SOLVER);
        assertEq(reserved, 0);
        vm.prank(solvers[0]);
        sm.requestUnbond(Constants.ROLE_SOLVER, 10 ether); // the stake is free to leave
        vm.prank(solvers[0]);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.NotJoined.selector, runId, solvers[0]));
        reg.commit(runId, 1, keccak256("r"), keccak256("d"), 1);
        vm.prank(solvers[0]);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.NotJoined.selector, runId, solvers[0]));
        reg.leaveRun(runId);
        vm.prank(solvers[0]);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.AlreadyJoined.selector, runId, solvers[0]));
        reg.join(runId);
    }

    function test_leaveRun_notJoined_reverts() public {
        vm.prank(outsider);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.NotJoined.selector, runId, outsider));
        reg.leaveRun(runId);
    }

    function test_join_unknownRun_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.UnknownRun.selector, 99));
        reg.join(99);
    }

    function test_commit_joinedAndStaked_succeeds() public {
        joinSolvers(runId, 1);
        CommitmentData memory c = buildCommitment(runId, 0, solvers[0], 8);
        vm.expectEmit(address(reg));
        emit RunRegistry.Committed(runId, 0, solvers[0], c.root, c.deltaHash, 8, c.tokens);
        vm.prank(solvers[0]);
        reg.commit(runId, 0, c.root, c.deltaHash, c.tokens);
        (uint64 round, bool committed, bytes28 hash) = reg.commitmentOf(runId, solvers[0]);
        assertEq(round, 0);
        assertTrue(committed);
        assertEq(hash, bytes28(keccak256(abi.encode(c.root, c.deltaHash, c.tokens))));
        assertEq(reg.runState(runId).unresolved, 1, "a commitment is unresolved until opened or reported");
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.NotOpened.selector, runId, 0, solvers[0]));
        reg.checkCommitment(runId, 0, solvers[0], c);
    }

    function test_commit_twice_reverts() public {
        joinSolvers(runId, 1);
        commitAs(runId, solvers[0]);
        vm.prank(solvers[0]);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.AlreadyCommitted.selector, runId, 0, solvers[0]));
        reg.commit(runId, 0, keccak256("r"), keccak256("d"), 1);
    }

    function test_commit_notJoined_reverts() public {
        stakeAs(solvers[0], Constants.ROLE_SOLVER, 10 ether);
        vm.prank(solvers[0]);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.NotJoined.selector, runId, solvers[0]));
        reg.commit(runId, 0, keccak256("r"), keccak256("d"), 1);
    }

    function test_commit_afterWindow_reverts() public {
        joinSolvers(runId, 1);
        uint256 commitEnd = reg.roundTimes(runId).commitEnd;
        vm.warp(commitEnd);
        vm.prank(solvers[0]);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.CommitWindowClosed.selector, commitEnd));
        reg.commit(runId, 0, keccak256("r"), keccak256("d"), 1);
    }

    function test_commit_wrongRound_reverts() public {
        joinSolvers(runId, 1);
        vm.prank(solvers[0]);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.WrongRound.selector, 1, 0));
        reg.commit(runId, 1, keccak256("r"), keccak256("d"), 1);
    }

    function test_commit_empty_reverts() public {
        joinSolvers(runId, 1);
        vm.prank(solvers[0]);
        vm.expectRevert(RunRegistry.EmptyCommitment.selector);
        reg.commit(runId, 0, bytes32(0), keccak256("d"), 1);
        vm.prank(solvers[0]);
        vm.expectRevert(RunRegistry.EmptyCommitment.selector);
        reg.commit(runId, 0, keccak256("r"), keccak256("d"), 0);
    }

    function test_requestUnbond_reservedByJoin_reverts() public {
        joinSolvers(runId, 1);
        vm.prank(solvers[0]);
        vm.expectRevert(
            abi.encodeWithSelector(StakeManager.InsufficientFreeStake.selector, 10 ether, 10 ether, 1 ether)
        );
        sm.requestUnbond(Constants.ROLE_SOLVER, 1 ether);
    }

    /// Finding 5 of issue 16: a solver slashed elsewhere no longer commits on stake that is gone.
    function test_commit_slashedBelowReservations_reverts() public {
        joinSolvers(runId, 1);
        vm.prank(address(ver));
        sm.slash(solvers[0], Constants.ROLE_SOLVER, 1 ether, keccak256("a fault in another run"));
        vm.prank(solvers[0]);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.StakeNotCovered.selector, solvers[0]));
        reg.commit(runId, 0, keccak256("r"), keccak256("d"), 1);
        stakeAs(solvers[0], Constants.ROLE_SOLVER, 1 ether);
        vm.prank(solvers[0]);
        reg.commit(runId, 0, keccak256("r"), keccak256("d"), 1);
    }

    function test_commit_unknownRun_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.UnknownRun.selector, 7));
        reg.commit(7, 0, keccak256("r"), keccak256("d"), 1);
    }

    function test_commit_finishedRun_reverts() public {
        RunTerms memory c = defaultConfig();
        c.maxRounds = 1;
        uint256 id = createRun(c);
        joinSolvers(id, 1);
        warpToClaim(id);
        claimAndSettle(id, keccak256("t1"));
        vm.prank(solvers[0]);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.RunIsFinished.selector, id));
        reg.commit(id, 1, keccak256("r"), keccak256("d"), 1);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.RunIsFinished.selector, id));
        reg.join(id);
    }

    function testFuzz_commit_timing_succeeds(uint32 delay) public {
        joinSolvers(runId, 1);
        uint256 wait = bound(delay, 0, 2 * WINDOW);
        vm.warp(block.timestamp + wait);
        vm.prank(solvers[0]);
        if (wait < WINDOW) {
            reg.commit(runId, 0, keccak256("r"), keccak256("d"), 1);
        } else {
            vm.expectRevert(
                abi.encodeWithSelector(RunRegistry.CommitWindowClosed.selector, block.timestamp - wait + WINDOW)
            );
            reg.commit(runId, 0, keccak256("r"), keccak256("d"), 1);
        }
    }

    /// @dev The commit window's time is still open, but the chain has reached the seed block (a chain faster than
    ///      blockSeconds, or vm.roll without vm.warp): the commitment could see the seed, so it is refused.
    function testFuzz_commit_atOrAfterSeedBlock_reverts(uint256 extraBlocks, uint256 wait) public {
        joinSolvers(runId, 1);
        uint256 seedBlock = reg.roundTimes(runId).seedBlock;
        vm.roll(seedBlock + bound(extraBlocks, 0, 10_000));
        vm.warp(block.timestamp + bound(wait, 0, WINDOW - 1));
        vm.prank(solvers[0]);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.SeedBlockReached.selector, seedBlock));
        reg.commit(runId, 0, keccak256("r"), keccak256("d"), 1);
    }

    function test_commit_seedBlockReachedBeforeCommitEnd_reverts() public {
        joinSolvers(runId, 2);
        IRunRegistry.RoundTimes memory t = reg.roundTimes(runId);
        vm.roll(t.seedBlock - 1);
        CommitmentData memory c = buildCommitment(runId, 0, solvers[0], 8);
        vm.prank(solvers[0]);
        reg.commit(runId, 0, c.root, c.deltaHash, c.tokens); // the block before the seed block: accepted
        vm.roll(t.seedBlock);
        assertLt(block.timestamp, t.commitEnd, "the commit window's time is still open");
        vm.prank(solvers[1]);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.SeedBlockReached.selector, t.seedBlock));
        reg.commit(runId, 0, c.root, c.deltaHash, c.tokens);
    }

    /// @dev On a chain whose blocks are at least blockSeconds apart, a commit at any time inside the window
    ///      lands before the seed block: the block check never refuses an honest, on-time commitment.
    function testFuzz_commit_blocksAtBlockSeconds_succeeds(uint256 wait, uint256 blocks) public {
        joinSolvers(runId, 1);
        IRunRegistry.RoundTimes memory t = reg.roundTimes(runId);
        uint256 w = bound(wait, 0, WINDOW - 1);
        uint256 b = bound(blocks, 0, w / BLOCK_SECONDS);
        vm.warp(t.start + w);
        vm.roll(block.number + b);
        assertLt(block.number, t.seedBlock);
        vm.prank(solvers[0]);
        reg.commit(runId, 0, keccak256("r"), keccak256("d"), 1);
        (uint64 round, bool committed,) = reg.commitmentOf(runId, solvers[0]);
        assertTrue(committed);
        assertEq(round, 0);
    }

    function test_checkCommitment_mismatch_reverts() public {
        joinSolvers(runId, 1);
        CommitmentData memory c = commitAs(runId, solvers[0]);
        c.tokens += 1;
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.CommitmentMismatch.selector, runId, 0, solvers[0]));
        reg.checkCommitment(runId, 0, solvers[0], c);
    }

    // ------------------------------------------------------------------ claims and settlement

    function test_postClaim_afterChallengeWindow_succeeds() public {
        warpToClaim(runId);
        vm.expectEmit(address(reg));
        emit RunRegistry.ThetaClaimed(runId, 0, creator, keccak256("t1"), 0, 2 ether);
        vm.prank(creator);
        reg.postClaim{value: 2 ether}(runId, 0, keccak256("t1"));
        RunRegistry.Claim memory claim = reg.claimOf(runId, 0);
        assertEq(claim.claimer, creator);
        assertEq(claim.windowEnd, block.timestamp + WINDOW);
        assertEq(uint8(claim.status), uint8(RunRegistry.ClaimStatus.Posted));
        assertEq(reg.claimerOf(runId, 0), creator);
    }

    function test_postClaim_duringChallengeWindow_reverts() public {
        uint256 challengeEnd = reg.roundTimes(runId).challengeEnd;
        vm.warp(challengeEnd - 1);
        vm.prank(creator);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.ChallengeWindowOpen.selector, challengeEnd));
        reg.postClaim{value: 2 ether}(runId, 0, keccak256("t1"));
    }

    function test_postClaim_wrongBond_reverts() public {
        warpToClaim(runId);
        vm.prank(creator);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.WrongBond.selector, 1 ether, 2 ether));
        reg.postClaim{value: 1 ether}(runId, 0, keccak256("t1"));
    }

    function test_postClaim_twice_reverts() public {
        warpToClaim(runId);
        vm.prank(creator);
        reg.postClaim{value: 2 ether}(runId, 0, keccak256("t1"));
        vm.prank(outsider);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.ClaimExists.selector, RunRegistry.ClaimStatus.Posted));
        reg.postClaim{value: 2 ether}(runId, 0, keccak256("t2"));
    }

    function test_postClaim_wrongRound_reverts() public {
        warpToClaim(runId);
        vm.prank(creator);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.WrongRound.selector, 3, 0));
        reg.postClaim{value: 2 ether}(runId, 3, keccak256("t1"));
    }

    function test_postClaim_openDispute_reverts() public {
        joinSolvers(runId, 1);
        CommitmentData memory c = commitAs(runId, solvers[0]);
        warpToAttest(runId);
        drawSeed(runId); // opens the commitment (only opened commitments are disputed)
        vm.prank(address(dis));
        reg.onDisputeOpened(runId, 0, solvers[0], c);
        warpToClaim(runId);
        vm.prank(creator);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.DisputesOpen.selector, 1));
        reg.postClaim{value: 2 ether}(runId, 0, keccak256("t1"));
    }

    function test_settle_afterClaimWindow_succeeds() public {
        warpToClaim(runId);
        vm.prank(creator);
        reg.postClaim{value: 2 ether}(runId, 0, keccak256("t1"));
        vm.warp(block.timestamp + WINDOW);
        vm.expectEmit(address(reg));
        emit RunRegistry.RoundSettled(runId, 0, keccak256("t1"), creator, 0);
        reg.settle(runId, 0);
        assertTrue(reg.isSettled(runId, 0));
        assertFalse(reg.isSettled(runId, 1));
        assertEq(reg.thetaOf(runId, 1), keccak256("t1"));
        IRunRegistry.RoundTimes memory t = reg.roundTimes(runId);
        assertEq(t.round, 1);
        assertEq(t.start, block.timestamp);
        assertEq(shares.pool(runId), REWARD_POOL - REWARD_POOL / 10, "a tenth of the pool released");
        assertEq(shares.roundReleaseOf(runId, 0).amount, REWARD_POOL / 10, "set aside for round 0's contributors");
        assertEq(address(tokenOf(runId)).balance, 0, "not into the revenue stream of earlier holders");
    }

    /// @dev The seed block is fixed when the round starts (createRun for round 0, settle for round 1) and does not
    ///      move while the round runs, whatever the block number does.
    function test_roundTimes_seedBlockFixedAtRoundStart_succeeds() public {
        vm.roll(5000);
        uint256 id = createRun(defaultConfig());
        uint256 seed0 = 5000 + WINDOW / BLOCK_SECONDS;
        assertEq(reg.roundTimes(id).seedBlock, seed0, "round 0: createRun block + ceil(Wc / blockSeconds)");
        vm.roll(5123);
        assertEq(reg.roundTimes(id).seedBlock, seed0, "round 0: unchanged later in the round");
        warpToClaim(id);
        vm.roll(seed0 + 777);
        assertEq(reg.roundTimes(id).seedBlock, seed0, "round 0: unchanged after it");
        claimAndSettle(id, keccak256("t1"));
        IRunRegistry.RoundTimes memory t = reg.roundTimes(id);
        assertEq(t.round, 1);
        assertEq(t.seedBlock, seed0 + 777 + WINDOW / BLOCK_SECONDS, "round 1: settle block + Wc / blockSeconds");
        vm.roll(block.number + 50);
        assertEq(reg.roundTimes(id).seedBlock, t.seedBlock, "round 1: unchanged later in the round");
    }

    function test_settle_claimWindowOpen_reverts() public {
        warpToClaim(runId);
        vm.prank(creator);
        reg.postClaim{value: 2 ether}(runId, 0, keccak256("t1"));
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.ClaimWindowOpen.selector, block.timestamp + WINDOW));
        reg.settle(runId, 0);
    }

    function test_settle_noClaim_reverts() public {
        warpToClaim(runId);
        vm.expectRevert(RunRegistry.NoClaim.selector);
        reg.settle(runId, 0);
    }

    function test_settle_wrongRound_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.WrongRound.selector, 1, 0));
        reg.settle(runId, 1);
    }

    function test_settle_unknownRun_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.UnknownRun.selector, 5));
        reg.settle(5, 0);
    }

    function test_settle_openDispute_reverts() public {
        warpToClaim(runId);
        vm.prank(creator);
        reg.postClaim{value: 2 ether}(runId, 0, keccak256("t1"));
        vm.prank(address(dis));
        reg.onClaimChallenged(runId, 0, 0);
        vm.warp(block.timestamp + WINDOW);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.DisputesOpen.selector, 1));
        reg.settle(runId, 0);
    }

    function test_settle_lastRound_succeeds() public {
        RunTerms memory c = defaultConfig();
        c.maxRounds = 2;
        uint256 id = createRun(c);
        warpToClaim(id);
        claimAndSettle(id, keccak256("t1"));
        warpToClaim(id);
        vm.prank(creator);
        reg.postClaim{value: 2 ether}(id, 1, keccak256("t2"));
        vm.warp(block.timestamp + WINDOW);
        vm.expectEmit(address(reg));
        emit RunRegistry.RunFinished(id, 2);
        reg.settle(id, 1);
        assertTrue(reg.roundTimes(id).finished);
        assertEq(shares.pool(id), 0, "the whole pool is released by the last round");
        assertTrue(shares.finished(id));
        assertEq(reg.thetaOf(id, 2), keccak256("t2"));
    }

    function test_settle_finishedRun_reverts() public {
        RunTerms memory c = defaultConfig();
        c.maxRounds = 1;
        uint256 id = createRun(c);
        warpToClaim(id);
        claimAndSettle(id, keccak256("t1"));
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.RunIsFinished.selector, id));
        reg.settle(id, 1);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.RunIsFinished.selector, id));
        reg.postClaim(id, 1, bytes32(0));
    }

    function test_withdrawClaimBond_afterSettle_succeeds() public {
        warpToClaim(runId);
        claimAndSettle(runId, keccak256("t1"));
        uint256 before = creator.balance;
        vm.prank(creator);
        reg.withdrawClaimBond(runId, 0);
        assertEq(creator.balance - before, 2 ether);
        assertEq(address(reg).balance, 0);
        vm.prank(creator);
        vm.expectRevert(RunRegistry.BondAlreadyPaid.selector);
        reg.withdrawClaimBond(runId, 0);
    }

    function test_withdrawClaimBond_notClaimer_reverts() public {
        warpToClaim(runId);
        claimAndSettle(runId, keccak256("t1"));
        vm.prank(outsider);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.NotClaimer.selector, outsider));
        reg.withdrawClaimBond(runId, 0);
    }

    function test_withdrawClaimBond_notSettled_reverts() public {
        warpToClaim(runId);
        vm.prank(creator);
        reg.postClaim{value: 2 ether}(runId, 0, keccak256("t1"));
        vm.prank(creator);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.NotSettledClaim.selector, RunRegistry.ClaimStatus.Posted));
        reg.withdrawClaimBond(runId, 0);
    }

    function test_withdrawClaimBond_receiverRejects_reverts() public {
        Rejector r = new Rejector();
        warpToClaim(runId);
        vm.deal(address(this), 2 ether);
        r.call{value: 2 ether}(address(reg), abi.encodeCall(RunRegistry.postClaim, (runId, 0, keccak256("t1"))));
        vm.warp(block.timestamp + WINDOW);
        reg.settle(runId, 0);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.TransferFailed.selector, address(r), 2 ether));
        r.call(address(reg), abi.encodeCall(RunRegistry.withdrawClaimBond, (runId, 0)));
    }

    // ------------------------------------------------------------------ dispute hooks

    function test_onDisputeOpened_notDisputes_reverts() public {
        CommitmentData memory c;
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.NotDisputes.selector, address(this)));
        reg.onDisputeOpened(runId, 0, solvers[0], c);
    }

    function test_onDisputeOpened_wrongRound_reverts() public {
        CommitmentData memory c;
        vm.prank(address(dis));
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.WrongRound.selector, 2, 0));
        reg.onDisputeOpened(runId, 2, solvers[0], c);
    }

    function test_onDisputeOpened_mismatch_reverts() public {
        CommitmentData memory c;
        vm.prank(address(dis));
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.CommitmentMismatch.selector, runId, 0, solvers[0]));
        reg.onDisputeOpened(runId, 0, solvers[0], c);
    }

    function test_onDisputeClosed_notDisputes_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.NotDisputes.selector, address(this)));
        reg.onDisputeClosed(runId);
    }

    function test_onDisputeOpenedThenClosed_counts_succeeds() public {
        joinSolvers(runId, 1);
        CommitmentData memory c = commitAs(runId, solvers[0]);
        vm.prank(address(dis));
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.NotOpened.selector, runId, 0, solvers[0]));
        reg.onDisputeOpened(runId, 0, solvers[0], c);
        warpToAttest(runId);
        drawSeed(runId); // opens the commitment
        vm.startPrank(address(dis));
        IRunRegistry.DisputeTerms memory terms = reg.onDisputeOpened(runId, 0, solvers[0], c);
        assertEq(terms.challengeBond, 2 ether);
        assertEq(reg.runState(runId).openDisputes, 1);
        reg.onDisputeClosed(runId);
        vm.stopPrank();
        assertEq(reg.runState(runId).openDisputes, 0);
    }

    function test_onClaimChallenged_notDisputes_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.NotDisputes.selector, address(this)));
        reg.onClaimChallenged(runId, 0, 0);
    }

    function test_onClaimChallenged_noClaim_reverts() public {
        vm.prank(address(dis));
        vm.expectRevert(
            abi.encodeWithSelector(RunRegistry.ClaimNotChallengeable.selector, RunRegistry.ClaimStatus.None)
        );
        reg.onClaimChallenged(runId, 0, 0);
    }

    function test_onClaimChallenged_wrongRound_reverts() public {
        vm.prank(address(dis));
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.WrongRound.selector, 4, 0));
        reg.onClaimChallenged(runId, 4, 0);
    }

    function test_onClaimChallenged_wrongNonce_reverts() public {
        warpToClaim(runId);
        vm.prank(creator);
        reg.postClaim{value: 2 ether}(runId, 0, keccak256("t1"));
        vm.prank(address(dis));
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.WrongClaimNonce.selector, 1, 0));
        reg.onClaimChallenged(runId, 0, 1);
    }

    function test_onClaimChallenged_afterWindow_reverts() public {
        warpToClaim(runId);
        vm.prank(creator);
        reg.postClaim{value: 2 ether}(runId, 0, keccak256("t1"));
        uint256 windowEnd = block.timestamp + WINDOW;
        vm.warp(windowEnd);
        vm.prank(address(dis));
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.ClaimWindowClosed.selector, windowEnd));
        reg.onClaimChallenged(runId, 0, 0);
    }

    function test_onClaimResolved_rejected_succeeds() public {
        warpToClaim(runId);
        vm.prank(creator);
        reg.postClaim{value: 2 ether}(runId, 0, keccak256("t1"));
        vm.startPrank(address(dis));
        reg.onClaimChallenged(runId, 0, 0);
        uint256 before = address(dis).balance;
        uint256 forfeited = reg.onClaimResolved(runId, 0, IRunRegistry.ClaimOutcome.Rejected);
        vm.stopPrank();
        assertEq(forfeited, 2 ether);
        assertEq(address(dis).balance - before, 2 ether);
        RunRegistry.Claim memory claim = reg.claimOf(runId, 0);
        assertEq(uint8(claim.status), uint8(RunRegistry.ClaimStatus.None));
        assertEq(claim.nonce, 1);
        vm.prank(outsider);
        reg.postClaim{value: 2 ether}(runId, 0, keccak256("t1 right"));
        assertEq(reg.claimOf(runId, 0).nonce, 1);
    }

    function test_onClaimResolved_upheldSettlesAtOnce_succeeds() public {
        warpToClaim(runId);
        vm.prank(creator);
        reg.postClaim{value: 2 ether}(runId, 0, keccak256("t1"));
        vm.startPrank(address(dis));
        reg.onClaimChallenged(runId, 0, 0);
        assertEq(reg.onClaimResolved(runId, 0, IRunRegistry.ClaimOutcome.Upheld), 0);
        vm.stopPrank();
        reg.settle(runId, 0); // an upheld claim needs no further window
        assertTrue(reg.isSettled(runId, 0));
    }

    function test_onClaimResolved_notChallenged_reverts() public {
        vm.prank(address(dis));
        vm.expectRevert(
            abi.encodeWithSelector(RunRegistry.ClaimNotChallengeable.selector, RunRegistry.ClaimStatus.None)
        );
        reg.onClaimResolved(runId, 0, IRunRegistry.ClaimOutcome.Unresolved);
    }

    function test_onClaimResolved_notDisputes_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.NotDisputes.selector, address(this)));
        reg.onClaimResolved(runId, 0, IRunRegistry.ClaimOutcome.Unresolved);
    }

    // ------------------------------------------------------------------ views

    function test_views_unknownRun_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.UnknownRun.selector, 42));
        reg.runParams(42);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.UnknownRun.selector, 42));
        reg.roundTimes(42);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.UnknownRun.selector, 42));
        reg.disputeTerms(42);
        assertFalse(reg.isSettled(42, 0));
    }

    function test_thetaOf_futureRound_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.WrongRound.selector, 1, 0));
        reg.thetaOf(runId, 1);
    }
}
