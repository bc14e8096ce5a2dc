// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Constants} from "../src/Constants.sol";
import {BlockRandomness} from "../src/BlockRandomness.sol";
import {Plants} from "../src/Plants.sol";
import {Verification} from "../src/Verification.sol";
import {IPlants} from "../src/interfaces/IPlants.sol";
import {IRunRegistry} from "../src/interfaces/IRunRegistry.sol";
import {AttestationRef, CommitmentData, RunTerms} from "../src/interfaces/Types.sol";
import {Planting} from "../src/libraries/Planting.sol";
import {Fixture} from "./utils/Fixture.sol";

/// @notice Plants from round 0 (issue 37, docs/planted-faults.md): in a run whose terms were set before round 0
///         started, an anchor registered before the start is eligible from round 0, round 0 draws with the run seed
///         (the RANDAO value of the run seed block, proven by its header), and a commitment without such an anchor
///         is unpaid in rounds 0 and 1. The attack this closes: while rounds 0 and 1 could never be planted, everyone
///         knew that a pass there without replaying was never caught.
contract PlantsFromRoundZeroTest is Fixture {
    uint16 internal constant RATE = 2000;
    uint96 internal constant JACKPOT = 1 ether;
    uint96 internal constant PENALTY = 2 ether;
    uint256 internal constant POOL = 10 ether;
    uint32 internal constant DELAY = 1 hours;

    uint256 internal runId;
    bytes32[] internal chain; // chain[i] = s_i, i = 0 .. maxRounds

    function setUp() public override {
        super.setUp();
        registerJurors(8);
        RunTerms memory c = defaultConfig();
        c.startDelay = DELAY;
        runId = createRun(c);
        joinSolvers(runId, 2);
        registerVerifiers(runId, 4);
    }

    // ------------------------------------------------------------------ helpers

    function _setTerms() internal {
        vm.prank(creator);
        plants.setTerms{value: POOL}(runId, RATE, JACKPOT, PENALTY);
    }

    function _buildChain(bytes32 s0) internal {
        delete chain;
        chain.push(s0);
        for (uint256 i; i < defaultConfig().maxRounds; ++i) {
            chain.push(Planting.next(chain[i]));
        }
    }

    function _secret(uint64 round) internal view returns (bytes32) {
        return chain[chain.length - 2 - round];
    }

    /// @dev A minimal header whose 14th RLP item (mixHash) is `mix`: 13 empty strings, then 0xa0 ‖ mix, in a short
    ///      list (46 bytes of payload: prefix 0xc0 + 46).
    function _header(bytes32 mix) internal pure returns (bytes memory header) {
        header = abi.encodePacked(uint8(0xc0 + 46));
        for (uint256 i; i < 13; ++i) {
            header = abi.encodePacked(header, uint8(0x80));
        }
        header = abi.encodePacked(header, uint8(0xa0), mix);
    }

    /// @dev To round 0's start and past the block after the run seed block (whose mixHash is the RANDAO value revealed
    ///      in the run seed block), whose hash is made that of a header with RANDAO `mix`.
    function _toStart(bytes32 mix) internal returns (bytes memory header) {
        (uint256 seedBlock,,) = plants.runSeedOf(runId);
        uint256 randaoBlock = seedBlock + Constants.RANDAO_LAG_BLOCKS;
        vm.warp(reg.roundTimes(runId).start);
        vm.roll(randaoBlock + 1);
        header = _header(mix);
        vm.setBlockhash(randaoBlock, keccak256(header));
    }

    /// @dev Pick solver 0's chain so that round 0 is planted iff `planted` under the run seed from `mix`.
    function _chooseChain(bytes32 mix, bool planted) internal {
        bytes32 base = bytes32(bytes12(mix));
        for (uint256 attempt;; ++attempt) {
            _buildChain(keccak256(abi.encode("s0", attempt)));
            if ((Planting.draw(_secret(0), runId, 0, solvers[0], base) < RATE) == planted) break;
        }
    }

    function _ref(uint8 slot) internal view returns (AttestationRef memory) {
        return AttestationRef({runId: runId, round: 0, solver: solvers[0], slot: slot});
    }

    function _bonded(address who, uint8 role) internal view returns (uint256 bonded) {
        (bonded,,,) = sm.stakeOf(who, role);
    }

    /// @dev Round 0 with solver 0 anchored before the start (planted iff `planted`): the run seed drawn, both solvers
    ///      commit, the round's seed is drawn; a lazy pass on seat 0 and an honest fail on seat 1 of solver 0's
    ///      commitment; returns the lazy verifier.
    function _playRoundZero(bool planted) internal returns (address lazy) {
        bytes32 mix = keccak256("run seed mix");
        _setTerms();
        _chooseChain(mix, planted);
        vm.prank(solvers[0]);
        plants.setAnchor(runId, chain[chain.length - 1]);
        bytes memory header = _toStart(mix);
        plants.drawRunSeed(runId, header);
        CommitmentData memory c = commitAs(runId, solvers[0]);
        commitAs(runId, solvers[1]);
        warpToAttest(runId);
        drawSeed(runId);
        lazy = attestPassAs(_ref(0), c);
        attestFailAs(_ref(1), c, 0);
        vm.warp(reg.roundTimes(runId).attestEnd);
        vm.roll(block.number + 1);
    }

    // ------------------------------------------------------------------ the attack, before and after

    /// @notice The old rule, kept for terms set after the start: rounds 0 and 1 cannot be planted, publicly, so a pass
    ///         there without a replay is never caught (nobody is eligible, nothing is blocked).
    function test_setTerms_afterStart_roundsZeroAndOneUnplantable_succeeds() public {
        _buildChain(keccak256("early"));
        vm.prank(solvers[0]);
        plants.setAnchor(runId, chain[chain.length - 1]); // before the start, but the terms come later
        vm.warp(reg.roundTimes(runId).start);
        _setTerms();
        (uint256 seedBlock,,) = plants.runSeedOf(runId);
        assertEq(seedBlock, 0, "terms after the start fix no run seed");
        for (uint64 round; round < Constants.PLANT_DELAY_ROUNDS; ++round) {
            (bool eligible,,,) = plants.plantOf(runId, round, solvers[0]);
            assertFalse(eligible, "publicly unplantable");
            assertEq(uint8(plants.payOf(runId, round, solvers[1])), uint8(IPlants.Pay.Normal), "paid as usual");
        }
        vm.expectRevert(abi.encodeWithSelector(Plants.NoRunSeed.selector, runId));
        plants.drawRunSeed(runId, _header(bytes32(0)));
    }

    /// @notice The fix: a lazy pass on a round-0 commitment of an early anchor is caught by its plant: overturned,
    ///         the verifier's penalty slashed, and the honest fail earns the jackpot.
    function test_reveal_roundZeroPlanted_lazyPassLosesBondAndPenalty_succeeds() public {
        address lazy = _playRoundZero(true);
        uint256 lazyStake = _bonded(lazy, Constants.ROLE_VERIFIER);
        vm.expectEmit(address(ver));
        emit Verification.PlantApplied(runId, 0, solvers[0], 1, 1 ether);
        vm.prank(solvers[0]);
        plants.reveal(runId, 0, _secret(0));
        (bool eligible, bool revealed, bool planted,) = plants.plantOf(runId, 0, solvers[0]);
        assertTrue(eligible && revealed && planted, "round 0 revealed planted");
        assertEq(_bonded(lazy, Constants.ROLE_VERIFIER), lazyStake - PENALTY, "the lazy pass's penalty is slashed");
        assertEq(plants.forfeitOf(_ref(0)).amount, 1 ether + PENALTY, "bond and penalty held for the seat");
        assertEq(plants.pool(runId), POOL - JACKPOT, "the fail earned the jackpot");
    }

    function test_reveal_roundZeroNotPlanted_usualRules_succeeds() public {
        _playRoundZero(false);
        vm.prank(solvers[0]);
        plants.reveal(runId, 0, _secret(0));
        (bool eligible, bool revealed, bool planted,) = plants.plantOf(runId, 0, solvers[0]);
        assertTrue(eligible && revealed && !planted, "revealed, not planted");
        assertEq(uint8(plants.payOf(runId, 0, solvers[0])), uint8(IPlants.Pay.Normal));
    }

    // ------------------------------------------------------------------ terms, anchors and the run seed

    function test_setTerms_beforeStart_fixesRunSeedBlock_succeeds() public {
        uint256 start = reg.roundTimes(runId).start;
        uint256 expected = block.number + (start - block.timestamp + BLOCK_SECONDS - 1) / BLOCK_SECONDS;
        vm.expectEmit(address(plants));
        emit Plants.PlantTermsSet(runId, RATE, JACKPOT, PENALTY, POOL, POOL, expected);
        _setTerms();
        (uint256 seedBlock, bool drawn, bytes32 base) = plants.runSeedOf(runId);
        assertEq(seedBlock, expected, "the first block surely at or after the start");
        assertFalse(drawn);
        assertEq(base, bytes32(0));
    }

    function test_setAnchor_beforeStart_eligibleFromRoundZero_succeeds() public {
        _setTerms();
        _buildChain(keccak256("early"));
        vm.expectEmit(address(plants));
        emit Plants.PlantAnchorSet(runId, solvers[0], chain[chain.length - 1], 0, true);
        vm.prank(solvers[0]);
        plants.setAnchor(runId, chain[chain.length - 1]);
        assertTrue(plants.chainOf(runId, solvers[0]).early, "early");
        (bool eligible,,,) = plants.plantOf(runId, 0, solvers[0]);
        assertTrue(eligible, "eligible in round 0");
        assertFalse(plants.isPayBlocked(runId, 0, solvers[0]), "its round 0 can be paid");
    }

    /// @notice A solver that anchors at or after the start (or never) is unpaid in its first two rounds of a run that
    ///         plants from round 0: it cannot be planted there, so nothing of it is paid.
    function test_setAnchor_atStart_notEligibleUntilTwoRoundsLater_succeeds() public {
        _setTerms();
        vm.warp(reg.roundTimes(runId).start);
        _buildChain(keccak256("late"));
        vm.prank(solvers[0]);
        plants.setAnchor(runId, chain[chain.length - 1]);
        assertFalse(plants.chainOf(runId, solvers[0]).early, "at the start is not before it");
        for (uint64 round; round < Constants.PLANT_DELAY_ROUNDS; ++round) {
            (bool eligible,,,) = plants.plantOf(runId, round, solvers[0]);
            assertFalse(eligible, "not eligible before its anchor is two rounds old");
            assertTrue(plants.isPayBlocked(runId, round, solvers[0]), "late anchor: unpaid");
            assertTrue(plants.isPayBlocked(runId, round, solvers[1]), "no anchor: unpaid");
            assertEq(uint8(plants.payOf(runId, round, solvers[1])), uint8(IPlants.Pay.Unpaid));
        }
        (bool eligible2,,,) = plants.plantOf(runId, uint64(Constants.PLANT_DELAY_ROUNDS), solvers[0]);
        assertTrue(eligible2, "eligible two rounds after its anchor");
    }

    function test_drawRunSeed_storesTheRandaoPrefix_succeeds() public {
        _setTerms();
        bytes32 mix = keccak256("mix");
        bytes memory header = _toStart(mix);
        (uint256 seedBlock,,) = plants.runSeedOf(runId);
        vm.expectEmit(address(plants));
        emit Plants.RunSeedDrawn(runId, seedBlock, bytes32(bytes12(mix)));
        plants.drawRunSeed(runId, header);
        (, bool drawn, bytes32 base) = plants.runSeedOf(runId);
        assertTrue(drawn);
        assertEq(base, bytes32(bytes12(mix)), "bytes12 of the RANDAO value, left-aligned like every seed base");
        vm.expectRevert(abi.encodeWithSelector(Plants.RunSeedAlreadyDrawn.selector, runId));
        plants.drawRunSeed(runId, header);
    }

    function test_drawRunSeed_beforeSeedBlockMined_reverts() public {
        _setTerms();
        (uint256 seedBlock,,) = plants.runSeedOf(runId);
        uint256 randaoBlock = seedBlock + Constants.RANDAO_LAG_BLOCKS;
        vm.roll(randaoBlock); // the block after the run seed block is the current one: its hash does not exist yet
        vm.expectRevert(abi.encodeWithSelector(BlockRandomness.BlockHashUnavailable.selector, randaoBlock));
        plants.drawRunSeed(runId, _header(keccak256("mix")));
    }

    function test_drawRunSeed_wrongHeader_reverts() public {
        _setTerms();
        bytes memory header = _toStart(keccak256("mix"));
        (uint256 seedBlock,,) = plants.runSeedOf(runId);
        bytes memory forged = _header(keccak256("another mix"));
        // a header whose hash is not the block's: a caller cannot choose the RANDAO value
        vm.expectRevert(
            abi.encodeWithSelector(
                BlockRandomness.HeaderMismatch.selector,
                seedBlock + Constants.RANDAO_LAG_BLOCKS,
                keccak256(header),
                keccak256(forged)
            )
        );
        plants.drawRunSeed(runId, forged);
        (, bool drawn,) = plants.runSeedOf(runId);
        assertFalse(drawn);
    }

    /// @notice A round 0 whose run seed nobody drew stays unplanted, as the solver node assumes when it trains.
    function test_reveal_roundZeroRunSeedNeverDrawn_notPlanted_succeeds() public {
        _setTerms();
        _buildChain(keccak256("early"));
        vm.prank(solvers[0]);
        plants.setAnchor(runId, chain[chain.length - 1]);
        vm.warp(reg.roundTimes(runId).start);
        CommitmentData memory c = commitAs(runId, solvers[0]);
        warpToAttest(runId);
        drawSeed(runId);
        attestPassAs(_ref(0), c);
        vm.warp(reg.roundTimes(runId).attestEnd);
        vm.roll(block.number + 1);
        vm.prank(solvers[0]);
        plants.reveal(runId, 0, _secret(0));
        (, bool revealed, bool planted,) = plants.plantOf(runId, 0, solvers[0]);
        assertTrue(revealed && !planted, "no run seed: not planted");
    }

    /// @notice Property: every anchor registered before the start lands before the run seed block, whatever the
    ///         delay left and however slow the chain (blocks at least BLOCK_SECONDS apart), so none was fixed
    ///         knowing round 0's plant seed.
    function testFuzz_setTerms_runSeedBlockAfterEveryEarlyAnchor_succeeds(uint256 elapsed, uint256 gapSeed) public {
        uint256 start = reg.roundTimes(runId).start;
        elapsed = bound(elapsed, 0, DELAY - 1);
        vm.warp(block.timestamp + elapsed);
        _setTerms();
        (uint256 seedBlock,,) = plants.runSeedOf(runId);
        // walk blocks at least BLOCK_SECONDS apart until the start: every one of them is before the seed block
        uint256 number = block.number;
        uint256 time = block.timestamp;
        for (uint256 i; i < 400 && time < start; ++i) {
            assertLt(number, seedBlock, "a block before the start is before the run seed block");
            gapSeed = uint256(keccak256(abi.encode(gapSeed)));
            time += BLOCK_SECONDS + (gapSeed % 3 == 0 ? gapSeed % 30 : 0);
            number += 1;
        }
    }
}
