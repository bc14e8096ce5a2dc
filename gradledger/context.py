"""Options every node command shares, resolved in one place: home, RPC, manifest, key, peers."""

from __future__ import annotations

import signal
import threading
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import typer
from eth_account.signers.local import LocalAccount

from devnet.lifecycle import get_home, read_devnet_info
from protocol.adapters.keys import load_account
from protocol.adapters.manifest import DeploymentManifest, load_manifest

HomeOption = typer.Option(None, "--home", help="gradledger data directory (default $GRADLEDGER_HOME or ./.gradledger)")
RpcOption = typer.Option(None, "--rpc-url", help="JSON-RPC URL (default: the running devnet, else the manifest's)")
ManifestOption = typer.Option(None, "--manifest", help="deployment manifest (default <home>/manifest.json)")
KeystoreOption = typer.Option(
    None, "--keystore", help="encrypted keystore file; password in $GRADLEDGER_KEYSTORE_PASSWORD"
)
DevnetAccountOption = typer.Option(None, "--devnet-account", help="use anvil's well-known account N (devnet only)")
PeerOption = typer.Option([], "--peer", help="base URL of a peer node (repeatable); also read from <home>/peers.txt")


def resolve_home(home: Path | None) -> Path:
    return get_home(home)


def resolve_manifest(home: Path, manifest: Path | None) -> DeploymentManifest:
    return load_manifest(manifest or home / "manifest.json")


def resolve_rpc_url(home: Path, rpc_url: str | None, manifest: DeploymentManifest | None = None) -> str:
    """--rpc-url, else the running devnet's URL, else the manifest's, else the default port."""
    if rpc_url:
        return rpc_url
    devnet = read_devnet_info(home)
    if devnet is not None:
        return devnet.rpc_url
    if manifest is not None:
        return manifest.rpc_url
    return "http://127.0.0.1:8545"


def resolve_account(keystore: Path | None, devnet_account: int | None, chain_id: int) -> LocalAccount:
    return load_account(keystore=keystore, devnet_account=devnet_account, chain_id=chain_id)


def resolve_peers(home: Path, peers: list[str]) -> tuple[str, ...]:
    """Peers from the command line plus <home>/peers.txt (one URL per line, # comments)."""
    listed = list(peers)
    path = home / "peers.txt"
    if path.exists():
        for line in path.read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if line and line not in listed:
                listed.append(line)
    return tuple(listed)


def eth_to_wei(amount: float) -> int:
    """ETH given on the command line to wei, without binary float rounding (0.1 ETH is exact)."""
    return int(Decimal(str(amount)) * 10**18)


@dataclass(frozen=True)
class NodeTarget:
    """Where a node command acts: its data directory, the deployment, the RPC URL and its key."""

    home: Path
    deployment: DeploymentManifest
    rpc_url: str
    account: LocalAccount


def resolve_node(
    home: Path | None, rpc_url: str | None, manifest: Path | None, keystore: Path | None, devnet_account: int | None
) -> NodeTarget:
    """The shared options of every node command, resolved in the one documented order."""
    root = resolve_home(home)
    deployment = resolve_manifest(root, manifest)
    url = resolve_rpc_url(root, rpc_url, deployment)
    return NodeTarget(root, deployment, url, resolve_account(keystore, devnet_account, deployment.chain_id))


def wait_until_stopped(worker: threading.Thread, exit_when_done: bool) -> None:
    """Block until SIGTERM/SIGINT, or (with exit_when_done) until the worker thread has finished."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    while not stop.is_set() and (worker.is_alive() or not exit_when_done):
        stop.wait(0.5)


def connect_protocol(
    home: Path | None, rpc_url: str | None, manifest: Path | None, keystore: Path | None, devnet_account: int | None
):
    """A ProtocolClient on the resolved deployment and the account that signs (for one-shot commands)."""
    from protocol.adapters.chain import ChainClient
    from protocol.adapters.contracts import ProtocolClient

    root = resolve_home(home)
    deployment = resolve_manifest(root, manifest)
    # connect first: the client checks the RPC's chain id against the manifest before a key is used
    client = ProtocolClient(ChainClient(resolve_rpc_url(root, rpc_url, deployment), deployment))
    return client, resolve_account(keystore, devnet_account, client.chain.chain_id)
