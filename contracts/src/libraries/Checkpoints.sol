// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @title Checkpoints
/// @notice A value's history by block: what it was at the end of any past block. The registries keep one per
///         list index and one for the list size, so a jury or a round's verifier seats can be drawn from the
///         list as it was in a block fixed before the seed existed (registering or leaving later moves no seat).
/// @dev The latest checkpoint sits in its own slot, so the usual read -- a snapshot taken after the index last
///      changed -- costs one SLOAD; older checkpoints go to `past` (oldest first) and are found by binary search.
///      A block writes one checkpoint per trace: a second write in the same block overwrites the first.
library Checkpoints {
    /// @notice A value from block `fromBlock` on.
    struct Checkpoint {
        uint64 fromBlock;
        uint192 value;
    }

    /// @notice The latest checkpoint (fromBlock 0: never written) and the ones it replaced.
    struct Trace {
        Checkpoint latest;
        Checkpoint[] past;
    }

    /// @notice Set the value from this block on.
    /// @param t The trace.
    /// @param value The new value (< 2^192).
    function push(Trace storage t, uint256 value) internal {
        Checkpoint memory last = t.latest;
        // INVARIANT: fromBlock strictly increases along past ++ [latest]: valueAt's binary search relies on it.
        if (last.fromBlock != 0 && last.fromBlock != block.number) t.past.push(last);
        t.latest = Checkpoint({fromBlock: uint64(block.number), value: uint192(value)});
    }

    /// @notice The current value (0 if never written).
    /// @param t The trace.
    /// @return The value.
    function latestValue(Trace storage t) internal view returns (uint256) {
        return t.latest.value;
    }

    /// @notice The value at the end of block `blockNumber`: the last checkpoint written in a block <= it (0 before
    ///         the first).
    /// @param t The trace.
    /// @param blockNumber The block.
    /// @return The value.
    function valueAt(Trace storage t, uint256 blockNumber) internal view returns (uint256) {
        Checkpoint memory last = t.latest;
        if (last.fromBlock <= blockNumber) return last.value;
        Checkpoint[] storage h = t.past;
        uint256 hi = h.length;
        if (hi == 0 || h[0].fromBlock > blockNumber) return 0;
        uint256 lo;
        // INVARIANT: bounded: binary search, log2(history length) passes; h[lo].fromBlock <= blockNumber < h[hi].
        while (hi - lo > 1) {
            uint256 mid = (lo + hi) / 2;
            if (h[mid].fromBlock <= blockNumber) lo = mid;
            else hi = mid;
        }
        return h[lo].value;
    }
}
