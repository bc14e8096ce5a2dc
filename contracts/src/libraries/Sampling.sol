// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Constants} from "../Constants.sol";

/// @title Sampling
/// @notice Sampling seeds, seat sub-seeds and sampled segments; equal to `protocol.sampling` (tests/vectors).
/// @dev The seed uses the hash of a block mined after the commit, so the solver cannot know
///      at commit time which segments will be replayed. Each verifier seat q of a commitment has its own
///      sub-seed `seatSeed(seed, q)`, from which it draws its verifier (`seatIndex`: seats draw without
///      replacement, so one commitment's seats go to distinct verifiers) and its samples, with replacement,
///      independently of the other seats: a solver faking a fraction f of its segments is caught by one seat
///      with probability 1 - (1 - f)^s, and by any of `seats` seats with probability 1 - (1 - f)^(s x seats).
library Sampling {
    /// @notice Seed of a (run, round, solver) commitment.
    /// @param blockHash Hash of a block mined after the commit.
    /// @param runId The run.
    /// @param round The round.
    /// @param solver The committing solver.
    /// @return keccak256(abi.encode(blockHash, runId, round, solver)).
    function seed(bytes32 blockHash, uint256 runId, uint64 round, address solver) internal pure returns (bytes32) {
        return keccak256(abi.encode(blockHash, runId, round, solver));
    }

    /// @notice Sub-seed of verifier seat `slot` of a commitment: the seat's verifier is draw
    ///         VERIFIER_DRAW_INDEX of it and its sampled segments are draws 0 .. s-1 of it.
    /// @param commitmentSeed The commitment's seed (`seed`).
    /// @param slot The seat.
    /// @return keccak256(abi.encode(bytes32 SEAT_SEED_TAG, bytes32 commitmentSeed, uint256 slot)).
    function seatSeed(bytes32 commitmentSeed, uint256 slot) internal pure returns (bytes32) {
        return keccak256(abi.encode(Constants.SEAT_SEED_TAG, commitmentSeed, slot));
    }

    /// @notice Index in the verifier list (of `count` entries) of the verifier of seat `slot` of a commitment:
    ///         seat q draws r_q = sample(seatSeed(seed, q), VERIFIER_DRAW_INDEX, count - q) and takes the r_q-th
    ///         index not held by seats 0 .. q-1 (a uniform draw without replacement, from the seat's own sub-seed).
    /// @dev Requires slot < count. Bounded: slot < MAX_VERIFIERS_PER_COMMITMENT (8) seats, each compared with
    ///      at most 7 earlier ones.
    /// @param commitmentSeed The commitment's seed (`seed`).
    /// @param slot The seat.
    /// @param count Entries of the verifier list the round's seats are drawn from.
    /// @return index The seat's verifier index.
    function seatIndex(bytes32 commitmentSeed, uint256 slot, uint256 count) internal pure returns (uint256 index) {
        uint256[] memory used = new uint256[](slot); // indices of seats 0 .. q-1, kept sorted ascending
        // INVARIANT: bounded: slot < MAX_VERIFIERS_PER_COMMITMENT, checked by every caller (SeatVoid).
        for (uint256 q; q <= slot; ++q) {
            index = sample(seatSeed(commitmentSeed, q), Constants.VERIFIER_DRAW_INDEX, count - q);
            uint256 at;
            for (; at < q && used[at] <= index; ++at) {
                ++index; // skip every index an earlier seat holds (used is sorted, so index only grows)
            }
            if (q == slot) return index;
            for (uint256 i = q; i > at; --i) {
                used[i] = used[i - 1];
            }
            used[at] = index;
        }
    }

    /// @notice The `sampleIndex`-th draw in [0, modulus) from `seed_`.
    /// @param seed_ The sampling seed.
    /// @param sampleIndex Which draw.
    /// @param modulus Size of the range (must be non-zero).
    /// @return uint256(keccak256(abi.encode(seed_, sampleIndex))) % modulus.
    function sample(bytes32 seed_, uint256 sampleIndex, uint256 modulus) internal pure returns (uint256) {
        return uint256(keccak256(abi.encode(seed_, sampleIndex))) % modulus;
    }
}
