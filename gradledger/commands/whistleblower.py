"""`gradledger whistleblower watch`: re-check attestations and claims of a run, challenge wrong ones."""

from __future__ import annotations

import json
import threading
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
    resolve_node,
    resolve_peers,
    wait_until_stopped,
    with_chain_options,
)
from node.logs import configure_logging

app = typer.Typer(help="Watch a run's attestations and claims; challenge wrong ones.", no_args_is_help=True)


@app.command()
@with_chain_options
def watch(
    run: int = typer.Option(..., "--run", min=1, help="run id to watch (waits, saying so, until it exists)"),
    fraction: float = typer.Option(
        1.0, "--fraction", min=0.0, max=1.0, help="share of attestations to re-check (drawn from the chain)"
    ),
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
    exit_when_done: bool = typer.Option(False, help="stop once the run is finished, disputes closed and paid"),
) -> None:
    """Re-check attestations (all or a fraction) and θ(r+1) claims; challenge wrong ones; API: /health /challenges."""
    from protocol.adapters.http import make_node_app, serve_in_thread
    from whistleblower.watcher import Whistleblower

    configure_logging()
    node = resolve_node(home, rpc_url, manifest, keystore, devnet_account)
    account = node.account
    watcher = Whistleblower(
        run, node.home, account, node.rpc_url, node.deployment, resolve_peers(node.home, peer), fraction, threads,
        store=store, allow_private_peers=allow_private_peers,
    )  # fmt: skip
    thread = threading.Thread(target=watcher.run, name="whistleblower", daemon=True)

    def health() -> dict:
        return watcher.get_health(thread)

    app_ = make_node_app("whistleblower", account.address, watcher.store, health, watcher.get_metrics)

    @app_.get("/challenges")
    def challenges() -> list[dict]:
        return watcher.list_challenges()

    @app_.get("/checks")
    def checks() -> list[dict]:
        return watcher.list_checks()

    handle = serve_in_thread(app_, host, port)
    from node.peers import verify_public_url

    watcher.public_url = verify_public_url(public_url or handle.url)
    thread.start()
    typer.echo(json.dumps({"event": "serving", "url": handle.url, "address": account.address}), err=True)
    wait_until_stopped(thread, exit_when_done)
    watcher.stop.set()
    thread.join(timeout=30)
    handle.stop()
