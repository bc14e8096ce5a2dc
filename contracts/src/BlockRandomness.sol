// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {IBlockRandomness} from "./interfaces/IBlockRandomness.sol";

/// @title BlockRandomness
/// @notice A recent block's RANDAO value, read from its RLP-encoded header once the header is proven by `blockhash`.
///         Verification.drawSeed takes each round's seed from it (and Plants the same value): whoever builds the seed
///         block can grind its hash (transactions, extraData, timestamp) but not its RANDAO value, which the beacon
///         chain fixed before the block was built. What is left is withholding the block: one re-roll
///         (docs/economics.md, "What still pays").
/// @dev Stateless, holds nothing. The header is trusted only because keccak256(header) == blockhash(blockNumber), so
///      the RLP walk below locates a field of a real header rather than validating one; it is still strict (every
///      length must fit the list, every field before mixHash must be a string, mixHash must be a 32-byte string) so
///      that no input reads past its end or past a field. Bounded: exactly FIELDS_BEFORE_MIX fields are skipped,
///      each length has at most 8 bytes. The fields after mixHash (nonce, baseFeePerGas, withdrawalsRoot, blob gas,
///      parentBeaconBlockRoot, requestsHash, ...) are not read, so later forks that append fields change nothing.
contract BlockRandomness is IBlockRandomness {
    /// @dev Header fields before mixHash: parentHash, ommersHash, coinbase, stateRoot, transactionsRoot,
    ///      receiptsRoot, logsBloom, difficulty, number, gasLimit, gasUsed, timestamp, extraData.
    uint256 internal constant FIELDS_BEFORE_MIX = 13;
    /// @dev RLP prefix of a 32-byte string (0x80 + 32).
    uint8 internal constant BYTES32_PREFIX = 0xa0;
    /// @dev RLP prefixes: below SHORT_STRING a byte is its own encoding; SHORT_STRING + n (n <= 55) a string of n
    ///      bytes; LONG_STRING + k (k <= 8) a string whose length takes k bytes; from LIST on, lists likewise.
    uint8 internal constant SHORT_STRING = 0x80;
    uint8 internal constant LONG_STRING = 0xb7;
    uint8 internal constant LIST = 0xc0;
    uint8 internal constant LONG_LIST = 0xf7;

    /// @notice blockhash(blockNumber) is 0: the block is the current one, in the future, or more than 256 blocks
    ///         back (the EVM serves no older hash, so its header can no longer be proven).
    error BlockHashUnavailable(uint256 blockNumber);
    /// @notice The header given is not block `blockNumber`'s: keccak256(header) is `got`, its hash is `expected`.
    error HeaderMismatch(uint256 blockNumber, bytes32 expected, bytes32 got);
    /// @notice The header is not an RLP list whose 14th item is a 32-byte string: the item (or length) at byte
    ///         `offset` is of another kind, or runs past the end.
    error MalformedHeader(uint256 offset);

    /// @inheritdoc IBlockRandomness
    function randaoOf(uint256 blockNumber, bytes calldata header) external view returns (bytes32 randao) {
        bytes32 expected = blockhash(blockNumber);
        if (expected == bytes32(0)) revert BlockHashUnavailable(blockNumber);
        bytes32 got = keccak256(header);
        if (got != expected) revert HeaderMismatch(blockNumber, expected, got);
        uint256 offset = _listPayload(header);
        uint256 end = header.length;
        for (uint256 i; i < FIELDS_BEFORE_MIX; ++i) {
            offset = _skipString(header, offset, end);
        }
        if (offset + 33 > end || uint8(header[offset]) != BYTES32_PREFIX) revert MalformedHeader(offset);
        randao = bytes32(header[offset + 1:offset + 33]);
    }

    /// @dev The offset of the first item of the list `header` is, which must span exactly the whole of `header`.
    function _listPayload(bytes calldata header) private pure returns (uint256 start) {
        uint256 length = header.length;
        if (length == 0) revert MalformedHeader(0);
        uint8 prefix = uint8(header[0]);
        if (prefix < LIST) revert MalformedHeader(0);
        uint256 payload;
        if (prefix <= LONG_LIST) {
            start = 1;
            payload = prefix - LIST;
        } else {
            uint256 lengthBytes = prefix - LONG_LIST; // 1 .. 8
            start = 1 + lengthBytes;
            if (start > length) revert MalformedHeader(0);
            payload = _readLength(header, 1, lengthBytes);
        }
        if (start + payload != length) revert MalformedHeader(0);
    }

    /// @dev The offset just past the string item at `offset` (a list item, or one running past `end`, is malformed).
    function _skipString(bytes calldata header, uint256 offset, uint256 end) private pure returns (uint256 next) {
        if (offset >= end) revert MalformedHeader(offset);
        uint8 prefix = uint8(header[offset]);
        if (prefix < SHORT_STRING) {
            next = offset + 1;
        } else if (prefix <= LONG_STRING) {
            next = offset + 1 + (prefix - SHORT_STRING);
        } else if (prefix < LIST) {
            uint256 lengthBytes = prefix - LONG_STRING; // 1 .. 8
            if (offset + 1 + lengthBytes > end) revert MalformedHeader(offset);
            next = offset + 1 + lengthBytes + _readLength(header, offset + 1, lengthBytes);
        } else {
            revert MalformedHeader(offset); // no header field before mixHash is a list
        }
        if (next > end) revert MalformedHeader(offset);
    }

    /// @dev The big-endian integer in header[start : start + count] (count <= 8, in bounds: checked by the callers).
    function _readLength(bytes calldata header, uint256 start, uint256 count) private pure returns (uint256 value) {
        for (uint256 i; i < count; ++i) {
            value = (value << 8) | uint8(header[start + i]);
        }
    }
}
