"""`gradledger deploy`: build the contracts with forge and deploy them with web3.py.

The protocol contracts hold each other's addresses as immutables (no initializer, no proxy), so
their addresses are predicted from the deployer's next CREATE nonces and the contracts are
deployed in that fixed order -- the same scheme as contracts/script/ProtocolDeployer.sol.
BlockRandomness (stateless, no peers) comes last, so the others keep the addresses they had
before it existed. The manifest records every address and ABI (plus the
ABI of the per-run share token `RunShares`, whose address comes from each `RunCreated` event).
"""

from __future__ import annotations

import fcntl
import json
import subprocess
from pathlib import Path

import rlp
from eth_account.signers.local import LocalAccount
from eth_utils import to_canonical_address, to_checksum_address

from devnet.toolchain import ToolchainError, find_tool, get_contracts_dir
from protocol.adapters.chain import ChainClient
from protocol.adapters.manifest import ContractRecord, DeploymentManifest, compute_abis_hash, write_manifest
from protocol.hashing import keccak256
from protocol.windows import verify_block_seconds

DEPLOY_ORDER = (
    "StakeManager",
    "RunRegistry",
    "Verification",
    "Disputes",
    "ModelShares",
    "JurorRegistry",
    "FaultRewards",
    "VerifierRegistry",
    "Plants",
    "PeerDirectory",
    "BlockRandomness",
)
TEMPLATES = ("RunShares",)
ZERO_ADDRESS = "0x0000000000000000000000000000000000000000"
DEFAULT_UNBONDING_DELAY_S = 7 * 24 * 3600


def get_create_address(deployer: str, nonce: int) -> str:
    """Address of the contract `deployer` creates with `nonce`: keccak256(rlp([sender, nonce]))[12:]."""
    return to_checksum_address(keccak256(rlp.encode([to_canonical_address(deployer), nonce]))[12:])


def build_contracts(contracts_dir: Path | None = None) -> Path:
    """`forge build` (offline, npm compiler); returns the artifacts directory."""
    root = contracts_dir or get_contracts_dir()
    (root / "cache").mkdir(exist_ok=True)
    # One build at a time per checkout: parallel test workers and nodes all call this, and two forge builds writing
    # the same out/ could let a deploy read a half-written artifact.
    with open(root / "cache" / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        result = subprocess.run(
            [str(find_tool("forge")), "build"], cwd=root, capture_output=True, text=True, timeout=900
        )
    if result.returncode != 0:
        raise ToolchainError(f"forge build failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return root / "out"


def load_artifact(out_dir: Path, name: str) -> tuple[list[dict], str]:
    """(abi, creation bytecode) of a compiled contract."""
    path = out_dir / f"{name}.sol" / f"{name}.json"
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ToolchainError(f"no compiled artifact {path}; did `forge build` run?") from None
    return data["abi"], data["bytecode"]["object"]


def get_constructor_args(
    predicted: dict[str, str], unbonding_delay_s: int, block_seconds: int = 1, allow_private_peers: bool = True
) -> dict[str, tuple]:
    """Each contract's constructor arguments: its peers' addresses (ProtocolDeployer.sol's wiring), the chain's
    block time (RunRegistry) and whether peers may announce private hosts (PeerDirectory)."""
    p = predicted
    return {
        "StakeManager": (
            unbonding_delay_s,
            p["RunRegistry"],
            p["Verification"],
            p["Disputes"],
            p["JurorRegistry"],
            p["VerifierRegistry"],
            p["Plants"],
        ),
        "RunRegistry": (p["StakeManager"], p["Verification"], p["Disputes"], p["ModelShares"], block_seconds),
        "Verification": (
            p["StakeManager"],
            p["RunRegistry"],
            p["Disputes"],
            p["ModelShares"],
            p["FaultRewards"],
            p["VerifierRegistry"],
            p["Plants"],
            p["BlockRandomness"],
        ),
        "Disputes": (
            p["StakeManager"],
            p["RunRegistry"],
            p["Verification"],
            p["ModelShares"],
            p["JurorRegistry"],
            p["Plants"],
        ),
        "ModelShares": (p["RunRegistry"], p["Verification"], p["Disputes"], p["FaultRewards"]),
        "JurorRegistry": (p["StakeManager"],),
        "FaultRewards": (p["Verification"], p["RunRegistry"], p["StakeManager"], p["ModelShares"]),
        "VerifierRegistry": (p["StakeManager"], p["RunRegistry"], p["Verification"]),
        "Plants": (p["RunRegistry"], p["Verification"], p["StakeManager"], p["Disputes"]),
        "PeerDirectory": (allow_private_peers,),
        "BlockRandomness": (),
    }


def deploy_protocol(
    client: ChainClient,
    deployer: LocalAccount,
    out_dir: Path,
    unbonding_delay_s: int = DEFAULT_UNBONDING_DELAY_S,
    block_seconds: int = 1,
    allow_private_peers: bool = True,
) -> DeploymentManifest:
    """Deploy the contracts of DEPLOY_ORDER with predicted peer addresses; return the manifest. `block_seconds`
    is the chain's block time (12 on a 12-second-slot chain; every run's windows are checked against it);
    `allow_private_peers` is for devnets whose nodes announce loopback or private addresses."""
    verify_block_seconds(block_seconds)
    artifacts = {name: load_artifact(out_dir, name) for name in (*DEPLOY_ORDER, *TEMPLATES)}
    nonce = client.w3.eth.get_transaction_count(deployer.address, "pending")
    predicted = {name: get_create_address(deployer.address, nonce + i) for i, name in enumerate(DEPLOY_ORDER)}
    constructor_args = get_constructor_args(predicted, unbonding_delay_s, block_seconds, allow_private_peers)
    first_block = None
    for name in DEPLOY_ORDER:
        abi, bytecode = artifacts[name]
        result = client.deploy(deployer, abi, bytecode, *constructor_args[name])
        if result.contract_address is None or to_checksum_address(result.contract_address) != predicted[name]:
            raise ToolchainError(
                f"{name} deployed at {result.contract_address}, expected {predicted[name]}: another transaction "
                f"from {deployer.address} interleaved with the deployment; deploy again from an idle account"
            )
        first_block = first_block if first_block is not None else result.block_number
    if first_block is None:
        raise ToolchainError("no contract was deployed: DEPLOY_ORDER is empty")
    contracts = {name: ContractRecord(address=predicted[name], abi=artifacts[name][0]) for name in DEPLOY_ORDER}
    contracts.update({name: ContractRecord(address=ZERO_ADDRESS, abi=artifacts[name][0]) for name in TEMPLATES})
    return DeploymentManifest(
        chain_id=client.chain_id,
        rpc_url=client.rpc_url,
        deployed_block=first_block,
        deployed_block_hash=client.get_block(first_block)["hash"].to_0x_hex(),
        deployer=deployer.address,
        contracts=contracts,
        abis_hash=compute_abis_hash(contracts),
        block_seconds=block_seconds,
    )


def deploy(
    rpc_url: str,
    deployer: LocalAccount,
    manifest_path: Path,
    unbonding_delay_s: int = DEFAULT_UNBONDING_DELAY_S,
    block_seconds: int = 1,
    allow_private_peers: bool = True,
) -> DeploymentManifest:
    """Build, deploy and write the manifest (atomically)."""
    out_dir = build_contracts()
    client = ChainClient(rpc_url)
    manifest = deploy_protocol(client, deployer, out_dir, unbonding_delay_s, block_seconds, allow_private_peers)
    write_manifest(manifest_path, manifest)
    return manifest
