// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Strings} from "@openzeppelin/contracts/utils/Strings.sol";

/// @notice RLP-encoded block headers for the tests: what BlockRandomness.randaoOf (and so Verification.drawSeed)
///         takes, with a chosen RANDAO value (mixHash). A test makes one the header of block n with
///         `vm.setBlockhash(n, keccak256(header))`.
library TestHeaders {
    bytes32 internal constant EMPTY_OMMERS = 0x1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347;
    bytes32 internal constant EMPTY_TRIE = 0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421;
    bytes32 internal constant EMPTY_REQUESTS = 0xe3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855;

    /// @dev The RANDAO value the fixture gives block `blockNumber`: keccak256 of its decimal string, which is what
    ///      forge's blockhash(blockNumber) returns by default, so every round keeps the seed base it had when the seed
    ///      was the block hash (and the tests their seats and samples).
    function mixOf(uint256 blockNumber) internal pure returns (bytes32) {
        return keccak256(bytes(Strings.toString(blockNumber)));
    }

    /// @dev A Prague-shaped header of block `number` (the 21 fields anvil 1.7.1 encodes) with mixHash `mix` and the
    ///      given extraData; the other fields are fixed or derived from `number`.
    function build(uint256 number, bytes32 mix, bytes memory extraData) internal pure returns (bytes memory) {
        bytes[21] memory f;
        f[0] = encodeBytes(abi.encodePacked(keccak256(abi.encode("parent", number)))); // parentHash
        f[1] = encodeBytes(abi.encodePacked(EMPTY_OMMERS)); // ommersHash
        f[2] = encodeBytes(abi.encodePacked(address(0))); // coinbase
        f[3] = encodeBytes(abi.encodePacked(keccak256(abi.encode("state", number)))); // stateRoot
        f[4] = encodeBytes(abi.encodePacked(EMPTY_TRIE)); // transactionsRoot
        f[5] = encodeBytes(abi.encodePacked(EMPTY_TRIE)); // receiptsRoot
        f[6] = encodeBytes(new bytes(256)); // logsBloom
        f[7] = encodeUint(0); // difficulty
        f[8] = encodeUint(number);
        f[9] = encodeUint(30_000_000); // gasLimit
        f[10] = encodeUint(0); // gasUsed
        f[11] = encodeUint(1_700_000_000 + 12 * number); // timestamp
        f[12] = encodeBytes(extraData);
        f[13] = encodeBytes(abi.encodePacked(mix)); // mixHash
        f[14] = encodeBytes(new bytes(8)); // nonce
        f[15] = encodeUint(1 gwei); // baseFeePerGas
        f[16] = encodeBytes(abi.encodePacked(EMPTY_TRIE)); // withdrawalsRoot
        f[17] = encodeUint(0); // blobGasUsed
        f[18] = encodeUint(0); // excessBlobGas
        f[19] = encodeBytes(abi.encodePacked(bytes32(0))); // parentBeaconBlockRoot
        f[20] = encodeBytes(abi.encodePacked(EMPTY_REQUESTS)); // requestsHash
        bytes memory payload;
        for (uint256 i; i < f.length; ++i) {
            payload = bytes.concat(payload, f[i]);
        }
        return encodeList(payload);
    }

    /// @dev The smallest header randaoOf accepts: 13 empty strings, then 0xa0 ‖ mix, in a short list (0xc0 + 46).
    function minimal(bytes32 mix) internal pure returns (bytes memory header) {
        header = abi.encodePacked(uint8(0xc0 + 46));
        for (uint256 i; i < 13; ++i) {
            header = abi.encodePacked(header, uint8(0x80));
        }
        header = abi.encodePacked(header, uint8(0xa0), mix);
    }

    /// @dev RLP of a byte string.
    function encodeBytes(bytes memory b) internal pure returns (bytes memory) {
        if (b.length == 1 && uint8(b[0]) < 0x80) return b;
        return abi.encodePacked(_prefix(0x80, b.length), b);
    }

    /// @dev RLP of an integer: its big-endian bytes without leading zeros (0 is the empty string).
    function encodeUint(uint256 v) internal pure returns (bytes memory) {
        return encodeBytes(_bigEndian(v));
    }

    /// @dev RLP of a list whose items' encodings, concatenated, are `payload`.
    function encodeList(bytes memory payload) internal pure returns (bytes memory) {
        return abi.encodePacked(_prefix(0xc0, payload.length), payload);
    }

    function _prefix(uint8 base, uint256 length) private pure returns (bytes memory) {
        if (length <= 55) return abi.encodePacked(uint8(base + length));
        bytes memory lengthBytes = _bigEndian(length);
        return abi.encodePacked(uint8(base + 55 + lengthBytes.length), lengthBytes);
    }

    function _bigEndian(uint256 v) private pure returns (bytes memory out) {
        uint256 n;
        for (uint256 x = v; x != 0; x >>= 8) {
            ++n;
        }
        out = new bytes(n);
        for (uint256 i; i < n; ++i) {
            out[n - 1 - i] = bytes1(uint8(v >> (8 * i)));
        }
    }
}
