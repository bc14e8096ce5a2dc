// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Fixture} from "./utils/Fixture.sol";
import {Protocol, ProtocolDeployer} from "../script/ProtocolDeployer.sol";
import {Constants} from "../src/Constants.sol";
import {RunRegistry} from "../src/RunRegistry.sol";
import {IRunRegistry} from "../src/interfaces/IRunRegistry.sol";
import {IStakeManager} from "../src/interfaces/IStakeManager.sol";
import {IVerification} from "../src/interfaces/IVerification.sol";
import {IModelShares} from "../src/interfaces/IModelShares.sol";
import {CommitmentData, RunTerms} from "../src/interfaces/Types.sol";

/// @notice A run's windows against the chain's block time (RunRegistry.blockSeconds, `_validateWindows`): createRun
///         accepts and refuses exactly the windows Python's protocol/windows.py does (tests/vectors/windows.json,
///         written by `python -m tests.vectors.generate`), and on a chain that keeps its block time every accepted
///         run can commit, draw its seed and open before openEnd.
contract WindowsTest is Fixture {
    string internal json;
    /// @dev One deployment per block time of the vectors.
    mapping(uint256 blockSeconds => RunRegistry) internal registryOf;

    function setUp() public override {
        super.setUp();
        json = vm.readFile(string.concat(vm.projectRoot(), "/../tests/vectors/windows.json"));
    }

    function _deployWith(uint256 blockSeconds) internal returns (Protocol memory p) {
        p = ProtocolDeployer.deploy(address(this), UNBONDING_DELAY, blockSeconds, true);
        assertEq(p.runRegistry.blockSeconds(), blockSeconds, "blockSeconds");
    }

    function _config(uint256 commitWindow, uint256 attestWindow) internal pure returns (RunTerms memory c) {
        c = defaultConfig();
        c.commitWindow = uint32(commitWindow);
        c.attestWindow = uint32(attestWindow);
        // room to challenge an attestation made at the end of the attest window (issue 37): half of it + 2 blocks
        c.challengeWindow = uint32(attestWindow / 2 + 2 * Constants.MAX_BLOCK_SECONDS);
    }

    /// @dev Every case of windows.json: accepted by the deployment of its block time, or refused with Python's reason.
    function test_createRun_pythonWindowVectors_succeeds() public {
        _deployEveryBlockTime();
        uint256 n = vm.parseJsonUint(json, ".caseCount");
        uint256 accepted;
        for (uint256 i; i < n; ++i) {
            string memory base = string.concat(".cases[", vm.toString(i), "]");
            uint256 t = vm.parseJsonUint(json, string.concat(base, ".blockSeconds"));
            RunTerms memory c = _caseConfig(base);
            (RunRegistry registry, uint256 runId) = _createOrExpectRefusal(base, c);
            if (runId == 0) continue;
            uint256 seedBlock = block.number + (c.commitWindow + t - 1) / t;
            assertEq(registry.roundTimes(runId).seedBlock, seedBlock, "start block + ceil(Wc / blockSeconds)");
            ++accepted;
        }
        assertGt(accepted, 0, "no accepted case");
        assertLt(accepted, n, "no refused case");
    }

    /// @dev Every challenge case of windows.json: the challenge window must cover attestWindow / 2 and 2 blocks, so an
    ///      attestation made at the end of the attest window can still be replayed and challenged (issue 37).
    function test_createRun_pythonChallengeWindowVectors_succeeds() public {
        _deployEveryBlockTime();
        uint256 n = vm.parseJsonUint(json, ".challengeCaseCount");
        uint256 accepted;
        for (uint256 i; i < n; ++i) {
            string memory base = string.concat(".challengeCases[", vm.toString(i), "]");
            RunTerms memory c = _caseConfig(base);
            c.challengeWindow = uint32(vm.parseJsonUint(json, string.concat(base, ".challengeWindow")));
            (, uint256 runId) = _createOrExpectRefusal(base, c);
            if (runId != 0) ++accepted;
        }
        assertGt(accepted, 0, "no accepted case");
        assertLt(accepted, n, "no refused case");
    }

    /// @dev One deployment per block time of the vectors.
    function _deployEveryBlockTime() internal {
        uint256[] memory times = vm.parseJsonUintArray(json, ".blockSeconds");
        for (uint256 i; i < times.length; ++i) {
            registryOf[times[i]] = _deployWith(times[i]).runRegistry;
        }
    }

    /// @dev The commit and attest windows of the case at `base`.
    function _caseConfig(string memory base) internal view returns (RunTerms memory) {
        return _config(
            vm.parseJsonUint(json, string.concat(base, ".commitWindow")),
            vm.parseJsonUint(json, string.concat(base, ".attestWindow"))
        );
    }

    /// @dev createRun on the deployment of the case's block time: the new run's id if the case is accepted (ids start
    ///      at 1), else 0 after checking that it reverts with the case's reason.
    function _createOrExpectRefusal(string memory base, RunTerms memory c)
        internal
        returns (RunRegistry registry, uint256 runId)
    {
        registry = registryOf[vm.parseJsonUint(json, string.concat(base, ".blockSeconds"))];
        assertTrue(address(registry) != address(0), "a block time missing from .blockSeconds");
        vm.deal(creator, REWARD_POOL);
        if (vm.parseJsonBool(json, string.concat(base, ".accepted"))) {
            vm.prank(creator);
            runId = registry.createRun{value: REWARD_POOL}(c);
            assertGt(runId, 0, "run ids start at 1");
            return (registry, runId);
        }
        string memory reason = vm.parseJsonString(json, string.concat(base, ".reason"));
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.InvalidConfig.selector, reason));
        vm.prank(creator);
        registry.createRun{value: REWARD_POOL}(c);
    }

    function test_constructor_blockSecondsOutOfRange_reverts() public {
        string memory reason = "blockSeconds must be in [MIN_BLOCK_SECONDS, MAX_BLOCK_SECONDS]";
        uint256[2] memory bad = [Constants.MIN_BLOCK_SECONDS - 1, Constants.MAX_BLOCK_SECONDS + 1];
        for (uint256 i; i < bad.length; ++i) {
            vm.expectRevert(abi.encodeWithSelector(RunRegistry.InvalidConfig.selector, reason));
            new RunRegistry(
                IStakeManager(address(sm)),
                IVerification(address(ver)),
                address(dis),
                IModelShares(address(shares)),
                bad[i]
            );
        }
    }

    /// @dev On a chain that mines a block exactly every T seconds, a run with the shortest attest window createRun
    ///      accepts commits in the last block before the seed block, draws its seed in the block after it (before
    ///      openEnd) and opens: the seed block fits before openEnd on every block time.
    function testFuzz_createRun_shortestAttestWindow_drawsBeforeOpenEnd_succeeds(uint256 tSeed, uint256 wSeed) public {
        uint256 t = bound(tSeed, Constants.MIN_BLOCK_SECONDS, Constants.MAX_BLOCK_SECONDS);
        uint256 wc = bound(wSeed, 2 * t, 4 hours);
        uint256 seedAt = (wc + t - 1) / t * t;
        uint256 runId = _lockstepRun(t, wc, 2 * (seedAt + (2 + Constants.RANDAO_LAG_BLOCKS) * t - wc));
        IRunRegistry.RoundTimes memory times = reg.roundTimes(runId);
        _step(times, seedAt / t - 1, t); // the last block before the seed block: still inside the commit window
        CommitmentData memory c = commitAs(runId, solvers[0]);
        _step(times, seedAt / t + 1 + Constants.RANDAO_LAG_BLOCKS, t); // the block after the RANDAO block
        assertLt(block.timestamp, times.openEnd, "the block after the RANDAO block comes before openEnd");
        ver.drawSeed(runId, 0, seedHeader(runId));
        openCommitment(runId, solvers[0], c);
        assertEq(uint8(reg.openingOf(runId, 0, solvers[0])), uint8(IRunRegistry.Opening.Opened));
    }

    /// @dev ... and with the longest attest window, the seed can still be drawn in the last second before openEnd:
    ///      the seed block's hash is within the EVM's reach for the whole draw window.
    function testFuzz_createRun_longestAttestWindow_drawsUntilOpenEnd_succeeds(uint256 tSeed, uint256 wSeed) public {
        uint256 t = bound(tSeed, Constants.MIN_BLOCK_SECONDS, Constants.MAX_BLOCK_SECONDS);
        uint256 wc = bound(wSeed, 2 * t, 4 hours);
        uint256 seedAt = (wc + t - 1) / t * t;
        uint256 wa = 2 * (seedAt + (Constants.SEED_HORIZON_BLOCKS + Constants.RANDAO_LAG_BLOCKS) * t - wc) + 1;
        uint256 runId = _lockstepRun(t, wc, wa);
        IRunRegistry.RoundTimes memory times = reg.roundTimes(runId);
        uint256 lastBlock = (times.openEnd - 1 - times.start) / t; // blocks after the start block
        _step(times, lastBlock, t);
        assertLe(
            block.number, times.seedBlock + Constants.RANDAO_LAG_BLOCKS + Constants.SEED_HORIZON_BLOCKS, "within reach"
        );
        ver.drawSeed(runId, 0, seedHeader(runId));
        // one attest window second more and the draw window outlasts the horizon: refused
        RunTerms memory c = _config(wc, wa + 1);
        vm.prank(creator);
        vm.expectRevert(
            abi.encodeWithSelector(
                RunRegistry.InvalidConfig.selector,
                "attestWindow / 2 must end within SEED_HORIZON_BLOCKS blocks of the seed block"
            )
        );
        reg.createRun{value: REWARD_POOL}(c);
    }

    /// @dev Before this check (MIN_BLOCK_SECONDS = 1 for every chain), default-like windows on a 12-second chain put
    ///      the seed block 3600 blocks (12 hours) after the start: every drawSeed reverted and every round was void.
    function test_createRun_hourWindowsOnTwelveSecondChain_seedBlockWithinTheRound_succeeds() public {
        usePeers(_deployWith(12));
        uint256 runId = createRun(_config(1 hours, 30 minutes));
        IRunRegistry.RoundTimes memory times = reg.roundTimes(runId);
        assertEq(times.seedBlock, block.number + 300, "3600 s of 12-second blocks");
        joinSolvers(runId, 1);
        registerVerifiers(runId, 1);
        _step(times, 299, 12);
        commitAs(runId, solvers[0]);
        _step(times, 302, 12);
        ver.drawSeed(runId, 0, seedHeader(runId));
        (bool drawn,,) = ver.seedOf(runId, 0);
        assertTrue(drawn, "seed drawn");
    }

    // ------------------------------------------------------------------ helpers

    /// @dev A run on a fresh deployment of block time `t`: one solver joined, one verifier registered.
    function _lockstepRun(uint256 t, uint256 wc, uint256 wa) internal returns (uint256 runId) {
        usePeers(_deployWith(t));
        runId = createRun(_config(wc, wa));
        joinSolvers(runId, 1);
        registerVerifiers(runId, 1);
    }

    /// @dev Move to the k-th block after the round's start block on a chain keeping its block time t.
    function _step(IRunRegistry.RoundTimes memory times, uint256 k, uint256 t) internal {
        vm.roll(times.seedBlock - (times.commitEnd - times.start + t - 1) / t + k);
        vm.warp(times.start + k * t);
    }
}
