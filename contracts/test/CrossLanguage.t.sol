// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";
import {Constants} from "../src/Constants.sol";
import {SegmentLeaf} from "../src/libraries/SegmentLeaf.sol";
import {Planting} from "../src/libraries/Planting.sol";
import {Sampling} from "../src/libraries/Sampling.sol";

/// @notice Checks that Solidity computes exactly what the Python protocol computes, from the
///         vectors that `python -m tests.vectors.generate` writes into tests/vectors/.
contract CrossLanguageTest is Test {
    string internal merkleJson;
    string internal samplingJson;
    string internal plantingJson;

    function setUp() public {
        merkleJson = vm.readFile(string.concat(vm.projectRoot(), "/../tests/vectors/merkle.json"));
        samplingJson = vm.readFile(string.concat(vm.projectRoot(), "/../tests/vectors/sampling.json"));
        plantingJson = vm.readFile(string.concat(vm.projectRoot(), "/../tests/vectors/planting.json"));
    }

    /// @dev Each of Python's round secrets hashes to the previous one, the first to the anchor.
    function test_next_pythonSecretChain_succeeds() public view {
        bytes32[] memory secrets = vm.parseJsonBytes32Array(plantingJson, ".secrets");
        bytes32 previous = vm.parseJsonBytes32(plantingJson, ".anchor");
        for (uint256 r; r < secrets.length; ++r) {
            assertEq(Planting.next(secrets[r]), previous, "a secret does not hash to the previous link");
            previous = secrets[r];
        }
    }

    function test_draw_pythonPlantDraws_succeeds() public view {
        uint256 n = vm.parseJsonUint(plantingJson, ".drawCount");
        for (uint256 i; i < n; ++i) {
            string memory base = string.concat(".draws[", vm.toString(i), "]");
            uint256 drawn = Planting.draw(
                vm.parseJsonBytes32(plantingJson, string.concat(base, ".secret")),
                vm.parseJsonUint(plantingJson, string.concat(base, ".runId")),
                uint64(vm.parseJsonUint(plantingJson, string.concat(base, ".round"))),
                vm.parseJsonAddress(plantingJson, string.concat(base, ".solver")),
                vm.parseJsonBytes32(plantingJson, string.concat(base, ".previousSeedBase"))
            );
            assertEq(drawn, vm.parseJsonUint(plantingJson, string.concat(base, ".draw")), "plant draw differs");
        }
    }

    function _leaf(string memory base) internal view returns (SegmentLeaf.Leaf memory leaf) {
        leaf.runId = vm.parseJsonUint(merkleJson, string.concat(base, ".runId"));
        leaf.round = uint64(vm.parseJsonUint(merkleJson, string.concat(base, ".round")));
        leaf.solver = vm.parseJsonAddress(merkleJson, string.concat(base, ".solver"));
        leaf.index = uint32(vm.parseJsonUint(merkleJson, string.concat(base, ".index")));
        leaf.startHash = vm.parseJsonBytes32(merkleJson, string.concat(base, ".startHash"));
        leaf.endHash = vm.parseJsonBytes32(merkleJson, string.concat(base, ".endHash"));
        leaf.sketchHash = vm.parseJsonBytes32(merkleJson, string.concat(base, ".sketchHash"));
        leaf.tokens = uint64(vm.parseJsonUint(merkleJson, string.concat(base, ".tokens")));
    }

    function _proof(string memory tree, uint256 i) internal view returns (bytes32[] memory) {
        return vm.parseJsonBytes32Array(merkleJson, string.concat(tree, ".proofs[", vm.toString(i), "]"));
    }

    function test_hash_pythonLeaves_succeeds() public view {
        uint256 trees = vm.parseJsonUint(merkleJson, ".treeCount");
        for (uint256 t; t < trees; ++t) {
            string memory tree = string.concat(".trees[", vm.toString(t), "]");
            uint256 count = vm.parseJsonUint(merkleJson, string.concat(tree, ".count"));
            for (uint256 i; i < count; ++i) {
                SegmentLeaf.Leaf memory leaf = _leaf(string.concat(tree, ".leaves[", vm.toString(i), "]"));
                bytes32 expected =
                    vm.parseJsonBytes32(merkleJson, string.concat(tree, ".leafHashes[", vm.toString(i), "]"));
                assertEq(SegmentLeaf.hash(leaf), expected, "leaf hash differs from Python");
            }
        }
    }

    function test_verify_pythonProofs_succeeds() public view {
        uint256 trees = vm.parseJsonUint(merkleJson, ".treeCount");
        for (uint256 t; t < trees; ++t) {
            string memory tree = string.concat(".trees[", vm.toString(t), "]");
            uint256 count = vm.parseJsonUint(merkleJson, string.concat(tree, ".count"));
            bytes32 root = vm.parseJsonBytes32(merkleJson, string.concat(tree, ".root"));
            for (uint256 i; i < count; ++i) {
                SegmentLeaf.Leaf memory leaf = _leaf(string.concat(tree, ".leaves[", vm.toString(i), "]"));
                assertTrue(SegmentLeaf.verify(_proof(tree, i), root, leaf), "Python proof rejected");
            }
        }
    }

    function test_verify_tamperedLeafRejected_succeeds() public view {
        // Every field of a leaf is bound: changing any one must break the proof.
        string memory tree = ".trees[3]";
        bytes32 root = vm.parseJsonBytes32(merkleJson, string.concat(tree, ".root"));
        bytes32[] memory proof = _proof(tree, 2);
        SegmentLeaf.Leaf memory leaf = _leaf(string.concat(tree, ".leaves[2]"));
        assertTrue(SegmentLeaf.verify(proof, root, leaf));
        for (uint256 field; field < 8; ++field) {
            SegmentLeaf.Leaf memory bad = _leaf(string.concat(tree, ".leaves[2]"));
            if (field == 0) bad.runId += 1;
            if (field == 1) bad.round += 1;
            if (field == 2) bad.solver = address(uint160(bad.solver) ^ 1);
            if (field == 3) bad.index += 1;
            if (field == 4) bad.startHash ^= bytes32(uint256(1));
            if (field == 5) bad.endHash ^= bytes32(uint256(1));
            if (field == 6) bad.sketchHash ^= bytes32(uint256(1));
            if (field == 7) bad.tokens += 1;
            assertFalse(SegmentLeaf.verify(proof, root, bad), "tampered leaf accepted");
        }
    }

    function test_sample_pythonVectors_succeeds() public view {
        uint256 cases = vm.parseJsonUint(samplingJson, ".caseCount");
        for (uint256 c; c < cases; ++c) {
            string memory base = string.concat(".cases[", vm.toString(c), "]");
            bytes32 seed = Sampling.seed(
                vm.parseJsonBytes32(samplingJson, string.concat(base, ".blockHash")),
                vm.parseJsonUint(samplingJson, string.concat(base, ".runId")),
                uint64(vm.parseJsonUint(samplingJson, string.concat(base, ".round"))),
                vm.parseJsonAddress(samplingJson, string.concat(base, ".solver"))
            );
            assertEq(seed, vm.parseJsonBytes32(samplingJson, string.concat(base, ".seed")), "seed differs");
            uint256 n = vm.parseJsonUint(samplingJson, string.concat(base, ".numSegments"));
            uint256[] memory expected = vm.parseJsonUintArray(samplingJson, string.concat(base, ".samples"));
            for (uint256 j; j < expected.length; ++j) {
                assertEq(Sampling.sample(seed, j, n), expected[j], "sample differs");
            }
        }
    }

    function test_seatSeed_pythonVectors_succeeds() public view {
        uint256 cases = vm.parseJsonUint(samplingJson, ".seatCaseCount");
        assertGt(cases, 0, "no seat vectors");
        for (uint256 c; c < cases; ++c) {
            string memory base = string.concat(".seatCases[", vm.toString(c), "]");
            bytes32 seed = Sampling.seed(
                vm.parseJsonBytes32(samplingJson, string.concat(base, ".blockHash")),
                vm.parseJsonUint(samplingJson, string.concat(base, ".runId")),
                uint64(vm.parseJsonUint(samplingJson, string.concat(base, ".round"))),
                vm.parseJsonAddress(samplingJson, string.concat(base, ".solver"))
            );
            assertEq(seed, vm.parseJsonBytes32(samplingJson, string.concat(base, ".seed")), "seed differs");
            bytes32 seatSeed = Sampling.seatSeed(seed, vm.parseJsonUint(samplingJson, string.concat(base, ".slot")));
            assertEq(seatSeed, vm.parseJsonBytes32(samplingJson, string.concat(base, ".seatSeed")), "seat seed differs");
            uint256[] memory counts = vm.parseJsonUintArray(samplingJson, string.concat(base, ".verifierCounts"));
            uint256[] memory indices = vm.parseJsonUintArray(samplingJson, string.concat(base, ".verifierIndices"));
            assertEq(counts.length, indices.length);
            uint256 slot = vm.parseJsonUint(samplingJson, string.concat(base, ".slot"));
            for (uint256 i; i < counts.length; ++i) {
                if (slot >= counts[i]) continue; // the list is too short for this seat
                assertEq(Sampling.seatIndex(seed, slot, counts[i]), indices[i], "seat verifier index differs");
            }
            uint256 n = vm.parseJsonUint(samplingJson, string.concat(base, ".numSegments"));
            uint256[] memory expected = vm.parseJsonUintArray(samplingJson, string.concat(base, ".samples"));
            for (uint256 j; j < expected.length; ++j) {
                assertEq(Sampling.sample(seatSeed, j, n), expected[j], "seat sample differs");
            }
        }
    }
}
