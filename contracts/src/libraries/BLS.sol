// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

/// @title BLS
/// @notice BLS12-381 signatures of py_ecc's `G2ProofOfPossession` scheme, verified with the EIP-2537
///         precompiles: public keys in G1, signatures in G2, messages hashed to G2 per RFC 9380
///         (expand_message_xmd with SHA-256, hash_to_field, MAP_FP2_TO_G2 twice, G2ADD).
/// @dev Points use EIP-2537's uncompressed encoding: an Fp element is 64 bytes big-endian (16 zero
///      bytes, then 48 bytes); G1 = x || y (128 bytes); Fp2 = c0 (real part) || c1 (256 bytes for a
///      G2 point x || y). The pairing precompile checks that every input point is on the curve and
///      in the prime-order subgroup; points at infinity are rejected here before any check.
///      Cross-tested against py_ecc through tests/vectors/bls.json (test/BLSVectors.t.sol).
library BLS {
    /// @notice A point does not have its encoded length.
    error BlsInvalidLength(uint256 length, uint256 expected);
    /// @notice A public key, signature or aggregate is the point at infinity.
    error BlsPointAtInfinity();
    /// @notice A precompile rejected its input (off-curve point, non-canonical field element).
    error BlsPrecompileFailed(address precompile);

    address internal constant MODEXP = address(0x05);
    address internal constant G1ADD = address(0x0b);
    address internal constant G2ADD = address(0x0d);
    address internal constant PAIRING_CHECK = address(0x0f);
    address internal constant MAP_FP2_TO_G2 = address(0x11);

    uint256 internal constant G1_LENGTH = 128;
    uint256 internal constant G2_LENGTH = 256;

    // The field modulus p as two 256-bit limbs of its 64-byte encoding, and (p - 1) / 2.
    uint256 private constant P_HI = 0x000000000000000000000000000000001a0111ea397fe69a4b1ba7b6434bacd7;
    uint256 private constant P_LO = 0x64774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab;
    uint256 private constant HALF_P_HI = 0x000000000000000000000000000000000d0088f51cbff34d258dd3db21a5d66b;
    uint256 private constant HALF_P_LO = 0xb23ba5c279c2895fb39869507b587b120f55ffff58a9ffffdcff7fffffffd555;

    // -G1 generator (x, p - y), the left half of every verification pairing.
    uint256 private constant NEG_G1_X_HI = 0x0000000000000000000000000000000017f1d3a73197d7942695638c4fa9ac0f;
    uint256 private constant NEG_G1_X_LO = 0xc3688c4f9774b905a14e3a3f171bac586c55e83ff97a1aeffb3af00adb22c6bb;
    uint256 private constant NEG_G1_Y_HI = 0x00000000000000000000000000000000114d1d6855d545a8aa7d76c8cf2e21f2;
    uint256 private constant NEG_G1_Y_LO = 0x67816aef1db507c96655b9d5caac42364e6f38ba0ecb751bad54dcd6b939c2ca;

    /// @notice Whether `signature` is a valid signature of `message` under `publicKey` (tag `dst`).
    /// @dev Checks e(pk, H(m)) * e(-g1, sig) == 1. Reverts on points at infinity or wrong lengths;
    ///      returns false for anything the pairing precompile rejects (e.g. a point off the subgroup).
    /// @param publicKey G1 point (128 bytes), an aggregate of public keys for aggregate signatures.
    /// @param message The signed bytes.
    /// @param signature G2 point (256 bytes).
    /// @param dst Domain separation tag.
    /// @return True when the pairing equation holds.
    function verify(bytes memory publicKey, bytes memory message, bytes memory signature, bytes memory dst)
        internal
        view
        returns (bool)
    {
        requireG1(publicKey);
        requireG2(signature);
        bytes memory input = bytes.concat(
            publicKey,
            hashToG2(message, dst),
            abi.encodePacked(NEG_G1_X_HI, NEG_G1_X_LO, NEG_G1_Y_HI, NEG_G1_Y_LO),
            signature
        );
        (bool ok, bytes memory out) = PAIRING_CHECK.staticcall(input);
        return ok && out.length == 32 && abi.decode(out, (uint256)) == 1;
    }

    /// @notice Whether `proof` proves that `account` holds the key behind `publicKey`: a signature with the
    ///         PoP tag of abi.encodePacked(account, 48-byte compressed key) (protocol.bls.compute_pop_message),
    ///         so a proof copied from another account proves nothing.
    /// @param publicKey G1 point (128 bytes).
    /// @param account The registering account.
    /// @param proof G2 point (256 bytes).
    /// @param popDst The proof-of-possession domain separation tag.
    /// @return True when the proof verifies.
    function verifyProofOfPossession(bytes memory publicKey, address account, bytes memory proof, bytes memory popDst)
        internal
        view
        returns (bool)
    {
        requireG1(publicKey);
        return verify(publicKey, abi.encodePacked(account, compressG1(publicKey)), proof, popDst);
    }

    /// @notice RFC 9380 hash_to_curve for G2 (random oracle variant): two field elements, each mapped
    ///         by the MAP_FP2_TO_G2 precompile (which clears the cofactor), then added.
    /// @param message The message.
    /// @param dst Domain separation tag (at most 255 bytes).
    /// @return The G2 point (256 bytes).
    function hashToG2(bytes memory message, bytes memory dst) internal view returns (bytes memory) {
        bytes32[8] memory uniform = expandMessageXmd(message, dst);
        bytes memory q0 = _call(
            MAP_FP2_TO_G2, bytes.concat(_fieldElement(uniform[0], uniform[1]), _fieldElement(uniform[2], uniform[3]))
        );
        bytes memory q1 = _call(
            MAP_FP2_TO_G2, bytes.concat(_fieldElement(uniform[4], uniform[5]), _fieldElement(uniform[6], uniform[7]))
        );
        return _call(G2ADD, bytes.concat(q0, q1));
    }

    /// @notice RFC 9380 expand_message_xmd with SHA-256, producing the 256 bytes hash_to_field needs
    ///         for two Fp2 elements (4 x 64 bytes).
    /// @param message The message.
    /// @param dst Domain separation tag (at most 255 bytes).
    /// @return uniform 256 pseudo-random bytes as the eight SHA-256 blocks b_1 .. b_8.
    function expandMessageXmd(bytes memory message, bytes memory dst)
        internal
        pure
        returns (bytes32[8] memory uniform)
    {
        bytes memory dstPrime = abi.encodePacked(dst, uint8(dst.length));
        bytes32 b0 = sha256(abi.encodePacked(bytes32(0), bytes32(0), message, uint16(256), uint8(0), dstPrime));
        uniform[0] = sha256(abi.encodePacked(b0, uint8(1), dstPrime));
        for (uint8 i = 2; i <= 8; ++i) {
            uniform[i - 1] = sha256(abi.encodePacked(b0 ^ uniform[i - 2], i, dstPrime));
        }
    }

    /// @notice Sum of two G1 points (G1ADD precompile).
    /// @param a G1 point (128 bytes).
    /// @param b G1 point (128 bytes).
    /// @return a + b.
    function g1Add(bytes memory a, bytes memory b) internal view returns (bytes memory) {
        return _call(G1ADD, bytes.concat(a, b));
    }

    /// @notice The negation (x, p - y) of a G1 point; infinity stays infinity.
    /// @param point G1 point (128 bytes) with canonical coordinates.
    /// @return The negated point.
    function g1Negate(bytes memory point) internal pure returns (bytes memory) {
        (uint256 xHi, uint256 xLo, uint256 yHi, uint256 yLo) = _g1Limbs(point);
        if (yHi == 0 && yLo == 0) return point;
        uint256 borrow = yLo > P_LO ? 1 : 0;
        uint256 nLo;
        unchecked {
            nLo = P_LO - yLo;
        }
        uint256 nHi = P_HI - yHi - borrow;
        return abi.encodePacked(xHi, xLo, nHi, nLo);
    }

    /// @notice The 48-byte compressed form of a G1 point (ZCash encoding, as py_ecc's `G1_to_pubkey`).
    /// @param point G1 point (128 bytes), not infinity.
    /// @return 48 bytes: x with the compression flag and the sign of y in the top bits.
    function compressG1(bytes memory point) internal pure returns (bytes memory) {
        (uint256 xHi, uint256 xLo, uint256 yHi, uint256 yLo) = _g1Limbs(point);
        bool yIsLarge = yHi > HALF_P_HI || (yHi == HALF_P_HI && yLo > HALF_P_LO);
        uint128 top = uint128(xHi) | (uint128(yIsLarge ? 0xa0 : 0x80) << 120);
        return abi.encodePacked(bytes16(top), bytes32(xLo));
    }

    /// @notice Whether a G1 point is the point at infinity (all 128 bytes zero).
    /// @param point G1 point (128 bytes).
    /// @return True for infinity.
    function isInfinityG1(bytes memory point) internal pure returns (bool) {
        (uint256 a, uint256 b, uint256 c, uint256 d) = _g1Limbs(point);
        return a | b | c | d == 0;
    }

    /// @notice Whether a G2 point is the point at infinity (all 256 bytes zero).
    /// @param point G2 point (256 bytes).
    /// @return True for infinity.
    function isInfinityG2(bytes memory point) internal pure returns (bool) {
        if (point.length != G2_LENGTH) revert BlsInvalidLength(point.length, G2_LENGTH);
        (uint256[4] memory a, uint256[4] memory b) = abi.decode(point, (uint256[4], uint256[4]));
        return a[0] | a[1] | a[2] | a[3] | b[0] | b[1] | b[2] | b[3] == 0;
    }

    /// @notice Revert unless `point` is a 128-byte G1 encoding other than infinity.
    /// @param point G1 point.
    function requireG1(bytes memory point) internal pure {
        if (isInfinityG1(point)) revert BlsPointAtInfinity();
    }

    /// @notice Revert unless `point` is a 256-byte G2 encoding other than infinity.
    /// @param point G2 point.
    function requireG2(bytes memory point) internal pure {
        if (isInfinityG2(point)) revert BlsPointAtInfinity();
    }

    /// @dev One hash_to_field element: 64 uniform bytes (hi || lo) reduced mod p by the MODEXP
    ///      precompile (base^1 mod p), which returns exactly the 64-byte EIP-2537 encoding.
    function _fieldElement(bytes32 hi, bytes32 lo) private view returns (bytes memory) {
        return _call(MODEXP, abi.encodePacked(uint256(64), uint256(1), uint256(64), hi, lo, uint8(1), P_HI, P_LO));
    }

    function _g1Limbs(bytes memory point) private pure returns (uint256, uint256, uint256, uint256) {
        if (point.length != G1_LENGTH) revert BlsInvalidLength(point.length, G1_LENGTH);
        return abi.decode(point, (uint256, uint256, uint256, uint256));
    }

    function _call(address precompile, bytes memory input) private view returns (bytes memory) {
        (bool ok, bytes memory out) = precompile.staticcall(input);
        if (!ok || out.length == 0) revert BlsPrecompileFailed(precompile);
        return out;
    }
}
