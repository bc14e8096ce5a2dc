// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {stdStorage, StdStorage} from "forge-std/Test.sol";
import {PullPayments} from "../src/base/PullPayments.sol";
import {Fixture} from "./utils/Fixture.sol";
import {Rejector} from "./utils/Rejector.sol";
import {Constants} from "../src/Constants.sol";
import {RunRegistry} from "../src/RunRegistry.sol";
import {StakeManager} from "../src/StakeManager.sol";
import {Verification} from "../src/Verification.sol";
import {BlockRandomness} from "../src/BlockRandomness.sol";
import {TestHeaders} from "./utils/TestHeaders.sol";
import {Sampling} from "../src/libraries/Sampling.sol";
import {IRunRegistry} from "../src/interfaces/IRunRegistry.sol";
import {IVerification} from "../src/interfaces/IVerification.sol";
import {AttestationRef, CommitmentData, DisputeSubject, LeafData} from "../src/interfaces/Types.sol";

contract VerificationTest is Fixture {
    using stdStorage for StdStorage;

    uint256 internal runId;
    CommitmentData internal c0;
    CommitmentData internal c1;
    /// @dev The sybil block of the seat-statistics test.
    mapping(address verifier => bool) internal _sybil;

    function setUp() public override {
        super.setUp();
        runId = createRun(defaultConfig());
        joinSolvers(runId, 2);
        registerVerifiers(runId, 4);
        c0 = commitAs(runId, solvers[0]);
        c1 = commitAs(runId, solvers[1]);
        warpToAttest(runId);
        drawSeed(runId);
    }

    /// @dev A round-0 seat, built without an external call (so it can sit inside an expectRevert'ed call).
    function _ref(uint256 solver, uint8 slot) internal view returns (AttestationRef memory) {
        return AttestationRef({runId: runId, round: 0, solver: solvers[solver], slot: slot});
    }

    // ------------------------------------------------------------------ stake coverage

    /// Finding 5 of issue 16: a verifier slashed to zero in one run used to stay active and attest in others. Its
    /// stake no longer covers what it reserved here, so it attests nowhere until it tops up.
    function test_attestPass_slashedElsewhere_reverts() public {
        AttestationRef memory ref = _ref(0, 0);
        (address verifier,) = ver.assignedVerifier(ref);
        vm.prank(address(dis)); // e.g. an attestation of another run, made before it moved its stake here, overturned
        sm.slash(verifier, Constants.ROLE_VERIFIER, 5 ether, keccak256("a wrong attestation in another run"));
        assertFalse(sm.isCovered(verifier, Constants.ROLE_VERIFIER));
        vm.deal(verifier, 1 ether);
        vm.prank(verifier);
        vm.expectRevert(abi.encodeWithSelector(Verification.StakeNotCovered.selector, verifier));
        ver.attestPass{value: 1 ether}(ref, c0);
        stakeAs(verifier, Constants.ROLE_VERIFIER, 5 ether);
        vm.prank(verifier);
        ver.attestPass{value: 1 ether}(ref, c0);
    }

    // ------------------------------------------------------------------ seed

    function test_drawSeed_seedBlockRandao_succeeds() public view {
        bytes32 base = seedBaseOf(runId, 0);
        uint256 seedBlock = reg.roundTimes(runId).seedBlock;
        assertEq(base, bytes32(bytes12(TestHeaders.mixOf(seedBlock))), "first 12 bytes of the seed block's RANDAO");
        uint256 randaoBlock = seedBlock + Constants.RANDAO_LAG_BLOCKS;
        assertTrue(base != bytes32(bytes12(blockhash(randaoBlock))), "not of the proven block's hash");
        assertTrue(base != bytes32(0));
        assertEq(uint256(base) << 96, 0, "12 bytes, zero padded");
        Verification.RoundSeed memory rs = ver.roundSeed(runId, 0);
        assertEq(rs.verifierCount, 4);
        assertEq(rs.samples, 2);
        assertEq(rs.numSegments, 8);
        assertEq(ver.roundTally(runId, 0).attestationBond, 1 ether);
    }

    function test_drawSeed_twice_reverts() public {
        bytes memory header = seedHeader(runId);
        vm.expectRevert(abi.encodeWithSelector(Verification.SeedAlreadyDrawn.selector, runId, 0));
        ver.drawSeed(runId, 0, header);
    }

    function test_drawSeed_duringCommitWindow_reverts() public {
        uint256 id = createRun(defaultConfig());
        bytes memory header = seedHeader(id);
        vm.expectRevert(
            abi.encodeWithSelector(
                Verification.OutsideDrawWindow.selector, block.timestamp + WINDOW, block.timestamp + WINDOW + WINDOW / 2
            )
        );
        ver.drawSeed(id, 0, header);
    }

    /// @dev From the opening deadline on nobody may draw: a seed drawn then would leave solvers no time to open.
    function testFuzz_drawSeed_atOrAfterOpenEnd_reverts(uint256 at) public {
        uint256 id = createRun(defaultConfig());
        IRunRegistry.RoundTimes memory t = reg.roundTimes(id);
        vm.warp(bound(at, t.openEnd, t.attestEnd - 1));
        vm.roll(t.seedBlock + 1 + Constants.RANDAO_LAG_BLOCKS);
        bytes memory header = seedHeader(id);
        vm.expectRevert(abi.encodeWithSelector(Verification.OutsideDrawWindow.selector, t.commitEnd, t.openEnd));
        ver.drawSeed(id, 0, header);
    }

    /// @dev A fresh run whose round 0 has two commitments and four verifiers (registered in its creation block), at
    ///      the end of its commit window in time and in blocks: block == seed block, seed not drawn yet.
    function _committedRound() internal returns (uint256 id) {
        id = createRun(defaultConfig());
        joinSolvers(id, 2);
        registerVerifiers(id, 4);
        commitAs(id, solvers[0]);
        commitAs(id, solvers[1]);
        warpToAttest(id);
        assertEq(block.number, reg.roundTimes(id).seedBlock);
    }

    /// @dev Everything the seed decides for round 0 of `id`: the seed base, the 2 samples of each of the 3 seats of
    ///      both commitments, and the verifier of each seat.
    function _outcome(uint256 id)
        internal
        view
        returns (bytes32 seed, uint256[] memory samples, address[] memory seats)
    {
        seed = seedBaseOf(id, 0);
        samples = new uint256[](12);
        seats = new address[](6);
        for (uint256 s; s < 2; ++s) {
            for (uint8 slot; slot < 3; ++slot) {
                (seats[s * 3 + slot],) = ver.assignedVerifier(AttestationRef(id, 0, solvers[s], slot));
                for (uint256 j; j < 2; ++j) {
                    samples[(s * 3 + slot) * 2 + j] = ver.sampledSegment(id, 0, solvers[s], slot, j);
                }
            }
        }
    }

    /// @dev Issue 15 item 3: a committed solver (or anyone) used to pick the seed by choosing the block of its
    ///      drawSeed call (the parent block's hash). Now the seed, every sample and every seat are the same whichever
    ///      block of the horizon and whichever moment of the attest window the draw lands in; the old rule would have
    ///      offered a different seed in each of these 256 blocks.
    function test_drawSeed_anyBlockInHorizon_sameSeedSamplesSeats_succeeds() public {
        uint256 id = _committedRound();
        IRunRegistry.RoundTimes memory t = reg.roundTimes(id);
        uint256 snap = vm.snapshotState();
        vm.roll(t.seedBlock + 1 + Constants.RANDAO_LAG_BLOCKS);
        ver.drawSeed(id, 0, seedHeader(id));
        (bytes32 seed, uint256[] memory samples, address[] memory seats) = _outcome(id);
        assertEq(seed, bytes32(bytes12(TestHeaders.mixOf(t.seedBlock))));
        uint256 oldRuleChoices;
        for (uint256 k = 1; k <= Constants.SEED_HORIZON_BLOCKS; ++k) {
            vm.revertToState(snap);
            vm.roll(t.seedBlock + Constants.RANDAO_LAG_BLOCKS + k);
            vm.warp(t.commitEnd + (k - 1) * (t.openEnd - t.commitEnd - 1) / (Constants.SEED_HORIZON_BLOCKS - 1));
            bytes memory header = seedHeader(id);
            if (bytes12(blockhash(block.number - 1)) != bytes12(seed)) ++oldRuleChoices;
            ver.drawSeed(id, 0, header);
            (bytes32 seedK, uint256[] memory samplesK, address[] memory seatsK) = _outcome(id);
            assertEq(seedK, seed, "seed");
            assertEq(samplesK, samples, "sampled segments");
            assertEq(seatsK, seats, "seats");
            assertEq(ver.roundSeed(id, 0).verifierCount, 4, "snapshot");
        }
        assertEq(oldRuleChoices, Constants.SEED_HORIZON_BLOCKS, "the parent-block rule gave a new seed per block");
    }

    function testFuzz_drawSeed_anyBlockAndTime_sameOutcome_succeeds(uint256 blockSeed, uint256 timeSeed) public {
        uint256 id = _committedRound();
        IRunRegistry.RoundTimes memory t = reg.roundTimes(id);
        uint256 snap = vm.snapshotState();
        uint256 randaoBlock = t.seedBlock + Constants.RANDAO_LAG_BLOCKS;
        vm.roll(randaoBlock + 1);
        ver.drawSeed(id, 0, seedHeader(id));
        (bytes32 seed, uint256[] memory samples, address[] memory seats) = _outcome(id);
        vm.revertToState(snap);
        vm.roll(bound(blockSeed, randaoBlock + 1, randaoBlock + Constants.SEED_HORIZON_BLOCKS));
        vm.warp(bound(timeSeed, t.commitEnd, t.openEnd - 1));
        ver.drawSeed(id, 0, seedHeader(id));
        (bytes32 seedK, uint256[] memory samplesK, address[] memory seatsK) = _outcome(id);
        assertEq(seedK, seed);
        assertEq(samplesK, samples);
        assertEq(seatsK, seats);
    }

    function test_drawSeed_emitsSeedBlock_succeeds() public {
        uint256 id = _committedRound();
        uint256 seedBlock = reg.roundTimes(id).seedBlock;
        vm.roll(seedBlock + 17);
        bytes memory header = seedHeader(id);
        bytes32 randao = TestHeaders.mixOf(seedBlock);
        vm.expectEmit(address(ver));
        emit Verification.SeedDrawn(id, 0, bytes32(bytes12(randao)), seedBlock, randao, 4);
        ver.drawSeed(id, 0, header);
    }

    /// @dev The seed block's builder chose its contents (here: extraData) to grind its hash: every such header is
    ///      the block's own (blockhash proves it), and every one gives the same seed, samples and seats, because the
    ///      seed is the block's RANDAO value, which the builder does not choose.
    function testFuzz_drawSeed_grindedSeedBlockContents_sameOutcome_succeeds(bytes32 extraData) public {
        uint256 id = _committedRound();
        IRunRegistry.RoundTimes memory t = reg.roundTimes(id);
        uint256 randaoBlock = t.seedBlock + Constants.RANDAO_LAG_BLOCKS;
        vm.roll(randaoBlock + 1);
        uint256 snap = vm.snapshotState();
        ver.drawSeed(id, 0, seedHeader(id));
        (bytes32 seed, uint256[] memory samples, address[] memory seats) = _outcome(id);
        vm.revertToState(snap);
        bytes memory grinded = TestHeaders.build(randaoBlock, TestHeaders.mixOf(t.seedBlock), abi.encode(extraData));
        vm.setBlockhash(randaoBlock, keccak256(grinded));
        ver.drawSeed(id, 0, grinded);
        (bytes32 seedG, uint256[] memory samplesG, address[] memory seatsG) = _outcome(id);
        assertEq(seedG, seed, "seed");
        assertEq(samplesG, samples, "sampled segments");
        assertEq(seatsG, seats, "seats");
        assertTrue(bytes12(blockhash(randaoBlock)) != bytes12(seed), "the hash moved, the seed did not");
    }

    /// @dev A header that is not the seed block's (a forged RANDAO value) is refused: its hash is not blockhash.
    function test_drawSeed_forgedHeader_reverts() public {
        uint256 id = _committedRound();
        uint256 randaoBlock = reg.roundTimes(id).seedBlock + Constants.RANDAO_LAG_BLOCKS;
        vm.roll(randaoBlock + 1);
        bytes memory header = seedHeader(id);
        bytes memory forged = TestHeaders.build(randaoBlock, keccak256("a RANDAO value of my choice"), "");
        vm.expectRevert(
            abi.encodeWithSelector(
                BlockRandomness.HeaderMismatch.selector, randaoBlock, keccak256(header), keccak256(forged)
            )
        );
        ver.drawSeed(id, 0, forged);
        assertGt(address(ver.blockRandomness()).code.length, 0, "wired at deployment");
    }

    /// @dev The attack behind RANDAO_LAG_BLOCKS: the seed block's own mixHash is the mix the proposer of the block
    ///      before it completed, and that proposer can still include commits (and verifier registrations) in its block,
    ///      knowing the seed. Its header is refused: only the next block's mixHash, the RANDAO value revealed in the
    ///      seed block, which no one knew while a commit could land, is the seed.
    function test_drawSeed_seedBlockOwnMixHash_reverts() public {
        uint256 id = _committedRound();
        IRunRegistry.RoundTimes memory t = reg.roundTimes(id);
        uint256 randaoBlock = t.seedBlock + Constants.RANDAO_LAG_BLOCKS;
        vm.roll(randaoBlock + 1);
        bytes memory header = seedHeader(id);
        bytes memory early = TestHeaders.build(t.seedBlock, keccak256("known to the previous proposer"), "");
        vm.setBlockhash(t.seedBlock, keccak256(early));
        vm.expectRevert(
            abi.encodeWithSelector(
                BlockRandomness.HeaderMismatch.selector, randaoBlock, keccak256(header), keccak256(early)
            )
        );
        ver.drawSeed(id, 0, early);
    }

    function testFuzz_drawSeed_beforeSeedBlock_reverts(uint256 blockSeed) public {
        uint256 id = _committedRound();
        uint256 seedBlock = reg.roundTimes(id).seedBlock;
        uint256 randaoBlock = seedBlock + Constants.RANDAO_LAG_BLOCKS;
        vm.roll(bound(blockSeed, seedBlock - WINDOW / BLOCK_SECONDS, randaoBlock));
        bytes memory header = seedHeader(id);
        vm.expectRevert(abi.encodeWithSelector(BlockRandomness.BlockHashUnavailable.selector, randaoBlock));
        ver.drawSeed(id, 0, header);
    }

    function test_drawSeed_inSeedBlock_reverts() public {
        uint256 id = _committedRound();
        uint256 seedBlock = reg.roundTimes(id).seedBlock;
        assertEq(block.number, seedBlock);
        bytes memory header = seedHeader(id);
        vm.expectRevert(
            abi.encodeWithSelector(
                BlockRandomness.BlockHashUnavailable.selector, seedBlock + Constants.RANDAO_LAG_BLOCKS
            )
        );
        ver.drawSeed(id, 0, header);
    }

    function testFuzz_drawSeed_afterHorizon_reverts(uint256 blockSeed) public {
        uint256 id = _committedRound();
        uint256 seedBlock = reg.roundTimes(id).seedBlock;
        uint256 randaoBlock = seedBlock + Constants.RANDAO_LAG_BLOCKS;
        vm.roll(bound(blockSeed, randaoBlock + Constants.SEED_HORIZON_BLOCKS + 1, seedBlock + 1_000_000));
        bytes memory header = seedHeader(id);
        vm.expectRevert(abi.encodeWithSelector(Verification.SeedBlockExpired.selector, randaoBlock));
        ver.drawSeed(id, 0, header);
    }

    function test_drawSeed_lastBlockOfHorizon_succeeds() public {
        uint256 id = _committedRound();
        uint256 seedBlock = reg.roundTimes(id).seedBlock;
        vm.roll(seedBlock + Constants.RANDAO_LAG_BLOCKS + Constants.SEED_HORIZON_BLOCKS);
        ver.drawSeed(id, 0, seedHeader(id));
        assertEq(seedBaseOf(id, 0), bytes32(bytes12(TestHeaders.mixOf(seedBlock))));
    }

    /// @dev Nobody drew within the horizon: the round cannot be verified. No attestation, so no commitment is accepted
    ///      or paid and nobody is slashed; the round settles with theta unchanged and the next round works as usual.
    function test_drawSeed_expired_roundUnverifiedNextRoundWorks_succeeds() public {
        uint256 id = _committedRound();
        uint256 seedBlock = reg.roundTimes(id).seedBlock;
        uint256 randaoBlock = seedBlock + Constants.RANDAO_LAG_BLOCKS;
        vm.roll(randaoBlock + Constants.SEED_HORIZON_BLOCKS + 1);
        bytes memory header = seedHeader(id);
        vm.expectRevert(abi.encodeWithSelector(Verification.SeedBlockExpired.selector, randaoBlock));
        ver.drawSeed(id, 0, header);
        AttestationRef memory ref = AttestationRef(id, 0, solvers[0], 0);
        vm.expectRevert(abi.encodeWithSelector(Verification.SeedNotDrawn.selector, id, 0));
        ver.attestPass(ref, c0);
        uint256 stake = sm.bondedOf(solvers[0], Constants.ROLE_SOLVER);
        warpToClaim(id);
        bytes32 theta0 = reg.thetaOf(id, 0);
        claimAndSettle(id, theta0); // no accepted pseudo-gradient: theta_1 = theta_0
        assertEq(reg.thetaOf(id, 1), theta0);
        assertEq(sm.bondedOf(solvers[0], Constants.ROLE_SOLVER), stake, "nobody slashed");
        vm.expectRevert(abi.encodeWithSelector(Verification.NotAccepted.selector, id, 0, solvers[0]));
        ver.claimSolverShares(id, 0, solvers[0]);
        CommitmentData memory next = commitAs(id, solvers[0]);
        warpToAttest(id);
        drawSeed(id);
        attestPassAs(refOf(id, solvers[0], 0), next);
        assertEq(ver.commitmentStatusOf(id, 1, solvers[0]).passes, 1);
    }

    /// @dev Issue 15 item 3, second half: the list snapshot used to be taken at draw time, so a drawer could add
    ///      sybil verifiers after seeing the seed block's hash and before drawing, moving every seat (index mod
    ///      count). Sybils registered in the seed block and after it change no seat, of these commitments or of any
    ///      of 200 others, and hold none.
    function test_drawSeed_sybilsAfterSeedBlock_changeNoSeat_succeeds() public {
        uint256 id = _committedRound();
        uint256 seedBlock = reg.roundTimes(id).seedBlock;
        uint256 snap = vm.snapshotState();
        vm.roll(seedBlock + 30);
        ver.drawSeed(id, 0, seedHeader(id));
        (bytes32 seed, uint256[] memory samples, address[] memory seats) = _outcome(id);
        address[] memory many = _manySeats(id);
        vm.revertToState(snap);
        for (uint256 i; i < 20; ++i) {
            vm.roll(seedBlock + i); // from the seed block itself on: its hash is known to the sybils
            address sybil = makeAddr(string.concat("sybil", vm.toString(i)));
            _sybil[sybil] = true;
            stakeAs(sybil, Constants.ROLE_VERIFIER, 5 ether);
            vm.prank(sybil);
            vreg.register(id);
        }
        vm.roll(seedBlock + 30);
        ver.drawSeed(id, 0, seedHeader(id));
        assertEq(vreg.size(id), 24, "the sybils are in the list");
        assertEq(ver.roundSeed(id, 0).verifierCount, 4, "but not in the round's snapshot");
        (bytes32 seedS, uint256[] memory samplesS, address[] memory seatsS) = _outcome(id);
        assertEq(seedS, seed);
        assertEq(samplesS, samples);
        assertEq(seatsS, seats, "no seat moved");
        address[] memory manyS = _manySeats(id);
        assertEq(manyS, many, "no seat of 200 other commitments moved");
        for (uint256 i; i < manyS.length; ++i) {
            assertFalse(_sybil[manyS[i]], "a sybil holds a seat");
        }
        assertGt(_movedByCount(seed, id, 24), 300, "a draw-time snapshot (24 entries) would move most of the 600 seats");
    }

    /// @dev How many of the 600 seats of `_manySeats` would get another list index with `count` entries than with 4.
    function _movedByCount(bytes32 seed, uint256 id, uint256 count) internal pure returns (uint256 moved) {
        for (uint256 i; i < 600; ++i) {
            bytes32 seatSeed = Sampling.seatSeed(Sampling.seed(seed, id, 0, _statSolver(i / 3)), uint8(i % 3));
            uint256 index = Sampling.sample(seatSeed, Constants.VERIFIER_DRAW_INDEX, count);
            if (index != Sampling.sample(seatSeed, Constants.VERIFIER_DRAW_INDEX, 4)) ++moved;
        }
    }

    function _statSolver(uint256 k) internal pure returns (address) {
        return address(uint160(uint256(keccak256(abi.encode("statistics solver", k)))));
    }

    /// @dev The verifiers of the 3 seats of 200 commitments (one per synthetic solver address) of round 0 of `id`.
    function _manySeats(uint256 id) internal view returns (address[] memory seats) {
        seats = new address[](600);
        for (uint256 i; i < 600; ++i) {
            (seats[i],) = ver.assignedVerifier(AttestationRef(id, 0, _statSolver(i / 3), uint8(i % 3)));
        }
    }

    /// @dev The snapshot is the list at the end of the block before the seed block: `before` verifiers register
    ///      in blocks before the seed block and `leave` of them leave there too; `after_` register from the seed
    ///      block on and `leaveAfter` of the early ones leave from the seed block on. Only the first two moves count.
    function testFuzz_drawSeed_snapshotIsListBeforeSeedBlock_succeeds(
        uint256 before,
        uint256 leave,
        uint256 after_,
        uint256 leaveAfter
    ) public {
        before = bound(before, 0, 30);
        leave = bound(leave, 0, before);
        after_ = bound(after_, 0, 30);
        leaveAfter = bound(leaveAfter, 0, before - leave);
        uint256 id = createRun(defaultConfig());
        IRunRegistry.RoundTimes memory t = reg.roundTimes(id);
        vm.roll(t.seedBlock - 2);
        for (uint256 i; i < before; ++i) {
            _registerFresh(id, i);
        }
        for (uint256 i; i < leave; ++i) {
            vm.prank(_fresh(i));
            vreg.deregister(id);
        }
        vm.roll(t.seedBlock);
        for (uint256 i; i < after_; ++i) {
            _registerFresh(id, before + i);
        }
        for (uint256 i; i < leaveAfter; ++i) {
            vm.prank(_fresh(leave + i));
            vreg.deregister(id);
        }
        vm.warp(t.commitEnd);
        vm.roll(t.seedBlock + 200);
        ver.drawSeed(id, 0, seedHeader(id));
        assertEq(ver.roundSeed(id, 0).verifierCount, before - leave);
        assertEq(vreg.size(id), before - leave + after_ - leaveAfter);
    }

    /// @dev A list of 256 entries cut at every interesting place.
    function test_drawSeed_longListSnapshot_succeeds() public {
        uint256 id = createRun(defaultConfig());
        IRunRegistry.RoundTimes memory t = reg.roundTimes(id);
        uint256[7] memory cuts = [uint256(0), 1, 2, 127, 128, 255, 256];
        uint256 snap = vm.snapshotState();
        for (uint256 c; c < cuts.length; ++c) {
            vm.revertToState(snap);
            for (uint256 i; i < 256; ++i) {
                vm.roll(i < cuts[c] ? t.seedBlock - 1 : t.seedBlock + 1);
                _registerFresh(id, i);
            }
            vm.warp(t.commitEnd);
            vm.roll(t.seedBlock + 2);
            ver.drawSeed(id, 0, seedHeader(id));
            assertEq(ver.roundSeed(id, 0).verifierCount, cuts[c]);
        }
    }

    function _fresh(uint256 i) internal returns (address) {
        return makeAddr(string.concat("list verifier ", vm.toString(i)));
    }

    function _registerFresh(uint256 id, uint256 i) internal {
        address v = _fresh(i);
        stakeAs(v, Constants.ROLE_VERIFIER, 5 ether);
        vm.prank(v);
        vreg.register(id);
    }

    /// @dev A verifier that left before the seed block is out of the snapshot (the last entry took its index) and
    ///      holds no seat even if it returns after the seed block (at the end of the list).
    function test_register_leaveBeforeSeedReturnAfter_noSeat_succeeds() public {
        uint256 id = _committedRound();
        uint256 seedBlock = reg.roundTimes(id).seedBlock;
        vm.roll(seedBlock - 1);
        vm.prank(verifiers[1]);
        vreg.deregister(id);
        assertEq(vreg.verifierAt(id, 1, block.number), verifiers[3], "the last entry moved into the hole");
        vm.roll(seedBlock + 5);
        vm.prank(verifiers[1]);
        vreg.register(id);
        assertEq(vreg.verifierAt(id, 3, block.number), verifiers[1], "a return appends");
        ver.drawSeed(id, 0, seedHeader(id));
        assertEq(ver.roundSeed(id, 0).verifierCount, 3, "the snapshot is the list before the seed block");
        address[] memory many = _manySeats(id);
        for (uint256 i; i < many.length; ++i) {
            assertTrue(many[i] != verifiers[1], "the returning verifier holds a seat");
        }
    }

    function test_drawSeed_wrongRound_reverts() public {
        bytes memory header = seedHeader(runId);
        vm.expectRevert(abi.encodeWithSelector(Verification.WrongRound.selector, 1, 0));
        ver.drawSeed(runId, 1, header);
    }

    function test_drawSeed_finishedRun_reverts() public {
        bytes memory header = seedHeader(runId);
        vm.mockCall(
            address(reg),
            abi.encodeWithSelector(RunRegistry.roundTimes.selector, runId),
            abi.encode(0, 0, 0, 0, 0, true, 0, 0)
        );
        vm.expectRevert(abi.encodeWithSelector(Verification.RunIsFinished.selector, runId));
        ver.drawSeed(runId, 0, header);
    }

    // ------------------------------------------------------------------ seats and samples

    /// @dev Sub-seed of seat `slot` of solver `solver`'s round-0 commitment, computed with the library.
    function _seatSeed(address solver, uint8 slot) internal view returns (bytes32) {
        return Sampling.seatSeed(Sampling.seed(seedBaseOf(runId, 0), runId, 0, solver), slot);
    }

    function test_sampledSegment_matchesSamplingLibrary_succeeds() public view {
        for (uint8 slot; slot < 3; ++slot) {
            bytes32 seatSeed = _seatSeed(solvers[0], slot);
            for (uint256 j; j < 4; ++j) {
                assertEq(ver.sampledSegment(runId, 0, solvers[0], slot, j), Sampling.sample(seatSeed, j, 8));
            }
        }
    }

    function testFuzz_sampledSegment_seatSeedDraw_succeeds(address solver, uint8 slot, uint256 sampleIndex)
        public
        view
    {
        sampleIndex = bound(sampleIndex, 0, Constants.MAX_SAMPLES - 1);
        bytes32 expected = keccak256(
            abi.encode(Constants.SEAT_SEED_TAG, Sampling.seed(seedBaseOf(runId, 0), runId, 0, solver), uint256(slot))
        );
        assertEq(Sampling.seatSeed(Sampling.seed(seedBaseOf(runId, 0), runId, 0, solver), slot), expected);
        assertEq(ver.sampledSegment(runId, 0, solver, slot, sampleIndex), Sampling.sample(expected, sampleIndex, 8));
    }

    /// @dev 8 seats x 16 draws of one commitment over its 8 segments. Seats sharing their samples (the old rule)
    ///      would agree on all 28 x 16 = 448 pairs of same-index draws; independent seats agree on each with
    ///      p = 1/8: binomial(448, 1/8), mean 56, sd sqrt(448 * 1/8 * 7/8) = 7.0, so the band [28, 84] is
    ///      mean +- 4 sd. Two seats drawing the same 16 segments has probability 8^-16 per pair.
    function test_sampledSegment_seatsDrawIndependently_succeeds() public {
        uint256[16][8] memory draws;
        for (uint8 slot; slot < 8; ++slot) {
            for (uint256 j; j < 16; ++j) {
                draws[slot][j] = ver.sampledSegment(runId, 0, solvers[0], slot, j);
            }
        }
        uint256 agreeing;
        for (uint256 a; a < 8; ++a) {
            for (uint256 b = a + 1; b < 8; ++b) {
                assertTrue(_seatSeed(solvers[0], uint8(a)) != _seatSeed(solvers[0], uint8(b)), "same seat seed");
                uint256 same;
                for (uint256 j; j < 16; ++j) {
                    if (draws[a][j] == draws[b][j]) ++same;
                }
                assertLt(same, 16, "two seats replay the same samples");
                agreeing += same;
            }
        }
        emit log_named_uint("same-index draws agreeing between seats (of 448)", agreeing);
        assertGe(agreeing, 28, "below mean - 4 sd");
        assertLe(agreeing, 84, "above mean + 4 sd");
    }

    function test_assignedVerifier_seatSeedDraw_succeeds() public view {
        for (uint8 slot; slot < 3; ++slot) {
            bytes32 seed = Sampling.seed(seedBaseOf(runId, 0), runId, 0, solvers[0]);
            uint256 index = Sampling.seatIndex(seed, slot, 4);
            (address verifier, bool eligible) = ver.assignedVerifier(_ref(0, slot));
            assertEq(verifier, verifiers[index], "list[Sampling.seatIndex(seed, slot, count)]");
            assertTrue(eligible);
            assertEq(ver.attesterOf(_ref(0, slot)), verifier);
        }
    }

    /// @dev 30 verifiers, list entries 10..19 a block of sybils (a third of the list); the seats of 1,000
    ///      commitments (one per solver address: assignment needs only the drawn seed, not a commitment).
    ///      Seats drawn from their own sub-seeds without replacement put all 3 seats of a commitment in the
    ///      block with p = 10/30 * 9/29 * 8/28 = 0.0296 (independent draws with replacement: 1/27 = 0.037):
    ///      binomial(1000, 0.0296), mean 29.6, sd sqrt(1000 * 0.0296 * 0.9704) = 5.36, so the band [9, 51] is
    ///      mean +- 4 sd. The old rule (3 consecutive entries from a uniform offset) gives p = 8/30: mean 266.7,
    ///      sd 14.0, which this test also computes (>= 200 is mean - 4.8 sd) to show the gap. Each single seat
    ///      is a sybil with p = 1/3: binomial(3000, 1/3), mean 1000, sd 25.8, band [897, 1103] = mean +- 4 sd.
    function test_assignedVerifier_sybilBlockGetsAllSeatsRarely_succeeds() public {
        uint256 id = createRun(defaultConfig());
        for (uint256 i; i < 30; ++i) {
            address v = makeAddr(string.concat("pool verifier ", vm.toString(i)));
            stakeAs(v, Constants.ROLE_VERIFIER, 5 ether);
            vm.prank(v);
            vreg.register(id);
            if (i >= 10 && i < 20) _sybil[v] = true;
        }
        warpToAttest(id);
        drawSeed(id);
        bytes32 base = seedBaseOf(id, 0);
        uint256 allSeats;
        uint256 sybilSeats;
        uint256 oldRuleAllSeats;
        for (uint256 k; k < 1000; ++k) {
            address solver = address(uint160(uint256(keccak256(abi.encode("statistics solver", k)))));
            uint256 held;
            for (uint8 slot; slot < 3; ++slot) {
                (address verifier,) = ver.assignedVerifier(AttestationRef(id, 0, solver, slot));
                if (_sybil[verifier]) ++held;
            }
            sybilSeats += held;
            if (held == 3) ++allSeats;
            uint256 offset = Sampling.sample(Sampling.seed(base, id, 0, solver), Constants.VERIFIER_DRAW_INDEX, 30);
            if (offset >= 10 && offset + 2 < 20) ++oldRuleAllSeats;
        }
        emit log_named_uint("commitments with all 3 seats sybil (of 1000)", allSeats);
        emit log_named_uint("old window rule, same seeds (of 1000)", oldRuleAllSeats);
        emit log_named_uint("sybil seats (of 3000)", sybilSeats);
        assertGe(allSeats, 9, "below mean - 4 sd");
        assertLe(allSeats, 51, "above mean + 4 sd");
        assertGe(oldRuleAllSeats, 200, "the old window rule gave ~27%");
        assertGe(sybilSeats, 897, "single seats: below mean - 4 sd");
        assertLe(sybilSeats, 1103, "single seats: above mean + 4 sd");
    }

    function test_assignedVerifier_seatsOfACommitmentDistinct_succeeds() public view {
        // 3 seats over the fixture's 4 verifiers: for any commitment seed, three different verifiers
        bytes32 base = seedBaseOf(runId, 0);
        for (uint256 k; k < 200; ++k) {
            bytes32 seed = Sampling.seed(base, runId, 0, address(uint160(k + 1)));
            uint256 a = Sampling.seatIndex(seed, 0, 4);
            uint256 b = Sampling.seatIndex(seed, 1, 4);
            uint256 c = Sampling.seatIndex(seed, 2, 4);
            assertTrue(a != b && a != c && b != c, "two seats of one commitment share a verifier");
            assertLt(a < b ? (b < c ? c : b) : (a < c ? c : a), 4, "index outside the list");
        }
        for (uint8 x; x < 3; ++x) {
            for (uint8 y = x + 1; y < 3; ++y) {
                assertTrue(ver.attesterOf(_ref(0, x)) != ver.attesterOf(_ref(0, y)), "fixture seats share a verifier");
            }
        }
    }

    function test_attestFail_otherSeatsSample_reverts() public {
        // the leaf another seat sampled is no proof for this seat's draw
        (uint8 other, uint16 j, bool found) = (0, 0, false);
        for (uint8 q = 1; q < 3 && !found; ++q) {
            for (uint16 k; k < 2 && !found; ++k) {
                if (sampleSegment(_ref(0, q), k) != sampleSegment(_ref(0, 0), k)) (other, j, found) = (q, k, true);
            }
        }
        assertTrue(found, "seats 1 and 2 drew the samples of seat 0");
        AttestationRef memory ref = _ref(0, 0);
        (LeafData memory leaf, bytes32[] memory proof) = leafAt(runId, 0, solvers[0], sampleSegment(_ref(0, other), j));
        (address verifier,) = ver.assignedVerifier(ref);
        vm.deal(verifier, 1 ether);
        vm.prank(verifier);
        vm.expectRevert(Verification.InvalidLeafProof.selector);
        ver.attestFail{value: 1 ether}(ref, c0, j, leaf, proof);
    }

    function testFuzz_attestFail_onlySeatSampledLeaf_succeeds(
        uint8 slot,
        uint16 sampleIndex,
        uint256 leafIndex,
        bool own
    ) public {
        slot = uint8(bound(slot, 0, 2));
        sampleIndex = uint16(bound(sampleIndex, 0, 1));
        uint256 sampled = Sampling.sample(_seatSeed(solvers[0], slot), sampleIndex, 8);
        leafIndex = own ? sampled : bound(leafIndex, 0, 7);
        AttestationRef memory ref = _ref(0, slot);
        (LeafData memory leaf, bytes32[] memory proof) = leafAt(runId, 0, solvers[0], leafIndex);
        (address verifier,) = ver.assignedVerifier(ref);
        vm.deal(verifier, 1 ether);
        vm.prank(verifier);
        if (leafIndex != sampled) {
            vm.expectRevert(Verification.InvalidLeafProof.selector);
            ver.attestFail{value: 1 ether}(ref, c0, sampleIndex, leaf, proof);
            return;
        }
        ver.attestFail{value: 1 ether}(ref, c0, sampleIndex, leaf, proof);
        (Verification.AttestationState state, bool isFail,, uint16 recorded) = ver.attestationOf(ref);
        assertEq(uint8(state), uint8(Verification.AttestationState.Attested));
        assertTrue(isFail);
        assertEq(recorded, sampleIndex);
        IVerification.ChallengedAttestation memory c = ver.checkChallenge(ref, c0.root, sampleIndex, leaf, proof);
        assertEq(c.segmentIndex, sampled, "the fail's leaf is the one a challenge must name");
    }

    function testFuzz_checkChallenge_onlySeatSampledLeaf_succeeds(
        uint8 slot,
        uint16 sampleIndex,
        uint256 leafIndex,
        bool own
    ) public {
        slot = uint8(bound(slot, 0, 2));
        sampleIndex = uint16(bound(sampleIndex, 0, 1));
        AttestationRef memory ref = _ref(1, slot);
        attestPassAs(ref, c1);
        uint256 sampled = Sampling.sample(_seatSeed(solvers[1], slot), sampleIndex, 8);
        leafIndex = own ? sampled : bound(leafIndex, 0, 7);
        (LeafData memory leaf, bytes32[] memory proof) = leafAt(runId, 0, solvers[1], leafIndex);
        if (leafIndex != sampled) {
            vm.expectRevert(Verification.InvalidLeafProof.selector);
            ver.checkChallenge(ref, c1.root, sampleIndex, leaf, proof);
            return;
        }
        IVerification.ChallengedAttestation memory c = ver.checkChallenge(ref, c1.root, sampleIndex, leaf, proof);
        assertFalse(c.isFail);
        assertEq(c.sampleIndex, sampleIndex);
        assertEq(c.segmentIndex, sampled);
    }

    function test_assignedVerifier_seatBeyondVerifiers_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(Verification.SeatVoid.selector, 3));
        ver.assignedVerifier(_ref(0, 3));
    }

    function test_sampledSegment_seedNotDrawn_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(Verification.SeedNotDrawn.selector, runId, 1));
        ver.sampledSegment(runId, 1, solvers[0], 0, 0);
    }

    // ------------------------------------------------------------------ attest

    function test_attestPass_assignedVerifier_succeeds() public {
        AttestationRef memory ref = _ref(0, 0);
        (address verifier,) = ver.assignedVerifier(ref);
        vm.deal(verifier, 1 ether);
        vm.expectEmit(address(ver));
        emit Verification.PassAttested(runId, 0, solvers[0], verifier, 0);
        vm.prank(verifier);
        ver.attestPass{value: 1 ether}(ref, c0);
        (Verification.AttestationState state, bool isFail,,) = ver.attestationOf(ref);
        assertEq(uint8(state), uint8(Verification.AttestationState.Attested));
        assertFalse(isFail);
        Verification.CommitmentStatus memory st = ver.commitmentStatusOf(runId, 0, solvers[0]);
        assertEq(st.passes, 1);
        assertTrue(st.attested);
        assertEq(st.needed, 2, "a strict majority of min(3 seats, 4 listed)");
        Verification.RoundTally memory t = ver.roundTally(runId, 0);
        assertEq(t.totalChecks, 1);
        // issue 37: the old rule counted it paid here (one standing pass, no fault); one seat of three is no majority
        assertEq(t.paidCommitments, 0, "one pass of three seats does not accept");
        assertEq(address(ver).balance, 1 ether);
        attestPassAs(_ref(0, 1), c0);
        assertEq(ver.roundTally(runId, 0).paidCommitments, 1, "two passes of three seats accept");
    }

    function test_attestPass_notAssigned_reverts() public {
        AttestationRef memory ref = _ref(0, 0);
        (address verifier,) = ver.assignedVerifier(ref);
        vm.deal(outsider, 1 ether);
        vm.prank(outsider);
        vm.expectRevert(abi.encodeWithSelector(Verification.NotAssignedVerifier.selector, outsider, verifier));
        ver.attestPass{value: 1 ether}(ref, c0);
    }

    /// @dev A verifier that leaves after the seed block keeps the seats of the snapshot (its reservation is held
    ///      through the exit delay) and attests them; the seat does not pass to anyone else.
    function test_attestPass_leftAfterSeedBlock_stillItsSeat_succeeds() public {
        AttestationRef memory ref = _ref(0, 0);
        (address verifier,) = ver.assignedVerifier(ref);
        vm.prank(verifier);
        vreg.deregister(runId);
        (address still, bool eligible) = ver.assignedVerifier(ref);
        assertEq(still, verifier);
        assertTrue(eligible);
        vm.deal(verifier, 1 ether);
        vm.prank(verifier);
        ver.attestPass{value: 1 ether}(ref, c0);
        (,,, uint256 reserved) = sm.stakeOf(verifier, Constants.ROLE_VERIFIER);
        assertEq(reserved, 5 ether, "the reservation is held until releaseVerifier");
    }

    function test_attestPass_wrongBond_reverts() public {
        AttestationRef memory ref = _ref(0, 0);
        (address verifier,) = ver.assignedVerifier(ref);
        vm.deal(verifier, 1 ether);
        vm.prank(verifier);
        vm.expectRevert(abi.encodeWithSelector(Verification.WrongBond.selector, 0.5 ether, 1 ether));
        ver.attestPass{value: 0.5 ether}(ref, c0);
    }

    function test_attestPass_twice_reverts() public {
        AttestationRef memory ref = _ref(0, 0);
        address verifier = attestPassAs(ref, c0);
        vm.deal(verifier, 1 ether);
        vm.prank(verifier);
        vm.expectRevert(abi.encodeWithSelector(Verification.AlreadyAttested.selector, 0));
        ver.attestPass{value: 1 ether}(ref, c0);
    }

    function test_attestPass_wrongCommitment_reverts() public {
        AttestationRef memory ref = _ref(0, 0);
        (address verifier,) = ver.assignedVerifier(ref);
        vm.deal(verifier, 1 ether);
        vm.prank(verifier);
        vm.expectRevert(abi.encodeWithSelector(RunRegistry.CommitmentMismatch.selector, runId, 0, solvers[0]));
        ver.attestPass{value: 1 ether}(ref, c1);
    }

    function test_attestPass_afterWindow_reverts() public {
        AttestationRef memory ref = _ref(0, 0);
        (address verifier,) = ver.assignedVerifier(ref);
        uint256 attestEnd = reg.roundTimes(runId).attestEnd;
        vm.warp(attestEnd);
        vm.deal(verifier, 1 ether);
        vm.prank(verifier);
        vm.expectRevert(abi.encodeWithSelector(Verification.OutsideAttestWindow.selector, 0, attestEnd));
        ver.attestPass{value: 1 ether}(ref, c0);
    }

    function test_attestPass_seedNotDrawn_reverts() public {
        uint256 id = createRun(defaultConfig());
        AttestationRef memory ref = AttestationRef(id, 0, solvers[0], 0);
        vm.expectRevert(abi.encodeWithSelector(Verification.SeedNotDrawn.selector, id, 0));
        ver.attestPass(ref, c0);
    }

    function test_attestPass_voidSeat_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(Verification.SeatVoid.selector, 5));
        ver.attestPass(_ref(0, 5), c0);
    }

    function test_attestFail_sampledLeaf_succeeds() public {
        AttestationRef memory ref = _ref(1, 0);
        uint256 segment = sampleSegment(ref, 1);
        (LeafData memory leaf,) = leafAt(runId, 0, solvers[1], segment);
        (address verifier,) = ver.assignedVerifier(ref);
        vm.expectEmit(address(ver));
        emit Verification.FailAttested(runId, 0, solvers[1], verifier, 0, 1, uint32(segment), leaf);
        attestFailAs(ref, c1, 1);
        (Verification.AttestationState state, bool isFail,, uint16 sample) = ver.attestationOf(ref);
        assertEq(uint8(state), uint8(Verification.AttestationState.Attested));
        assertTrue(isFail);
        assertEq(sample, 1);
        assertEq(ver.roundTally(runId, 0).paidCommitments, 0, "a failed commitment is not accepted");
    }

    function test_attestFail_afterPass_unaccepts_succeeds() public {
        attestPassAs(_ref(1, 0), c1);
        attestPassAs(_ref(1, 1), c1);
        assertEq(ver.roundTally(runId, 0).paidCommitments, 1);
        attestFailAs(_ref(1, 2), c1, 0);
        assertEq(ver.roundTally(runId, 0).paidCommitments, 0, "a standing fail unaccepts a majority of passes");
        assertEq(ver.roundTally(runId, 0).totalChecks, 3);
    }

    function test_attestFail_badSampleIndex_reverts() public {
        AttestationRef memory ref = _ref(1, 0);
        (address verifier,) = ver.assignedVerifier(ref);
        (LeafData memory leaf, bytes32[] memory proof) = leafAt(runId, 0, solvers[1], 0);
        vm.deal(verifier, 1 ether);
        vm.prank(verifier);
        vm.expectRevert(abi.encodeWithSelector(Verification.BadSampleIndex.selector, 2, 2));
        ver.attestFail{value: 1 ether}(ref, c1, 2, leaf, proof);
    }

    function test_attestFail_unsampledLeaf_reverts() public {
        AttestationRef memory ref = _ref(1, 0);
        (address verifier,) = ver.assignedVerifier(ref);
        uint256 other = (sampleSegment(ref, 0) + 1) % 8;
        (LeafData memory leaf, bytes32[] memory proof) = leafAt(runId, 0, solvers[1], other);
        vm.deal(verifier, 1 ether);
        vm.prank(verifier);
        vm.expectRevert(Verification.InvalidLeafProof.selector);
        ver.attestFail{value: 1 ether}(ref, c1, 0, leaf, proof);
    }

    function test_attestFail_tamperedLeaf_reverts() public {
        AttestationRef memory ref = _ref(1, 0);
        (address verifier,) = ver.assignedVerifier(ref);
        (LeafData memory leaf, bytes32[] memory proof) = leafAt(runId, 0, solvers[1], sampleSegment(ref, 0));
        leaf.endHash = keccak256("not what was committed");
        vm.deal(verifier, 1 ether);
        vm.prank(verifier);
        vm.expectRevert(Verification.InvalidLeafProof.selector);
        ver.attestFail{value: 1 ether}(ref, c1, 0, leaf, proof);
    }

    function testFuzz_attestFail_anySampleIndex_succeeds(uint16 sampleIndex, uint8 slot) public {
        sampleIndex = uint16(bound(sampleIndex, 0, 1));
        slot = uint8(bound(slot, 0, 2));
        AttestationRef memory ref = _ref(0, slot);
        attestFailAs(ref, c0, sampleIndex);
        (,,, uint16 recorded) = ver.attestationOf(ref);
        assertEq(recorded, sampleIndex);
    }

    // ------------------------------------------------------------------ finalize

    function test_finalize_pass_succeeds() public {
        AttestationRef memory ref = _ref(0, 0);
        address verifier = attestPassAs(ref, c0);
        warpToClaim(runId);
        vm.expectEmit(address(ver));
        emit Verification.AttestationFinalized(runId, 0, solvers[0], 0, verifier, 1 ether);
        ver.finalize(ref);
        assertEq(ver.credits(verifier), 1 ether);
        uint256 before = verifier.balance;
        vm.prank(verifier);
        ver.withdraw();
        assertEq(verifier.balance - before, 1 ether);
        assertEq(address(ver).balance, 0);
    }

    function test_finalize_fail_slashesSolver_succeeds() public {
        AttestationRef memory ref = _ref(1, 0);
        address verifier = attestFailAs(ref, c1, 0);
        warpToClaim(runId);
        uint256 poolBefore = shares.pool(runId);
        vm.expectEmit(address(ver));
        emit Verification.SolverFaultProven(
            runId,
            0,
            solvers[1],
            keccak256(abi.encode(Constants.FAULT_SOLVER, runId, uint64(0), solvers[1])),
            10 ether,
            5 ether,
            5 ether
        );
        ver.finalize(ref);
        assertEq(sm.bondedOf(solvers[1], Constants.ROLE_SOLVER), 0, "solver lost its min stake");
        assertEq(ver.credits(verifier), 1 ether, "bond back");
        assertEq(address(faults).balance, 5 ether, "half of the slash for the fault's provers");
        assertEq(shares.pool(runId) - poolBefore, 5 ether, "the other half to the pool");
        bytes32 key = keccak256(abi.encode(Constants.FAULT_SOLVER, runId, uint64(0), solvers[1]));
        assertTrue(sm.faultSlashed(key));
    }

    function test_finalize_twoFails_slashOnce_succeeds() public {
        attestFailAs(_ref(1, 0), c1, 0);
        attestFailAs(_ref(1, 1), c1, 1);
        warpToClaim(runId);
        ver.finalize(_ref(1, 0));
        ver.finalize(_ref(1, 1));
        assertEq(
            sm.slashedAmount(keccak256(abi.encode(Constants.FAULT_SOLVER, runId, uint64(0), solvers[1]))), 10 ether
        );
        assertEq(address(sm).balance, 10 ether + 4 * 5 ether, "solver0's stake and the verifiers' stakes remain");
    }

    function test_finalize_duringChallengeWindow_reverts() public {
        attestPassAs(_ref(0, 0), c0);
        uint256 challengeEnd = reg.roundTimes(runId).challengeEnd;
        vm.expectRevert(abi.encodeWithSelector(Verification.ChallengeWindowOpen.selector, challengeEnd));
        ver.finalize(_ref(0, 0));
    }

    function test_finalize_notAttested_reverts() public {
        warpToClaim(runId);
        vm.expectRevert(abi.encodeWithSelector(Verification.WrongState.selector, Verification.AttestationState.None));
        ver.finalize(_ref(0, 0));
    }

    function test_finalize_twice_reverts() public {
        attestPassAs(_ref(0, 0), c0);
        warpToClaim(runId);
        ver.finalize(_ref(0, 0));
        vm.expectRevert(
            abi.encodeWithSelector(Verification.WrongState.selector, Verification.AttestationState.Finalized)
        );
        ver.finalize(_ref(0, 0));
    }

    function test_finalize_underDispute_reverts() public {
        registerJurors(8);
        attestPassAs(_ref(0, 0), c0);
        challengeAs(outsider, _ref(0, 0), c0, 0);
        (Verification.AttestationState state,,,) = ver.attestationOf(_ref(0, 0));
        assertEq(uint8(state), uint8(Verification.AttestationState.Challenged));
        vm.warp(reg.roundTimes(runId).challengeEnd);
        vm.expectRevert(
            abi.encodeWithSelector(Verification.WrongState.selector, Verification.AttestationState.Challenged)
        );
        ver.finalize(_ref(0, 0));
    }

    function test_finalize_seedNotDrawn_reverts() public {
        AttestationRef memory r = _ref(0, 0);
        r.round = 3;
        vm.expectRevert(abi.encodeWithSelector(Verification.SeedNotDrawn.selector, runId, 3));
        ver.finalize(r);
    }

    // ------------------------------------------------------------------ shares

    function _settleRound() internal {
        warpToClaim(runId);
        claimAndSettle(runId, keccak256("theta1"));
    }

    function test_claimSolverShares_byTokens_succeeds() public {
        attestMajorityAs(runId, solvers[0], c0);
        attestMajorityAs(runId, solvers[1], c1);
        _settleRound();
        ver.claimSolverShares(runId, 0, solvers[0]);
        ver.claimSolverShares(runId, 0, solvers[1]);
        assertEq(tokenOf(runId).balanceOf(solvers[0]), 300e18, "equal tokens, equal halves of 60%");
        assertEq(tokenOf(runId).balanceOf(solvers[1]), 300e18);
        assertEq(shares.mintedInRound(runId, 0), 600e18);
    }

    function test_claimSolverShares_twice_reverts() public {
        attestMajorityAs(runId, solvers[0], c0);
        _settleRound();
        ver.claimSolverShares(runId, 0, solvers[0]);
        vm.expectRevert(Verification.AlreadyMinted.selector);
        ver.claimSolverShares(runId, 0, solvers[0]);
    }

    function test_claimSolverShares_beforeSettle_reverts() public {
        attestPassAs(_ref(0, 0), c0);
        vm.expectRevert(abi.encodeWithSelector(Verification.NotSettled.selector, runId, 0));
        ver.claimSolverShares(runId, 0, solvers[0]);
    }

    function test_claimSolverShares_notAccepted_reverts() public {
        attestPassAs(_ref(0, 0), c0);
        attestPassAs(_ref(0, 1), c0);
        attestFailAs(_ref(0, 2), c0, 0); // a standing fail blocks even a majority of passes
        _settleRound();
        vm.expectRevert(abi.encodeWithSelector(Verification.NotAccepted.selector, runId, 0, solvers[0]));
        ver.claimSolverShares(runId, 0, solvers[0]);
    }

    function test_claimVerifierShares_perStandingCheck_succeeds() public {
        address v0 = attestPassAs(_ref(0, 0), c0);
        address v1 = attestPassAs(_ref(0, 1), c0);
        attestPassAs(_ref(1, 0), c1);
        warpToClaim(runId);
        ver.finalize(_ref(0, 0));
        ver.finalize(_ref(0, 1));
        claimAndSettle(runId, keccak256("theta1"));
        ver.claimVerifierShares(_ref(0, 0));
        ver.claimVerifierShares(_ref(0, 1));
        // one verifier may hold both seats (independent draws): count its balance once
        uint256 minted = tokenOf(runId).balanceOf(v0) + (v1 == v0 ? 0 : tokenOf(runId).balanceOf(v1));
        assertEq(minted, 2 * uint256(300e18) / 3);
        (,, bool sharesMinted,) = ver.attestationOf(_ref(0, 0));
        assertTrue(sharesMinted);
        vm.expectRevert(Verification.AlreadyMinted.selector);
        ver.claimVerifierShares(_ref(0, 0));
    }

    function test_claimVerifierShares_notFinalized_reverts() public {
        attestPassAs(_ref(0, 0), c0);
        _settleRound();
        vm.expectRevert(
            abi.encodeWithSelector(Verification.WrongState.selector, Verification.AttestationState.Attested)
        );
        ver.claimVerifierShares(_ref(0, 0));
    }

    function test_claimVerifierShares_beforeSettle_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(Verification.NotSettled.selector, runId, 0));
        ver.claimVerifierShares(_ref(0, 0));
    }

    // ------------------------------------------------------------------ status reuse across rounds

    function test_attestPass_nextRoundArchivesPending_succeeds() public {
        attestPassAs(_ref(0, 0), c0);
        attestPassAs(_ref(0, 1), c0);
        warpToClaim(runId);
        claimAndSettle(runId, keccak256("theta1"));
        // round 1: the round-0 attestations are neither finalized nor rewarded yet
        CommitmentData memory next = commitAs(runId, solvers[0]);
        warpToAttest(runId);
        drawSeed(runId);
        vm.expectEmit(address(ver));
        emit Verification.StatusArchived(runId, 0, solvers[0]);
        attestPassAs(refOf(runId, solvers[0], 0), next);
        // round-0 business still works from the archive
        for (uint8 slot; slot < 2; ++slot) {
            AttestationRef memory old = AttestationRef(runId, 0, solvers[0], slot);
            address v = ver.attesterOf(old);
            ver.finalize(old);
            ver.claimVerifierShares(old);
            assertEq(ver.credits(v) >= 1 ether, true);
        }
        ver.claimSolverShares(runId, 0, solvers[0]);
        assertEq(shares.mintedInRound(runId, 0), 600e18 + 300e18, "whole solver and verifier shares of round 0");
        assertEq(ver.commitmentStatusOf(runId, 1, solvers[0]).passes, 1);
    }

    function test_attestPass_nextRoundNothingPending_succeeds() public {
        attestPassAs(_ref(0, 0), c0);
        attestPassAs(_ref(0, 1), c0);
        warpToClaim(runId);
        ver.finalize(_ref(0, 0));
        ver.finalize(_ref(0, 1));
        claimAndSettle(runId, keccak256("theta1"));
        ver.claimVerifierShares(_ref(0, 0));
        ver.claimVerifierShares(_ref(0, 1));
        ver.claimSolverShares(runId, 0, solvers[0]);
        CommitmentData memory next = commitAs(runId, solvers[0]);
        warpToAttest(runId);
        drawSeed(runId);
        vm.recordLogs();
        attestPassAs(refOf(runId, solvers[0], 0), next);
        assertEq(vm.getRecordedLogs().length, 1, "only PassAttested: nothing to archive");
        assertEq(ver.commitmentStatusOf(runId, 0, solvers[0]).passes, 0, "round 0 left nothing behind");
    }

    // ------------------------------------------------------------------ hooks and plumbing

    function test_onSolverJoined_notRegistry_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(Verification.NotRunRegistry.selector, address(this)));
        ver.onSolverJoined(runId, outsider);
    }

    function test_onResolved_notDisputes_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(Verification.NotDisputes.selector, address(this)));
        ver.onResolved(_ref(0, 0), IVerification.Resolution.Upheld);
    }

    function test_onResolved_notAttested_reverts() public {
        vm.prank(address(dis));
        vm.expectRevert(abi.encodeWithSelector(Verification.WrongState.selector, Verification.AttestationState.None));
        ver.onResolved(_ref(0, 0), IVerification.Resolution.Upheld);
    }

    function test_checkChallenge_afterWindow_reverts() public {
        attestPassAs(_ref(0, 0), c0);
        uint256 challengeEnd = reg.roundTimes(runId).challengeEnd;
        vm.warp(challengeEnd);
        (LeafData memory leaf, bytes32[] memory proof) = leafAt(runId, 0, solvers[0], sampleSegment(_ref(0, 0), 0));
        vm.expectRevert(abi.encodeWithSelector(Verification.ChallengeWindowClosed.selector, challengeEnd));
        ver.checkChallenge(_ref(0, 0), c0.root, 0, leaf, proof);
    }

    function test_checkChallenge_failOtherSample_reverts() public {
        attestFailAs(_ref(0, 0), c0, 1);
        (LeafData memory leaf, bytes32[] memory proof) = leafAt(runId, 0, solvers[0], sampleSegment(_ref(0, 0), 0));
        vm.expectRevert(abi.encodeWithSelector(Verification.BadSampleIndex.selector, 0, 1));
        ver.checkChallenge(_ref(0, 0), c0.root, 0, leaf, proof);
    }

    function test_checkChallenge_passBadSample_reverts() public {
        attestPassAs(_ref(0, 0), c0);
        (LeafData memory leaf, bytes32[] memory proof) = leafAt(runId, 0, solvers[0], 0);
        vm.expectRevert(abi.encodeWithSelector(Verification.BadSampleIndex.selector, 9, 2));
        ver.checkChallenge(_ref(0, 0), c0.root, 9, leaf, proof);
    }

    function test_receive_fromOutsider_reverts() public {
        vm.prank(outsider);
        (bool ok, bytes memory data) = address(ver).call{value: 1 ether}("");
        assertFalse(ok);
        assertEq(data, abi.encodeWithSelector(Verification.UnexpectedEther.selector, outsider));
    }

    function test_withdraw_nothing_reverts() public {
        vm.expectRevert(PullPayments.NothingToWithdraw.selector);
        ver.withdraw();
    }

    function test_withdraw_receiverRejects_reverts() public {
        Rejector r = new Rejector();
        stdstore.target(address(ver)).sig("credits(address)").with_key(address(r)).checked_write(1 ether);
        vm.deal(address(ver), 1 ether);
        vm.expectRevert(abi.encodeWithSelector(PullPayments.TransferFailed.selector, address(r), 1 ether));
        r.call(address(ver), abi.encodeCall(PullPayments.withdraw, ()));
    }
}
