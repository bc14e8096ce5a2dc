// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {BLS} from "../../src/libraries/BLS.sol";
import {Constants} from "../../src/Constants.sol";

/// @notice BLS keys and signatures for forge tests, made with the EIP-2537 MSM precompiles (the same scheme
///         as py_ecc's G2ProofOfPossession: pk = sk * g1, sig = sk * H(m)). Test-only: secret keys are plain
///         scalars here. Cross-language agreement is tested separately (BLSVectors.t.sol).
library TestBLS {
    address internal constant G1MSM = address(0x0c);
    address internal constant G2ADD = address(0x0d);
    address internal constant G2MSM = address(0x0e);

    bytes internal constant G1_GENERATOR =
        hex"0000000000000000000000000000000017f1d3a73197d7942695638c4fa9ac0fc3688c4f9774b905a14e3a3f171bac586c55e83ff97a1aeffb3af00adb22c6bb0000000000000000000000000000000008b3f481e3aaa0f1a09e30ed741d8ae4fcf5e095d5d00af600db18cb2c04b3edd03cc744a2888ae40caa232946c5e7e1";

    function publicKey(uint256 sk) internal view returns (bytes memory) {
        return _call(G1MSM, abi.encodePacked(G1_GENERATOR, sk));
    }

    function sign(uint256 sk, bytes memory message) internal view returns (bytes memory) {
        return _call(G2MSM, abi.encodePacked(BLS.hashToG2(message, bytes(Constants.BLS_SIG_DST)), sk));
    }

    function proofOfPossession(uint256 sk, address account) internal view returns (bytes memory) {
        bytes memory message = abi.encodePacked(account, BLS.compressG1(publicKey(sk)));
        return _call(G2MSM, abi.encodePacked(BLS.hashToG2(message, bytes(Constants.BLS_POP_DST)), sk));
    }

    function addG2(bytes memory a, bytes memory b) internal view returns (bytes memory) {
        if (a.length == 0) return b;
        return _call(G2ADD, bytes.concat(a, b));
    }

    function _call(address precompile, bytes memory input) private view returns (bytes memory out) {
        bool ok;
        (ok, out) = precompile.staticcall(input);
        require(ok && out.length > 0, "TestBLS: precompile failed");
    }
}
