// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Fixture} from "./utils/Fixture.sol";
import {Rejector} from "./utils/Rejector.sol";
import {Constants} from "../src/Constants.sol";
import {StakeManager} from "../src/StakeManager.sol";

contract StakeManagerTest is Fixture {
    address internal alice = makeAddr("alice");
    uint8 internal constant SOLVER = Constants.ROLE_SOLVER;
    uint8 internal constant VERIFIER = Constants.ROLE_VERIFIER;

    function test_constructor_zeroDelay_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(StakeManager.InvalidDelay.selector, 0));
        new StakeManager(0, address(1), address(2), address(3), address(4), address(5), address(6));
    }

    function test_deposit_bothRoles_succeeds() public {
        vm.deal(alice, 10 ether);
        vm.expectEmit(address(sm));
        emit StakeManager.StakeDeposited(alice, SOLVER, 3 ether, 3 ether);
        vm.prank(alice);
        sm.deposit{value: 3 ether}(SOLVER);
        vm.prank(alice);
        sm.deposit{value: 2 ether}(VERIFIER);
        assertEq(sm.bondedOf(alice, SOLVER), 3 ether);
        assertEq(sm.bondedOf(alice, VERIFIER), 2 ether);
        assertEq(address(sm).balance, 5 ether);
    }

    function test_deposit_invalidRole_reverts() public {
        vm.deal(alice, 1 ether);
        vm.prank(alice);
        vm.expectRevert(abi.encodeWithSelector(StakeManager.InvalidRole.selector, 3));
        sm.deposit{value: 1 ether}(3);
    }

    function test_deposit_zero_reverts() public {
        vm.prank(alice);
        vm.expectRevert(StakeManager.ZeroAmount.selector);
        sm.deposit(SOLVER);
    }

    function test_requestUnbond_thenWithdrawAfterDelay_succeeds() public {
        stakeAs(alice, SOLVER, 5 ether);
        vm.prank(alice);
        vm.expectEmit(address(sm));
        emit StakeManager.UnbondingRequested(alice, SOLVER, 2 ether, 2 ether, block.timestamp + UNBONDING_DELAY);
        sm.requestUnbond(SOLVER, 2 ether);
        (uint256 bonded, uint256 unbonding, uint256 releaseTime, uint256 reserved) = sm.stakeOf(alice, SOLVER);
        assertEq(bonded, 3 ether);
        assertEq(unbonding, 2 ether);
        assertEq(releaseTime, block.timestamp + UNBONDING_DELAY);
        assertEq(reserved, 0);
        vm.warp(releaseTime);
        uint256 before = alice.balance;
        vm.prank(alice);
        sm.withdraw(SOLVER);
        assertEq(alice.balance - before, 2 ether);
        assertEq(address(sm).balance, 3 ether);
    }

    function test_requestUnbond_zero_reverts() public {
        vm.prank(alice);
        vm.expectRevert(StakeManager.ZeroAmount.selector);
        sm.requestUnbond(SOLVER, 0);
    }

    function test_requestUnbond_moreThanBonded_reverts() public {
        stakeAs(alice, SOLVER, 1 ether);
        vm.prank(alice);
        vm.expectRevert(abi.encodeWithSelector(StakeManager.InsufficientBonded.selector, 1 ether, 2 ether));
        sm.requestUnbond(SOLVER, 2 ether);
    }

    function test_requestUnbond_reservedStake_reverts() public {
        stakeAs(alice, VERIFIER, 3 ether);
        vm.prank(address(ver));
        sm.reserve(alice, VERIFIER, 2 ether);
        vm.prank(alice);
        sm.requestUnbond(VERIFIER, 1 ether); // the free part may leave
        vm.prank(alice);
        vm.expectRevert(abi.encodeWithSelector(StakeManager.InsufficientFreeStake.selector, 2 ether, 2 ether, 1));
        sm.requestUnbond(VERIFIER, 1);
    }

    function test_requestUnbond_invalidRole_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(StakeManager.InvalidRole.selector, 0));
        sm.requestUnbond(0, 1);
    }

    function test_requestUnbond_restartsClock_succeeds() public {
        stakeAs(alice, SOLVER, 4 ether);
        vm.prank(alice);
        sm.requestUnbond(SOLVER, 1 ether);
        vm.warp(block.timestamp + UNBONDING_DELAY - 1);
        vm.prank(alice);
        sm.requestUnbond(SOLVER, 1 ether);
        vm.warp(block.timestamp + 1);
        vm.prank(alice);
        vm.expectRevert(
            abi.encodeWithSelector(
                StakeManager.UnbondingNotReady.selector, block.timestamp - 1 + UNBONDING_DELAY, block.timestamp
            )
        );
        sm.withdraw(SOLVER);
    }

    function test_withdraw_beforeDelay_reverts() public {
        stakeAs(alice, SOLVER, 1 ether);
        vm.prank(alice);
        sm.requestUnbond(SOLVER, 1 ether);
        uint256 release = block.timestamp + UNBONDING_DELAY;
        vm.warp(release - 1);
        vm.prank(alice);
        vm.expectRevert(abi.encodeWithSelector(StakeManager.UnbondingNotReady.selector, release, release - 1));
        sm.withdraw(SOLVER);
    }

    function test_withdraw_nothing_reverts() public {
        stakeAs(alice, SOLVER, 1 ether);
        vm.prank(alice);
        vm.expectRevert(StakeManager.NothingToWithdraw.selector);
        sm.withdraw(SOLVER);
    }

    function test_withdraw_invalidRole_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(StakeManager.InvalidRole.selector, 9));
        sm.withdraw(9);
    }

    function test_withdraw_receiverRejects_reverts() public {
        Rejector r = new Rejector();
        vm.deal(address(this), 1 ether);
        r.call{value: 1 ether}(address(sm), abi.encodeCall(StakeManager.deposit, (SOLVER)));
        r.call(address(sm), abi.encodeCall(StakeManager.requestUnbond, (SOLVER, 1 ether)));
        vm.warp(block.timestamp + UNBONDING_DELAY);
        vm.expectRevert(abi.encodeWithSelector(StakeManager.TransferFailed.selector, address(r), 1 ether));
        r.call(address(sm), abi.encodeCall(StakeManager.withdraw, (SOLVER)));
    }

    function test_reserve_thenRelease_succeeds() public {
        stakeAs(alice, VERIFIER, 5 ether);
        vm.startPrank(address(dis));
        vm.expectEmit(address(sm));
        emit StakeManager.StakeReserved(alice, VERIFIER, address(dis), 2 ether, 2 ether);
        sm.reserve(alice, VERIFIER, 2 ether);
        sm.reserve(alice, VERIFIER, 3 ether);
        vm.expectEmit(address(sm));
        emit StakeManager.StakeReleased(alice, VERIFIER, address(dis), 2 ether, 3 ether);
        sm.release(alice, VERIFIER, 2 ether);
        vm.stopPrank();
        (,,, uint256 reserved) = sm.stakeOf(alice, VERIFIER);
        assertEq(reserved, 3 ether);
        assertTrue(sm.isCovered(alice, VERIFIER));
    }

    /// Finding 5 of issue 16: one stake backed obligations in many runs. A reservation needs free stake now.
    function test_reserve_moreThanFree_reverts() public {
        stakeAs(alice, SOLVER, 10 ether);
        vm.prank(address(reg));
        sm.reserve(alice, SOLVER, 10 ether);
        vm.prank(address(reg));
        vm.expectRevert(abi.encodeWithSelector(StakeManager.InsufficientFreeStake.selector, 10 ether, 10 ether, 1));
        sm.reserve(alice, SOLVER, 1);
    }

    function test_reserve_notProtocol_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(StakeManager.NotProtocol.selector, address(this)));
        sm.reserve(alice, VERIFIER, 1);
    }

    function test_reserve_invalidRole_reverts() public {
        vm.prank(address(ver));
        vm.expectRevert(abi.encodeWithSelector(StakeManager.InvalidRole.selector, 7));
        sm.reserve(alice, 7, 1);
    }

    function test_release_moreThanReserved_reverts() public {
        vm.prank(address(ver));
        vm.expectRevert(abi.encodeWithSelector(StakeManager.NotReserved.selector, 0, 1));
        sm.release(alice, VERIFIER, 1);
    }

    function test_release_notProtocol_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(StakeManager.NotProtocol.selector, address(this)));
        sm.release(alice, VERIFIER, 1);
    }

    function test_isCovered_afterSlash_succeeds() public {
        stakeAs(alice, SOLVER, 20 ether);
        vm.startPrank(address(reg));
        sm.reserve(alice, SOLVER, 10 ether);
        sm.reserve(alice, SOLVER, 10 ether);
        sm.slash(alice, SOLVER, 10 ether, keccak256("fault"));
        vm.stopPrank();
        assertFalse(sm.isCovered(alice, SOLVER), "a slash leaves the other obligation unbacked");
        vm.prank(address(reg));
        vm.expectRevert(abi.encodeWithSelector(StakeManager.InsufficientFreeStake.selector, 10 ether, 20 ether, 1));
        sm.reserve(alice, SOLVER, 1);
        stakeAs(alice, SOLVER, 10 ether);
        assertTrue(sm.isCovered(alice, SOLVER), "topping up covers it again");
    }

    function test_slash_bondedThenUnbonding_succeeds() public {
        stakeAs(alice, SOLVER, 5 ether);
        vm.prank(alice);
        sm.requestUnbond(SOLVER, 3 ether);
        bytes32 key = keccak256("fault");
        uint256 before = address(dis).balance;
        vm.expectEmit(address(sm));
        emit StakeManager.StakeSlashed(alice, SOLVER, key, 4 ether, 4 ether, address(dis), 0, 1 ether);
        vm.prank(address(dis));
        uint256 taken = sm.slash(alice, SOLVER, 4 ether, key);
        assertEq(taken, 4 ether);
        assertEq(address(dis).balance - before, 4 ether, "slashed ETH went to the caller");
        assertTrue(sm.faultSlashed(key));
        assertEq(sm.slashedAmount(key), 4 ether);
    }

    function test_slash_cappedAtAvailable_succeeds() public {
        stakeAs(alice, SOLVER, 1 ether);
        vm.prank(address(dis));
        uint256 taken = sm.slash(alice, SOLVER, 10 ether, keccak256("fault"));
        assertEq(taken, 1 ether);
        assertEq(sm.bondedOf(alice, SOLVER), 0);
    }

    function test_slash_sameFaultTwice_succeeds() public {
        stakeAs(alice, SOLVER, 5 ether);
        vm.startPrank(address(dis));
        assertEq(sm.slash(alice, SOLVER, 1 ether, keccak256("fault")), 1 ether);
        assertEq(sm.slash(alice, SOLVER, 1 ether, keccak256("fault")), 0, "second slash of a fault takes nothing");
        vm.stopPrank();
        assertEq(sm.bondedOf(alice, SOLVER), 4 ether);
    }

    function test_slash_unbondingStakeAfterWithdrawWindow_succeeds() public {
        // unbonding stake stays slashable until it is actually withdrawn
        stakeAs(alice, SOLVER, 2 ether);
        vm.prank(alice);
        sm.requestUnbond(SOLVER, 2 ether);
        vm.warp(block.timestamp + UNBONDING_DELAY + 1);
        vm.prank(address(ver));
        assertEq(sm.slash(alice, SOLVER, 2 ether, keccak256("late")), 2 ether);
        vm.prank(alice);
        vm.expectRevert(StakeManager.NothingToWithdraw.selector);
        sm.withdraw(SOLVER);
    }

    function test_slash_notProtocol_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(StakeManager.NotProtocol.selector, address(this)));
        sm.slash(alice, SOLVER, 1, bytes32(0));
    }

    function test_slash_invalidRole_reverts() public {
        vm.prank(address(dis));
        vm.expectRevert(abi.encodeWithSelector(StakeManager.InvalidRole.selector, 0));
        sm.slash(alice, 0, 1, bytes32(0));
    }

    function test_stakeOf_noUnbonding_succeeds() public {
        stakeAs(alice, SOLVER, 1 ether);
        (uint256 bonded, uint256 unbonding, uint256 releaseTime,) = sm.stakeOf(alice, SOLVER);
        assertEq(bonded, 1 ether);
        assertEq(unbonding, 0);
        assertEq(releaseTime, 0);
    }

    function testFuzz_slash_neverAboveAvailable_succeeds(uint96 bonded, uint96 unbond, uint96 amount) public {
        bonded = uint96(bound(bonded, 1, 1000 ether));
        unbond = uint96(bound(unbond, 0, bonded));
        stakeAs(alice, SOLVER, bonded);
        if (unbond > 0) {
            vm.prank(alice);
            sm.requestUnbond(SOLVER, unbond);
        }
        vm.prank(address(dis));
        uint256 taken = sm.slash(alice, SOLVER, amount, keccak256(abi.encode(amount)));
        assertEq(taken, amount < bonded ? amount : bonded);
        (uint256 b, uint256 u,,) = sm.stakeOf(alice, SOLVER);
        assertEq(b + u + taken, bonded, "stake conserved");
        assertEq(address(sm).balance, b + u);
    }

    function testFuzz_withdraw_onlyAfterDelay_succeeds(uint96 amount, uint32 wait) public {
        amount = uint96(bound(amount, 1, 1000 ether));
        uint256 waited = bound(wait, 0, 2 * UNBONDING_DELAY);
        stakeAs(alice, VERIFIER, amount);
        vm.prank(alice);
        sm.requestUnbond(VERIFIER, amount);
        uint256 release = block.timestamp + UNBONDING_DELAY;
        vm.warp(block.timestamp + waited);
        vm.prank(alice);
        if (block.timestamp < release) {
            vm.expectRevert(abi.encodeWithSelector(StakeManager.UnbondingNotReady.selector, release, block.timestamp));
            sm.withdraw(VERIFIER);
        } else {
            sm.withdraw(VERIFIER);
            assertEq(address(sm).balance, 0);
        }
    }
}
