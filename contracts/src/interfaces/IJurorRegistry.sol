// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @notice What Disputes uses of the JurorRegistry: the registry as it was in a past block.
interface IJurorRegistry {
    /// @notice Active jurors in block `blockNumber`.
    /// @param blockNumber The snapshot block.
    /// @return The list size then.
    function sizeAt(uint256 blockNumber) external view returns (uint256);

    /// @notice The juror of pool seat `seat` for `seed` among `count` seats, from the registry of `snapshotBlock`
    ///         (index `seat` when the registry then held at most `count` jurors, else an independent draw
    ///         keccak256(abi.encode(seed, seat)) % size), with its key hash; zero values if the seat is empty.
    /// @param seed The jury seed.
    /// @param seat The pool seat.
    /// @param count The pool size asked for.
    /// @param snapshotBlock The snapshot block.
    /// @return juror The juror.
    /// @return keyHash keccak256 of its registered key.
    function seatOf(bytes32 seed, uint256 seat, uint256 count, uint256 snapshotBlock)
        external
        view
        returns (address juror, bytes32 keyHash);

    /// @notice Every pool seat: min(count, size at the snapshot) seats, as `seatOf` gives them.
    /// @param seed The jury seed.
    /// @param count The pool size asked for (at most MAX_JURY_SIZE + JURY_PARTY_SLACK).
    /// @param snapshotBlock The snapshot block.
    /// @return accounts The seats' jurors.
    /// @return keyHashes Their key hashes.
    function drawPool(bytes32 seed, uint256 count, uint256 snapshotBlock)
        external
        view
        returns (address[] memory accounts, bytes32[] memory keyHashes);
}
