// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Vm} from "forge-std/Vm.sol";
import {BlockRandomness} from "../src/BlockRandomness.sol";
import {Disputes} from "../src/Disputes.sol";
import {FaultRewards} from "../src/FaultRewards.sol";
import {JurorRegistry} from "../src/JurorRegistry.sol";
import {ModelShares} from "../src/ModelShares.sol";
import {PeerDirectory} from "../src/PeerDirectory.sol";
import {Plants} from "../src/Plants.sol";
import {RunRegistry} from "../src/RunRegistry.sol";
import {StakeManager} from "../src/StakeManager.sol";
import {Verification} from "../src/Verification.sol";
import {VerifierRegistry} from "../src/VerifierRegistry.sol";
import {IFaultRewards} from "../src/interfaces/IFaultRewards.sol";
import {IJurorRegistry} from "../src/interfaces/IJurorRegistry.sol";
import {IModelShares} from "../src/interfaces/IModelShares.sol";
import {IPlants} from "../src/interfaces/IPlants.sol";
import {IRunRegistry} from "../src/interfaces/IRunRegistry.sol";
import {IStakeManager} from "../src/interfaces/IStakeManager.sol";
import {IVerification} from "../src/interfaces/IVerification.sol";
import {IVerifierRegistry} from "../src/interfaces/IVerifierRegistry.sol";
import {IBlockRandomness} from "../src/interfaces/IBlockRandomness.sol";

/// @notice The eleven protocol contracts of one deployment.
struct Protocol {
    StakeManager stakeManager;
    RunRegistry runRegistry;
    Verification verification;
    Disputes disputes;
    ModelShares modelShares;
    JurorRegistry jurorRegistry;
    FaultRewards faultRewards;
    VerifierRegistry verifierRegistry;
    Plants plants;
    PeerDirectory peerDirectory;
    BlockRandomness blockRandomness;
}

/// @title ProtocolDeployer
/// @notice Deploys the protocol in a fixed order with each contract's peers as immutables. The peers'
///         addresses are predicted from the deployer's nonce (CREATE: keccak256(rlp(deployer, nonce))), so
///         there is no initializer and no proxy. Used by the tests and by script/Deploy.s.sol.
library ProtocolDeployer {
    Vm private constant VM = Vm(address(uint160(uint256(keccak256("hevm cheat code")))));

    error DeploymentMismatch(string which, address expected, address deployed);

    /// @notice Deploy StakeManager, RunRegistry, Verification, Disputes, ModelShares, JurorRegistry, FaultRewards,
    ///         VerifierRegistry, Plants, PeerDirectory, BlockRandomness (in that order) from `deployer`, which must be
    ///         the account whose next eleven CREATE nonces these use.
    /// @param deployer The account sending the deployments (the test contract, or the broadcaster).
    /// @param unbondingDelay StakeManager's unbonding delay (seconds).
    /// @param blockSeconds The chain's block time (RunRegistry.blockSeconds).
    /// @param allowPrivatePeers Whether PeerDirectory accepts loopback, link-local and private hosts (devnets only).
    function deploy(address deployer, uint256 unbondingDelay, uint256 blockSeconds, bool allowPrivatePeers)
        internal
        returns (Protocol memory p)
    {
        // at[i]: the address of the i-th deployment (StakeManager, RunRegistry, Verification, Disputes, ModelShares,
        // JurorRegistry, FaultRewards, VerifierRegistry, Plants, PeerDirectory, BlockRandomness); an array rather than
        // eleven locals keeps the constructor calls within the stack limit. BlockRandomness (no peers) comes last so the
        // other ten keep the addresses they had before it existed.
        address[11] memory at;
        uint64 nonce = VM.getNonce(deployer);
        for (uint256 i; i < 11; ++i) {
            at[i] = VM.computeCreateAddress(deployer, nonce + i);
        }
        p.stakeManager = new StakeManager(unbondingDelay, at[1], at[2], at[3], at[5], at[7], at[8]);
        p.runRegistry =
            new RunRegistry(IStakeManager(at[0]), IVerification(at[2]), at[3], IModelShares(at[4]), blockSeconds);
        p.verification = new Verification(
            IStakeManager(at[0]),
            IRunRegistry(at[1]),
            at[3],
            IModelShares(at[4]),
            IFaultRewards(at[6]),
            IVerifierRegistry(at[7]),
            IPlants(at[8]),
            IBlockRandomness(at[10])
        );
        p.disputes = new Disputes(
            IStakeManager(at[0]),
            IRunRegistry(at[1]),
            IVerification(at[2]),
            IModelShares(at[4]),
            IJurorRegistry(at[5]),
            IPlants(at[8])
        );
        p.modelShares = new ModelShares(at[1], at[2], at[3], at[6]);
        p.jurorRegistry = new JurorRegistry(IStakeManager(at[0]));
        p.faultRewards = new FaultRewards(at[2], IRunRegistry(at[1]), IStakeManager(at[0]), IModelShares(at[4]));
        p.verifierRegistry = new VerifierRegistry(IStakeManager(at[0]), IRunRegistry(at[1]), at[2]);
        p.plants = new Plants(IRunRegistry(at[1]), IVerification(at[2]), IStakeManager(at[0]), at[3]);
        p.peerDirectory = new PeerDirectory(allowPrivatePeers);
        p.blockRandomness = new BlockRandomness();
        _check("StakeManager", at[0], address(p.stakeManager));
        _check("RunRegistry", at[1], address(p.runRegistry));
        _check("Verification", at[2], address(p.verification));
        _check("Disputes", at[3], address(p.disputes));
        _check("ModelShares", at[4], address(p.modelShares));
        _check("JurorRegistry", at[5], address(p.jurorRegistry));
        _check("FaultRewards", at[6], address(p.faultRewards));
        _check("VerifierRegistry", at[7], address(p.verifierRegistry));
        _check("Plants", at[8], address(p.plants));
        _check("PeerDirectory", at[9], address(p.peerDirectory));
        _check("BlockRandomness", at[10], address(p.blockRandomness));
    }

    function _check(string memory which, address expected, address deployed) private pure {
        if (expected != deployed) revert DeploymentMismatch(which, expected, deployed);
    }
}
