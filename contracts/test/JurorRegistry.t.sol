// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Fixture} from "./utils/Fixture.sol";
import {TestBLS} from "./utils/TestBLS.sol";
import {Constants} from "../src/Constants.sol";
import {JurorRegistry} from "../src/JurorRegistry.sol";
import {StakeManager} from "../src/StakeManager.sol";
import {BLS} from "../src/libraries/BLS.sol";
import {Sampling} from "../src/libraries/Sampling.sol";

/// @notice The juror registry: address-bound keys, an active-only list with its history, the exit delay.
contract JurorRegistryTest is Fixture {
    function setUp() public override {
        super.setUp();
        registerJurors(6);
    }

    function _newJuror(string memory name, uint256 sk) internal returns (address who, bytes memory pk) {
        who = makeAddr(name);
        pk = TestBLS.publicKey(sk);
        stakeAs(who, Constants.ROLE_VERIFIER, Constants.JUROR_MIN_STAKE);
    }

    function _indexOf(address juror) internal view returns (uint256) {
        (uint32 indexPlusOne,,) = jurors.jurors(juror);
        return uint256(indexPlusOne) - 1;
    }

    function _reserved(address who) internal view returns (uint256 reserved) {
        (,,, reserved) = sm.stakeOf(who, Constants.ROLE_VERIFIER);
    }

    // ------------------------------------------------------------------ registration

    function test_registerJuror_validPop_succeeds() public {
        (address who, bytes memory pk) = _newJuror("newcomer", 777);
        vm.expectEmit(address(jurors));
        emit JurorRegistry.JurorRegistered(who, 6, pk);
        bytes memory pop = TestBLS.proofOfPossession(777, who);
        vm.prank(who);
        jurors.registerJuror(pk, pop);
        assertEq(jurors.size(), 7);
        assertEq(_indexOf(who), 6);
        assertEq(jurors.keyHashOf(who), keccak256(pk));
        assertTrue(jurors.keyTaken(keccak256(pk)));
        assertEq(_reserved(who), Constants.JUROR_MIN_STAKE, "the juror stake is reserved while registered");
    }

    function test_registerJuror_popOfAnotherAccount_reverts() public {
        // Finding 4 of issue 16: a copier that sees an honest juror's registration in the mempool and front-runs it
        // with the same key and proof gets nothing: the proof signs the honest juror's address.
        (address honest, bytes memory pk) = _newJuror("honest", 4242);
        (address copier,) = _newJuror("copier", 1);
        bytes memory pop = TestBLS.proofOfPossession(4242, honest);
        vm.prank(copier);
        vm.expectRevert(JurorRegistry.InvalidProofOfPossession.selector);
        jurors.registerJuror(pk, pop);
        vm.prank(honest);
        jurors.registerJuror(pk, pop);
        assertEq(jurors.keyHashOf(honest), keccak256(pk));
    }

    function test_registerJuror_keyAlreadyRegistered_reverts() public {
        // Finding 4 of issue 16: even with a valid proof for its own address (it holds the secret key), a second
        // account cannot register a key that is already registered: one key, one juror, one signer.
        (address twin,) = _newJuror("twin", 1);
        bytes memory pop = TestBLS.proofOfPossession(jurorSks[0], twin);
        vm.prank(twin);
        vm.expectRevert(abi.encodeWithSelector(JurorRegistry.KeyTaken.selector, keccak256(jurorPks[0])));
        jurors.registerJuror(jurorPks[0], pop);
    }

    function test_registerJuror_foreignKeyPop_reverts() public {
        (address who, bytes memory pk) = _newJuror("newcomer", 777);
        bytes memory pop = TestBLS.proofOfPossession(778, who);
        vm.prank(who);
        vm.expectRevert(JurorRegistry.InvalidProofOfPossession.selector);
        jurors.registerJuror(pk, pop);
    }

    function test_registerJuror_infinityKey_reverts() public {
        (address who,) = _newJuror("newcomer", 777);
        bytes memory pop = TestBLS.proofOfPossession(778, who);
        vm.prank(who);
        vm.expectRevert(BLS.BlsPointAtInfinity.selector);
        jurors.registerJuror(new bytes(128), pop);
    }

    function test_registerJuror_lowStake_reverts() public {
        bytes memory pk = TestBLS.publicKey(777);
        bytes memory pop = TestBLS.proofOfPossession(777, outsider);
        vm.prank(outsider);
        vm.expectRevert(
            abi.encodeWithSelector(StakeManager.InsufficientFreeStake.selector, 0, 0, Constants.JUROR_MIN_STAKE)
        );
        jurors.registerJuror(pk, pop);
    }

    /// Finding 5 of issue 16: the stake that backs a run's verifier registration cannot also back a juror.
    function test_registerJuror_stakeReservedByARun_reverts() public {
        uint256 runId = createRun(defaultConfig());
        registerVerifiers(runId, 1); // reserves all 5 ether of verifiers[0]
        bytes memory pk = TestBLS.publicKey(777);
        bytes memory pop = TestBLS.proofOfPossession(777, verifiers[0]);
        vm.prank(verifiers[0]);
        vm.expectRevert(
            abi.encodeWithSelector(
                StakeManager.InsufficientFreeStake.selector, 5 ether, 5 ether, Constants.JUROR_MIN_STAKE
            )
        );
        jurors.registerJuror(pk, pop);
    }

    function test_registerJuror_twice_reverts() public {
        vm.prank(jurorAddrs[0]);
        vm.expectRevert(abi.encodeWithSelector(JurorRegistry.AlreadyRegistered.selector, jurorAddrs[0]));
        jurors.registerJuror(jurorPks[0], "");
    }

    // ------------------------------------------------------------------ leaving

    function test_deregisterJuror_swapsAndPops_succeeds() public {
        vm.roll(block.number + 1);
        uint256 exitAt = block.timestamp + Constants.JUROR_EXIT_DELAY;
        vm.expectEmit(address(jurors));
        emit JurorRegistry.JurorDeregistered(jurorAddrs[1], 1, jurorAddrs[5], exitAt);
        vm.prank(jurorAddrs[1]);
        jurors.deregisterJuror();
        assertEq(jurors.size(), 5, "no dead entry is left behind");
        assertEq(_indexOf(jurorAddrs[5]), 1, "the last entry moved into the hole");
        assertEq(jurors.jurorAt(1, block.number), jurorAddrs[5]);
        (uint32 indexPlusOne, uint40 exit, bool reserved) = jurors.jurors(jurorAddrs[1]);
        assertEq(indexPlusOne, 0);
        assertEq(exit, exitAt);
        assertTrue(reserved, "the stake reservation outlives the exit delay");
        vm.prank(jurorAddrs[1]);
        vm.expectRevert(abi.encodeWithSelector(JurorRegistry.NotRegistered.selector, jurorAddrs[1]));
        jurors.deregisterJuror();
    }

    function test_deregisterJuror_last_succeeds() public {
        vm.expectEmit(address(jurors));
        emit JurorRegistry.JurorDeregistered(jurorAddrs[5], 5, address(0), block.timestamp + Constants.JUROR_EXIT_DELAY);
        vm.prank(jurorAddrs[5]);
        jurors.deregisterJuror();
        assertEq(jurors.size(), 5);
    }

    function test_releaseJuror_beforeExitDelay_reverts() public {
        vm.prank(jurorAddrs[2]);
        jurors.deregisterJuror();
        uint256 exitAt = block.timestamp + Constants.JUROR_EXIT_DELAY;
        vm.warp(exitAt - 1);
        vm.prank(jurorAddrs[2]);
        vm.expectRevert(abi.encodeWithSelector(JurorRegistry.ExitNotReady.selector, exitAt));
        jurors.releaseJuror();
    }

    function test_releaseJuror_afterExitDelay_succeeds() public {
        vm.prank(jurorAddrs[2]);
        jurors.deregisterJuror();
        vm.warp(block.timestamp + Constants.JUROR_EXIT_DELAY);
        vm.expectEmit(address(jurors));
        emit JurorRegistry.JurorReleased(jurorAddrs[2]);
        vm.prank(jurorAddrs[2]);
        jurors.releaseJuror();
        assertEq(_reserved(jurorAddrs[2]), 0);
        vm.prank(jurorAddrs[2]);
        sm.requestUnbond(Constants.ROLE_VERIFIER, Constants.JUROR_MIN_STAKE); // the stake may leave now
        vm.prank(jurorAddrs[2]);
        vm.expectRevert(abi.encodeWithSelector(JurorRegistry.NotExiting.selector, jurorAddrs[2]));
        jurors.releaseJuror();
    }

    function test_releaseJuror_active_reverts() public {
        vm.prank(jurorAddrs[0]);
        vm.expectRevert(abi.encodeWithSelector(JurorRegistry.NotExiting.selector, jurorAddrs[0]));
        jurors.releaseJuror();
    }

    function test_registerJuror_returnDuringExit_keepsOneReservation_succeeds() public {
        vm.prank(jurorAddrs[3]);
        jurors.deregisterJuror();
        vm.prank(jurorAddrs[3]);
        jurors.registerJuror(jurorPks[3], "");
        assertEq(_reserved(jurorAddrs[3]), Constants.JUROR_MIN_STAKE, "no second reservation");
        assertEq(_indexOf(jurorAddrs[3]), 5, "back at the end of the list");
    }

    function test_registerJuror_returnAfterRelease_sameKeyOnly_succeeds() public {
        vm.prank(jurorAddrs[3]);
        jurors.deregisterJuror();
        vm.warp(block.timestamp + Constants.JUROR_EXIT_DELAY);
        vm.prank(jurorAddrs[3]);
        jurors.releaseJuror();
        vm.prank(jurorAddrs[3]);
        vm.expectRevert(abi.encodeWithSelector(JurorRegistry.KeyMismatch.selector, jurorAddrs[3]));
        jurors.registerJuror(jurorPks[4], "");
        vm.prank(jurorAddrs[3]);
        jurors.registerJuror(jurorPks[3], "");
        assertEq(_reserved(jurorAddrs[3]), Constants.JUROR_MIN_STAKE);
        assertEq(jurors.size(), 6);
    }

    // ------------------------------------------------------------------ history and pools

    function test_sizeAt_jurorAt_readPastBlocks_succeeds() public {
        uint256 before = block.number;
        vm.roll(before + 5);
        vm.prank(jurorAddrs[0]);
        jurors.deregisterJuror(); // juror 5 moves to index 0
        vm.prank(jurorAddrs[1]);
        jurors.deregisterJuror(); // same block: juror 4 moves to index 1 (one checkpoint per index and block)
        (address late, bytes memory pk) = _newJuror("late", 999);
        bytes memory pop = TestBLS.proofOfPossession(999, late);
        vm.prank(late);
        jurors.registerJuror(pk, pop);
        assertEq(jurors.sizeAt(before), 6);
        assertEq(jurors.sizeAt(before + 4), 6);
        assertEq(jurors.sizeAt(before + 5), 5);
        for (uint256 i; i < 6; ++i) {
            assertEq(jurors.jurorAt(i, before), jurorAddrs[i], "the old registry, entry by entry");
        }
        assertEq(jurors.jurorAt(0, before + 5), jurorAddrs[5]);
        assertEq(jurors.jurorAt(1, before + 5), jurorAddrs[4]);
        assertEq(jurors.jurorAt(4, before + 5), late);
        assertEq(jurors.sizeAt(0), 0, "before anyone registered");
        assertEq(jurors.jurorAt(0, 0), address(0));
    }

    function test_drawPool_smallRegistry_everyoneInOrder_succeeds() public view {
        (address[] memory accounts, bytes32[] memory keyHashes) = jurors.drawPool(keccak256("seed"), 8, block.number);
        assertEq(accounts.length, 6);
        for (uint256 i; i < 6; ++i) {
            assertEq(accounts[i], jurorAddrs[i]);
            assertEq(keyHashes[i], keccak256(jurorPks[i]));
        }
    }

    function test_drawPool_largeRegistry_independentDraws_succeeds() public {
        registerJurors(20);
        bytes32 seed = keccak256("seed");
        (address[] memory accounts,) = jurors.drawPool(seed, 8, block.number);
        assertEq(accounts.length, 8);
        for (uint256 s; s < 8; ++s) {
            assertEq(accounts[s], jurorAddrs[Sampling.sample(seed, s, 26)], "seat s = sample(seed, s, n)");
        }
    }

    function testFuzz_seatOf_laterChangesMoveNoSeat_succeeds(bytes32 seed, uint8 joins, uint8 leaves) public {
        registerJurors(14); // 20 jurors
        uint256 snapshot = block.number;
        address[] memory before = new address[](24);
        for (uint256 s; s < 24; ++s) {
            (before[s],) = jurors.seatOf(seed, s, 24, snapshot);
        }
        vm.roll(snapshot + 1);
        registerJurors(bound(joins, 0, 12));
        uint256 n = bound(leaves, 0, 10);
        for (uint256 i; i < n; ++i) {
            vm.prank(jurorAddrs[i * 2]);
            jurors.deregisterJuror();
        }
        for (uint256 s; s < 24; ++s) {
            (address now_,) = jurors.seatOf(seed, s, 24, snapshot);
            assertEq(now_, before[s], "a seat of the snapshot moved");
        }
    }
}
