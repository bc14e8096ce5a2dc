// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {MerkleProof} from "@openzeppelin/contracts/utils/cryptography/MerkleProof.sol";

/// @title SegmentLeaf
/// @notice Encoding of a segment leaf and proof checks against a committed segment root.
/// @dev Must equal `protocol.merkle.compute_leaf_hash` byte for byte (tests/vectors/merkle.json):
///      keccak256(bytes.concat(keccak256(abi.encode(runId, round, solver, index, startHash,
///      endHash, sketchHash, tokens)))). Double hashing keeps a leaf distinct from an inner node.
library SegmentLeaf {
    /// @notice The fields of one segment leaf (DESIGN section 3).
    struct Leaf {
        uint256 runId;
        uint64 round;
        address solver;
        uint32 index;
        bytes32 startHash;
        bytes32 endHash;
        bytes32 sketchHash;
        uint64 tokens;
    }

    /// @notice Hash of a segment leaf as it sits in the Merkle tree.
    /// @param leaf The leaf fields.
    /// @return The double keccak256 of the ABI encoding.
    function hash(Leaf memory leaf) internal pure returns (bytes32) {
        return keccak256(
            bytes.concat(
                keccak256(
                    abi.encode(
                        leaf.runId,
                        leaf.round,
                        leaf.solver,
                        leaf.index,
                        leaf.startHash,
                        leaf.endHash,
                        leaf.sketchHash,
                        leaf.tokens
                    )
                )
            )
        );
    }

    /// @notice Whether `proof` proves `leaf` under the committed `root`.
    /// @param proof Sibling hashes from the leaf up (sorted-pair keccak256 tree).
    /// @param root The committed segment root.
    /// @param leaf The leaf fields.
    /// @return True when the proof is valid.
    function verify(bytes32[] memory proof, bytes32 root, Leaf memory leaf) internal pure returns (bool) {
        return MerkleProof.verify(proof, root, hash(leaf));
    }
}
