// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";
import {PeerDirectory} from "../src/PeerDirectory.sol";

contract PeerDirectoryTest is Test {
    PeerDirectory internal directory;
    address internal alice = makeAddr("alice");
    address internal mallory = makeAddr("mallory");

    event PeerAnnounced(address indexed account, string url);

    function setUp() public {
        directory = new PeerDirectory();
    }

    function test_announce_newUrl_succeeds() public {
        vm.expectEmit(address(directory));
        emit PeerAnnounced(alice, "http://127.0.0.1:8601");
        vm.prank(alice);
        directory.announce("http://127.0.0.1:8601");
        assertEq(directory.urlOf(alice), "http://127.0.0.1:8601");
    }

    function test_announce_again_overwrites_succeeds() public {
        vm.startPrank(alice);
        directory.announce("http://127.0.0.1:8601");
        directory.announce("http://10.0.0.2:9000");
        vm.stopPrank();
        assertEq(directory.urlOf(alice), "http://10.0.0.2:9000");
    }

    function test_announce_onlyOwnEntry_succeeds() public {
        vm.prank(alice);
        directory.announce("http://alice.example");
        vm.prank(mallory);
        directory.announce("http://mallory.example");
        assertEq(directory.urlOf(alice), "http://alice.example", "nobody can overwrite another account's URL");
    }

    function test_announce_empty_reverts() public {
        vm.expectRevert(PeerDirectory.EmptyUrl.selector);
        vm.prank(alice);
        directory.announce("");
    }

    function testFuzz_announce_tooLong_reverts(uint256 extra) public {
        uint256 length = directory.MAX_URL_BYTES() + bound(extra, 1, 1000);
        string memory url = string(new bytes(length));
        vm.expectRevert(abi.encodeWithSelector(PeerDirectory.UrlTooLong.selector, length, directory.MAX_URL_BYTES()));
        vm.prank(alice);
        directory.announce(url);
    }

    function test_announce_maxLength_succeeds() public {
        string memory url = string(new bytes(directory.MAX_URL_BYTES()));
        vm.prank(alice);
        directory.announce(url);
        assertEq(bytes(directory.urlOf(alice)).length, directory.MAX_URL_BYTES());
    }

    function test_withdraw_announced_succeeds() public {
        vm.startPrank(alice);
        directory.announce("http://alice.example");
        vm.expectEmit(address(directory));
        emit PeerAnnounced(alice, "");
        directory.withdraw();
        vm.stopPrank();
        assertEq(directory.urlOf(alice), "");
    }

    function test_withdraw_nothingAnnounced_reverts() public {
        vm.expectRevert(PeerDirectory.NothingToWithdraw.selector);
        vm.prank(alice);
        directory.withdraw();
    }
}
