// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @notice A recent block's RANDAO value (its header's mixHash, `block.prevrandao` inside that block), proven by
///         its RLP-encoded header against `blockhash`. Unlike the block hash, which whoever builds the block can
///         grind (transactions, extraData), the RANDAO value is fixed by the beacon chain's BLS reveals before the
///         block is built: its producer can only withhold the block, one re-roll (docs/economics.md).
interface IBlockRandomness {
    /// @notice The RANDAO value (mixHash) of block `blockNumber`, proven by its header.
    /// @dev Reverts unless `blockhash(blockNumber)` is available (one of the 256 blocks before this one) and equals
    ///      keccak256(header), and the header is an RLP list whose 14th item (mixHash) is 32 bytes.
    /// @param blockNumber The block.
    /// @param header The block's RLP-encoded header (protocol.adapters.chain: get_block_header_rlp).
    /// @return randao The header's mixHash.
    function randaoOf(uint256 blockNumber, bytes calldata header) external view returns (bytes32 randao);
}
