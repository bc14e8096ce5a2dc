// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Fixture} from "./utils/Fixture.sol";
import {ProtocolDeployer} from "../script/ProtocolDeployer.sol";
import {Constants} from "../src/Constants.sol";
import {RunRegistry} from "../src/RunRegistry.sol";
import {IRunRegistry} from "../src/interfaces/IRunRegistry.sol";
import {CommitmentData, RunTerms} from "../src/interfaces/Types.sol";

/// @notice RunTerms.startDelay: round 0 starts `startDelay` seconds after createRun. Solvers join and verifiers
///         register during the delay, nothing is committed before the start, every window counts from the start, and
///         round 0's seed block still comes after every commit of its commit window.
contract StartDelayTest is Fixture {
    uint32 internal constant DELAY = 2 hours;

    uint256 internal runId;
    uint256 internal createdAt;
    uint256 internal createdBlock;

    function setUp() public override {
        super.setUp();
        createdAt = block.timestamp;
        createdBlock = block.number;
        runId = createRun(_delayed(DELAY));
    }

    function _delayed(uint32 delay) internal pure returns (RunTerms memory c) {
        c = defaultConfig();
        c.startDelay = delay;
    }

    function _ceilDiv(uint256 a, uint256 b) internal pure returns (uint256) {
        return (a + b - 1) / b;
    }

    // ------------------------------------------------------------------ createRun

    function test_createRun_startDelay_emitsFutureStart_succeeds() public {
        RunTerms memory c = _delayed(DELAY);
        vm.expectEmit(address(reg));
        emit RunRegistry.RoundStarted(2, 0, block.timestamp + DELAY, c.theta0Hash);
        uint256 id = createRun(c);
        assertEq(reg.runState(id).roundStart, block.timestamp + DELAY, "roundStart");
        assertEq(reg.roundTimes(id).start, block.timestamp + DELAY, "roundTimes reports the future start");
    }

    function test_roundTimes_startDelay_windowsAndSeedBlockShifted_succeeds() public view {
        IRunRegistry.RoundTimes memory t = reg.roundTimes(runId);
        uint256 start = createdAt + DELAY;
        assertEq(t.round, 0);
        assertEq(t.start, start, "start");
        assertEq(t.commitEnd, start + WINDOW, "commitEnd");
        assertEq(t.openEnd, start + WINDOW + WINDOW / 2, "openEnd");
        assertEq(t.attestEnd, start + 2 * WINDOW, "attestEnd");
        assertEq(t.challengeEnd, start + 3 * WINDOW, "challengeEnd");
        assertEq(
            t.seedBlock, createdBlock + _ceilDiv(DELAY + WINDOW, BLOCK_SECONDS), "seed block counted from creation"
        );
        assertFalse(t.finished);
    }

    function test_createRun_maxStartDelay_succeeds() public {
        uint256 id = createRun(_delayed(uint32(Constants.MAX_START_DELAY)));
        assertEq(reg.roundTimes(id).start, block.timestamp + Constants.MAX_START_DELAY);
    }

    function test_createRun_startDelayAboveBound_reverts() public {
        RunTerms memory c = _delayed(uint32(Constants.MAX_START_DELAY + 1));
        vm.expectRevert(
            abi.encodeWithSelector(RunRegistry.InvalidConfig.selector, "startDelay must be at most MAX_START_DELAY")
        );
        reg.createRun(c);
    }

    /// @dev A delay that is not a multiple of the block time puts round 0's seed block up to a block later after its
    ///      start (here 35 s instead of 24 s on 12-second blocks): createRun asks for the attest window that covers it,
    ///      as it asks every later round's.
    function test_createRun_misalignedStartDelay_needsLongerAttestWindow_reverts() public {
        RunTerms memory c = defaultConfig();
        c.commitWindow = 24;
        c.attestWindow = 72; // the shortest for 24 s on 12-second blocks without a delay
        c.challengeWindow = 72;
        createRun(c);
        c.startDelay = 1; // seed block at ceil(25 / 12) * 12 - 1 = 35 s after the start: needs 2 * (35 + 36 - 24) = 94
        vm.expectRevert(
            abi.encodeWithSelector(
                RunRegistry.InvalidConfig.selector,
                "attestWindow / 2 must cover the seed block and 3 more blocks after the commit window"
            )
        );
        reg.createRun(c);
        c.attestWindow = 93;
        vm.expectRevert(
            abi.encodeWithSelector(
                RunRegistry.InvalidConfig.selector,
                "attestWindow / 2 must cover the seed block and 3 more blocks after the commit window"
            )
        );
        reg.createRun(c);
        c.attestWindow = 94;
        c.challengeWindow = 94 / 2 + 2 * 12;
        createRun(c);
        c.startDelay = 12; // a whole block: the seed block is where it was without a delay
        c.attestWindow = 72;
        c.challengeWindow = 72;
        createRun(c);
    }

    /// @dev startDelay 0: round 0 starts in the creation block, its seed block ceil(commitWindow / T) blocks on, and a
    ///      commit in the creation block itself is accepted: the same as before the field existed.
    function test_createRun_zeroStartDelay_startsAtCreation_succeeds() public {
        RunTerms memory c = defaultConfig();
        assertEq(c.startDelay, 0, "the fixture's default");
        vm.expectEmit(address(reg));
        emit RunRegistry.RoundStarted(2, 0, block.timestamp, c.theta0Hash);
        uint256 id = createRun(c);
        IRunRegistry.RoundTimes memory t = reg.roundTimes(id);
        assertEq(t.start, block.timestamp, "start");
        assertEq(t.commitEnd, block.timestamp + WINDOW, "commitEnd");
        assertEq(t.seedBlock, block.number + _ceilDiv(WINDOW, BLOCK_SECONDS), "seed block");
        joinSolvers(id, 1);
        commitAs(id, solvers[0]);
        (uint64 round, bool committed,) = reg.commitmentOf(id, solvers[0]);
        assertTrue(committed);
        assertEq(round, 0);
    }

    // ------------------------------------------------------------------ before the start

    function test_join_beforeStart_succeeds() public {
        joinSolvers(runId, 2);
        registerVerifiers(runId, 2);
        assertTrue(reg.hasJoined(runId, solvers[0]));
        assertTrue(reg.hasJoined(runId, solvers[1]));
        assertEq(vreg.size(runId), 2, "verifiers registered before the start");
        assertLt(block.timestamp, reg.roundTimes(runId).start);
    }

    function test_commit_beforeStart_reverts() public {
        joinSolvers(runId, 1);
        uint256 start = reg.roundTimes(runId).start;
        CommitmentData memory c = buildCommitment(runId, 0, solvers[0], reg.runParams(runId).numSegments);
        vm.prank(solvers[0]);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.RoundNotStarted.selector, start));
        reg.commit(runId, 0, c.root, c.deltaHash, c.tokens);
        vm.warp(start - 1); // the last second of the delay
        vm.roll(block.number + 1);
        vm.prank(solvers[0]);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.RoundNotStarted.selector, start));
        reg.commit(runId, 0, c.root, c.deltaHash, c.tokens);
    }

    function test_commit_afterStart_succeeds() public {
        joinSolvers(runId, 1);
        IRunRegistry.RoundTimes memory t = reg.roundTimes(runId);
        vm.warp(t.start);
        vm.roll(createdBlock + DELAY / BLOCK_SECONDS); // a chain keeping 12-second blocks
        commitAs(runId, solvers[0]);
        (, bool committed,) = reg.commitmentOf(runId, solvers[0]);
        assertTrue(committed);
    }

    function test_commit_afterShiftedCommitEnd_reverts() public {
        joinSolvers(runId, 1);
        IRunRegistry.RoundTimes memory t = reg.roundTimes(runId);
        CommitmentData memory c = buildCommitment(runId, 0, solvers[0], reg.runParams(runId).numSegments);
        vm.warp(t.commitEnd);
        vm.prank(solvers[0]);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.CommitWindowClosed.selector, createdAt + DELAY + WINDOW));
        reg.commit(runId, 0, c.root, c.deltaHash, c.tokens);
    }

    function test_postClaim_beforeShiftedChallengeEnd_reverts() public {
        uint256 challengeEnd = createdAt + DELAY + 3 * WINDOW;
        vm.warp(challengeEnd - 1); // past where challengeEnd would be without the delay
        uint256 bond = reg.runEconomics(runId).challengeBond;
        vm.prank(creator);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.ChallengeWindowOpen.selector, challengeEnd));
        reg.postClaim{value: bond}(runId, 0, keccak256("theta1"));
    }

    /// @dev A whole delayed round: commit after the start, seed, attest, settle; round 1 then starts at its
    ///      settlement with the usual seed block (the delay is round 0's only).
    function test_settle_delayedRoundZero_nextRoundUndelayed_succeeds() public {
        joinSolvers(runId, 1);
        registerVerifiers(runId, 3);
        vm.warp(reg.roundTimes(runId).start);
        vm.roll(createdBlock + DELAY / BLOCK_SECONDS);
        CommitmentData memory c = commitAs(runId, solvers[0]);
        warpToAttest(runId);
        drawSeed(runId);
        attestMajorityAs(runId, solvers[0], c);
        warpToClaim(runId);
        claimAndSettle(runId, keccak256("theta1"));
        IRunRegistry.RoundTimes memory t = reg.roundTimes(runId);
        assertEq(t.round, 1);
        assertEq(t.start, block.timestamp, "round 1 starts at its settlement");
        assertEq(t.seedBlock, block.number + _ceilDiv(WINDOW, BLOCK_SECONDS), "round 1's seed block");
    }

    // ------------------------------------------------------------------ the seed-block invariant

    /// @dev For any delay, block time and commit window createRun accepts: a commit at any time before commitEnd,
    ///      in any block a chain of at-least-T-second blocks can have reached by then, lands before the seed block
    ///      (and is accepted).
    function testFuzz_commit_beforeCommitEnd_landsBeforeSeedBlock_succeeds(
        uint256 delaySeed,
        uint256 tSeed,
        uint256 wcSeed,
        uint256 whenSeed,
        uint256 blockSeed
    ) public {
        uint256 t = bound(tSeed, Constants.MIN_BLOCK_SECONDS, Constants.MAX_BLOCK_SECONDS);
        uint256 delay = bound(delaySeed, 0, Constants.MAX_START_DELAY);
        uint256 wc = bound(wcSeed, 2 * t, 4 hours);
        (uint256 seedAt0, uint256 seedAt) = _seedOffsets(t, delay, wc);
        (uint256 id, IRunRegistry.RoundTimes memory times) = _lockstepRun(
            t, delay, wc, 2 * ((seedAt0 > seedAt ? seedAt0 : seedAt) + (2 + Constants.RANDAO_LAG_BLOCKS) * t - wc)
        );
        assertEq(times.start, createdAt + delay, "start");
        assertEq(times.seedBlock, createdBlock + _ceilDiv(times.commitEnd - createdAt, t), "seed block");
        uint256 when = bound(whenSeed, times.start, times.commitEnd - 1);
        // the fastest such chain has mined (when - creation) / T blocks since creation; a slower one fewer
        vm.roll(bound(blockSeed, createdBlock, createdBlock + (when - createdAt) / t));
        vm.warp(when);
        assertLt(block.number, times.seedBlock, "a commit before commitEnd lands before the seed block");
        commitAs(id, solvers[0]);
        (, bool committed,) = reg.commitmentOf(id, solvers[0]);
        assertTrue(committed);
    }

    /// @dev With the shortest attest window createRun accepts for the delay, a chain keeping its block time mines round
    ///      0's seed block and one more before openEnd, whatever the delay's remainder (its seed block can come up to a
    ///      block later after its start than a later round's).
    function testFuzz_createRun_startDelayShortestAttestWindow_seedBlockBeforeOpenEnd_succeeds(
        uint256 delaySeed,
        uint256 tSeed,
        uint256 wcSeed
    ) public {
        uint256 t = bound(tSeed, Constants.MIN_BLOCK_SECONDS, Constants.MAX_BLOCK_SECONDS);
        uint256 delay = bound(delaySeed, 0, Constants.MAX_START_DELAY);
        uint256 wc = bound(wcSeed, 2 * t, 4 hours);
        (uint256 seedAt0, uint256 seedAt) = _seedOffsets(t, delay, wc);
        uint256 wa = 2 * ((seedAt0 > seedAt ? seedAt0 : seedAt) + (2 + Constants.RANDAO_LAG_BLOCKS) * t - wc);
        (, IRunRegistry.RoundTimes memory times) = _lockstepRun(t, delay, wc, wa);
        uint256 seedBlockAt = block.timestamp + (times.seedBlock - block.number) * t; // on a chain keeping time
        assertGe(seedBlockAt, times.commitEnd, "the seed block comes after the commit window");
        uint256 randaoAt = seedBlockAt + Constants.RANDAO_LAG_BLOCKS * t; // its successor: the proven RANDAO block
        assertLe(randaoAt + t, times.openEnd - t, "the block after that comes before openEnd, a block to spare");
        _expectWindowRefusal(
            t, delay, wc, wa - 2, "attestWindow / 2 must cover the seed block and 3 more blocks after the commit window"
        );
    }

    /// @dev ... and with the longest, a draw in the last second before round 0's openEnd still reads its seed block's
    ///      hash (its seed block can come up to a block earlier after its start than a later round's).
    function testFuzz_createRun_startDelayLongestAttestWindow_drawWithinHorizon_succeeds(
        uint256 delaySeed,
        uint256 tSeed,
        uint256 wcSeed
    ) public {
        uint256 t = bound(tSeed, Constants.MIN_BLOCK_SECONDS, Constants.MAX_BLOCK_SECONDS);
        uint256 delay = bound(delaySeed, 0, Constants.MAX_START_DELAY);
        uint256 wc = bound(wcSeed, 2 * t, 4 hours);
        (uint256 seedAt0, uint256 seedAt) = _seedOffsets(t, delay, wc);
        uint256 wa = 2
            * ((seedAt0 < seedAt ? seedAt0 : seedAt)
                + (Constants.SEED_HORIZON_BLOCKS + Constants.RANDAO_LAG_BLOCKS)
                * t
                - wc) + 1;
        (, IRunRegistry.RoundTimes memory times) = _lockstepRun(t, delay, wc, wa);
        // the block of the draw window's last second, on a chain keeping time from the creation block
        uint256 lastBlock = block.number + (times.openEnd - 1 - block.timestamp) / t;
        assertLe(
            lastBlock, times.seedBlock + Constants.RANDAO_LAG_BLOCKS + Constants.SEED_HORIZON_BLOCKS, "within reach"
        );
        _expectWindowRefusal(
            t, delay, wc, wa + 1, "attestWindow / 2 must end within SEED_HORIZON_BLOCKS blocks of the seed block"
        );
    }

    /// @dev (round 0's, a later round's) seed block in seconds after its start on a chain keeping T.
    function _seedOffsets(uint256 t, uint256 delay, uint256 wc)
        internal
        pure
        returns (uint256 seedAt0, uint256 seedAt)
    {
        seedAt0 = _ceilDiv(delay + wc, t) * t - delay;
        seedAt = _ceilDiv(wc, t) * t;
    }

    function _expectWindowRefusal(uint256 t, uint256 delay, uint256 wc, uint256 wa, string memory reason) internal {
        RunTerms memory c = _delayed(uint32(delay));
        c.commitWindow = uint32(wc);
        c.attestWindow = uint32(wa);
        c.challengeWindow = uint32(wa / 2 + 2 * t);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.InvalidConfig.selector, reason));
        reg.createRun(c);
    }

    /// @dev A deployment of `t`-second blocks and a run on it with the given delay and windows (the challenge window
    ///      the shortest createRun accepts), one joined solver and one verifier.
    function _lockstepRun(uint256 t, uint256 delay, uint256 wc, uint256 wa)
        internal
        returns (uint256 id, IRunRegistry.RoundTimes memory times)
    {
        usePeers(ProtocolDeployer.deploy(address(this), UNBONDING_DELAY, t, true));
        RunTerms memory c = _delayed(uint32(delay));
        c.commitWindow = uint32(wc);
        c.attestWindow = uint32(wa);
        c.challengeWindow = uint32(wa / 2 + 2 * t);
        id = createRun(c);
        joinSolvers(id, 1);
        registerVerifiers(id, 1);
        times = reg.roundTimes(id);
    }
}
