"""`gradledger explorer`: serve the live run explorer (auditor/explorer/app.py) for a deployment.

Read-only: no key is needed. It keeps the deployment's event index in <home>/index/events.sqlite (the file `run list`
and `run status` share: a restart reads only the blocks it has not indexed), reads θ for the loss chart from the same
artifact stores as the audit, and prints the URL it serves on as its first line of output (with `--port 0`, the port
the system chose), then serves until interrupted.
"""

from __future__ import annotations

from pathlib import Path

import typer

from gradledger.context import HomeOption, ManifestOption, PeerOption, RpcOption
from node.logs import configure_logging


def explorer_command(
    host: str = typer.Option("127.0.0.1", "--host", help="address to listen on (0.0.0.0: every interface)"),
    port: int = typer.Option(8800, "--port", min=0, max=65535, help="port to listen on (0: any free port)"),
    poll_s: float = typer.Option(
        1.0, "--poll-s", min=0.05, help="seconds between asks for the RPC's latest block (one request each)"
    ),
    home: Path | None = HomeOption,
    rpc_url: str | None = RpcOption,
    manifest: Path | None = ManifestOption,
    artifacts: list[str] = typer.Option(
        [], "--artifacts", help="an artifact store to read θ from for the loss chart (repeatable; added to --home's)"
    ),
    peer: list[str] = PeerOption,
    rpc_retries: int = typer.Option(6, min=0, max=20, help="retries (with backoff) when the RPC connection drops"),
) -> None:
    """Serve a live web page of the deployment's runs: rounds, loss, commitments, attestations, disputes, slashes,
    shares, and each account's stake and credits; it updates as blocks arrive."""
    from auditor.audit import open_sources
    from auditor.explorer.app import start_explorer
    from gradledger.commands.audit import read_labels
    from gradledger.context import resolve_home, resolve_manifest, resolve_peers, resolve_rpc_url
    from protocol.adapters.chain import ChainClient
    from protocol.adapters.event_index import EventIndex

    configure_logging()
    root = resolve_home(home)
    deployment = resolve_manifest(root, manifest)
    chain = ChainClient(resolve_rpc_url(root, rpc_url, deployment), deployment, max_retries=rpc_retries)
    index = EventIndex(root / "index" / "events.sqlite", chain)
    sources = open_sources(root, artifacts, resolve_peers(root, peer))
    explorer = start_explorer(index, sources, read_labels(root), host, port, poll_s)
    typer.echo(f"explorer at {explorer.url}/ (chain {chain.rpc_url}, block {explorer.live.head.block})")
    try:
        explorer.handle.thread.join()
    except KeyboardInterrupt:
        explorer.stop()
