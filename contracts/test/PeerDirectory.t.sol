// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";
import {PeerDirectory} from "../src/PeerDirectory.sol";

contract PeerDirectoryTest is Test {
    /// @dev A devnet's directory (allowPrivateHosts): it accepts any URL, as every directory did before issue 36.
    PeerDirectory internal directory;
    /// @dev A public chain's directory: http(s) URLs with public hosts only.
    PeerDirectory internal publicDirectory;
    address internal alice = makeAddr("alice");
    address internal mallory = makeAddr("mallory");
    /// @dev Issue 36, finding 10: a juror staked 1 ETH (any account can announce; a run's nodes read the
    ///      announcements of its participants, jurors included).
    address internal juror = makeAddr("juror");

    event PeerAnnounced(address indexed account, string url);

    function setUp() public {
        directory = new PeerDirectory(true);
        publicDirectory = new PeerDirectory(false);
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

    // ---------------------------------------------------------------- issue 36, finding 10: private hosts

    /// @dev The URLs of the attack: every node of the run would fetch from its own machine or network.
    function _attackUrls() internal pure returns (string[] memory urls) {
        urls = new string[](8);
        urls[0] = "http://127.0.0.1:8601"; // a node's own loopback: its own API, a local RPC, an admin port
        urls[1] = "http://169.254.169.254/"; // the cloud metadata service (credentials)
        urls[2] = "http://10.0.0.5"; // the operator's private network
        urls[3] = "http://[::1]:80";
        urls[4] = "http://localhost:1";
        urls[5] = "http://192.168.1.1:8080";
        urls[6] = "http://172.16.0.1";
        urls[7] = "http://100.64.0.1";
    }

    function test_announce_privateHostOnPublicDirectory_reverts() public {
        string[] memory urls = _attackUrls();
        for (uint256 i; i < urls.length; ++i) {
            vm.expectRevert(abi.encodeWithSelector(PeerDirectory.PrivateHost.selector, urls[i]));
            vm.prank(juror);
            publicDirectory.announce(urls[i]);
            assertEq(publicDirectory.urlOf(juror), "", urls[i]);
        }
    }

    /// @dev The old outcome, kept on devnets (nodes there serve at loopback or private addresses): the URL is
    ///      stored and every node reading the directory is sent to it.
    function test_announce_privateHostOnDevnetDirectory_succeeds() public {
        string[] memory urls = _attackUrls();
        for (uint256 i; i < urls.length; ++i) {
            vm.expectEmit(address(directory));
            emit PeerAnnounced(juror, urls[i]);
            vm.prank(juror);
            directory.announce(urls[i]);
            assertEq(directory.urlOf(juror), urls[i]);
        }
        assertTrue(directory.allowPrivateHosts());
        assertFalse(publicDirectory.allowPrivateHosts());
    }

    function test_announce_publicHosts_succeeds() public {
        string[8] memory urls = [
            "http://203.0.113.7:8601",
            "https://node.example.org",
            "HTTPS://Node.Example.org:443/artifacts?x=1#top",
            "http://8.8.8.8/",
            "http://[2606:4700::1111]:8601",
            "http://[2001:db8:0:0:1:0:0:1]",
            "http://localhost.example.org",
            "http://mylocalhost:8601"
        ];
        for (uint256 i; i < urls.length; ++i) {
            vm.prank(alice);
            publicDirectory.announce(urls[i]);
            assertEq(publicDirectory.urlOf(alice), urls[i]);
        }
    }

    function test_announce_privateIpv6_reverts() public {
        string[10] memory urls = [
            "http://[::]",
            "http://[0:0:0:0:0:0:0:1]:8601",
            "http://[fe80::1]",
            "http://[FEBF:ffff::]",
            "http://[fc00::1]",
            "http://[fd12:3456::7]:80",
            "http://[::ffff:127.0.0.1]",
            "http://[::ffff:a9fe:a9fe]",
            "http://[64:ff9b::10.0.0.5]",
            "http://[2002:c0a8:0101::1]"
        ];
        for (uint256 i; i < urls.length; ++i) {
            vm.expectRevert(abi.encodeWithSelector(PeerDirectory.PrivateHost.selector, urls[i]));
            vm.prank(mallory);
            publicDirectory.announce(urls[i]);
        }
    }

    function test_announce_localhostNames_reverts() public {
        string[5] memory urls = [
            "http://LOCALHOST",
            "http://localhost.",
            "https://a.localhost:8601",
            "http://x.y.LocalHost/",
            "http://0.0.0.0"
        ];
        for (uint256 i; i < urls.length; ++i) {
            vm.expectRevert(abi.encodeWithSelector(PeerDirectory.PrivateHost.selector, urls[i]));
            vm.prank(mallory);
            publicDirectory.announce(urls[i]);
        }
    }

    function test_announce_unsupportedScheme_reverts() public {
        string[5] memory urls = [
            "ftp://203.0.113.7", "file:///etc/passwd", "httpx://node.example", "http:/node.example", " http://a.example"
        ];
        for (uint256 i; i < urls.length; ++i) {
            vm.expectRevert(abi.encodeWithSelector(PeerDirectory.UnsupportedScheme.selector, urls[i]));
            vm.prank(mallory);
            publicDirectory.announce(urls[i]);
        }
    }

    /// @dev Authorities that URL parsers and resolvers read differently: the contract would see a public host where a
    ///      node connects to a private one ("012.0.0.1" is 10.0.0.1 to inet_aton, "127.1" is 127.0.0.1, userinfo
    ///      hides the host after an at sign, percent-encoding and non-ASCII bytes are decoded or normalised by some).
    function test_announce_ambiguousHost_reverts() public {
        string[16] memory urls = [
            "http://203.0.113.7@127.0.0.1",
            "http://node.example:1@10.0.0.1/",
            "http://127.1",
            "http://2130706433",
            "http://0x7f.0.0.1",
            "http://012.0.0.1",
            "http://node.0x7f",
            "http://%31%32%37.0.0.1",
            "http://203.0.113.7\\@127.0.0.1",
            "http://node.example\t",
            unicode"http://ｌｏｃａｌｈｏｓｔ",
            "http://",
            "http://:8601",
            "http://[::1",
            "http://[1::2::3]",
            "http://node.example:86a1"
        ];
        for (uint256 i; i < urls.length; ++i) {
            vm.expectRevert(abi.encodeWithSelector(PeerDirectory.MalformedHost.selector, urls[i]));
            vm.prank(mallory);
            publicDirectory.announce(urls[i]);
        }
    }

    function test_announce_malformedIpv6_reverts() public {
        string[9] memory urls = [
            "http://[]",
            "http://[:]",
            "http://[:::]",
            "http://[1:2:3:4:5:6:7:8:9]",
            "http://[1:2:3:4:5:6:7]",
            "http://[12345::]",
            "http://[1::]x",
            "http://[::ffff:1.2.3]",
            "http://[fe80::1%25eth0]"
        ];
        for (uint256 i; i < urls.length; ++i) {
            vm.expectRevert(abi.encodeWithSelector(PeerDirectory.MalformedHost.selector, urls[i]));
            vm.prank(mallory);
            publicDirectory.announce(urls[i]);
        }
    }

    /// @dev The host check's cost on a public directory: the longest URL, all of it authority, against the same
    ///      announcement on a devnet directory (which skips the check).
    function test_announce_longestPublicUrlGas_succeeds() public {
        bytes memory url = bytes.concat("https://", new bytes(publicDirectory.MAX_URL_BYTES() - 17), ".org:8601");
        for (uint256 i = 8; i < url.length - 9; ++i) {
            url[i] = "a";
        }
        vm.prank(alice);
        uint256 before = gasleft();
        directory.announce(string(url));
        uint256 unchecked_ = before - gasleft();
        vm.prank(alice);
        before = gasleft();
        publicDirectory.announce(string(url));
        uint256 checked = before - gasleft();
        assertEq(bytes(publicDirectory.urlOf(alice)).length, publicDirectory.MAX_URL_BYTES());
        assertLt(checked, unchecked_ + 100_000, "the host check costs at most 100k gas (65k when written)");
        emit log_named_uint("host check gas, longest URL", checked - unchecked_);
    }

    /// @dev The reference classification, written octet by octet (the contract shifts bits): 0/8, 10/8, 100.64/10,
    ///      127/8, 169.254/16, 172.16/12, 192.168/16 and 224.0.0.0 and above.
    function _referenceIsPrivate(uint256 a, uint256 b) internal pure returns (bool) {
        return a == 0 || a == 10 || a == 127 || a >= 224 || (a == 100 && b >= 64 && b <= 127) || (a == 169 && b == 254)
            || (a == 172 && b >= 16 && b <= 31) || (a == 192 && b == 168);
    }

    function _ipv4Url(uint256 a, uint256 b, uint256 c, uint256 d) internal pure returns (string memory) {
        return string.concat(
            "http://", vm.toString(a), ".", vm.toString(b), ".", vm.toString(c), ".", vm.toString(d), ":8601"
        );
    }

    function testFuzz_announce_publicIpv4_succeeds(uint256 a, uint256 b, uint256 c, uint256 d) public {
        (a, b, c, d) = (bound(a, 0, 255), bound(b, 0, 255), bound(c, 0, 255), bound(d, 0, 255));
        vm.assume(!_referenceIsPrivate(a, b));
        string memory url = _ipv4Url(a, b, c, d);
        vm.prank(alice);
        publicDirectory.announce(url);
        assertEq(publicDirectory.urlOf(alice), url);
    }

    function testFuzz_announce_privateIpv4_reverts(uint256 range, uint256 a, uint256 b, uint256 c, uint256 d) public {
        // a random address inside one of the refused ranges: (first octet, lowest and highest second octet)
        uint256[3][8] memory ranges = [
            [uint256(0), 0, 255],
            [uint256(10), 0, 255],
            [uint256(100), 64, 127],
            [uint256(127), 0, 255],
            [uint256(169), 254, 254],
            [uint256(172), 16, 31],
            [uint256(192), 168, 168],
            [uint256(224), 0, 255]
        ];
        uint256[3] memory chosen = ranges[bound(range, 0, ranges.length - 1)];
        a = chosen[0] == 224 ? bound(a, 224, 255) : chosen[0];
        b = bound(b, chosen[1], chosen[2]);
        (c, d) = (bound(c, 0, 255), bound(d, 0, 255));
        assertTrue(_referenceIsPrivate(a, b));
        string memory url = _ipv4Url(a, b, c, d);
        vm.expectRevert(abi.encodeWithSelector(PeerDirectory.PrivateHost.selector, url));
        vm.prank(juror);
        publicDirectory.announce(url);
        vm.prank(juror);
        directory.announce(url); // the devnet directory: the old outcome
        assertEq(directory.urlOf(juror), url);
    }

    /// @dev Any IPv4 literal, public or not: the public directory agrees with the reference, the devnet one takes it.
    function testFuzz_announce_anyIpv4AsReferenceSays_succeeds(uint32 raw) public {
        (uint256 a, uint256 b, uint256 c, uint256 d) = (raw >> 24, (raw >> 16) & 0xff, (raw >> 8) & 0xff, raw & 0xff);
        string memory url = _ipv4Url(a, b, c, d);
        vm.prank(alice);
        (bool accepted, bytes memory returned) =
            address(publicDirectory).call(abi.encodeCall(PeerDirectory.announce, (url)));
        assertEq(accepted, !_referenceIsPrivate(a, b), url);
        if (!accepted) assertEq(returned, abi.encodeWithSelector(PeerDirectory.PrivateHost.selector, url));
        vm.prank(alice);
        directory.announce(url);
    }
}
