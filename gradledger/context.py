"""Options every node command shares, resolved in one place: home, RPC, manifest, key, peers.

Every command module imports this one to declare its options, so `gradledger --help` loads it: it imports only
typer and light modules at module level. The key, manifest and chain-policy adapters (eth_account, pydantic models,
web3) are imported inside the functions that resolve them, when a command runs (issue 38: `--help` < 1 s of CPU).
"""

from __future__ import annotations

import functools
import inspect
import math
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from devnet.lifecycle import get_home, read_devnet_info
from protocol.errors import ConfigError

if TYPE_CHECKING:
    from eth_account.signers.local import LocalAccount

    from protocol.adapters.contracts import ProtocolClient
    from protocol.adapters.manifest import DeploymentManifest

HomeOption = typer.Option(None, "--home", help="gradledger data directory (default $GRADLEDGER_HOME or ./.gradledger)")
RpcOption = typer.Option(None, "--rpc-url", help="JSON-RPC URL (default: the running devnet, else the manifest's)")
ManifestOption = typer.Option(None, "--manifest", help="deployment manifest (default <home>/manifest.json)")
KeystoreOption = typer.Option(
    None, "--keystore", help="encrypted keystore file; password in $GRADLEDGER_KEYSTORE_PASSWORD"
)
DevnetAccountOption = typer.Option(None, "--devnet-account", help="use anvil's well-known account N (devnet only)")
PeerOption = typer.Option([], "--peer", help="base URL of a peer node (repeatable); also read from <home>/peers.txt")
AllowPrivatePeersOption = typer.Option(
    None, "--allow-private-peers/--no-allow-private-peers", envvar="GRADLEDGER_ALLOW_PRIVATE_PEERS",
    help="also fetch from loopback, link-local and private addresses (127.0.0.1, 10.x, 192.168.x, fe80::, "
    "localhost, ...) that other accounts announced in PeerDirectory. Default: allowed on the anvil devnet (chain id "
    "31337) only; on any other chain such a URL is refused, logged once and never fetched from. --peer URLs are "
    "never refused (docs/nodes.md, Finding peers)",
)  # fmt: skip
PublicUrlOption = typer.Option(
    None, "--public-url", help="URL other nodes reach this node at, announced on-chain (default: the URL it serves at)"
)
StoreOption = typer.Option(
    None, "--store", envvar="GRADLEDGER_STORE",
    help="artifact store: s3://BUCKET/PREFIX (endpoint and credentials from AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, "
    "AWS_SECRET_ACCESS_KEY or AWS_PROFILE, AWS_REGION) or a directory (default <node dir>/artifacts); "
    "see docs/storage.md",
)  # fmt: skip
MaxFeeOption = typer.Option(
    None, "--max-fee-gwei", min=0, envvar="GRADLEDGER_MAX_FEE_GWEI",
    help="most a transaction may pay per gas, base fee + tip, in gwei; a transaction needing more is not sent "
    "(error naming the cap and the base fee; the node retries). Default: no cap",
)  # fmt: skip
PriorityFeeOption = typer.Option(
    None, "--priority-fee-gwei", min=0, envvar="GRADLEDGER_PRIORITY_FEE_GWEI",
    help="tip per gas to the block producer, in gwei (default 1)",
)  # fmt: skip
ConfirmationsOption = typer.Option(
    None, "--confirmations", min=0, envvar="GRADLEDGER_CONFIRMATIONS",
    help="blocks deep an event or a sent transaction must be before the node treats it as final "
    "(default 0 on the devnet, chain id 31337; 2 on any other chain)",
)  # fmt: skip


def resolve_home(home: Path | None) -> Path:
    return get_home(home)


def resolve_manifest(home: Path, manifest: Path | None) -> DeploymentManifest:
    from protocol.adapters.manifest import load_manifest

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


def resolve_account(
    keystore: Path | None, devnet_account: int | None, chain_id: int, default_devnet_account: int | None = None
) -> LocalAccount:
    """The signing account. `default_devnet_account` (the deployer's and creator's account 0 of the devnet
    commands) applies only when no key was named at all, neither --keystore, --devnet-account nor
    $GRADLEDGER_PRIVATE_KEY; naming both --keystore and --devnet-account is refused (load_account)."""
    from protocol.adapters.keys import PRIVATE_KEY_ENV, load_account

    if keystore is None and devnet_account is None and not os.environ.get(PRIVATE_KEY_ENV):
        devnet_account = default_devnet_account
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
    """ETH given on the command line to wei, without binary float rounding (0.1 ETH is exact).

    Refuses what is no amount: inf and nan (`float()` accepts them; they used to end in a traceback), negative
    amounts, and positive amounts below one wei (1e-30 ETH used to be staked as 0 without a word).
    """
    if not math.isfinite(amount) or amount < 0:
        raise ConfigError(f"{amount} is not an amount of ETH: give a finite number, 0 or more (e.g. 10 or 0.5)")
    wei = int(Decimal(str(amount)) * 10**18)
    if amount > 0 and wei == 0:
        raise ConfigError(f"{amount} ETH is less than 1 wei (1e-18 ETH) and would be sent as 0; give at least 1e-18")
    return wei


def check_eth_amount(value: float | None) -> float | None:
    """typer callback of an ETH option: a value `eth_to_wei` refuses is a usage error (exit 2) naming the option,
    raised before anything connects or sends. None: an optional amount left out."""
    if value is None:
        return None
    try:
        eth_to_wei(value)
    except ConfigError as exc:
        raise typer.BadParameter(str(exc)) from None
    return value


def require_something_to_do(wei: int, run: int | None, what: str) -> None:
    """`stake --amount 0` without `--run` would connect, send nothing and report success: a usage error (exit 2).
    With `--run`, a 0 deposit joins (or registers for) the run with stake already bonded."""
    if wei == 0 and run is None:
        raise typer.BadParameter(
            f"0 ETH deposits nothing; give a positive amount, or --run N to only {what} run N", param_hint="'--amount'"
        )


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
    home: Path | None,
    rpc_url: str | None,
    manifest: Path | None,
    keystore: Path | None,
    devnet_account: int | None,
    default_devnet_account: int | None = None,
) -> tuple[ProtocolClient, LocalAccount]:
    """A ProtocolClient on the resolved deployment and the account that signs (for one-shot commands)."""
    from protocol.adapters.chain import ChainClient
    from protocol.adapters.contracts import ProtocolClient

    root = resolve_home(home)
    deployment = resolve_manifest(root, manifest)
    # connect first: the client checks the RPC's chain id against the manifest before a key is used
    client = ProtocolClient(ChainClient(resolve_rpc_url(root, rpc_url, deployment), deployment))
    return client, resolve_account(keystore, devnet_account, client.chain.chain_id, default_devnet_account)


def apply_chain_options(max_fee_gwei: float | None, priority_fee_gwei: float | None, confirmations: int | None) -> None:
    """Make --max-fee-gwei, --priority-fee-gwei and --confirmations the policy of every chain client of this process
    (protocol/adapters/finality.py); a value the policy refuses is a usage error (exit 2) before anything is sent."""
    from protocol.adapters.finality import ChainPolicy, set_default_chain_policy

    try:
        policy = ChainPolicy.from_gwei(max_fee_gwei, priority_fee_gwei, confirmations)
    except ConfigError as exc:
        raise typer.BadParameter(str(exc)) from None
    set_default_chain_policy(policy)


def with_chain_options(command: Callable) -> Callable:
    """Give a command that talks to the chain the fee and finality options, defined once here.

    The three options are added to the command's signature (typer reads it) and applied by `apply_chain_options`
    before the command runs, so every command that sends or reads takes them the same way."""
    signature = inspect.signature(command, eval_str=True)
    added = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation)
        for name, option, annotation in (
            ("max_fee_gwei", MaxFeeOption, float | None),
            ("priority_fee_gwei", PriorityFeeOption, float | None),
            ("confirmations", ConfirmationsOption, int | None),
        )
    ]

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        apply_chain_options(kwargs.pop("max_fee_gwei"), kwargs.pop("priority_fee_gwei"), kwargs.pop("confirmations"))
        return command(*args, **kwargs)

    return _with_parameters(wrapper, signature, [*signature.parameters.values(), *added])


def _with_parameters(wrapper: Callable, signature: inspect.Signature, parameters: list[inspect.Parameter]) -> Callable:
    """`wrapper` with the signature typer reads: `parameters`, in order."""
    wrapper.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in parameters}
    return wrapper


Connect = Callable[[], "tuple[ProtocolClient, LocalAccount]"]
"""What `with_signer_options` passes a command as `connect`: connects and returns (client, signing account)."""
SIGNER_OPTIONS = (
    ("home", HomeOption, Path | None),
    ("rpc_url", RpcOption, str | None),
    ("manifest", ManifestOption, Path | None),
    ("keystore", KeystoreOption, Path | None),
    ("devnet_account", DevnetAccountOption, int | None),
)


def with_signer_options(command: Callable) -> Callable:
    """Give a one-shot command that signs the options naming its deployment and account, defined once here.

    --home, --rpc-url, --manifest, --keystore and --devnet-account are added to the command's signature, and the
    command receives `connect` instead: a function returning (ProtocolClient, signing account) via
    `connect_protocol`. It connects only when called, so a command refuses bad input before touching the chain."""
    signature = inspect.signature(command, eval_str=True)
    kept = [p for p in signature.parameters.values() if p.name != "connect"]
    added = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation)
        for name, option, annotation in SIGNER_OPTIONS
    ]

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        given = {name: kwargs.pop(name) for name, _, _ in SIGNER_OPTIONS}
        return command(*args, connect=lambda: connect_protocol(**given), **kwargs)

    return _with_parameters(wrapper, signature, [*kept, *added])
