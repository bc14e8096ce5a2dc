// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Vm} from "forge-std/Vm.sol";
import {Disputes} from "../src/Disputes.sol";
import {JurorRegistry} from "../src/JurorRegistry.sol";
import {ModelShares} from "../src/ModelShares.sol";
import {RunRegistry} from "../src/RunRegistry.sol";
import {StakeManager} from "../src/StakeManager.sol";
import {Verification} from "../src/Verification.sol";
import {IJurorRegistry} from "../src/interfaces/IJurorRegistry.sol";
import {IModelShares} from "../src/interfaces/IModelShares.sol";
import {IRunRegistry} from "../src/interfaces/IRunRegistry.sol";
import {IStakeManager} from "../src/interfaces/IStakeManager.sol";
import {IVerification} from "../src/interfaces/IVerification.sol";

/// @notice The six protocol contracts of one deployment.
struct Protocol {
    StakeManager stakeManager;
    RunRegistry runRegistry;
    Verification verification;
    Disputes disputes;
    ModelShares modelShares;
    JurorRegistry jurorRegistry;
}

/// @title ProtocolDeployer
/// @notice Deploys the protocol in a fixed order with each contract's peers as immutables. The peers'
///         addresses are predicted from the deployer's nonce (CREATE: keccak256(rlp(deployer, nonce))), so
///         there is no initializer and no proxy. Used by the tests and by script/Deploy.s.sol.
library ProtocolDeployer {
    Vm private constant VM = Vm(address(uint160(uint256(keccak256("hevm cheat code")))));

    error DeploymentMismatch(string which, address expected, address deployed);

    /// @notice Deploy StakeManager, RunRegistry, Verification, Disputes, ModelShares, JurorRegistry (in that order)
    ///         from `deployer`, which must be the account whose next six CREATE nonces these deployments use.
    /// @param deployer The account sending the deployments (the test contract, or the broadcaster).
    /// @param unbondingDelay StakeManager's unbonding delay (seconds).
    function deploy(address deployer, uint256 unbondingDelay) internal returns (Protocol memory p) {
        // at[i]: the address of the i-th deployment (StakeManager, RunRegistry, Verification, Disputes, ModelShares,
        // JurorRegistry); an array rather than six locals keeps the constructor calls within the stack limit
        address[6] memory at;
        uint64 nonce = VM.getNonce(deployer);
        for (uint256 i; i < 6; ++i) {
            at[i] = VM.computeCreateAddress(deployer, nonce + i);
        }
        p.stakeManager = new StakeManager(unbondingDelay, at[1], at[2], at[3], at[5]);
        p.runRegistry = new RunRegistry(IStakeManager(at[0]), IVerification(at[2]), at[3], IModelShares(at[4]));
        p.verification = new Verification(IStakeManager(at[0]), IRunRegistry(at[1]), at[3], IModelShares(at[4]));
        p.disputes = new Disputes(
            IStakeManager(at[0]), IRunRegistry(at[1]), IVerification(at[2]), IModelShares(at[4]), IJurorRegistry(at[5])
        );
        p.modelShares = new ModelShares(at[1], at[2], at[3]);
        p.jurorRegistry = new JurorRegistry(IStakeManager(at[0]));
        _check("StakeManager", at[0], address(p.stakeManager));
        _check("RunRegistry", at[1], address(p.runRegistry));
        _check("Verification", at[2], address(p.verification));
        _check("Disputes", at[3], address(p.disputes));
        _check("ModelShares", at[4], address(p.modelShares));
        _check("JurorRegistry", at[5], address(p.jurorRegistry));
    }

    function _check(string memory which, address expected, address deployed) private pure {
        if (expected != deployed) revert DeploymentMismatch(which, expected, deployed);
    }
}
