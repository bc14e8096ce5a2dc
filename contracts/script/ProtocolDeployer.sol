// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Vm} from "forge-std/Vm.sol";
import {Disputes} from "../src/Disputes.sol";
import {ModelShares} from "../src/ModelShares.sol";
import {RunRegistry} from "../src/RunRegistry.sol";
import {StakeManager} from "../src/StakeManager.sol";
import {Verification} from "../src/Verification.sol";
import {IModelShares} from "../src/interfaces/IModelShares.sol";
import {IRunRegistry} from "../src/interfaces/IRunRegistry.sol";
import {IStakeManager} from "../src/interfaces/IStakeManager.sol";
import {IVerification} from "../src/interfaces/IVerification.sol";

/// @notice The five protocol contracts of one deployment.
struct Protocol {
    StakeManager stakeManager;
    RunRegistry runRegistry;
    Verification verification;
    Disputes disputes;
    ModelShares modelShares;
}

/// @title ProtocolDeployer
/// @notice Deploys the protocol in a fixed order with each contract's peers as immutables. The peers'
///         addresses are predicted from the deployer's nonce (CREATE: keccak256(rlp(deployer, nonce))), so
///         there is no initializer and no proxy. Used by the tests and by script/Deploy.s.sol.
library ProtocolDeployer {
    Vm private constant VM = Vm(address(uint160(uint256(keccak256("hevm cheat code")))));

    error DeploymentMismatch(string which, address expected, address deployed);

    /// @notice Deploy StakeManager, RunRegistry, Verification, Disputes, ModelShares (in that order) from
    ///         `deployer`, which must be the account whose next five CREATE nonces these deployments use.
    /// @param deployer The account sending the deployments (the test contract, or the broadcaster).
    /// @param unbondingDelay StakeManager's unbonding delay (seconds).
    function deploy(address deployer, uint256 unbondingDelay) internal returns (Protocol memory p) {
        uint64 nonce = VM.getNonce(deployer);
        address stakeAddr = VM.computeCreateAddress(deployer, nonce);
        address registryAddr = VM.computeCreateAddress(deployer, nonce + 1);
        address verificationAddr = VM.computeCreateAddress(deployer, nonce + 2);
        address disputesAddr = VM.computeCreateAddress(deployer, nonce + 3);
        address sharesAddr = VM.computeCreateAddress(deployer, nonce + 4);
        p.stakeManager = new StakeManager(unbondingDelay, registryAddr, verificationAddr, disputesAddr);
        p.runRegistry = new RunRegistry(
            IStakeManager(stakeAddr), IVerification(verificationAddr), disputesAddr, IModelShares(sharesAddr)
        );
        p.verification = new Verification(
            IStakeManager(stakeAddr), IRunRegistry(registryAddr), disputesAddr, IModelShares(sharesAddr)
        );
        p.disputes = new Disputes(
            IStakeManager(stakeAddr),
            IRunRegistry(registryAddr),
            IVerification(verificationAddr),
            IModelShares(sharesAddr)
        );
        p.modelShares = new ModelShares(registryAddr, verificationAddr, disputesAddr);
        _check("StakeManager", stakeAddr, address(p.stakeManager));
        _check("RunRegistry", registryAddr, address(p.runRegistry));
        _check("Verification", verificationAddr, address(p.verification));
        _check("Disputes", disputesAddr, address(p.disputes));
        _check("ModelShares", sharesAddr, address(p.modelShares));
    }

    function _check(string memory which, address expected, address deployed) private pure {
        if (expected != deployed) revert DeploymentMismatch(which, expected, deployed);
    }
}
