// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @notice The Merkle tree of protocol.merkle (sorted-pair keccak256, odd levels promote their last node),
///         for building commitments inside forge tests.
library TestMerkle {
    function root(bytes32[] memory leaves) internal pure returns (bytes32) {
        bytes32[] memory level = leaves;
        while (level.length > 1) {
            level = _up(level);
        }
        return level[0];
    }

    function proof(bytes32[] memory leaves, uint256 index) internal pure returns (bytes32[] memory out) {
        bytes32[] memory level = leaves;
        bytes32[] memory buffer = new bytes32[](64);
        uint256 n;
        while (level.length > 1) {
            uint256 sibling = index ^ 1;
            if (sibling < level.length) buffer[n++] = level[sibling];
            level = _up(level);
            index /= 2;
        }
        out = new bytes32[](n);
        for (uint256 i; i < n; ++i) {
            out[i] = buffer[i];
        }
    }

    function _up(bytes32[] memory level) private pure returns (bytes32[] memory parents) {
        parents = new bytes32[]((level.length + 1) / 2);
        for (uint256 i; i + 1 < level.length; i += 2) {
            (bytes32 a, bytes32 b) = level[i] < level[i + 1] ? (level[i], level[i + 1]) : (level[i + 1], level[i]);
            parents[i / 2] = keccak256(abi.encodePacked(a, b));
        }
        if (level.length % 2 == 1) parents[parents.length - 1] = level[level.length - 1];
    }
}
