// SPDX-License-Identifier: MIT
pragma solidity ^0.8.28;

import {Script, console} from "forge-std/Script.sol";
import {Protocol, ProtocolDeployer} from "./ProtocolDeployer.sol";

/// @title Deploy
/// @notice Deploys the eleven protocol contracts in one broadcast:
///
///     DEPLOYER_PRIVATE_KEY=0x... UNBONDING_DELAY=604800 BLOCK_SECONDS=12 ALLOW_PRIVATE_PEERS=false \
///       forge script script/Deploy.s.sol --rpc-url $RPC --broadcast
///
///         and prints each address (also in the broadcast JSON under broadcast/).
contract Deploy is Script {
    /// @notice Deploy from DEPLOYER_PRIVATE_KEY with UNBONDING_DELAY seconds (default 7 days), the chain's block time
    ///         BLOCK_SECONDS (default 12) and ALLOW_PRIVATE_PEERS (default false: a public chain's PeerDirectory).
    /// @return p The deployed contracts.
    function run() external returns (Protocol memory p) {
        uint256 key = vm.envUint("DEPLOYER_PRIVATE_KEY");
        uint256 delay = vm.envOr("UNBONDING_DELAY", uint256(7 days));
        uint256 blockSeconds = vm.envOr("BLOCK_SECONDS", uint256(12));
        bool allowPrivatePeers = vm.envOr("ALLOW_PRIVATE_PEERS", false);
        vm.startBroadcast(key);
        p = ProtocolDeployer.deploy(vm.addr(key), delay, blockSeconds, allowPrivatePeers);
        vm.stopBroadcast();
        console.log("StakeManager", address(p.stakeManager));
        console.log("RunRegistry", address(p.runRegistry));
        console.log("Verification", address(p.verification));
        console.log("Disputes", address(p.disputes));
        console.log("ModelShares", address(p.modelShares));
        console.log("JurorRegistry", address(p.jurorRegistry));
        console.log("FaultRewards", address(p.faultRewards));
        console.log("VerifierRegistry", address(p.verifierRegistry));
        console.log("Plants", address(p.plants));
        console.log("PeerDirectory", address(p.peerDirectory));
        console.log("BlockRandomness", address(p.blockRandomness));
    }
}
