// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";
import {BlockRandomness} from "../src/BlockRandomness.sol";
import {TestHeaders} from "./utils/TestHeaders.sol";

/// @notice BlockRandomness.randaoOf: a recent block's RANDAO value (header mixHash) from its RLP-encoded header,
///         proven by blockhash. Real anvil headers of several hardforks (tests/vectors/block_headers.json, which pytest
///         reads too), headers built here with any RANDAO value and extraData, and every way a header can be wrong.
contract BlockRandomnessTest is Test {
    BlockRandomness internal randomness;
    string internal vectorsJson;

    function setUp() public {
        randomness = new BlockRandomness();
        vectorsJson = vm.readFile(string.concat(vm.projectRoot(), "/../tests/vectors/block_headers.json"));
        vm.roll(10_000);
    }

    /// @dev Make `header` block `number`'s (its keccak256 the block's hash), `age` blocks before the current one.
    function _asBlock(uint256 number, bytes memory header, uint256 age) internal {
        vm.roll(number + age);
        vm.setBlockhash(number, keccak256(header));
    }

    function _expectMalformed(uint256 offset) internal {
        vm.expectRevert(abi.encodeWithSelector(BlockRandomness.MalformedHeader.selector, offset));
    }

    // ------------------------------------------------------------------ real headers

    /// @dev Every anvil header of the vectors: its hash is its keccak256, and randaoOf returns its mixHash.
    function test_randaoOf_anvilVectors_succeeds() public {
        uint256 n = vm.parseJsonUint(vectorsJson, ".count");
        assertGt(n, 0);
        for (uint256 i; i < n; ++i) {
            string memory base = string.concat(".vectors[", vm.toString(i), "]");
            bytes memory header = vm.parseJsonBytes(vectorsJson, string.concat(base, ".rlp"));
            uint256 number = vm.parseJsonUint(vectorsJson, string.concat(base, ".number"));
            bytes32 hash = vm.parseJsonBytes32(vectorsJson, string.concat(base, ".hash"));
            assertEq(keccak256(header), hash, "the vector's header hashes to its block hash");
            vm.roll(number + 1);
            vm.setBlockhash(number, hash);
            assertEq(
                randomness.randaoOf(number, header),
                vm.parseJsonBytes32(vectorsJson, string.concat(base, ".mixHash")),
                vm.parseJsonString(vectorsJson, string.concat(base, ".name"))
            );
        }
    }

    function test_randaoOf_minimalHeader_succeeds() public {
        bytes memory header = TestHeaders.minimal(keccak256("mix"));
        assertEq(header.length, 47);
        _asBlock(500, header, 1);
        assertEq(randomness.randaoOf(500, header), keccak256("mix"));
    }

    /// @dev Any RANDAO value, any extraData (empty, one byte below 0x80, short string, long string with one or two
    ///      length bytes), any block number, any age within the horizon.
    function testFuzz_randaoOf_builtHeader_succeeds(bytes32 mix, uint256 extraLength, uint256 number, uint256 age)
        public
    {
        extraLength = bound(extraLength, 0, 600);
        number = bound(number, 0, type(uint64).max - 1000);
        age = bound(age, 1, 256);
        bytes memory extraData = new bytes(extraLength);
        for (uint256 i; i < extraLength; ++i) {
            extraData[i] = bytes1(uint8(uint256(keccak256(abi.encode(mix, i)))));
        }
        bytes memory header = TestHeaders.build(number, mix, extraData);
        _asBlock(number, header, age);
        assertEq(randomness.randaoOf(number, header), mix);
    }

    // ------------------------------------------------------------------ not provable

    function test_randaoOf_currentBlock_reverts() public {
        bytes memory header = TestHeaders.minimal(keccak256("mix"));
        vm.expectRevert(abi.encodeWithSelector(BlockRandomness.BlockHashUnavailable.selector, block.number));
        randomness.randaoOf(block.number, header);
    }

    /// @dev A block in the future, or more than 256 blocks back: the EVM serves no hash to prove a header with.
    function testFuzz_randaoOf_blockOutsideHorizon_reverts(uint256 number, bool future) public {
        number = future ? bound(number, block.number, type(uint64).max) : bound(number, 0, block.number - 257);
        vm.expectRevert(abi.encodeWithSelector(BlockRandomness.BlockHashUnavailable.selector, number));
        randomness.randaoOf(number, TestHeaders.minimal(bytes32(0)));
    }

    /// @dev A header with a RANDAO value of the caller's choice is not the block's: refused, naming both hashes.
    function test_randaoOf_headerMismatch_reverts() public {
        bytes memory real = TestHeaders.build(9000, keccak256("beacon chain's"), "");
        bytes memory forged = TestHeaders.build(9000, keccak256("mine"), "");
        _asBlock(9000, real, 5);
        vm.expectRevert(
            abi.encodeWithSelector(BlockRandomness.HeaderMismatch.selector, 9000, keccak256(real), keccak256(forged))
        );
        randomness.randaoOf(9000, forged);
    }

    // ------------------------------------------------------------------ malformed (yet hashing to blockhash)

    function test_randaoOf_emptyHeader_reverts() public {
        _asBlock(100, "", 1);
        _expectMalformed(0);
        randomness.randaoOf(100, "");
    }

    /// @dev A 32-byte string (0xa0 ‖ mix) is no list.
    function test_randaoOf_notAList_reverts() public {
        bytes memory header = abi.encodePacked(uint8(0xa0), keccak256("mix"));
        _asBlock(100, header, 1);
        _expectMalformed(0);
        randomness.randaoOf(100, header);
    }

    /// @dev A long list whose length bytes are cut off.
    function test_randaoOf_listLengthBytesMissing_reverts() public {
        bytes memory header = hex"f9";
        _asBlock(100, header, 1);
        _expectMalformed(0);
        randomness.randaoOf(100, header);
    }

    /// @dev The list says more bytes than there are (the header cut short), or fewer (bytes after it).
    function test_randaoOf_listLengthNotHeaderLength_reverts() public {
        bytes memory full = TestHeaders.build(100, keccak256("mix"), "");
        bytes memory cut = new bytes(full.length - 1);
        for (uint256 i; i < cut.length; ++i) {
            cut[i] = full[i];
        }
        _asBlock(100, cut, 1);
        _expectMalformed(0);
        randomness.randaoOf(100, cut);
        bytes memory trailing = abi.encodePacked(full, uint8(0));
        _asBlock(100, trailing, 1);
        _expectMalformed(0);
        randomness.randaoOf(100, trailing);
    }

    /// @dev A list of only the 13 fields before mixHash: the 14th item is missing.
    function test_randaoOf_mixHashMissing_reverts() public {
        bytes memory header = abi.encodePacked(uint8(0xc0 + 13));
        for (uint256 i; i < 13; ++i) {
            header = abi.encodePacked(header, uint8(0x80));
        }
        _asBlock(100, header, 1);
        _expectMalformed(14);
        randomness.randaoOf(100, header);
    }

    /// @dev The 14th item is a 31-byte string, or a 33-byte one: not a RANDAO value.
    function test_randaoOf_mixHashNot32Bytes_reverts() public {
        bytes memory payload;
        for (uint256 i; i < 13; ++i) {
            payload = abi.encodePacked(payload, uint8(0x80));
        }
        bytes memory short = TestHeaders.encodeList(abi.encodePacked(payload, uint8(0x9f), bytes31(keccak256("m"))));
        _asBlock(100, short, 1);
        _expectMalformed(14);
        randomness.randaoOf(100, short);
        bytes memory long = TestHeaders.encodeList(abi.encodePacked(payload, uint8(0xa1), keccak256("m"), uint8(1)));
        _asBlock(100, long, 1);
        _expectMalformed(14);
        randomness.randaoOf(100, long);
    }

    /// @dev A list where a header field should be (item 4, at byte 4 of the minimal layout).
    function test_randaoOf_listItemBeforeMix_reverts() public {
        bytes memory header = TestHeaders.minimal(keccak256("mix"));
        header[4] = 0xc0; // item 3 (stateRoot) becomes an empty list
        _asBlock(100, header, 1);
        _expectMalformed(4);
        randomness.randaoOf(100, header);
    }

    /// @dev A field whose length runs past the list: a short string of 55 bytes, then a long string of 255.
    function test_randaoOf_itemPastEnd_reverts() public {
        bytes memory header = TestHeaders.encodeList(abi.encodePacked(uint8(0xb7), bytes32(0)));
        _asBlock(100, header, 1);
        _expectMalformed(1);
        randomness.randaoOf(100, header);
        bytes memory long = TestHeaders.encodeList(abi.encodePacked(uint8(0x80), uint8(0xb8), uint8(0xff), bytes32(0)));
        _asBlock(100, long, 1);
        _expectMalformed(2);
        randomness.randaoOf(100, long);
    }

    /// @dev A long string whose 8 length bytes are not all there.
    function test_randaoOf_itemLengthBytesMissing_reverts() public {
        bytes memory header = TestHeaders.encodeList(abi.encodePacked(uint8(0x80), uint8(0xbf), uint32(7)));
        _asBlock(100, header, 1);
        _expectMalformed(2);
        randomness.randaoOf(100, header);
    }

    /// @dev A real-shaped header cut anywhere and re-wrapped as a list of what is left: the walk never reads past the
    ///      end, and every such header is refused as malformed (never a panic, never a value).
    function testFuzz_randaoOf_truncatedHeader_reverts(uint256 keep, uint256 extraLength) public {
        bytes memory full = TestHeaders.build(100, keccak256("mix"), new bytes(bound(extraLength, 0, 100)));
        (uint256 start, uint256 mixEnd) = _payloadBounds(full);
        keep = bound(keep, 0, mixEnd - start - 1); // payload bytes kept: never the whole of mixHash
        bytes memory payload = new bytes(keep);
        for (uint256 i; i < keep; ++i) {
            payload[i] = full[start + i];
        }
        bytes memory header = TestHeaders.encodeList(payload);
        _asBlock(100, header, 1);
        try randomness.randaoOf(100, header) returns (bytes32) {
            fail();
        } catch (bytes memory reason) {
            assertEq(bytes4(reason), BlockRandomness.MalformedHeader.selector);
        }
    }

    /// @dev Any bytes at all that hash to blockhash: a value or MalformedHeader, never another revert (no
    ///      out-of-bounds read, no overflow).
    function testFuzz_randaoOf_arbitraryBytes_onlyMalformed_reverts(bytes memory header) public {
        _asBlock(100, header, 1);
        try randomness.randaoOf(100, header) returns (bytes32) {}
        catch (bytes memory reason) {
            assertEq(bytes4(reason), BlockRandomness.MalformedHeader.selector);
        }
    }

    /// @dev Where the list payload of a built (long-list) header starts, and where its mixHash item ends.
    function _payloadBounds(bytes memory header) internal pure returns (uint256 start, uint256 mixEnd) {
        start = 1 + (uint8(header[0]) - 0xf7);
        uint256 o = start;
        for (uint256 i; i < 14; ++i) {
            uint8 p = uint8(header[o]);
            if (p < 0x80) {
                o += 1;
            } else if (p <= 0xb7) {
                o += 1 + p - 0x80;
            } else {
                uint256 lengthBytes = p - 0xb7;
                uint256 length;
                for (uint256 k; k < lengthBytes; ++k) {
                    length = (length << 8) | uint8(header[o + 1 + k]);
                }
                o += 1 + lengthBytes + length;
            }
        }
        mixEnd = o;
    }
}
