// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Test} from "forge-std/Test.sol";
import {BLS} from "../src/libraries/BLS.sol";
import {Constants} from "../src/Constants.sol";

/// @notice py_ecc (G2ProofOfPossession) keys, proofs of possession, signatures and aggregates verify in
///         Solidity; a wrong bitmap, message or key, or a point at infinity, fails. Vectors come from
///         `python -m tests.vectors.generate_bls` (tests/vectors/bls.json).
contract BLSVectorsTest is Test {
    string internal json;

    function setUp() public {
        json = vm.readFile(string.concat(vm.projectRoot(), "/../tests/vectors/bls.json"));
    }

    function _bytes(string memory key) internal view returns (bytes memory) {
        return vm.parseJsonBytes(json, key);
    }

    function _key(uint256 i) internal view returns (bytes memory) {
        return _bytes(string.concat(".keys[", vm.toString(i), "].publicKey"));
    }

    function _aggregateKey(uint256 bitmap) internal view returns (bytes memory agg) {
        uint256 n = vm.parseJsonUint(json, ".keyCount");
        for (uint256 i; i < n; ++i) {
            if (bitmap >> i & 1 == 0) continue;
            agg = agg.length == 0 ? _key(i) : BLS.g1Add(agg, _key(i));
        }
    }

    function test_dsts_equalConstants_succeeds() public view {
        assertEq(_bytes(".sigDst"), bytes(Constants.BLS_SIG_DST));
        assertEq(_bytes(".popDst"), bytes(Constants.BLS_POP_DST));
    }

    function test_hashToG2_pythonPoints_succeeds() public view {
        for (uint256 i; i < 3; ++i) {
            string memory base = string.concat(".hashToG2[", vm.toString(i), "]");
            bytes memory point = BLS.hashToG2(_bytes(string.concat(base, ".message")), bytes(Constants.BLS_SIG_DST));
            assertEq(point, _bytes(string.concat(base, ".point")), "hash_to_G2 differs from py_ecc");
        }
    }

    function test_compressG1_pythonCompressed_succeeds() public view {
        uint256 n = vm.parseJsonUint(json, ".keyCount");
        for (uint256 i; i < n; ++i) {
            bytes memory compressed = _bytes(string.concat(".keys[", vm.toString(i), "].compressed"));
            assertEq(BLS.compressG1(_key(i)), compressed, "compressed key differs from py_ecc");
        }
    }

    function test_verifyProofOfPossession_pythonPops_succeeds() public view {
        uint256 n = vm.parseJsonUint(json, ".keyCount");
        for (uint256 i; i < n; ++i) {
            bytes memory pop = _bytes(string.concat(".keys[", vm.toString(i), "].pop"));
            assertTrue(
                BLS.verifyProofOfPossession(_key(i), _popAccount(), pop, bytes(Constants.BLS_POP_DST)),
                "py_ecc PoP rejected"
            );
        }
    }

    function test_verifyProofOfPossession_foreignPopRejected_succeeds() public view {
        bytes memory pop1 = _bytes(".keys[1].pop");
        assertFalse(
            BLS.verifyProofOfPossession(_key(0), _popAccount(), pop1, bytes(Constants.BLS_POP_DST)),
            "foreign PoP accepted"
        );
        // A PoP is a signature under the PoP tag: it must not pass as an ordinary signature tag.
        bytes memory pop0 = _bytes(".keys[0].pop");
        assertFalse(
            BLS.verifyProofOfPossession(_key(0), _popAccount(), pop0, bytes(Constants.BLS_SIG_DST)), "PoP tag not bound"
        );
    }

    /// Finding 4 of issue 16: a proof of possession copied to another account proves nothing there.
    function test_verifyProofOfPossession_copiedToAnotherAccount_succeeds() public view {
        bytes memory pop0 = _bytes(".keys[0].pop");
        assertTrue(BLS.verifyProofOfPossession(_key(0), _popAccount(), pop0, bytes(Constants.BLS_POP_DST)));
        assertFalse(
            BLS.verifyProofOfPossession(_key(0), address(0xBEEF), pop0, bytes(Constants.BLS_POP_DST)),
            "PoP not bound to its account"
        );
    }

    function _popAccount() internal view returns (address) {
        return vm.parseJsonAddress(json, ".popAccount");
    }

    function test_verify_pythonSignature_succeeds() public view {
        bytes memory message = _bytes(".verdict.message");
        bytes memory expected = abi.encode(
            vm.parseJsonAddress(json, ".verdict.disputes"),
            vm.parseJsonUint(json, ".verdict.chainId"),
            vm.parseJsonBytes32(json, ".verdict.disputeId"),
            vm.parseJsonBool(json, ".verdict.challengerWins")
        );
        assertEq(message, expected, "verdict message encoding differs from Python");
        assertTrue(BLS.verify(_key(0), message, _bytes(".verdict.signature0"), bytes(Constants.BLS_SIG_DST)));
    }

    function test_verify_pythonAggregates_succeeds() public view {
        bytes memory message = _bytes(".verdict.message");
        uint256 count = vm.parseJsonUint(json, ".aggregateCount");
        for (uint256 a; a < count; ++a) {
            string memory base = string.concat(".aggregates[", vm.toString(a), "]");
            uint256 bitmap = vm.parseJsonUint(json, string.concat(base, ".bitmap"));
            bytes memory agg = _aggregateKey(bitmap);
            assertEq(agg, _bytes(string.concat(base, ".publicKey")), "on-chain aggregate key differs from py_ecc");
            bytes memory sig = _bytes(string.concat(base, ".signature"));
            assertTrue(BLS.verify(agg, message, sig, bytes(Constants.BLS_SIG_DST)), "py_ecc aggregate rejected");
        }
    }

    function test_verify_wrongBitmapRejected_succeeds() public view {
        bytes memory message = _bytes(".verdict.message");
        bytes memory sig = _bytes(".aggregates[0].signature"); // signed by {0,1,2}
        uint256[3] memory wrong = [uint256(0x3), 0xf, 0xb]; // {0,1}, {0,1,2,3}, {0,1,3}
        for (uint256 i; i < 3; ++i) {
            assertFalse(BLS.verify(_aggregateKey(wrong[i]), message, sig, bytes(Constants.BLS_SIG_DST)));
        }
    }

    function test_verify_wrongMessageRejected_succeeds() public view {
        bytes memory sig = _bytes(".aggregates[0].signature");
        bytes memory agg = _aggregateKey(0x7);
        bytes memory otherVerdict = abi.encode(
            vm.parseJsonAddress(json, ".verdict.disputes"),
            vm.parseJsonUint(json, ".verdict.chainId"),
            vm.parseJsonBytes32(json, ".verdict.disputeId"),
            false
        );
        assertFalse(BLS.verify(agg, otherVerdict, sig, bytes(Constants.BLS_SIG_DST)), "verdict not bound");
        bytes memory otherChain = abi.encode(
            vm.parseJsonAddress(json, ".verdict.disputes"),
            uint256(1),
            vm.parseJsonBytes32(json, ".verdict.disputeId"),
            true
        );
        assertFalse(BLS.verify(agg, otherChain, sig, bytes(Constants.BLS_SIG_DST)), "chain id not bound");
    }

    function test_verify_wrongKeyRejected_succeeds() public view {
        bytes memory message = _bytes(".verdict.message");
        bytes memory sig0 = _bytes(".verdict.signature0");
        assertFalse(BLS.verify(_key(1), message, sig0, bytes(Constants.BLS_SIG_DST)));
    }

    function test_verify_infinityKey_reverts() public {
        bytes memory message = _bytes(".verdict.message");
        bytes memory sig0 = _bytes(".verdict.signature0");
        vm.expectRevert(BLS.BlsPointAtInfinity.selector);
        this.verifyExternal(new bytes(128), message, sig0);
    }

    function test_verify_infinitySignature_reverts() public {
        bytes memory message = _bytes(".verdict.message");
        vm.expectRevert(BLS.BlsPointAtInfinity.selector);
        this.verifyExternal(_key(0), message, new bytes(256));
    }

    function test_verify_wrongLength_reverts() public {
        bytes memory message = _bytes(".verdict.message");
        vm.expectRevert(abi.encodeWithSelector(BLS.BlsInvalidLength.selector, 96, 128));
        this.verifyExternal(new bytes(96), message, _bytes(".verdict.signature0"));
    }

    function test_verify_offCurveKeyRejected_succeeds() public view {
        bytes memory key = _key(0);
        key[127] = key[127] ^ 0x01; // y changed: not on the curve, the pairing precompile rejects it
        assertFalse(
            BLS.verify(key, _bytes(".verdict.message"), _bytes(".verdict.signature0"), bytes(Constants.BLS_SIG_DST))
        );
    }

    function test_g1Negate_addsToInfinity_succeeds() public view {
        bytes memory sum = BLS.g1Add(_key(2), BLS.g1Negate(_key(2)));
        assertTrue(BLS.isInfinityG1(sum));
        assertEq(BLS.g1Negate(new bytes(128)), new bytes(128));
    }

    function verifyExternal(bytes memory key, bytes memory message, bytes memory sig) external view returns (bool) {
        return BLS.verify(key, message, sig, bytes(Constants.BLS_SIG_DST));
    }
}
