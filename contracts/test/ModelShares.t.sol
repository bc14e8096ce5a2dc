// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";
import {Rejector} from "./utils/Rejector.sol";
import {Constants} from "../src/Constants.sol";
import {ModelShares} from "../src/ModelShares.sol";
import {RunShares} from "../src/RunShares.sol";
import {IModelShares} from "../src/interfaces/IModelShares.sol";

/// @notice ModelShares and RunShares in isolation: this test contract plays RunRegistry, Verification and
///         Disputes, so minting, pools and revenue can be driven directly.
contract ModelSharesTest is Test {
    uint256 internal constant PERIOD = 30 days;
    uint256 internal constant RUN = 1;
    uint256 internal constant SHARES_PER_ROUND = 1e30;
    ModelShares internal shares;
    RunShares internal token;
    address internal alice = makeAddr("alice");
    address internal bob = makeAddr("bob");
    address internal carol = makeAddr("carol");
    address internal payer = makeAddr("payer");

    function setUp() public {
        vm.warp(1_700_000_000);
        shares = new ModelShares(address(this), address(this), address(this), address(this));
        vm.deal(address(this), 1_000_000 ether);
        vm.deal(payer, 1e30);
        token = RunShares(shares.createRunShares{value: 100 ether}(RUN, uint32(PERIOD)));
    }

    receive() external payable {}

    function _mint(address to, uint256 amount) internal {
        shares.mint(RUN, 0, to, amount, IModelShares.ShareKind.Solver);
    }

    function _pay(uint256 amount) internal {
        vm.prank(payer);
        shares.payRevenue{value: amount}(RUN);
    }

    function _withdraw(address who) internal returns (uint256 amount) {
        uint256 before = who.balance;
        vm.prank(who);
        token.withdrawRevenue();
        amount = who.balance - before;
    }

    // ------------------------------------------------------------------ ModelShares

    function test_createRunShares_token_succeeds() public view {
        assertEq(token.runId(), RUN);
        assertEq(token.releasePeriod(), PERIOD);
        assertEq(token.modelShares(), address(shares));
        assertEq(token.name(), "gradledger run 1 shares");
        assertEq(token.symbol(), "GLS1");
        assertEq(shares.pool(RUN), 100 ether);
        assertEq(address(shares.shareToken(RUN)), address(token));
    }

    function test_createRunShares_notRegistry_reverts() public {
        vm.prank(alice);
        vm.expectRevert(abi.encodeWithSelector(ModelShares.NotRunRegistry.selector, alice));
        shares.createRunShares(2, 1);
    }

    function test_createRunShares_twice_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(ModelShares.RunExists.selector, RUN));
        shares.createRunShares(RUN, 1);
    }

    function test_createRunShares_poolTooLarge_reverts() public {
        uint256 huge = uint256(type(uint88).max) + 1;
        vm.deal(address(this), huge);
        vm.expectRevert(abi.encodeWithSelector(ModelShares.PoolOverflow.selector, huge));
        shares.createRunShares{value: huge}(2, 1);
    }

    function test_fundPool_protocol_succeeds() public {
        vm.expectEmit(address(shares));
        emit ModelShares.PoolFunded(RUN, address(this), 5 ether, 105 ether);
        shares.fundPool{value: 5 ether}(RUN);
        assertEq(shares.pool(RUN), 105 ether);
        assertEq(address(shares).balance, 105 ether);
    }

    function test_fundPool_notProtocol_reverts() public {
        vm.deal(alice, 1 ether);
        vm.prank(alice);
        vm.expectRevert(abi.encodeWithSelector(ModelShares.NotProtocol.selector, alice));
        shares.fundPool{value: 1 ether}(RUN);
    }

    function test_fundPool_zero_reverts() public {
        vm.expectRevert(ModelShares.ZeroAmount.selector);
        shares.fundPool(RUN);
    }

    function test_fundPool_unknownRun_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(ModelShares.UnknownRun.selector, 9));
        shares.fundPool{value: 1}(9);
    }

    function test_fundPool_overflow_reverts() public {
        uint256 huge = uint256(type(uint88).max);
        vm.deal(address(this), huge);
        vm.expectRevert(abi.encodeWithSelector(ModelShares.PoolOverflow.selector, huge + 100 ether));
        shares.fundPool{value: huge}(RUN);
    }

    function test_fundPool_finishedRunGoesToStream_succeeds() public {
        shares.releasePool(RUN, 0, 1);
        assertTrue(shares.finished(RUN));
        shares.fundPool{value: 3 ether}(RUN);
        assertEq(shares.pool(RUN), 0);
        (uint256 remaining,,) = token.revenueState();
        assertEq(remaining, 3 ether);
        assertEq(address(token).balance, 3 ether);
        assertEq(shares.roundReleaseOf(RUN, 0).amount, 100 ether, "the last round's release stays its own");
    }

    function test_releasePool_splitsOverRoundsLeft_succeeds() public {
        shares.releasePool(RUN, 0, 4);
        assertEq(shares.pool(RUN), 75 ether);
        shares.releasePool(RUN, 1, 3);
        assertEq(shares.pool(RUN), 50 ether);
        shares.releasePool(RUN, 2, 1);
        assertEq(shares.pool(RUN), 0);
        assertEq(shares.roundReleaseOf(RUN, 0).amount, 25 ether);
        assertEq(shares.roundReleaseOf(RUN, 1).amount, 25 ether);
        assertEq(shares.roundReleaseOf(RUN, 2).amount, 50 ether);
        assertEq(address(token).balance, 0);
        assertEq(address(shares).balance, 100 ether, "held for the rounds' contributors");
    }

    // ------------------------------------------------------------------ round releases (issue 16)

    /// @dev Issue 16 ("each round's release is reserved for that round's contributors"): a settled round's part of
    ///      the pool used to go into the revenue stream, where whoever held shares of earlier rounds took it while the
    ///      round's own contributors had not claimed their shares yet. Alice (round 0) used to withdraw all 20 ETH of
    ///      rounds 0 and 1; Bob, who did round 1's work and claimed a period later, got nothing of it.
    function test_mint_lateClaimOfARound_getsTheRoundsRelease_succeeds() public {
        shares.releasePool(RUN, 0, 5); // 20 ETH for round 0
        shares.mint(RUN, 0, alice, SHARES_PER_ROUND, IModelShares.ShareKind.Solver);
        shares.releasePool(RUN, 1, 4); // 20 ETH for round 1, whose contributor has not claimed yet
        vm.warp(block.timestamp + PERIOD);
        assertEq(token.withdrawableRevenueOf(alice), 0, "no round's release drips to holders");
        shares.mint(RUN, 1, bob, SHARES_PER_ROUND / 2, IModelShares.ShareKind.Solver);
        shares.mint(RUN, 1, carol, SHARES_PER_ROUND / 4, IModelShares.ShareKind.Verifier);
        assertEq(shares.credits(alice), 20 ether, "round 0's release, all of it");
        assertEq(shares.credits(bob), 10 ether, "half of round 1's release, claimed a period late");
        assertEq(shares.credits(carol), 5 ether);
        uint256 before = bob.balance;
        vm.prank(bob);
        shares.withdraw();
        assertEq(bob.balance - before, 10 ether);
    }

    function test_mint_aboveSharesPerRound_reverts() public {
        shares.mint(RUN, 0, alice, SHARES_PER_ROUND, IModelShares.ShareKind.Solver);
        vm.expectRevert(
            abi.encodeWithSelector(ModelShares.MintAboveRound.selector, SHARES_PER_ROUND + 1, SHARES_PER_ROUND)
        );
        shares.mint(RUN, 0, bob, 1, IModelShares.ShareKind.Juror);
    }

    function test_sweepRoundRelease_afterWindow_unclaimedBackToPool_succeeds() public {
        shares.releasePool(RUN, 0, 4); // 25 ETH
        shares.mint(RUN, 0, alice, SHARES_PER_ROUND * 6 / 10, IModelShares.ShareKind.Solver); // 15 ETH
        uint256 closesAt = block.timestamp + Constants.REWARD_CLAIM_WINDOW;
        vm.warp(closesAt - 1);
        vm.expectRevert(abi.encodeWithSelector(ModelShares.ClaimWindowOpen.selector, closesAt));
        shares.sweepRoundRelease(RUN, 0);
        vm.warp(closesAt);
        vm.expectEmit(address(shares));
        emit ModelShares.RoundReleaseSwept(RUN, 0, 10 ether);
        shares.sweepRoundRelease(RUN, 0);
        assertEq(shares.pool(RUN), 85 ether, "the unclaimed 10 ETH back to the pool for later rounds");
        shares.mint(RUN, 0, bob, SHARES_PER_ROUND / 10, IModelShares.ShareKind.Juror);
        assertEq(shares.credits(bob), 0, "a mint after the sweep carries shares only");
        vm.expectRevert(abi.encodeWithSelector(ModelShares.NotReleased.selector, RUN, 0));
        shares.sweepRoundRelease(RUN, 0);
    }

    function test_sweepRoundRelease_finishedRun_intoStream_succeeds() public {
        shares.releasePool(RUN, 0, 1);
        vm.warp(block.timestamp + Constants.REWARD_CLAIM_WINDOW);
        shares.sweepRoundRelease(RUN, 0);
        assertEq(address(token).balance, 100 ether, "a finished run's leftovers go to its revenue stream");
        assertEq(shares.pool(RUN), 0);
    }

    function test_sweepRoundRelease_notSettled_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(ModelShares.NotReleased.selector, RUN, 3));
        shares.sweepRoundRelease(RUN, 3);
    }

    function testFuzz_mint_roundCreditsNeverExceedRelease_succeeds(uint256 a, uint256 b, uint256 c) public {
        shares.releasePool(RUN, 0, 3);
        uint256 release = shares.roundReleaseOf(RUN, 0).amount;
        a = bound(a, 0, SHARES_PER_ROUND);
        b = bound(b, 0, SHARES_PER_ROUND - a);
        c = bound(c, 0, SHARES_PER_ROUND - a - b);
        shares.mint(RUN, 0, alice, a, IModelShares.ShareKind.Solver);
        shares.mint(RUN, 0, bob, b, IModelShares.ShareKind.Verifier);
        shares.mint(RUN, 0, carol, c, IModelShares.ShareKind.Juror);
        uint256 credited = shares.credits(alice) + shares.credits(bob) + shares.credits(carol);
        assertLe(credited, release);
        assertEq(shares.roundReleaseOf(RUN, 0).credited, credited);
        assertEq(address(shares).balance, shares.pool(RUN) + release, "the release stays until withdrawn or swept");
    }

    function test_releasePool_notRegistry_reverts() public {
        vm.prank(alice);
        vm.expectRevert(abi.encodeWithSelector(ModelShares.NotRunRegistry.selector, alice));
        shares.releasePool(RUN, 0, 1);
    }

    function test_releasePool_unknownRun_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(ModelShares.UnknownRun.selector, 7));
        shares.releasePool(7, 0, 1);
    }

    function test_payRevenue_anyone_succeeds() public {
        vm.expectEmit(address(shares));
        emit ModelShares.RevenuePaid(RUN, payer, 1 ether);
        _pay(1 ether);
        assertEq(address(token).balance, 1 ether);
    }

    function test_payRevenue_zero_reverts() public {
        vm.expectRevert(ModelShares.ZeroAmount.selector);
        shares.payRevenue(RUN);
    }

    function test_payRevenue_unknownRun_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(ModelShares.UnknownRun.selector, 3));
        shares.payRevenue{value: 1}(3);
    }

    function test_mint_minter_succeeds() public {
        vm.expectEmit(address(shares));
        emit ModelShares.SharesMinted(RUN, 0, alice, IModelShares.ShareKind.Solver, 5e18, 5e18);
        _mint(alice, 5e18);
        assertEq(token.balanceOf(alice), 5e18);
        assertEq(shares.mintedInRound(RUN, 0), 5e18);
        shares.mint(RUN, 0, alice, 0, IModelShares.ShareKind.Juror);
        assertEq(token.totalSupply(), 5e18);
    }

    function test_mint_notMinter_reverts() public {
        vm.prank(alice);
        vm.expectRevert(abi.encodeWithSelector(ModelShares.NotMinter.selector, alice));
        shares.mint(RUN, 0, alice, 1, IModelShares.ShareKind.Solver);
    }

    function test_mint_unknownRun_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(ModelShares.UnknownRun.selector, 4));
        shares.mint(4, 0, alice, 1, IModelShares.ShareKind.Solver);
    }

    function creatorOf(uint256) external pure returns (address) {
        return address(0xC0FFEE);
    }

    /// @dev This contract plays RunRegistry: the run's shares per round (ModelShares reads it at each mint).
    function sharesPerRound(uint256) external pure returns (uint256) {
        return SHARES_PER_ROUND;
    }

    function test_reclaimUnownedRevenue_noShares_succeeds() public {
        shares.releasePool(RUN, 0, 1);
        assertEq(shares.finishedAt(RUN), block.timestamp);
        vm.warp(block.timestamp + Constants.UNOWNED_REVENUE_GRACE);
        shares.sweepRoundRelease(RUN, 0); // nobody claimed the last round's release: into the stream
        uint256 before = address(0xC0FFEE).balance;
        shares.reclaimUnownedRevenue(RUN);
        assertEq(address(0xC0FFEE).balance - before, 100 ether, "the creator gets an ownerless run's revenue");
        assertEq(address(token).balance, 0);
    }

    function test_reclaimUnownedRevenue_notFinished_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(ModelShares.RunNotFinished.selector, RUN));
        shares.reclaimUnownedRevenue(RUN);
    }

    function test_reclaimUnownedRevenue_sharesOutstanding_reverts() public {
        _mint(alice, 1e18);
        shares.releasePool(RUN, 0, 1);
        vm.warp(block.timestamp + Constants.UNOWNED_REVENUE_GRACE);
        vm.expectRevert(abi.encodeWithSelector(RunShares.SharesOutstanding.selector, 1e18));
        shares.reclaimUnownedRevenue(RUN);
    }

    function test_reclaimUnownedRevenue_nothing_reverts() public {
        shares.releasePool(RUN, 0, 1);
        vm.warp(block.timestamp + Constants.UNOWNED_REVENUE_GRACE);
        shares.sweepRoundRelease(RUN, 0);
        shares.reclaimUnownedRevenue(RUN);
        vm.expectRevert(RunShares.NothingToWithdraw.selector);
        shares.reclaimUnownedRevenue(RUN);
    }

    /// @dev Issue 16, finding 7: right after the last settle no share is minted yet (contributors claim them after
    ///      settlement), so "no whole share" does not mean "nobody is owed". The creator used to sweep the whole pool
    ///      then; now the contributors have UNOWNED_REVENUE_GRACE to claim, and once they did there is nothing to sweep.
    function testFuzz_reclaimUnownedRevenue_beforeGrace_reverts(uint256 wait) public {
        shares.releasePool(RUN, 0, 1);
        uint256 reclaimableAt = block.timestamp + Constants.UNOWNED_REVENUE_GRACE;
        vm.warp(bound(wait, block.timestamp, reclaimableAt - 1));
        vm.expectRevert(abi.encodeWithSelector(ModelShares.ReclaimTooEarly.selector, reclaimableAt));
        shares.reclaimUnownedRevenue(RUN);
        // the contributor claims the round's shares inside the grace period, with the round's release
        shares.mint(RUN, 0, alice, SHARES_PER_ROUND, IModelShares.ShareKind.Solver);
        vm.warp(reclaimableAt);
        vm.expectRevert(abi.encodeWithSelector(RunShares.SharesOutstanding.selector, SHARES_PER_ROUND));
        shares.reclaimUnownedRevenue(RUN);
        uint256 before = alice.balance;
        vm.prank(alice);
        shares.withdraw();
        assertEq(alice.balance - before, 100 ether, "the pool went to the contributor, not the creator");
    }

    function test_sweepUnowned_notModelShares_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(RunShares.NotModelShares.selector, address(this)));
        token.sweepUnowned(alice);
    }

    // ------------------------------------------------------------------ RunShares

    function test_mint_notModelShares_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(RunShares.NotModelShares.selector, address(this)));
        token.mint(alice, 1);
    }

    function test_notifyRevenue_notModelShares_reverts() public {
        vm.expectRevert(abi.encodeWithSelector(RunShares.NotModelShares.selector, address(this)));
        token.notifyRevenue{value: 1}();
    }

    function test_notifyRevenue_zero_reverts() public {
        vm.prank(address(shares));
        vm.expectRevert(RunShares.ZeroAmount.selector);
        token.notifyRevenue();
    }

    function test_withdrawRevenue_linearRelease_succeeds() public {
        _mint(alice, 100e18);
        _pay(30 ether);
        vm.warp(block.timestamp + PERIOD / 3);
        assertEq(token.withdrawableRevenueOf(alice), 10 ether);
        assertEq(_withdraw(alice), 10 ether);
        vm.warp(block.timestamp + PERIOD);
        assertEq(_withdraw(alice), 20 ether);
        assertEq(address(token).balance, 0);
    }

    function test_withdrawRevenue_nothing_reverts() public {
        _mint(alice, 100e18);
        vm.prank(alice);
        vm.expectRevert(RunShares.NothingToWithdraw.selector);
        token.withdrawRevenue();
    }

    function test_withdrawRevenue_receiverRejects_reverts() public {
        Rejector r = new Rejector();
        _mint(address(r), 100e18);
        _pay(1 ether);
        vm.warp(block.timestamp + PERIOD);
        vm.expectRevert(abi.encodeWithSelector(RunShares.TransferFailed.selector, address(r), 1 ether));
        r.call(address(token), abi.encodeCall(RunShares.withdrawRevenue, ()));
    }

    function test_release_pausedBelowOneShare_succeeds() public {
        _pay(30 ether);
        vm.warp(block.timestamp + PERIOD); // no holders yet: the clock is paused
        _mint(alice, 100e18);
        assertEq(token.withdrawableRevenueOf(alice), 0, "nothing dripped to nobody");
        vm.warp(block.timestamp + PERIOD / 2);
        assertEq(token.withdrawableRevenueOf(alice), 15 ether, "the paused stream resumes where it stopped");
    }

    function test_transfer_keepsAccrued_succeeds() public {
        _mint(alice, 100e18);
        _pay(30 ether);
        vm.warp(block.timestamp + PERIOD / 3);
        uint256 aliceBefore = token.withdrawableRevenueOf(alice);
        vm.prank(alice);
        token.transfer(bob, 50e18);
        assertEq(token.withdrawableRevenueOf(alice), aliceBefore, "sender keeps what it earned");
        assertEq(token.withdrawableRevenueOf(bob), 0, "receiver gets nothing accrued before");
        vm.warp(block.timestamp + PERIOD);
        assertEq(token.withdrawableRevenueOf(alice), 10 ether + 10 ether);
        assertEq(token.withdrawableRevenueOf(bob), 10 ether);
    }

    function test_transfer_buyBeforePaymentCapturesOnlyDrip_succeeds() public {
        _mint(alice, 100e18);
        _pay(10 ether);
        vm.warp(block.timestamp + PERIOD);
        // bob buys half the supply right before a big payment
        vm.prank(alice);
        token.transfer(bob, 100e18);
        _pay(300 ether);
        assertEq(token.withdrawableRevenueOf(bob), 0, "nothing at the moment of the payment");
        vm.warp(block.timestamp + 1 days);
        assertEq(token.withdrawableRevenueOf(bob), 10 ether, "one day of a 30-day release");
        vm.prank(bob);
        token.transfer(carol, 100e18);
        vm.warp(block.timestamp + PERIOD);
        assertEq(_withdraw(bob), 10 ether);
        assertEq(_withdraw(carol), 290 ether);
        assertEq(_withdraw(alice), 10 ether);
    }

    function test_notifyRevenue_topUpRestartsPeriod_succeeds() public {
        _mint(alice, 1e18);
        _pay(30 ether);
        vm.warp(block.timestamp + PERIOD / 2);
        _pay(15 ether);
        (uint256 remaining, uint256 end,) = token.revenueState();
        assertEq(remaining, 30 ether, "15 left + 15 new");
        assertEq(end, block.timestamp + PERIOD);
        vm.warp(end);
        assertEq(_withdraw(alice), 45 ether);
    }

    /// Finding 8 of issue 16: daily 1-wei payments used to restart the release period of everything unreleased
    ///         (40 of 110 ETH were still unreleased a full period after the payment); now they delay nothing.
    function test_notifyRevenue_dustPaymentsDoNotDelayRevenue_succeeds() public {
        _mint(alice, 1e18);
        uint256 start = block.timestamp;
        _pay(110 ether);
        for (uint256 day = 1; day < PERIOD / 1 days; ++day) {
            vm.warp(start + day * 1 days);
            _pay(1);
        }
        vm.warp(start + PERIOD);
        (uint256 remaining,,) = token.revenueState();
        assertLt(remaining, 1e6, "a full period after the payment, (all but dust of) it is released");
        assertGe(_withdraw(alice), 110 ether);
    }

    function testFuzz_notifyRevenue_neverSlowsTheRelease_succeeds(uint96 first, uint96 second, uint32 wait) public {
        _mint(alice, 1e18);
        _pay(bound(first, 1e6, 1e24));
        vm.warp(block.timestamp + bound(wait, 0, PERIOD - 1));
        token.withdrawableRevenueOf(alice);
        (uint256 remainingBefore, uint256 endBefore,) = token.revenueState();
        uint256 rateBefore = remainingBefore * 1e18 / (endBefore - block.timestamp);
        uint256 paid = bound(second, 1, 1e24);
        _pay(paid);
        (uint256 remaining, uint256 end,) = token.revenueState();
        assertEq(remaining, remainingBefore + paid, "everything paid is in the stream");
        assertLe(end, block.timestamp + PERIOD, "a payment is released within one period");
        assertGe(remaining * 1e18 / (end - block.timestamp) + 1, rateBefore, "the release rate never drops");
    }

    function testFuzz_revenue_neverOverpays_succeeds(
        uint96 payA,
        uint96 payB,
        uint64 sharesA,
        uint64 sharesB,
        uint32 t1,
        uint32 t2,
        uint64 moved
    ) public {
        uint256 a = bound(sharesA, 1e18, 1e24);
        uint256 b = bound(sharesB, 1, 1e24);
        uint256 paid = bound(payA, 1, 1e24);
        _mint(alice, a);
        _pay(paid);
        vm.warp(block.timestamp + bound(t1, 0, PERIOD * 2));
        _mint(bob, b);
        uint256 x = bound(moved, 0, a);
        uint256 aliceBefore = token.withdrawableRevenueOf(alice);
        uint256 carolBefore = token.withdrawableRevenueOf(carol);
        vm.prank(alice);
        token.transfer(carol, x);
        assertEq(token.withdrawableRevenueOf(alice), aliceBefore, "transfer moved sender's revenue");
        assertEq(token.withdrawableRevenueOf(carol), carolBefore, "transfer moved revenue to the receiver");
        uint256 second = bound(payB, 1, 1e24);
        paid += second;
        _pay(second);
        vm.warp(block.timestamp + bound(t2, 0, PERIOD * 2));
        uint256 withdrawn;
        address[3] memory holders = [alice, bob, carol];
        for (uint256 i; i < 3; ++i) {
            if (token.withdrawableRevenueOf(holders[i]) > 0) withdrawn += _withdraw(holders[i]);
        }
        (uint256 remaining,,) = token.revenueState();
        assertLe(withdrawn + remaining, paid, "never more than paid");
        assertEq(address(token).balance + withdrawn, paid, "ETH accounted");
        vm.warp(block.timestamp + PERIOD);
        for (uint256 i; i < 3; ++i) {
            if (token.withdrawableRevenueOf(holders[i]) > 0) _withdraw(holders[i]);
        }
        assertLe(address(token).balance, 3 + 1, "at most a wei per holder (+1) stranded");
    }
}
