"""`gradledger verifier stake|serve`."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from gradledger.context import (
    AllowPrivatePeersOption,
    DevnetAccountOption,
    HomeOption,
    KeystoreOption,
    ManifestOption,
    PeerOption,
    PublicUrlOption,
    RpcOption,
    StoreOption,
    check_eth_amount,
    connect_protocol,
    eth_to_wei,
    require_something_to_do,
    resolve_node,
    resolve_peers,
    wait_until_stopped,
    with_chain_options,
)
from node.logs import configure_logging

app = typer.Typer(help="Stake as a verifier and run the verifier service.", no_args_is_help=True)


@app.command()
@with_chain_options
def stake(
    amount: float = typer.Option(
        ..., min=0, callback=check_eth_amount, help="ETH to deposit as verifier stake (0: none, only --run)"
    ),
    run: int | None = typer.Option(None, "--run", min=1, help="also register for this run"),
    home: Path | None = HomeOption,
    rpc_url: str | None = RpcOption,
    manifest: Path | None = ManifestOption,
    keystore: Path | None = KeystoreOption,
    devnet_account: int | None = DevnetAccountOption,
    json_out: bool = typer.Option(False, "--json", help="print the result as JSON"),
) -> None:
    """Deposit verifier stake and register for a run's verifier list."""
    from protocol.adapters.chain import ContractRevertError
    from protocol.types import ROLE_VERIFIER

    configure_logging()
    wei = eth_to_wei(amount)
    require_something_to_do(wei, run, "register for")
    client, account = connect_protocol(home, rpc_url, manifest, keystore, devnet_account)
    if wei:
        client.deposit_stake(account, ROLE_VERIFIER, wei)
    if run is not None:
        try:
            client.register_verifier(account, run)
        except ContractRevertError as exc:
            if exc.error != "AlreadyRegistered":
                raise
    bonded = client.bonded_of(account.address, ROLE_VERIFIER)
    result = {"address": account.address, "bonded_wei": bonded, "run": run}
    typer.echo(json.dumps(result) if json_out else f"{account.address}: {bonded / 1e18:g} ETH bonded as verifier")


@app.command()
@with_chain_options
def serve(
    run: int = typer.Option(..., "--run", min=1, help="run id to verify (waits, saying so, until it exists)"),
    home: Path | None = HomeOption,
    rpc_url: str | None = RpcOption,
    manifest: Path | None = ManifestOption,
    keystore: Path | None = KeystoreOption,
    devnet_account: int | None = DevnetAccountOption,
    peer: list[str] = PeerOption,
    allow_private_peers: bool | None = AllowPrivatePeersOption,
    public_url: str | None = PublicUrlOption,
    store: str | None = StoreOption,
    host: str = typer.Option("127.0.0.1", help="interface the API listens on"),
    port: int = typer.Option(0, min=0, max=65535, help="API port (0 = any free port)"),
    threads: int = typer.Option(1, min=1, help="torch threads for replays (results do not depend on it)"),
    exit_when_done: bool = typer.Option(False, help="stop once the run is finished and every share is claimed"),
    jury: bool = typer.Option(True, help="register a BLS juror key and sit on juries of this run's disputes"),
    juror_only: bool = typer.Option(
        False, "--juror-only", help="jury duty only: do not register in the run's verifier list, never attest"
    ),
    adversary: str | None = typer.Option(
        None, "--adversary", help="DISHONEST role for tests and demos: lazy or fail-honest (never default)"
    ),
) -> None:
    """Watch commitments, replay sampled segments, attest, sit on juries; API: /health /attestations /jury /metrics."""
    from adversary.verifier import make_verifier_worker
    from verifier.metrics import VerifierMetrics
    from verifier.service import start_verifier_service

    configure_logging()
    node = resolve_node(home, rpc_url, manifest, keystore, devnet_account)
    worker = make_verifier_worker(
        adversary, run, node.home, node.account, node.rpc_url, node.deployment, resolve_peers(node.home, peer),
        VerifierMetrics(), threads, jury=jury, juror_only=juror_only, store=store,
        allow_private_peers=allow_private_peers,
    )  # fmt: skip
    handle, thread = start_verifier_service(worker, host, port)
    from node.peers import verify_public_url

    worker.public_url = verify_public_url(public_url or handle.url)
    typer.echo(json.dumps({"event": "serving", "url": handle.url, "address": node.account.address}), err=True)
    wait_until_stopped(thread, exit_when_done)
    worker.stop.set()
    thread.join(timeout=30)
    handle.stop()
